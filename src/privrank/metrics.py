"""Error metrics for rankings and scores (Xu, Sun, Cheng §2.5; Cai, Chakraborty, Wang §4).

Score-based metrics take score vectors (larger = better) over the same items.
"""
from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .data.ranking_files import as_rankings
from .data.rankings import Rankings, RankingTally, check_permutations, positions_of
from .data.tabular import TableLike
from .errors import InputError, check_flag, check_positive, check_whole, real_array


def _pair(est, true):
    a = real_array(est, name="the estimated scores", what="a vector of scores")
    b = real_array(true, name="the true scores", what="a vector of scores")
    if a.shape != b.shape or a.ndim != 1:
        raise InputError("score vectors must be 1-d and of the same length")
    if a.size < 2:
        raise InputError("need at least two items")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("scores must be finite")
    return a, b


def kendall_distance(est: ArrayLike, true: ArrayLike, *, tol: float = 1e-8, tie_penalty: float = 0.0) -> float:
    """Normalised Kendall tau distance: the fraction of item pairs ordered oppositely.

    Score differences within ``tol`` count as ties (sign 0). A pair tied in exactly one of the
    two vectors counts ``tie_penalty`` (the ``K^(p)`` of Fagin, Kumar, Mahdian, Sivakumar and
    Vee 2004, ``p`` in [0, 1]). With the default 0 such pairs are never discordant, so weak
    orders that agree up to round-off have distance 0; with ``tie_penalty > 0`` the distance is
    0 exactly when the two weak orders are identical.

    Examples
    --------
    Scores in, not orders: the fraction of item pairs the two score vectors order oppositely:

    >>> import privrank as pr
    >>> pr.kendall_distance([3.0, 2.0, 1.0], [3.0, 1.0, 2.0])
    0.3333333333333333
    >>> pr.kendall_distance([3.0, 2.0, 2.0], [3.0, 1.0, 2.0])
    0.0
    >>> pr.kendall_distance([3.0, 2.0, 2.0], [3.0, 1.0, 2.0], tie_penalty=0.5)
    0.16666666666666666
    """
    a, b = _pair(est, true)
    tol = check_positive(tol, name="tol", allow_zero=True)
    if not 0.0 <= check_positive(tie_penalty, name="tie_penalty", allow_zero=True) <= 1.0:
        raise InputError("tie_penalty must lie in [0, 1]")
    da = a[:, None] - a[None, :]
    db = b[:, None] - b[None, :]
    sa = np.where(np.abs(da) <= tol, 0, np.sign(da))
    sb = np.where(np.abs(db) <= tol, 0, np.sign(db))
    m = a.size
    score = np.triu(sa * sb < 0, 1).sum() + float(tie_penalty) * np.triu((sa == 0) != (sb == 0), 1).sum()
    return float(score / (m * (m - 1) / 2))


def top_k_hamming(est: ArrayLike, true: ArrayLike, k: int) -> float:
    """Normalised top-K Hamming error H_K: the fraction of the true top-K that is missed.

    Ties at the boundary are broken by item index in both vectors.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.top_k_hamming([4.0, 3.0, 2.0, 1.0], [4.0, 2.0, 3.0, 1.0], 2)
    0.5
    """
    a, b = _pair(est, true)
    k = check_whole(k, name="k")
    if k > a.size:
        raise InputError("k must be between 1 and the number of items")
    idx = np.arange(a.size)
    top_a = set(np.lexsort((idx, -a))[:k])
    top_b = set(np.lexsort((idx, -b))[:k])
    return len(top_b - top_a) / k


def _norm(x: np.ndarray, ord) -> float:
    """``||x||_ord``, scaled by ``max |x|`` first so that huge finite scores cannot overflow."""
    top = float(np.max(np.abs(x)))
    return top * float(np.linalg.norm(x / top, ord)) if top > 0 else 0.0


def _centred_error(est, true, ord, relative: bool) -> float:
    relative = check_flag(relative, name="relative")
    a, b = _pair(est, true)
    b = b - b.mean()
    err = _norm((a - a.mean()) - b, ord)
    if not relative:
        return float(err / np.sqrt(a.size)) if ord == 2 else float(err)
    scale = _norm(b, ord)
    if scale == 0:
        raise InputError("a relative error needs true scores that are not all equal")
    return float(err / scale)


def l2_error(est: ArrayLike, true: ArrayLike, *, relative: bool = False) -> float:
    """``||est - true||_2 / sqrt(m)`` (both centred to sum zero first).

    ``relative=True`` gives ``||est - true||_2 / ||true||_2`` instead (Cai, Chakraborty, Wang
    §4.1 plot its logarithm).

    Examples
    --------
    >>> import privrank as pr
    >>> round(pr.l2_error([1.0, 0.0, -1.0], [1.2, 0.0, -1.2]), 4)
    0.1633
    >>> round(pr.l2_error([1.0, 0.0, -1.0], [1.2, 0.0, -1.2], relative=True), 4)
    0.1667
    """
    return _centred_error(est, true, 2, relative)


def linf_error(est: ArrayLike, true: ArrayLike, *, relative: bool = False) -> float:
    """``||est - true||_inf`` (both centred to sum zero first); ``relative=True`` divides by ``||true||_inf``.

    Examples
    --------
    >>> import privrank as pr
    >>> round(pr.linf_error([1.0, 0.0, -1.0], [1.2, 0.0, -1.2]), 4)
    0.2
    >>> round(pr.linf_error([1.0, 0.0, -1.0], [1.2, 0.0, -1.2], relative=True), 4)
    0.1667
    """
    return _centred_error(est, true, np.inf, relative)


def rank_position_mismatch(est: ArrayLike, ref: ArrayLike) -> float:
    """Fraction of rank positions at which the orders of ``est`` and ``ref`` hold different items.

    The real-data "Hamming" metric of Cai, Chakraborty, Wang §4.2 (``d_Ham / n``); ties are
    broken by item index in both.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.rank_position_mismatch([4.0, 3.0, 2.0, 1.0], [4.0, 2.0, 3.0, 1.0])
    0.5
    """
    a, b = _pair(est, ref)
    idx = np.arange(a.size)
    return float(np.mean(np.lexsort((idx, -a)) != np.lexsort((idx, -b))))


# --- Spearman footrule (Hillebrand et al. §1.2) ---------------------------------------------

def footrule_distance(order_a: ArrayLike, order_b: ArrayLike) -> int:
    """Spearman footrule ``F = sum_q |pos_a(q) - pos_b(q)|`` between two orders (best first).

    Examples
    --------
    >>> import privrank as pr
    >>> pr.footrule_distance([0, 1, 2, 3], [1, 0, 3, 2]), pr.footrule_distance([0, 1, 2, 3], [3, 2, 1, 0])
    (4, 8)
    """
    a = check_permutations(order_a, what="order")[0]
    b = check_permutations(order_b, what="order")[0]
    if a.size != b.size:
        raise InputError("rankings must rank the same number of items")
    return int(np.abs(positions_of(a) - positions_of(b)).sum())


def footrule_cost(order: ArrayLike, profile: Rankings | RankingTally | ArrayLike | TableLike,
                  weights: ArrayLike | None = None) -> float:
    """Mean footrule distance from ``order`` to the rankings of ``profile`` (per voter, unnormalised).

    ``(1/n) sum_i F(order, pi_i)``, the objective of footrule aggregation (Hillebrand et al.
    §1.2). ``profile`` is :class:`~privrank.data.rankings.Rankings` or an ``(n, m)`` array of
    orders; ``weights`` are ranking multiplicities.

    Examples
    --------
    >>> import privrank as pr
    >>> orders = [[0, 1, 2], [1, 0, 2], [0, 2, 1]]
    >>> pr.footrule_cost([0, 1, 2], orders), pr.footrule_cost([2, 1, 0], orders)
    (1.3333333333333333, 4.0)
    """
    pos = positions_of(check_permutations(order, what="order")[0])
    if isinstance(profile, RankingTally):  # from the position counts
        counts = profile.position_histogram()
        if pos.size != profile.n_items:
            raise InputError("rankings must rank the same number of items")
        return float((counts * np.abs(np.arange(pos.size)[None, :] - pos[:, None])).sum() / profile.n_voters)
    R = as_rankings(profile, weights)
    if pos.size != R.n_items:
        raise InputError("rankings must rank the same number of items")
    d = np.abs(R.positions - pos[None, :]).sum(axis=1)
    return float(np.dot(R.weights, d) / R.n_voters)


# --- Kendall tau between orders and the Kemeny objective (Alabi et al. §2) -------------------

def kendall_tau_distance(order_a: ArrayLike, order_b: ArrayLike, *, normalized: bool = False) -> float:
    """Kendall tau distance between two orders (best first): the pairs they order differently.

    Returns the count (an integer in ``0 .. m(m-1)/2``), or that count divided by
    ``m(m-1)/2`` when ``normalized``.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.kendall_tau_distance([0, 1, 2, 3], [1, 0, 3, 2])
    2
    >>> pr.kendall_tau_distance([0, 1, 2, 3], [1, 0, 3, 2], normalized=True)
    0.3333333333333333
    """
    a = check_permutations(order_a, what="order")[0]
    b = check_permutations(order_b, what="order")[0]
    if a.size != b.size:
        raise InputError("rankings must rank the same number of items")
    m = a.size
    p = positions_of(b)[a]  # positions in b, listed in the order of a
    count = int(np.sum(np.triu(p[:, None] > p[None, :], 1)))
    normalized = check_flag(normalized, name="normalized")
    if normalized:
        return count / (m * (m - 1) / 2) if m > 1 else 0.0
    return count


def kemeny_cost(order: ArrayLike, w: ArrayLike) -> float | np.ndarray:
    """Kemeny cost ``K(order, w) = sum over pairs a before b of w[b, a]`` (Alabi et al. §2).

    With ``w`` the pairwise-preference matrix of a profile
    (:meth:`privrank.data.rankings.Rankings.pairwise_matrix`) this is the mean Kendall tau
    distance from ``order`` to the profile's rankings (unnormalised pair count per voter).
    Any real matrix is accepted (noisy matrices: the cost a solver minimises). ``order`` may be
    one order (returns a float) or a ``(k, m)`` stack of orders (returns their ``k`` costs).

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2], [1, 0, 2], [0, 2, 1]])
    >>> w = profile.pairwise_matrix()
    >>> round(pr.kemeny_cost(np.array([0, 1, 2]), w), 4), round(pr.kemeny_cost(np.array([2, 1, 0]), w), 4)
    (0.6667, 2.3333)
    >>> np.round(pr.kemeny_cost(np.array([[0, 1, 2], [1, 0, 2]]), w), 4)
    array([0.6667, 1.    ])
    """
    W = real_array(w, name="w", what="a square matrix of pairwise preferences")
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise InputError("w must be a square matrix of pairwise preferences")
    if not np.all(np.isfinite(W)):
        raise InputError("w must be finite (no NaN or infinity)")
    o = check_permutations(order, what="order")
    if o.shape[1] != W.shape[0]:
        raise InputError("the order and w must have the same number of items")
    # entry [k, a, b] = W[order_k[a], order_k[b]]; below the diagonal, the item at a comes later
    costs = np.tril(W[o[:, :, None], o[:, None, :]], -1).sum(axis=(1, 2))
    return float(costs[0]) if np.ndim(order) == 1 else costs
