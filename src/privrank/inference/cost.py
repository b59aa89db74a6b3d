"""What the interval families share: their cost, estimated from public sizes before anything is
allocated or drawn, the level check, and the warning for a release that cannot tell items apart."""
from __future__ import annotations

import warnings

from .. import limits
from ..errors import UtilityWarning, check_fraction

BOOTSTRAP_CHUNK = 2_000_000  # pair statistics simulated and fitted at once (replicates x pairs)


def check_interval_cost(items: int, *, n_bootstrap: int | None = None, pairs: int | None = None,
                        cubic: bool = False, advice: str | None = None) -> None:
    """Refuse intervals whose estimated memory or work exceeds :mod:`privrank.limits`.

    Parameters
    ----------
    items
        Number of items ``m``.
    n_bootstrap
        Bootstrap replicates (None: the sandwich, no bootstrap).
    pairs
        Pair statistics held per replicate (default ``m (m - 1) / 2``).
    cubic
        Each replicate costs ``m^3`` (Newton steps on ``m x m`` systems; local search or the
        integer program re-solving a Kemeny matrix) rather than ``m^2``.
    """
    m = int(items)
    P = m * (m - 1) // 2 if pairs is None else int(pairs)
    advice = advice or "use fewer replicates (n_bootstrap=), or the sandwich (method='sandwich'; CLI: --ci-method sandwich)"
    if n_bootstrap is not None:
        limits.check("BOOTSTRAP", int(n_bootstrap), "n_bootstrap (bootstrap replicates)",
                     "a few thousand replicates resolve shares to 1/1000")
    B = 0 if n_bootstrap is None else int(n_bootstrap)
    # ~10 m x m float matrices (covariance, Hessian and its inverse, ahead, pairwise differences),
    # 6 float arrays per pair, the draws or ranks (B x m), and one chunk of simulated replicates
    need = 8.0 * (10 * m * m + 6 * P + 2 * B * m + (3 * min(BOOTSTRAP_CHUNK, B * max(P, m * m)) if B else 0))
    limits.check("MEMORY_MB", need / 2 ** 20, f"the estimated memory of intervals on {m} items (MiB)",
                 "intervals hold m x m matrices, so they suit up to a few thousand items")
    if B:
        work = float(B) * m * m * (m if cubic else 1)
        limits.check("BOOTSTRAP_WORK", work, f"the bootstrap work ({B} replicates on {m} items)", advice)


def check_level(level) -> None:
    check_fraction(level, name="level (e.g. 0.95)")


# ---------------------------------------------------------------------------------- estimators


def indistinguishable(rank_lower, rank_upper) -> bool:
    """True when, among at least three items, every rank interval is the whole range [1, m]."""
    m = len(rank_lower)
    return m >= 3 and all(int(lo) == 1 and int(hi) == m for lo, hi in zip(rank_lower, rank_upper))


def warn_if_indistinguishable(rank_lower, rank_upper, level: float) -> None:
    """Warn (:class:`~privrank.errors.UtilityWarning`) when every rank interval is the whole range.

    Then the release cannot tell any item from any other at this level: its printed order is the
    noise speaking. Computed from the intervals alone (post-processing of the release).
    """
    m = len(rank_lower)
    if indistinguishable(rank_lower, rank_upper):
        warnings.warn(f"this release cannot tell the items apart: every {level:.0%} rank interval is [1, {m}], "
                      "so its order is noise; a larger epsilon or more comparisons per pair would help "
                      "(privrank plan predicts the error before collecting data)", UtilityWarning, stacklevel=3)
