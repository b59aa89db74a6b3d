"""The exact integer tally of comparison records, and the per-record codes it is counted from.

:class:`ComparisonTally` is the exact form of the per-pair statistic
(:class:`~privrank.data.pair_counts.PairCounts`): integer counts of records and of half-wins per
privacy level (the epsilon of randomized reports) and pair. Integer counts add up exactly in any
order, so a tally computed in one piece, in batches or on the partitions of a cluster is
identical, and every release derived from it is identical too.

The privacy levels of an epsilon column are :class:`EpsilonLevels` (:func:`epsilon_levels`,
:func:`shared_epsilon`); each record is counted under its code (:func:`record_codes`), or
counted in the order given and folded (:func:`folds`, :func:`folded_counts`). The epsilons a
survey asked its respondents to use are a declared public parameter (:func:`declared_set`).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from ..errors import InputError, epsilons_out_of_range, real_array
from ..html_cards import Shown
from .pair_counts import PairCounts, group_sums


def shared_epsilon(epsilon) -> float | None:
    """The epsilon every record shares, or None when they differ: a broadcast view (one value for
    all, as the local pipeline makes it) is read once, any other array compared min to max."""
    eps = np.asarray(epsilon, dtype=float)
    if eps.size and (eps.strides == (0,) or eps.min() == eps.max()):
        return float(eps.flat[0])
    return None


def declared_set(epsilons, present, carried=None) -> tuple[float, ...]:
    """The declared epsilons of randomized reports, checked: ``epsilons`` (one number or several)
    as distinct floats in increasing order.

    Each must lie in the range of a report's epsilon; every epsilon the reports carry
    (``present``, their distinct values) must be one of them, matched exactly (CSV and Arrow read
    a number as Python does, and a report written by privrank keeps its float); and a declaration
    the reports already carry (``carried``) must be the same. Refusals name no report and none of
    their epsilons: a report at an undeclared epsilon is what a fake respondent would send, since
    debiasing weighs a report ``(e^eps+1)/(e^eps-1)`` times its answer.
    """
    values = real_array(epsilons, name="the declared epsilons", what="numbers").ravel()
    if not values.size:
        raise InputError("declare at least one epsilon")
    bad, why = epsilons_out_of_range(values)
    if bad.size:
        raise InputError(f"a declared {why}")
    declared = tuple(float(x) for x in np.unique(values))
    if carried is not None and tuple(carried) != declared:
        raise InputError("the declared epsilons differ from those the reports already carry; declare the same ones")
    if not np.isin(np.asarray(present, dtype=float), declared).all():
        raise InputError(f"some reports carry an epsilon that was not declared ({epsilon_list(declared)}"
                         "): every report must have been randomized at a declared epsilon, so the reports are "
                         "refused (declare every epsilon the survey asked for)")
    return declared


def epsilon_list(epsilons) -> str:
    """Declared epsilons as text: ``0.5, 1``."""
    return ", ".join(f"{e:g}" for e in epsilons)


class EpsilonLevels(NamedTuple):
    """An epsilon column as its distinct values in increasing order and each record's index into
    them (the scalar 0 when all records share one value)."""

    values: np.ndarray
    index: np.ndarray | np.int64  # type: ignore[assignment]  # the field hides tuple.index, which nothing here calls

    @classmethod
    def of_groups(cls, group_epsilon, group, group_records=None, grouped: bool = False) -> "EpsilonLevels":
        """The levels of records whose epsilon is that of their group (``group_epsilon[group]``,
        e.g. users), found among the groups that have records (``group_records``: how many each
        has, counted here when not given), not among the records. ``grouped``: the records come
        grouped by group, in increasing order (with ``group_records``), so each group's index is
        repeated over its run of records instead of looked up record by record."""
        group_epsilon = np.asarray(group_epsilon, dtype=float)
        if group_records is None:
            group_records = np.bincount(group, minlength=group_epsilon.size)
        present = np.asarray(group_records) > 0
        values, inverse = np.unique(group_epsilon[present], return_inverse=True)
        if values.size == 1:
            return cls(values, np.int64(0))
        code = np.zeros(group_epsilon.size, dtype=np.int8 if values.size <= 127 else np.int16
                        if values.size <= 32767 else np.int64)
        code[present] = inverse
        return cls(values, np.repeat(code, group_records) if grouped else code[group])

    def column(self, n: int) -> np.ndarray:
        """One epsilon per record (a broadcast view when all share one)."""
        if np.ndim(self.index) == 0:
            return np.broadcast_to(self.values[int(self.index)], (n,))
        return self.values[self.index]


def epsilon_levels(epsilon, n: int) -> EpsilonLevels:
    """Distinct epsilons in increasing order and each record's index into them.

    ``epsilon`` is one value per record, a scalar shared by all ``n`` records (then the index
    is the scalar 0, it broadcasts, and nothing is sorted) or already :class:`EpsilonLevels`.
    """
    if isinstance(epsilon, EpsilonLevels):
        return epsilon
    if np.ndim(epsilon) == 0:
        return EpsilonLevels(np.array([float(epsilon)]), np.int64(0))
    eps = np.asarray(epsilon, dtype=float)
    one = shared_epsilon(eps)
    if one is not None:  # one level: nothing to hash or sort
        return EpsilonLevels(np.array([one]), np.int64(0))
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(pa.array(eps))  # hashing, not sorting the records: O(n)
    distinct = encoded.dictionary.to_numpy()
    order = np.argsort(distinct)
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return EpsilonLevels(distinct[order], rank[encoded.indices.to_numpy()])


def record_codes(m: int, a, b, values2, level=0) -> np.ndarray:
    """The code of each record, in ``[0, n_levels * m * m * 3)`` (the map step of every tally).

    A record comparing items ``a`` and ``b`` (indices) at privacy level ``level`` with
    ``values2`` (2 x its value for "a beats b", see :meth:`ComparisonTally.from_records`) has
    code ``((level * m + lo) * m + hi) * 3 + v``, where ``lo < hi`` are its two items and ``v``
    its doubled value for "lo beats hi".
    """
    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    v = np.asarray(values2, dtype=np.int8)
    code = np.minimum(a, b)
    code *= 3 * m
    hi = np.maximum(a, b)
    hi *= 3
    code += hi
    code += v + (a > b).view(np.int8) * (np.int8(2) - 2 * v)  # 2 - v where swapped (int8 arithmetic: 20x np.where)
    if np.any(level):
        code += np.asarray(level) * np.int64(3 * m * m)  # small level codes widen in the product
    return code


#: records per step of a per-record computation whose temporaries should stay in the CPU cache
CACHE_CHUNK = 1 << 16


def folds(size: int, n_records: int) -> bool:
    """Whether :func:`folded_counts` suits ``n_records`` records over ``size`` codes: the fold costs
    a few passes over the table, the canonical swap it saves a few passes over the records."""
    return 4 * size <= max(n_records, 1 << 14)


def ordered_counts(a, b, values2, level, shape) -> np.ndarray:
    """The dense count of records by ``(level, a, b, value)``, items in the order given, over
    ``shape = (levels, ma, mb)``: code ``((level * ma + a) * mb + b) * 3 + v``, length
    ``levels * ma * mb * 3``.

    ``a`` and ``b`` are codes below ``ma`` and ``mb`` in any integer type (item indices, or the
    indices of a batch's dictionaries), read as they are; ``values2`` is 2 x the value for "a
    beats b"; ``level`` a scalar or one index per record. The codes are computed in chunks whose
    buffer stays in the CPU cache, unless the table is too large to count again per chunk.
    """
    n_levels, ma, mb = shape
    size = n_levels * ma * mb * 3
    a, b, level = np.asarray(a), np.asarray(b), np.asarray(level)
    n = a.size
    total = np.zeros(size, dtype=np.int64)
    step = CACHE_CHUNK if 4 * size <= CACHE_CHUNK else max(n, 1)
    # 32-bit codes from 32-bit inputs (dictionary indices): half the bytes per step, no widening
    kind = np.int32 if size < 2 ** 31 and max(a.dtype.itemsize, b.dtype.itemsize) <= 4 else np.intp
    buffer = np.empty(min(step, n), dtype=kind)
    for s in range(0, n, step):
        code = buffer[:min(step, n - s)]
        if level.ndim:
            np.multiply(level[s:s + step], ma, out=code, dtype=kind)
            np.add(code, a[s:s + step], out=code, dtype=kind)
        else:
            np.add(a[s:s + step], int(level) * ma, out=code, dtype=kind)
        code *= mb
        np.add(code, b[s:s + step], out=code, dtype=kind)
        code *= 3
        np.add(code, np.broadcast_to(values2, (n,))[s:s + step], out=code, dtype=kind)
        total += np.bincount(code, minlength=size)
    return total


def folded_counts(m: int, a, b, values2, level, size: int) -> np.ndarray:
    """The dense count (length ``size``) of the :func:`record_codes` of the records, computed by
    counting each record under its items in the order given (:func:`ordered_counts`) and folding
    the count of ``(b, a, 2 - v)`` onto ``(a, b, v)`` afterwards: three passes per record instead
    of the swap's seven, the fold on the small table."""
    per = ordered_counts(a, b, values2, level, (size // (3 * m * m), m, m)).reshape(-1, m, m, 3)
    folded = per + per.transpose(0, 2, 1, 3)[..., ::-1]
    folded *= np.triu(np.ones((m, m), dtype=np.int64), 1)[None, :, :, None]  # lo < hi only
    return folded.reshape(-1)


@dataclass(frozen=True, eq=False)
class ComparisonTally(Shown):
    """Exact integer tally of comparison records, per privacy level and pair.

    For each observed unordered pair ``(i[k], j[k])``, ``i < j``, at privacy level ``level[k]``:
    ``n[k]`` records and ``wins2[k]``, twice the summed record values for "i beats j" (a win
    counts 2, a tie 1). Entries are sorted by ``(level, i, j)``.

    Attributes
    ----------
    items : tuple
        Item labels (index order).
    epsilons : ndarray or None
        For randomized reports, the distinct per-record epsilons in increasing order (``level``
        indexes them); None for raw answers (one level, 0).
    level, i, j, n, wins2 : ndarray of int64
    seeded : bool
        The reports were drawn with a seed: research output, not a release (the releases read
        from the tally say so in their guarantee).
    items_declared : bool
        As for :class:`~privrank.data.comparisons.PairwiseComparisons`: False when the item list was read off the data.
    declared_epsilons : tuple of float or None
        For randomized reports, the declared epsilons the respondents were asked to use (increasing;
        every level is one of them; see :meth:`with_declared_epsilons`); None when none was declared.
    max_answers, answers_given : int or None
        With a declared bound on answers per user: the bound (the tally counts each user's first
        ``max_answers`` records in file order) and the number of records the data held before it
        (public per comparison, as the comparisons given are); None without a bound.

    Examples
    --------
    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b", "a"], ["b", "c", "c", "b"], [1, 1, 0, -1])
    >>> tally = pr.sufficient_statistics(comps)
    >>> tally
    ComparisonTally(comparisons, 3 items, 3 entries)
    >>> tally.i, tally.j, tally.n, tally.wins2
    (array([0, 0, 1]), array([1, 2, 2]), array([2, 1, 1]), array([2, 2, 1]))
    >>> tally.pair_counts().wins
    array([1. , 1. , 0.5])
    """

    items: tuple
    epsilons: np.ndarray | None
    level: np.ndarray
    i: np.ndarray
    j: np.ndarray
    n: np.ndarray
    wins2: np.ndarray
    seeded: bool = False
    items_declared: bool = True
    declared_epsilons: tuple | None = None
    max_answers: int | None = None
    answers_given: int | None = None

    @classmethod
    def from_records(cls, items, a, b, values2, *, epsilon=None) -> "ComparisonTally":
        """Tally records ``(a, b)`` (item indices) with ``values2`` = 2 x value for "a beats b".

        ``values2`` is 2 (a preferred), 0 (b preferred) or 1 (tie); for randomized reports
        ``epsilon`` gives each record's epsilon (or one for all) and ``user`` (integer codes)
        its user.
        """
        m = len(items)
        levels, level = (None, 0) if epsilon is None else epsilon_levels(epsilon, np.size(a))
        size = (1 if levels is None else levels.size) * m * m * 3
        if folds(size, np.size(a)):
            return cls.from_dense(items, levels, folded_counts(m, a, b, values2, level, size))
        return cls.from_codes(items, levels, record_codes(m, a, b, values2, level))

    @classmethod
    def from_dense(cls, items, epsilons, counts) -> "ComparisonTally":
        """Build from the dense count of every record code (``counts[c]`` records have code ``c``)."""
        m = len(items)
        per = np.asarray(counts).reshape(-1, 3)
        total = per.sum(axis=1)
        cells = np.flatnonzero(total)
        return cls(tuple(items), epsilons, cells // (m * m), cells // m % m, cells % m, total[cells],
                   per[cells, 1] + 2 * per[cells, 2])

    @classmethod
    def from_codes(cls, items, epsilons, codes, counts=None) -> "ComparisonTally":
        """Build from record codes (:func:`record_codes`) and how many records each stands for
        (default one); codes may repeat and come in any order."""
        m = len(items)
        codes = np.asarray(codes, dtype=np.int64)
        levels = 1 if epsilons is None else len(epsilons)
        size = levels * m * m * 3
        if counts is None and size <= max(4 * codes.size, 1 << 16):  # one dense count of (cell, value)
            return cls.from_dense(items, epsilons, np.bincount(codes, minlength=size))
        if counts is None and codes.size:  # sorted, the records of a cell are one run
            if size < (1 << 31) and codes.size < (1 << 30):
                codes = codes.astype(np.int32)  # numpy sorts and divides 32-bit keys 2x faster
            codes = np.sort(codes)
            cell = codes // 3
            new = np.empty(cell.size, dtype=bool)
            new[0] = True
            np.not_equal(cell[1:], cell[:-1], out=new[1:])
            start = np.flatnonzero(new)
            cells, n = cell[start], np.diff(start, append=codes.size)
            codes -= 3 * cell  # each record's value 0, 1 or 2 (codes is the sorted copy)
            wins2 = np.add.reduceat(codes, start)
        else:
            value = codes % 3
            cells, (n, wins2) = group_sums(codes // 3, levels * m * m, counts,
                                           value if counts is None else counts * value)
        level = cells // (m * m) if levels > 1 else np.zeros(cells.size, dtype=np.int64)
        pair = cells - (m * m) * level if levels > 1 else cells
        i = pair // m
        return cls(tuple(items), epsilons, level.astype(np.int64), i.astype(np.int64), (pair - m * i).astype(np.int64),
                   np.asarray(n).astype(np.int64), np.asarray(wins2).astype(np.int64))

    @property
    def is_randomized(self) -> bool:
        """True for a tally of randomized reports."""
        return self.epsilons is not None

    def with_declared_epsilons(self, epsilons) -> "ComparisonTally":
        """This tally of randomized reports with the declared epsilons ``epsilons`` (checked by
        :func:`declared_set`: every level must be one of them)."""
        if not self.is_randomized:
            raise InputError("epsilons are declared for randomized reports; these comparisons carry no epsilon")
        return replace(self, declared_epsilons=declared_set(epsilons, self.epsilons, self.declared_epsilons))

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_records(self) -> int:
        return int(self.n.sum())

    @property
    def n_given(self) -> int:
        """The records the data held: before the bound ``max_answers`` when the tally was counted under one."""
        return self.n_records if self.answers_given is None else self.answers_given

    def first_answers(self, max_answers) -> "ComparisonTally":
        """This tally, when it counts each user's first ``max_answers`` records (it keeps no user to cut by)."""
        if self.max_answers is None or max_answers != self.max_answers:
            raise InputError("a bound on answers per user is applied where the records are: count them under it "
                             "(sufficient_statistics(..., max_answers=...))"
                             + ("" if self.max_answers is None else f"; this tally counts each user's first "
                                                                    f"{self.max_answers}"))
        return self

    def level_records(self) -> np.ndarray:
        """Number of records at each privacy level."""
        size = 1 if self.epsilons is None else self.epsilons.size
        return np.bincount(self.level, self.n, size).astype(np.int64)

    def pair_sums(self, *values) -> tuple[np.ndarray, list]:
        """Pair keys ``i * m + j`` (increasing) and, per pair, the sum over levels of each array of
        entry values; each pair's levels are added in increasing level, so the sums are a
        function of the tally alone."""
        m = self.n_items
        if self.epsilons is None or self.epsilons.size == 1:  # one level: the entries are the pairs, in order
            return self.i * m + self.j, [np.ones(self.i.size, dtype=np.int64) if v is None else np.asarray(v) + 0.0
                                         for v in values]
        return group_sums(self.i * m + self.j, m * m, *values)

    def pair_counts(self, wins=None, totals=None) -> PairCounts:
        """Per-pair sums of entry values (default: the record values ``wins2 / 2`` and the
        record counts), as :class:`PairCounts` (see :meth:`pair_sums`)."""
        m = self.n_items
        win = self.wins2 / 2.0 if wins is None else wins
        tot = self.n.astype(float) if totals is None else totals
        if self.epsilons is None or self.epsilons.size == 1:  # one level: the entries are the pairs, in order
            return PairCounts(m, self.i, self.j, np.asarray(win, dtype=float), np.asarray(tot, dtype=float), self.items,
                              self.items_declared)
        keys, (win, tot) = self.pair_sums(win, tot)
        return PairCounts(m, keys // m, keys % m, win, tot, self.items, self.items_declared)

    def __repr__(self) -> str:  # never print counts
        kind = "randomized reports" if self.is_randomized else "comparisons"
        return f"ComparisonTally({kind}, {self.n_items} items, {self.i.size} entries)"

    def _card(self) -> dict:  # what the repr says: never counts
        return {"summary": "randomized reports" if self.is_randomized else "comparisons",
                "facts": [("items", f"{self.n_items:,}"), ("entries (pairs x privacy levels)", f"{self.i.size:,}")]}
