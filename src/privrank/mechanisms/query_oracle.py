"""Noisy query oracles for the pairwise-preference matrix ``w`` (Alabi et al., Algorithms 1-3).

An oracle holds the data, answers a query ``(a, b)`` with a noisy estimate of ``w[a, b]`` (the
fraction of voters who put ``a`` before ``b``), counts the queries and refuses, by raising
:class:`QueryCapExceeded` *before drawing any answer*, a batch that would pass its cap. An
algorithm such as KwikSort asks it adaptively; the privacy argument needs nothing from the
algorithm, only from the oracle:

:class:`NoisyPairOracle` (central model; Alabi et al. Algorithm 1, Corollaries 6 and 7)
    Answers at most ``cap`` distinct pairs. Each answer is ``w[lo, hi]`` plus fresh noise for
    the unordered pair ``lo < hi`` (the reversed orientation is ``1 - answer``); repeated
    queries are served from a cache and cost nothing. One entry has sensitivity ``1/n``, so
    by adaptive composition ``cap`` Laplace answers of scale ``cap/(eps n)`` (exact discrete
    Laplace on the count of voters, :meth:`~privrank.mechanisms.pairwise_matrix.Budget.release`) are eps-DP and
    ``cap`` Gaussian answers of sd ``sqrt(cap)/(n mu)`` are ``mu``-Gaussian-DP. The scales come
    from a :class:`~privrank.mechanisms.pairwise_matrix.Budget` and a budget fraction. (The
    paper prints ``Lap(q/(eps n))`` for the half budget ``eps/2``: twice too little noise.)

:class:`LocalPairOracle` (local model; Alabi et al. Algorithm 2 with the corrections of the
notes §2.5 and §2.7)
    Public randomness fixed before any query: a uniformly random partition of the ``n``
    voters into ``m`` groups of sizes ``floor(n/m)`` or ``ceil(n/m)``, and a uniformly random
    group ``l(pair)`` for every unordered pair. A query of a new pair is answered by the
    voters of its group only, each sending binary randomized response at ``eps_0 = eps/tau``
    about their own bit ``1[a before b]`` (exactly ``eps_0``-local DP); the answer is the mean of
    the debiased reports (unbiased). Each group answers at most ``tau`` queries: a batch that
    would take any group past ``tau`` is refused before any voter responds, so every voter
    spends at most ``tau eps_0 = eps``. The counter is incremented once per query (the
    paper's pseudo-code increments it once per voter, an erratum).
"""
from __future__ import annotations

import math

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_epsilon
from .randomized_response import debias, randomize_bits


class QueryCapExceeded(Exception):
    """A batch of queries would pass the oracle's cap; nothing of the batch was answered."""


class _CachedPairs:
    """Answers keyed by the unordered pair, so a repeated query returns the stored value."""

    def __init__(self, m: int):
        self.m = int(m)
        self.keys = np.empty(0, dtype=np.int64)
        self.values = np.empty(0)

    def split(self, a, b):
        """Canonical keys of the queries and the distinct keys not answered yet."""
        a = np.asarray(a, dtype=np.int64).ravel()
        b = np.asarray(b, dtype=np.int64).ravel()
        if a.shape != b.shape:
            raise InputError("a and b must have the same length")
        if np.any(a == b) or np.any((a < 0) | (a >= self.m) | (b < 0) | (b >= self.m)):
            raise InputError("queries must name two different items in range")
        key = np.minimum(a, b) * self.m + np.maximum(a, b)
        new = np.setdiff1d(key, self.keys)
        return a, b, key, new

    def store(self, keys, values):
        k = np.concatenate([self.keys, keys])
        v = np.concatenate([self.values, values])
        order = np.argsort(k)
        self.keys, self.values = k[order], v[order]

    def lookup(self, a, b, key):
        value = self.values[np.searchsorted(self.keys, key)]
        return np.where(a < b, value, 1.0 - value)


class NoisyPairOracle:
    """Central noisy answers to queries of ``w`` with a cap (module docstring).

    Parameters
    ----------
    preference
        Exact ``w[a, b]`` for index arrays (e.g. :meth:`privrank.data.rankings.Rankings.preference`).
    m, n
        Number of items and of voters (public).
    cap
        Most distinct pairs ever answered.
    budget, fraction
        The budget and the fraction of it this oracle spends.
    rng
        Noise randomness.
    """

    def __init__(self, preference, *, m: int, n: int, cap: int, budget, fraction: float = 1.0,
                 rng=None):
        self.cap = int(cap)
        if self.cap < 1:
            raise InputError("the query cap must be >= 1")
        self.n = int(n)
        self.scale = budget.scale(fraction, self.cap / self.n, math.sqrt(self.cap) / self.n)
        self.queries = 0
        self._preference = preference
        self._budget = budget
        self._rng = as_generator(rng)
        self._cache = _CachedPairs(m)

    def __call__(self, a, b) -> np.ndarray:
        """Noisy ``w[a[k], b[k]]``; raises :class:`QueryCapExceeded` past the cap."""
        a, b, key, new = self._cache.split(a, b)
        if new.size:
            if self.queries + new.size > self.cap:
                raise QueryCapExceeded(f"more than {self.cap} queries")
            m = self._cache.m
            exact = np.asarray(self._preference(new // m, new % m), dtype=float)
            self._cache.store(new, self._budget.release(exact, self.n, self.scale, self._rng))
            self.queries += int(new.size)
        return self._cache.lookup(a, b, key)

    def prefers(self, a, b) -> np.ndarray:
        """True where the noisy answer puts ``a`` before ``b`` (``w~[a, b] > 1/2``)."""
        return self(a, b) > 0.5


class LocalPairOracle:
    """Local-model answers to queries of ``w`` with a per-group cap ``tau`` (module docstring).

    Parameters
    ----------
    orders
        ``(n, m)`` array, one order (best first) per voter; requires ``n >= m``.
    epsilon
        Each voter's budget for all the queries together; ``eps_0 = epsilon/tau`` per answer.
    tau
        Most queries any group answers.
    rng
        Public randomness (partition, pair-to-group map) and the voters' randomized response.
    """

    def __init__(self, orders, *, epsilon, tau: int, rng=None):
        o = np.asarray(orders, dtype=np.int64)
        n, m = o.shape
        if n < m:
            raise InputError(f"the local query oracle needs at least as many rankings as items "
                             f"(n >= m = {m}): every item pair is answered by a group of n/m voters")
        self.tau = int(tau)
        if self.tau < 1:
            raise InputError("tau must be >= 1")
        self.epsilon_per_answer = check_epsilon(epsilon) / self.tau
        self._rng = as_generator(rng)
        self._positions = np.argsort(o, axis=1)
        self._members = self._rng.permutation(n)  # group g: members[offsets[g]:offsets[g+1]]
        self._sizes = np.array([len(x) for x in np.array_split(np.arange(n), m)])
        self._offsets = np.concatenate([[0], np.cumsum(self._sizes)])
        self._group_of_pair = self._rng.integers(0, m, size=m * m)  # keyed by lo * m + hi
        self.group_load = np.zeros(m, dtype=np.int64)
        self.answers_per_voter = np.zeros(n, dtype=np.int64)
        self.queries = 0
        self._cache = _CachedPairs(m)

    def __call__(self, a, b) -> np.ndarray:
        """Estimated ``w[a[k], b[k]]``; raises :class:`QueryCapExceeded` if a group would pass ``tau``."""
        a, b, key, new = self._cache.split(a, b)
        if new.size:
            m = self._cache.m
            groups = self._group_of_pair[new]
            load = self.group_load + np.bincount(groups, minlength=m)
            if np.any(load > self.tau):
                raise QueryCapExceeded(f"a group would answer more than {self.tau} queries")
            self.group_load = load
            sizes = self._sizes[groups]
            query_of = np.repeat(np.arange(new.size), sizes)
            start = np.repeat(self._offsets[groups] - np.cumsum(sizes) + sizes, sizes)
            voters = self._members[start + np.arange(query_of.size)]
            lo, hi = new[query_of] // m, new[query_of] % m
            bits = (self._positions[voters, lo] < self._positions[voters, hi]).astype(float)
            reports = randomize_bits(bits, self.epsilon_per_answer, self._rng)  # on each device
            estimate = np.bincount(query_of, debias(reports, self.epsilon_per_answer),
                                   minlength=new.size) / sizes
            self.answers_per_voter += np.bincount(voters, minlength=self.answers_per_voter.size)
            self._cache.store(new, estimate)
            self.queries += int(new.size)
        return self._cache.lookup(a, b, key)

    def prefers(self, a, b) -> np.ndarray:
        """True where the estimate puts ``a`` before ``b`` (``w~[a, b] > 1/2``)."""
        return self(a, b) > 0.5
