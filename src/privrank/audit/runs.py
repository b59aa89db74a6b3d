"""Helpers shared by the catalogs: running a public function once per trial and observing it.

Algorithms that hand a noisy pairwise matrix to a solver (``solver=`` accepts a callable) are
observed through a solver that records what it is handed -- post-processing of the release that,
unlike the returned order, keeps its tails. With two items a matrix is one number,
``W[0, 1] - W[1, 0]``, and an order one bit, ``1[item 0 first]``.
"""
from __future__ import annotations

import numpy as np

TWO_ITEMS = np.array([[0, 1], [1, 0]])

#: why a Gaussian mechanism run once per trial declares a control below 0.5
GAUSSIAN_TAILS_NOTE = (
    "Half the noise loses epsilon = 1.97 at delta = 1e-6 for epsilon = 1 (mu doubles from "
    "0.221), but only in Gaussian tails of probability ~1e-3 that take ~10^6 runs; one run of "
    "this algorithm costs ~0.5 ms, so the default trials catch F = {f}. The shared discrete Gaussian "
    "calibration is caught at F = 0.5 by the batched binary-tree/gaussian audit.")


def recording_solver(seen: list):
    """A two-item solver that appends ``W[0, 1] - W[1, 0]`` of every matrix it gets to ``seen``."""
    def solve(W):
        W = np.asarray(W, dtype=float)
        seen.append(W[0, 1] - W[1, 0])
        return TWO_ITEMS[0] if W[0, 1] >= W[1, 0] else TWO_ITEMS[1]
    return solve


def solver_views(call, trials: int, views: int) -> np.ndarray:
    """``trials`` rows: the ``views`` numbers the solver saw in one ``call(solver)``, then the order bit.

    ``call(solver)`` runs the public function once and returns its result (with ``.order``).
    """
    rows = np.empty((trials, views + 1))
    for t in range(trials):  # one public call per run: the solver sees that run's release
        seen: list[np.ndarray] = []
        res = call(recording_solver(seen))
        if len(seen) != views:
            raise RuntimeError(f"the solver saw {len(seen)} matrices instead of {views}: the "
                               "audit's inputs do not keep every run on one path")
        rows[t, :views] = seen
        rows[t, views] = float(res.order[0] == 0)
    return rows


def order_bits(call, trials: int) -> np.ndarray:
    """``1[item 0 first]`` of ``trials`` runs of ``call()`` (two items)."""
    return np.array([float(call().order[0] == 0) for _ in range(trials)])


def two_item_votes(gap: int) -> tuple[int, int]:
    """``(n, k)``: ``k`` of ``n`` voters put item 0 first, ``gap`` fewer than half (n even).

    The neighbour has ``k - 1``. With ``gap = 0`` a threshold at 1/2 on the noisy fraction is the
    edge of the Laplace tail (the full loss); a positive gap puts it further into a Gaussian tail.
    """
    n = 2 * (gap + 1)
    return n, n // 2 - gap


def votes(k: int, n: int) -> np.ndarray:
    """``n`` two-item orders, ``k`` of them with item 0 first."""
    return np.repeat(TWO_ITEMS, [k, n - k], axis=0)
