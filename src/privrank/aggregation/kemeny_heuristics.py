"""Kemeny heuristics: KwikSort, local search, Borda and Copeland (polynomial time, any matrix).

Everything here reads only a matrix of pairwise weights ``W`` (``W[i, j]``: the weight of "``i``
before ``j``") or, for :func:`kwiksort`, single entries of it through a query function; on a
private matrix every function here is post-processing. KwikSort (Ailon, Charikar, Newman 2008) is
a 5-approximation in expectation under the probability constraints ``W[i, j] + W[j, i] = 1``, and
its comparison count is bounded for any tournament (:func:`kwiksort_query_cap`, which caps the
noisy queries of the private KwikSorts); :func:`local_search` polishes an order by insertion
moves; :func:`borda` and :func:`copeland` are positional rules. The solvers by name are
:func:`privrank.aggregation.kemeny.wfas_solver`'s; the exact solver is
:mod:`privrank.aggregation.kemeny_exact`'s.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from .._rng import as_generator
from .. import limits
from ..errors import InputError, check_fraction, check_whole, real_array
from ..metrics import kemeny_cost


def _matrix(W, *, stack: bool = False) -> np.ndarray:
    """A validated copy of ``W`` with a zero diagonal (``stack``: of every matrix of ``(B, m, m)``)."""
    A = real_array(W, name="the pairwise matrix", what="a square matrix of numbers")
    if A.ndim != 2 + stack or A.shape[-1] != A.shape[-2] or min(A.shape) < 1:
        raise InputError("the pairwise matrix must be square (items x items)"
                         + (", one per entry of a non-empty stack" if stack else ""))
    if not np.all(np.isfinite(A)):
        raise InputError("the pairwise matrix must be finite")
    A = A.copy()
    m = A.shape[-1]
    A[..., np.arange(m), np.arange(m)] = 0.0
    return A


# --------------------------------------------------------------------------------------------
# KwikSort
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class KwikSortRun:
    """Result of :func:`kwiksort`.

    Attributes
    ----------
    order
        Items best first.
    queries
        Number of pairs compared (each unordered pair at most once).
    unresolved
        Groups of items left unsorted because ``max_queries`` ran out (each placed at its
        position in ``order`` in a uniformly random internal order); empty for a full run.
    """

    order: np.ndarray
    queries: int
    unresolved: tuple = ()


def kwiksort(m: int, prefers, rng=None, *, max_queries: int | None = None) -> KwikSortRun:
    """KwikSort on ``m`` items asking ``prefers(a, b)`` which items go first.

    Parameters
    ----------
    m
        Number of items.
    prefers
        ``prefers(a, b) -> bool array``: True where item ``a[k]`` goes before item ``b[k]``
        (for a matrix: ``W[a, b] > 1/2``). It is called once per recursion level with every
        comparison of that level (the pivot of each sub-problem against its other members),
        so a noisy oracle sees at most ``m - 1`` queries per call and ``O(log m)`` calls.
    rng
        Pivot randomness.
    max_queries
        Stop comparing before this many queries would be exceeded (Hay et al.'s budgeted
        variant): sub-problems of the level that no longer fit, taken in a uniformly random
        order, stay unsorted in a uniformly random order and are reported in ``unresolved``.

    Returns
    -------
    KwikSortRun
    """
    gen = as_generator(rng)
    m = int(m)
    arr = np.arange(m)
    start = np.zeros(m, dtype=bool)  # start[p]: position p begins a sub-problem
    if m:
        start[0] = True
    queries = 0
    while True:
        seg = np.cumsum(start) - 1
        first = np.flatnonzero(start)
        sizes = np.diff(np.append(first, m))
        active = np.flatnonzero(sizes > 1)
        if active.size == 0:
            return KwikSortRun(arr, queries)
        need = sizes[active] - 1
        stop = False
        if max_queries is not None and queries + need.sum() > max_queries:
            shuffled = gen.permutation(active.size)
            fits = np.cumsum(need[shuffled]) <= max_queries - queries
            active = np.sort(active[shuffled[fits]])
            need = sizes[active] - 1
            stop = True
        pivot_pos = first[active] + np.floor(gen.random(active.size) * sizes[active]).astype(np.int64)
        pivot_of = np.full(first.size, -1)
        pivot_of[active] = pivot_pos
        in_active = pivot_of[seg] >= 0
        members = np.flatnonzero(in_active & (np.arange(m) != pivot_of[seg]))
        side = np.ones(m, dtype=np.int8)
        if members.size:
            ahead = np.asarray(prefers(arr[members], arr[pivot_of[seg[members]]]), dtype=bool)
            side[members] = np.where(ahead, 0, 2)
        queries += int(members.size)
        idx = np.lexsort((side, seg))
        key_seg, key_side = seg[idx], side[idx]
        arr = arr[idx]
        new_start = np.ones(m, dtype=bool)
        new_start[1:] = (key_seg[1:] != key_seg[:-1]) | ((key_side[1:] != key_side[:-1])
                                                         & in_active[idx][1:])
        start = new_start
        if stop:
            seg = np.cumsum(start) - 1
            first = np.flatnonzero(start)
            sizes = np.diff(np.append(first, m))
            groups = []
            for s in np.flatnonzero(sizes > 1):  # loop over unsorted groups
                block = slice(first[s], first[s] + sizes[s])
                arr[block] = gen.permutation(arr[block])
                groups.append(arr[block].copy())
            return KwikSortRun(arr, queries, tuple(groups))


def kwiksort_matrix(W, rng=None, *, best_of: int = 1) -> np.ndarray:
    """KwikSort on a matrix (``j`` before pivot ``i`` when ``W[j, i] > 1/2``), best of ``best_of`` runs."""
    A = _matrix(W)
    gen = as_generator(rng)
    runs = [kwiksort(A.shape[0], lambda a, b: A[a, b] > 0.5, gen).order for _ in range(_best_of(best_of))]
    return min(runs, key=lambda o: kemeny_cost(o, A))


def _best_of(k) -> int:
    k = check_whole(k, name="best_of")
    limits.check("BEST_OF", k, "best_of (KwikSort runs)",
                 "past a few dozen runs the cheapest changes little; solver 'local-search' polishes one")
    return k


@lru_cache(maxsize=256)
def kwiksort_query_cap(m: int, fail_probability: float | None = None) -> int:
    """Number of comparisons ``q`` KwikSort exceeds with probability at most ``fail_probability``.

    Chernoff bound on the comparison count ``C_m`` of QuickSort with a uniform pivot, whose
    moment generating function satisfies ``M_m(l) = e^{l(m-1)} (1/m) sum_u M_{u-1}(l)
    M_{m-u}(l)``: ``q = min_l ceil((ln M_m(l) - ln p)/l)``. It bounds KwikSort on *any*
    tournament, transitive or not (Alabi et al. notes §6.3: a transitive tournament's score
    sequence majorises every other's). Default ``p = m^-4`` (the paper's ``zeta/m^4`` with
    ``zeta = 1``); capped at ``m(m-1)/2``, the most KwikSort can ever ask.
    """
    m = int(m)
    D = m * (m - 1) // 2
    if m <= 2:
        return D
    p = float(m) ** -4 if fail_probability is None else check_fraction(fail_probability, name="fail_probability")

    def bound(log_l):
        lam = math.exp(log_l)
        logM = np.zeros(m + 1)
        for s in range(2, m + 1):  # O(m^2) recursion in log space
            logM[s] = lam * (s - 1) - math.log(s) + logsumexp(logM[:s] + logM[s - 1::-1])
        return (logM[m] - math.log(p)) / lam

    res = minimize_scalar(bound, bounds=(math.log(1e-4), math.log(20.0)), method="bounded",
                          options={"xatol": 1e-4})
    return int(min(D, math.ceil(res.fun - 1e-9)))


# --------------------------------------------------------------------------------------------
# local search, Borda, Copeland
# --------------------------------------------------------------------------------------------

def local_search(W, order) -> np.ndarray:
    """Polish ``order`` by insertion moves until no single move lowers ``K(order, W)``.

    Moving the item at position ``a`` to position ``t < a`` changes the cost by
    ``sum_{k=t}^{a-1} (W[o_k, o_a] - W[o_a, o_k])``, to ``t > a`` by
    ``-sum_{k=a+1}^{t} (W[o_k, o_a] - W[o_a, o_k])``. Passes over the items price every move of
    one item at once from the cumulative sums of its row (``O(m)``) and apply the best one when
    it lowers the cost; a pass without a move ends the search, so the result is a local optimum
    of all ``m^2`` insertion moves, in ``O(m^2)`` per pass.
    """
    A = _matrix(W)
    o = np.array(order, dtype=np.int64)
    m = A.shape[0]
    if o.shape != (m,) or np.any(np.sort(o) != np.arange(m)):
        raise InputError("order must be a permutation of the items")
    tol = 1e-12 * max(1.0, float(np.abs(A).max()))
    D = A.T - A  # D[x, y] = W[y, x] - W[x, y]: the gain of putting x before y instead of after
    cols = np.arange(m)
    S = np.zeros(m + 1)
    moved = m > 1
    while moved:
        moved = False
        for x in o.copy():
            a = int(np.flatnonzero(o == x)[0])
            np.cumsum(D[x, o], out=S[1:])
            # t < a: S[a] - S[t]; t > a: S[a + 1] - S[t + 1]
            delta = np.where(cols < a, S[a] - S[:m], S[a + 1] - S[1:])
            delta[a] = np.inf
            t = int(np.argmin(delta))
            if delta[t] < -tol:
                o = np.insert(np.delete(o, a), t, x)
                moved = True
    return o


def borda(W) -> np.ndarray:
    """Borda order: items by decreasing weighted wins ``sum_j W[i, j]`` (ties by index)."""
    A = _matrix(W)
    return np.argsort(-A.sum(axis=1), kind="stable")


def copeland(W) -> np.ndarray:
    """Copeland order: items by pairwise majorities won (``W[i, j] > W[j, i]``; a tie counts 1/2).

    Ties in the Copeland score are broken by the Borda score, then by item index.
    """
    A = _matrix(W)
    off = ~np.eye(A.shape[0], dtype=bool)
    wins = ((A > A.T) & off).sum(axis=1) + 0.5 * ((A == A.T) & off).sum(axis=1)
    return np.lexsort((np.arange(A.shape[0]), -A.sum(axis=1), -wins))
