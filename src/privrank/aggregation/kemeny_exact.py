"""Exact Kemeny aggregation: subset dynamic programming, the integer program, and certified gaps.

:func:`exact_kemeny` returns an order of least Kemeny cost ``K(order, W) = sum over pairs a before
b of W[b, a]`` of any real matrix ``W``: by dynamic programming over subsets (:func:`exact_dp`) for
``m <= DP_MAX_ITEMS``, otherwise by the integer program over ordering variables with lazily added
triangle constraints (:func:`exact_ilp`), each strongly connected component of the weak-majority
graph on its own (:func:`majority_components`). The solvers by name are
:func:`privrank.aggregation.kemeny.wfas_solver`'s; the heuristics that start and polish
:func:`certify`'s search are :mod:`privrank.aggregation.kemeny_heuristics`'s.

Cost of the exact solver, and what happens above it
---------------------------------------------------
Above ``DP_MAX_ITEMS`` the exact solver first splits the items into the strongly connected
components of the weak-majority graph (``i -> j`` when ``W[i, j] >= W[j, i]``). Between two
components every majority is strict and points the same way, so some optimal order puts the
components in their majority order (the extended Condorcet criterion; exchanging a later item
ahead of an earlier one only adds ``W[y, x] - W[x, y] > 0``, for any real weights), and each
component is solved on its own: singletons at once, up to ``DP_MAX_ITEMS`` items by subset DP,
larger ones by the integer program. The cost is decided by the largest component, the *cyclic
core*: a transitive majority (most real profiles) costs ``O(m^2)``; a core of 24 near-tied items
takes well under a second here, of 28 seconds, of 50 minutes, of 100 items hours. So before it
starts, the exact solver measures the core and compares it with the limit
``PRIVRANK_MAX_EXACT_ITEMS`` (:mod:`privrank.limits`, default 25), and it gives each integer
program at most ``PRIVRANK_MAX_EXACT_SECONDS`` (default 60) of wall time. Past either:

* :func:`exact_kemeny` (the non-private ``aggregate --method exact`` and the Python API) refuses
  with an :class:`ExactTooCostly` error (an :class:`~privrank.errors.InputError`) that names the
  limit, a heuristic to use instead (``--method kwiksort``, ``--solver local-search`` or
  ``kwiksort``) and how to insist (raise ``PRIVRANK_MAX_EXACT_ITEMS`` to the core size, and
  ``PRIVRANK_MAX_EXACT_SECONDS`` to the time to wait);
* the ``exact`` and ``auto`` solvers of :func:`~privrank.aggregation.kemeny.wfas_solver` -- what
  the private methods call, after their privacy is spent -- do not throw the release away: they
  return the ``local-search`` order and warn (``UtilityWarning``, printed by the CLI) that it is
  **not proven optimal**.

Certified gaps
--------------
:func:`certify` takes any order and returns a :class:`KemenyCertificate`: a (possibly cheaper)
order, its cost and a lower bound on every order's cost, found within a time budget (default
``CERTIFY_SECONDS`` = 10 s) by the same component split, local search with perturbations, the
triangle relaxation and branch and bound. The bound is valid for any real matrix however early
the search stops; when it meets the cost the order is proved optimal.

Privacy never depends on the solver: it only post-processes the released matrix.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from .._rng import as_generator
from .. import limits
from ..errors import InputError, check_positive, check_whole
from ..metrics import kemeny_cost
from .kemeny_heuristics import _matrix, borda, kwiksort, local_search

DP_MAX_ITEMS = 14
CERTIFY_SECONDS = 10.0  # default time of :func:`certify`: improving an order and proving a lower bound
_DP_CELLS = 1 << 23  # (matrices x subsets x items) held at once by a stacked exact_dp


def exact_dp(W) -> np.ndarray:
    """Exact Kemeny order (best first) by dynamic programming over subsets (``m <= 22``).

    ``W`` is one matrix, or a stack ``(B, m, m)`` whose orders ``(B, m)`` are computed together
    (vectorised over the stack in chunks of bounded memory), each as for the matrix alone.
    """
    stack = np.ndim(W) == 3
    A = _matrix(W, stack=stack) if stack else _matrix(W)[None]
    m = A.shape[1]
    if m > 22:
        raise InputError("subset dynamic programming needs m <= 22; use the integer program")
    full = 1 << m
    subsets = np.arange(full, dtype=np.int64)
    bits = ((subsets[:, None] >> np.arange(m)) & 1).astype(np.int8)
    size = bits.sum(axis=1)
    by_size = np.argsort(size, kind="stable")
    bounds = np.searchsorted(size[by_size], np.arange(m + 2))
    onehot = (1 << np.arange(m)).astype(np.int64)
    chunk = max(1, _DP_CELLS // (full * m))
    orders = np.empty((A.shape[0], m), dtype=np.int64)
    for start in range(0, A.shape[0], chunk):  # chunks of the stack bound the memory
        block = A[start:start + chunk]
        rows = np.arange(block.shape[0])
        f = np.zeros((block.shape[0], full))
        last = np.zeros((block.shape[0], full), dtype=np.int8)
        for k in range(1, m + 1):  # one subset size at a time, vectorised over subsets and the stack
            S = by_size[bounds[k]:bounds[k + 1]]
            B = bits[S]
            # v last: f(S - v) + sum_{u in S} W[v, u]
            cand = B.astype(float) @ block.transpose(0, 2, 1) + f[:, S[:, None] ^ onehot[None, :]]
            cand[:, B == 0] = np.inf
            best = np.argmin(cand, axis=2)
            f[:, S] = np.take_along_axis(cand, best[:, :, None], axis=2)[:, :, 0]
            last[:, S] = best
        S = np.full(block.shape[0], full - 1, dtype=np.int64)
        for p in range(m - 1, -1, -1):
            item = last[rows, S].astype(np.int64)
            orders[start + rows, p] = item
            S ^= onehot[item]
    return orders if stack else orders[0]


def _violated_triangles(X: np.ndarray, limit: int):
    """Triples ``i < j < k`` whose triangle constraint ``0 <= x_ij + x_jk - x_ik <= 1`` fails.

    ``X[i, j]`` is ``x_ij`` for ``i < j`` (the upper triangle is read). On a 0/1 solution these
    are exactly the 3-cycles of its tournament. The ``limit`` most violated are returned,
    found one first item at a time (``O(m^3)`` work in ``m`` vectorised steps).
    """
    m = X.shape[0]
    found, score = [], []
    for i in range(m - 2):  # loop over the first item, vectorised over (j, k)
        J, K = np.triu_indices(m - i - 1, 1)
        J, K = J + i + 1, K + i + 1
        s = X[i, J] + X[J, K] - X[i, K]
        excess = np.maximum(s - 1.0, -s)
        bad = excess > 1e-7
        if bad.any():
            found.append((np.full(int(bad.sum()), i), J[bad], K[bad]))
            score.append(excess[bad])
    if not found:
        return (np.empty(0, dtype=np.int64),) * 3
    tri = [np.concatenate(a) for a in zip(*found)]
    keep = np.argsort(-np.concatenate(score), kind="stable")[:limit]
    return tuple(t[keep] for t in tri)


def _triangle_rows(found, n_vars: int):
    """The constraint rows ``x_ij + x_jk - x_ik`` of the triangles found (lists of variable indices)."""
    p_ij, p_jk, p_ik = (np.concatenate(a) for a in zip(*found))
    rows = np.repeat(np.arange(p_ij.size), 3)
    cols = np.stack([p_ij, p_jk, p_ik], axis=1).ravel()
    return csr_matrix((np.tile([1.0, 1.0, -1.0], p_ij.size), (rows, cols)), shape=(p_ij.size, n_vars))


def exact_ilp(W, *, time_limit: float | None = None) -> np.ndarray:
    """Exact Kemeny order by integer programming with lazily added triangle constraints.

    Rounds: (1) the majority tournament (no constraint) -- optimal if transitive; (2) the
    linear relaxation, adding the most violated triangle constraints until it satisfies all
    of them; (3) the integer program with those constraints, adding the triangles its
    solution violates until the solution is transitive. Solved with
    :func:`scipy.optimize.milp` (HiGHS) at zero optimality gap. ``time_limit`` (seconds, all
    rounds together) turns an unfinished solve into an :class:`InputError` instead of a
    suboptimal answer.
    """
    A = _matrix(W)
    m = A.shape[0]
    iu, ju = np.triu_indices(m, 1)
    index = np.zeros((m, m), dtype=np.int64)
    index[iu, ju] = np.arange(iu.size)
    c = A[ju, iu] - A[iu, ju]  # x_ij = 1 costs W[j, i]; x_ij = 0 costs W[i, j]
    deadline = None if time_limit is None else time.monotonic() + float(time_limit)
    x = (c < 0).astype(float)  # optimum with no triangle constraint: the majority tournament
    integer = False
    found: list[tuple] = []
    while True:
        if np.all((x == 0) | (x == 1)):
            before = np.zeros((m, m), dtype=bool)
            before[iu, ju] = x == 1
            before[ju, iu] = x == 0
            wins = before.sum(axis=1)
            if np.unique(wins).size == m:  # transitive, hence optimal: sort by wins
                return np.argsort(-wins, kind="stable")
        X = np.zeros((m, m))
        X[iu, ju] = x
        ti, tj, tk = _violated_triangles(X, limit=max(1000, 20 * m))
        if ti.size == 0:  # the relaxation satisfies every triangle: solve in integers
            integer = True
        else:
            found.append((index[ti, tj], index[tj, tk], index[ti, tk]))
        M = _triangle_rows(found, iu.size)
        options = {"mip_rel_gap": 0.0}
        if deadline is not None:
            options["time_limit"] = max(deadline - time.monotonic(), 1e-3)
        # scipy-stubs type the options as a TypedDict, which a dict built a key at a time is not
        res = milp(c, integrality=np.full(iu.size, 1 if integer else 0), bounds=Bounds(0, 1),
                   constraints=LinearConstraint(M, 0.0, 1.0), options=options)  # type: ignore[arg-type]
        if res.status != 0 or res.x is None:
            raise InputError("the exact Kemeny integer program did not finish "
                             f"({res.message.strip()}); use solver 'local-search' for large, "
                             "noisy instances")
        x = np.clip(res.x, 0.0, 1.0)
        if integer:
            x = np.round(x)


class ExactTooCostly(InputError):
    """The exact Kemeny solver was not started, or was stopped, by its limits (module docstring).

    ``reason`` says why in words that suit both a refusal and a fallback warning.
    """

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def majority_components(W) -> list[np.ndarray]:
    """Strongly connected components of the weak-majority graph of ``W``, in majority order.

    ``i -> j`` when ``W[i, j] >= W[j, i]`` (a tie points both ways). Every item of an earlier
    component beats every item of a later one by a strict majority, so some exact Kemeny order
    lists the components in this order (module docstring).
    """
    A = _matrix(W)
    m = A.shape[0]
    G = (A >= A.T) & ~np.eye(m, dtype=bool)
    graph = csr_matrix(G)
    count, label = connected_components(graph, directed=True, connection="strong")  # type: ignore[arg-type]  # bool
    # the condensation of a complete digraph is a transitive tournament: an item beats exactly
    # the items of the components after its own
    outside = np.sum(G & (label[:, None] != label[None, :]), axis=1)
    rank = np.zeros(count, dtype=np.int64)
    rank[label] = outside
    return [np.flatnonzero(label == c) for c in np.argsort(-rank, kind="stable")]


def exact_kemeny(W: ArrayLike, *, max_items: int | None = None, time_limit: float | None = None) -> np.ndarray:
    """An exact Kemeny order of ``W`` (best first): subset DP for small ``m``, else by components.

    Up to ``DP_MAX_ITEMS`` items, subset dynamic programming. Beyond, each strongly connected
    component of the majority graph (:func:`majority_components`) is solved alone, by subset DP
    or by :func:`exact_ilp`. Refuses (:class:`ExactTooCostly`, before any solve) when the largest
    component has more than ``max_items`` items, and when the integer programs run past
    ``time_limit`` seconds; both default to :mod:`privrank.limits` (``PRIVRANK_MAX_EXACT_ITEMS``,
    ``PRIVRANK_MAX_EXACT_SECONDS``). See the module docstring.

    Examples
    --------
    >>> import privrank as pr
    >>> profile = pr.Rankings.from_orders([[0, 1, 2], [1, 2, 0], [2, 0, 1], [0, 1, 2]])
    >>> w = profile.pairwise_matrix()
    >>> order = pr.exact_kemeny(w)
    >>> order, pr.kemeny_cost(order, w)
    (array([0, 1, 2]), 1.0)
    """
    cap = limits.limit("EXACT_ITEMS") if max_items is None else check_whole(max_items, name="max_items")
    seconds = limits.limit("EXACT_SECONDS") if time_limit is None else check_positive(time_limit, name="time_limit")
    A = _matrix(W)
    m = A.shape[0]
    if m <= DP_MAX_ITEMS:
        return exact_dp(A)
    parts = majority_components(A)
    core = max(p.size for p in parts)
    insist = (f"insist with {limits.variable('EXACT_ITEMS')}={core} in the environment "
              f"({limits.variable('EXACT_SECONDS')} = {seconds:g} bounds the wait; past it the solve stops, "
              "not proven optimal)")
    if core > DP_MAX_ITEMS and core > cap:
        reason = (f"{core} of the {m} items form one cycle of pairwise majorities (a strongly connected "
                  f"component), above the limit {limits.variable('EXACT_ITEMS')} = {cap:g} of what the exact "
                  "solver proves optimal in about a minute")
        raise ExactTooCostly(f"exact Kemeny: {reason}; use a heuristic (solver='local-search' or 'kwiksort'; CLI: "
                             f"--solver local-search, or --method kwiksort), or {insist}", reason)
    deadline = time.monotonic() + seconds
    order = []
    for p in parts:
        if p.size <= DP_MAX_ITEMS:
            order.append(p if p.size == 1 else p[exact_dp(A[np.ix_(p, p)])])
            continue
        try:
            order.append(p[exact_ilp(A[np.ix_(p, p)], time_limit=max(deadline - time.monotonic(), 1e-3))])
        except InputError:
            if time.monotonic() < deadline:
                raise
            reason = (f"the exact integer program on a cycle of {p.size} items did not finish within "
                      f"{limits.variable('EXACT_SECONDS')} = {seconds:g} seconds")
            raise ExactTooCostly(f"exact Kemeny: {reason}, so its order is not proven optimal; use the solver "
                                 "local-search or kwiksort (CLI: --solver), or raise "
                                 f"{limits.variable('EXACT_SECONDS')} to wait longer", reason) from None
    return np.concatenate(order)


@dataclass(frozen=True)
class KemenyCertificate:
    """An order of a matrix ``W`` with a proof of how far from optimal it can be (:func:`certify`).

    Attributes
    ----------
    order
        Items best first.
    cost
        ``K(order, W)``.
    lower_bound
        A number no order's cost on ``W`` is below: valid for any real ``W``, whether or not the
        search that proved it ran to the end.
    proved_optimal
        True when the bound meets the cost (up to the solvers' tolerance): ``order`` is an exact
        Kemeny order of ``W``, and ``gap`` is 0.
    """

    order: np.ndarray
    cost: float
    lower_bound: float
    proved_optimal: bool

    @property
    def gap(self) -> float:
        """Certified optimality gap ``cost - lower_bound`` (0 when proved optimal)."""
        return 0.0 if self.proved_optimal else max(self.cost - self.lower_bound, 0.0)


#: work of the seeded search for a cheaper order (:func:`_perturbed_search`), in matrix entries: a try
#: costs about ``k^2`` (a few insertion passes), and at least 100 tries are made (about 5 s at k = 300)
SEARCH_WORK = 15_000_000


def _perturbed_search(B, order, gen, patience: int = 300) -> np.ndarray:
    """Iterated local search: shuffle a random stretch of 8 items of the best order (or, one time in
    four, start from a fresh KwikSort), polish by insertion moves, keep if cheaper; until ``patience``
    tries in a row bring nothing or ``max(100, SEARCH_WORK / k^2)`` tries are made. A fixed amount of
    work, never a time: a seeded search returns the same order on any machine."""
    k = B.shape[0]
    best, cost = order, kemeny_cost(order, B)
    span = min(8, k)
    idle, tries = 0, max(100, SEARCH_WORK // (k * k))
    for _ in range(tries):
        if idle >= patience:
            break
        if gen.random() < 0.25:
            start = kwiksort(k, lambda a, b: B[a, b] > B[b, a], gen).order
        else:
            start = best.copy()
            at = int(gen.integers(0, k - span + 1))
            start[at:at + span] = gen.permutation(start[at:at + span])
        o = local_search(B, start)
        c = kemeny_cost(o, B)
        idle = 0 if c < cost else idle + 1
        if c < cost:
            best, cost = o, c
    return best


def _certify_block(B, improve: bool, deadline: float | None, gen):
    """Order (if ``improve``; else the identity) and lower bound of one strongly connected block ``B``;
    ``deadline`` None: the closed-form bound only, and no search beyond local search.

    Up to ``DP_MAX_ITEMS`` items subset DP solves it. Beyond, the order comes first, from a fixed
    amount of work: local search, then (with a deadline) the seeded iterated local search
    (:func:`_perturbed_search`), so a seeded run gives the same order on any machine. Then, until
    the deadline, the bound: the linear relaxation with lazily added triangle constraints and, once
    no triangle is violated, the integer program with the triangles found (HiGHS branch and bound;
    its dual bound at the time limit is a bound of this relaxation of the full model, hence valid).
    How far the bound gets depends on the time; the order never does.
    """
    k = B.shape[0]
    if k <= DP_MAX_ITEMS:
        best = exact_dp(B)
        return (best if improve else np.arange(k)), kemeny_cost(best, B)
    iu, ju = np.triu_indices(k, 1)
    index = np.zeros((k, k), dtype=np.int64)
    index[iu, ju] = np.arange(iu.size)
    c = B[ju, iu] - B[iu, ju]  # x_ij = 1 (i first) costs B[j, i]; x_ij = 0 costs B[i, j]
    base = float(B[iu, ju].sum())
    tol = 1e-9 * (1.0 + base + float(np.abs(c).sum()))
    order = local_search(B, np.arange(k)) if improve else np.arange(k)
    if improve and deadline is not None:
        order = _perturbed_search(B, order, gen)
    cost = kemeny_cost(order, B)
    x = (c < 0).astype(float)
    bound = base + float(np.minimum(c, 0.0).sum())
    integer, found = False, []  # type: bool, list[tuple[np.ndarray, np.ndarray, np.ndarray]]
    while deadline is not None and time.monotonic() < deadline and bound < cost - tol:
        X = np.zeros((k, k))
        X[iu, ju] = x
        ti, tj, tk = _violated_triangles(X, limit=max(1000, 20 * k))
        if ti.size == 0 and (integer or not found):  # a transitive 0/1 optimum of a relaxation: exact
            bound = max(bound, base + float(c @ x))
            break
        if ti.size == 0:  # the relaxation is solved: branch and bound
            integer = True
        else:
            found.append((index[ti, tj], index[tj, tk], index[ti, tk]))
        res = milp(c, integrality=np.full(iu.size, int(integer)), bounds=Bounds(0, 1),
                   constraints=LinearConstraint(_triangle_rows(found, iu.size), 0.0, 1.0),
                   options={"time_limit": max(deadline - time.monotonic(), 1e-3), "mip_rel_gap": 0.0})
        if res.status == 0 or (integer and res.status == 1):  # solved, or branch and bound timed out
            proven = res.mip_dual_bound if integer else res.fun
            if proven is not None and np.isfinite(proven):
                bound = max(bound, base + float(proven))
        if res.status != 0 or res.x is None:  # stopped by the time limit: keep the proven bound
            break
        x = np.clip(res.x, 0.0, 1.0)
        if integer:
            x = np.round(x)
    return order, bound


def certify(W, order=None, *, time_limit: float = CERTIFY_SECONDS, improve: bool = True,
            rng=None) -> KemenyCertificate:
    """An order of ``W`` and a lower bound on every order's cost, the bound within ``time_limit`` seconds.

    The items are first split into the strongly connected components of the weak-majority graph
    (:func:`majority_components`). For any real ``W`` and any order ``pi``, sorting ``pi``
    stably by component (components in majority order, each keeping its internal order) changes
    only pairs from different components, each of which then pays ``min(W[x, y], W[y, x])``, its
    least possible cost; so ``K(pi) >= sum over components of the least internal cost + sum over
    pairs across components of min(W[x, y], W[y, x])``, and a lower bound per component gives a
    lower bound for ``W``. Each component with more than one item gets a share of the time
    proportional to its size and is bounded by subset DP (up to ``DP_MAX_ITEMS`` items) or by the
    triangle relaxation and then branch and bound (:func:`_certify_block`); a bound found when the
    time runs out is as valid as one found at the end, only weaker. ``time_limit=0`` gives the
    closed form, the sum of ``min(W[i, j], W[j, i])`` over components' pairs and the exact solution
    of small components.

    The order never depends on the time: it is searched first, with a fixed amount of work (local
    search and, unless ``time_limit=0``, a seeded iterated local search), so a seeded call returns
    the same order on any machine, under any load. Only the lower bound, and so the gap and
    ``proved_optimal``, can be weaker on a slower machine.

    Parameters
    ----------
    W
        Any real square matrix (noisy, unclipped releases included).
    order
        The order to certify (default: Borda's).
    time_limit
        Seconds of the search for a bound (default ``CERTIFY_SECONDS`` = 10), or less when the bound
        meets the cost; the search for an order comes before, and is not counted. HiGHS checks the limit between its own steps, so branch and bound may end a few
        seconds late (about 10 s was seen at 50 items on a loaded machine).
    improve
        Also search for a cheaper order (by component, local search, iterated local search):
        the result's order is then never costlier than ``order``. With False the certificate is
        of ``order`` itself.
    rng
        Randomness of the search for orders.

    Returns
    -------
    KemenyCertificate
        ``proved_optimal`` when the bound meets the cost up to the solvers' tolerance
        (``1e-9`` relative to the matrix's total weight).
    """
    A = _matrix(W)
    m = A.shape[0]
    o = borda(A) if order is None else np.asarray(order, dtype=np.int64)
    if o.shape != (m,) or np.any(np.sort(o) != np.arange(m)):
        raise InputError("order must be a permutation of the items")
    seconds = check_positive(time_limit, name="time_limit", allow_zero=True)
    gen = as_generator(rng)
    deadline = time.monotonic() + seconds
    parts = majority_components(A)
    comp = np.empty(m, dtype=np.int64)
    for r, p in enumerate(parts):
        comp[p] = r
    lower = float(np.minimum(A, A.T)[comp[:, None] < comp[None, :]].sum())  # pairs across components
    if improve:
        o = o[np.argsort(comp[o], kind="stable")]  # never costlier (docstring)
    pieces, left = [], sum(p.size for p in parts if p.size > 1)
    for r, p in enumerate(parts):
        items = o[comp[o] == r]  # the component in the order's own sequence
        if items.size == 1:
            pieces.append(items)
            continue
        share = max(deadline - time.monotonic(), 0.0) * items.size / left
        left -= items.size
        local, bound = _certify_block(A[np.ix_(items, items)], improve, time.monotonic() + share if seconds else None,
                                      gen)
        pieces.append(items[local])
        lower += bound
    if improve:
        o = np.concatenate(pieces)
    cost = float(kemeny_cost(o, A))
    proved = lower >= cost - 1e-9 * (1.0 + float(np.abs(A).sum()))
    # the optimum is at most the order's cost: a bound above it by rounding is the cost itself
    return KemenyCertificate(o, cost, cost if proved else lower, bool(proved))
