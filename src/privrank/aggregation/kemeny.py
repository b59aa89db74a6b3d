"""Kemeny rank aggregation: the solvers by name (:func:`wfas_solver`), over a matrix or a stack of them.

Every solver reads only a matrix of pairwise weights ``W`` (``W[i, j]``: the weight of
"``i`` before ``j``", for a profile the fraction of voters who prefer ``i`` to ``j``) or, for
KwikSort, single entries of it through a query function. The Kemeny cost of an order is
``K(order, W) = sum over pairs a before b of W[b, a]`` (:func:`privrank.metrics.kemeny_cost`);
minimising it is weighted feedback arc set in tournaments (Alabi et al. §2). On a private
matrix every solver is post-processing.

The solvers themselves are two modules: the exact solver, its limits and certified gaps
(:mod:`privrank.aggregation.kemeny_exact`), and the heuristics, KwikSort, local search, Borda and
Copeland (:mod:`privrank.aggregation.kemeny_heuristics`).

Solvers
-------
``exact``
    Dynamic programming over subsets for ``m <= DP_MAX_ITEMS`` (``f(S)`` = least cost of
    ordering the set ``S``; ``f(S) = min_{v in S} f(S - v) + sum_{u in S} W[v, u]``, ``v``
    placed last; ``O(2^m m)`` time, vectorised one subset size at a time), otherwise the
    integer program over ordering variables ``x_ij`` (``i < j``, 1 when ``i`` comes first)
    with the triangle constraints ``0 <= x_ij + x_jk - x_ik <= 1`` added lazily (first to the
    linear relaxation, then to the integer program, each time the ones its solution
    violates); a 0/1 solution that violates none is transitive and therefore optimal for
    the full model. On the matrix of a real profile the majority tournament is often already
    transitive and no program is solved at all. Any real weights (noisy, unclipped matrices
    included) are allowed. Past the exact solver's limits (its module's docstring) it returns
    the ``local-search`` order and warns (``UtilityWarning``) that it is **not proven optimal**.
``kwiksort``
    KwikSort (Ailon, Charikar, Newman 2008): a uniformly random pivot splits its sub-problem
    into the items preferred to it (``W[j, pivot] > 1/2``) and the rest, recursively; a
    5-approximation in expectation under the probability constraints ``W[i, j] + W[j, i] = 1``
    and 2 on the matrix of a profile. ``best_of=k`` keeps the cheapest of ``k`` runs.
``local-search``
    The cheaper of Borda and KwikSort (best of ``best_of``), polished by insertion moves: any
    single item moved to any other position, the best move first, until no move lowers the
    cost (adjacent swaps are the moves by one place). Never worse than its start, so it keeps
    the start's approximation ratio.
``auto``
    ``exact`` when ``m <= AUTO_EXACT_MAX``, otherwise ``local-search`` (polynomial time on any
    matrix, where the exact integer program on a very noisy matrix may take long).
``borda``, ``copeland``
    The Borda and Copeland orders of the matrix: not Kemeny solvers but positional
    rules, which on a very noisy matrix of many items land closer to the truth than its Kemeny
    order (the utility frontier, ``docs/frontier.md``).

Privacy never depends on the solver: it only post-processes the released matrix.
"""
from __future__ import annotations

import warnings

import numpy as np

from .._rng import as_generator
from .. import limits
from ..errors import InputError, UtilityWarning
from ..metrics import kemeny_cost
from .kemeny_exact import DP_MAX_ITEMS, ExactTooCostly, exact_dp, exact_kemeny
from .kemeny_heuristics import _best_of, _matrix, borda, copeland, kwiksort_matrix, local_search

SOLVERS = ("auto", "exact", "kwiksort", "local-search", "borda", "copeland")
AUTO_EXACT_MAX = 20


def wfas_solver(solver="auto", *, rng=None, best_of: int = 1):
    """A solver ``W -> order`` (best first) by name (module docstring); a callable is returned as is.

    ``rng`` drives the randomised solvers; ``best_of`` the number of KwikSort runs (at most
    ``PRIVRANK_MAX_BEST_OF``). ``exact`` (and ``auto``) fall back to ``local-search`` with a
    warning when the exact solver's limits refuse the matrix (module docstring). A named solver's
    ``ran`` attribute names the algorithm that gave its last order (``exact``, ``local-search``,
    ``kwiksort``, ``borda`` or ``copeland``): ``auto`` and a refused ``exact`` say which ran.
    """
    if callable(solver):
        return solver
    if not isinstance(solver, str) or solver not in SOLVERS:
        raise InputError(f"solver must be one of {', '.join(SOLVERS)}")
    gen = as_generator(rng)
    k = _best_of(best_of)

    def polished(W):
        A = _matrix(W)
        starts = [borda(A), kwiksort_matrix(A, gen, best_of=k)]
        solve.ran = "local-search"  # type: ignore[attr-defined]  # a function attribute (docstring)
        return min((local_search(A, s) for s in starts), key=lambda o: kemeny_cost(o, A))

    def exact(W):  # the release is already paid for: fall back rather than refuse
        A = _matrix(W)
        try:
            order = exact_kemeny(A)
        except ExactTooCostly as exc:
            warnings.warn(f"solver exact: {exc.reason}; the order is local search's and NOT proven optimal "
                          "(privacy is unchanged). Choose solver='local-search' (CLI: --solver local-search) to say "
                          f"so, or raise {limits.variable('EXACT_ITEMS')} / {limits.variable('EXACT_SECONDS')} to "
                          "insist on the exact solver", UtilityWarning, stacklevel=2)
            return polished(A)
        solve.ran = "exact"  # type: ignore[attr-defined]  # a function attribute (docstring)
        return order

    def auto(W):
        A = _matrix(W)
        return exact(A) if A.shape[0] <= AUTO_EXACT_MAX else polished(A)

    def named(name, function):
        def run(W):
            solve.ran = name  # type: ignore[attr-defined]  # a function attribute (docstring)
            return function(W)
        return run

    chosen = {"auto": auto, "exact": exact, "kwiksort": named("kwiksort", lambda W: kwiksort_matrix(W, gen, best_of=k)),
              "local-search": polished, "borda": named("borda", borda), "copeland": named("copeland", copeland)}[solver]

    def solve(W):
        return chosen(W)

    solve.ran = None  # type: ignore[attr-defined]  # a function attribute (docstring)
    return solve


def solve_many(Ws, solver: str = "auto", *, rng=None, best_of: int = 1) -> np.ndarray:
    """Orders ``(B, m)`` (best first) of a stack of matrices ``(B, m, m)`` by a named solver.

    ``exact``, and ``auto`` up to ``DP_MAX_ITEMS`` items, solve the whole stack at once by subset
    dynamic programming (:func:`exact_dp`); the other solvers run matrix by matrix.
    """
    A = _matrix(Ws, stack=True)
    if solver in ("exact", "auto") and A.shape[1] <= DP_MAX_ITEMS:
        return exact_dp(A)
    solve = wfas_solver(solver, rng=rng, best_of=best_of)
    return np.stack([np.asarray(solve(W), dtype=np.int64) for W in A])  # one solve per matrix
