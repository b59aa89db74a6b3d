"""Per-user bookkeeping of the comparison engines: one counter per user, kept only when asked for.

Two requests need to know whose record is whose, and nothing else does:

* a declared bound ``max_answers=K`` (each user's first ``K`` records in file order are used,
  exactly :meth:`~privrank.data.comparisons.PairwiseComparisons.first_answers`), and
* a personal budget ``user_epsilon=B`` of the local model (each user's ``B`` split evenly over
  that user's records: a user with ``c`` records answers each at ``B / c``,
  :func:`privrank.pairwise.local.randomized_response` splits it).

:class:`Users` holds, for a pass over records in file order, the user labels met (a pyarrow
array, hashed to look a batch's labels up) and one count per user. It decides which records are
used and at which epsilon, as the in-memory path does; the counts are never released, printed or
written. The records used are numbered in file order among the records used (``first``), which is
how the in-memory path numbers them after the cut, so the seeded counter-based randomization
(:func:`~privrank.mechanisms.randomized_response.randomize_records`) draws the same reports.

The stream engine keeps one :class:`Users` for the whole file (a first pass counts each user's
records for ``user_epsilon``). The Dask engine counts every partition's users in its first pass
(:func:`partition_users`) and the client turns the counts into a :class:`Plan`: each user's total
(``user_epsilon``) or the partition in which the user's ``K``-th record lies and how many of the
user's records that partition still keeps (``max_answers``). Every task starts its own
:class:`Users` from the plan, and keeps exactly the records the sequential pass keeps.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..data.arrow_columns import dictionary_encoded, pyarrow_module
from ..data.tally import EpsilonLevels


#: integer user ids are looked up in a table over their span while it has at most this many slots per user
SLOTS_PER_USER = 8


@dataclass(frozen=True)
class Selection:
    """The records of a batch that are used and their epsilons: ``keep`` (None: all), ``first``
    (the number of the first used record among all records used) and ``epsilon`` (levels of the
    records used under a personal budget, None otherwise)."""

    keep: np.ndarray | None
    first: int
    epsilon: EpsilonLevels | None


class Users:
    """User labels met and one count per user, for records read in file order (module docstring).

    ``counts`` are the records seen of each user for a bound (``max_answers``), or each user's
    total for a personal budget (``budget``; then nothing is added as records are read);
    ``used`` is the number of records used so far.
    """

    def __init__(self, max_answers: int | None = None, budget: float | None = None, labels=None,
                 counts: np.ndarray | None = None, used: int = 0):
        self.max_answers, self.budget, self.used = max_answers, budget, used
        self.labels, self.counts = labels, np.zeros(0, dtype=np.int64) if counts is None else counts
        self._slots: np.ndarray | None = None  # integer ids: each id's index, over the ids' span from _lo
        self._lo = 0

    def codes(self, user) -> np.ndarray:
        """Each record's user index, for a pyarrow array of user labels; labels not met yet are
        added (with count 0). Each distinct label of the batch is looked up once: integers in the
        sorted labels (numpy), other labels hashed by Arrow."""
        dense = self._dense_codes(user)
        if dense is not None:
            return dense
        encoded = dictionary_encoded(user)
        keys = _keys(encoded.dictionary, self.labels)
        if self.labels is None:
            self.labels = keys[:0]
        index = _find(self.labels, keys)
        if np.any(index < 0):
            self.labels, moved = _union(self.labels, _where(keys, index < 0))
            self.counts, self._slots = _moved(self.counts, moved, len(self.labels), 0), None  # a new table over the ids
            index = _find(self.labels, keys)
        return index[encoded.indices.to_numpy(zero_copy_only=False)]

    def _dense_codes(self, user) -> np.ndarray | None:
        """Integer ids spanning at most ``SLOTS_PER_USER`` slots per user: each record's index read
        from a table over the span (rebuilt when ids outside it or new ids come); None otherwise."""
        pa = pyarrow_module()
        if not (pa.types.is_integer(user.type) and len(user)) or not isinstance(self.labels, (np.ndarray, type(None))):
            return None
        values = user.to_numpy(zero_copy_only=False)
        lo, hi = int(values.min()), int(values.max())
        if self.labels is not None and self.labels.size:
            lo, hi = min(lo, int(self.labels[0])), max(hi, int(self.labels[-1]))
        if hi - lo >= SLOTS_PER_USER * (values.size + (0 if self.labels is None else self.labels.size)):
            return None
        if self._slots is None or lo != self._lo or hi - lo + 1 != self._slots.size:
            self._slots, self._lo = np.full(hi - lo + 1, -1, dtype=np.int64), lo
            if self.labels is not None:
                self._slots[self.labels - lo] = np.arange(self.labels.size)
        codes = self._slots[values - lo]
        missing = codes < 0
        if missing.any():  # the ids present, in increasing order, straight from the table
            present = self._slots >= 0
            present[values[missing] - lo] = True
            rank = np.cumsum(present) - 1
            counts = np.zeros(int(rank[-1]) + 1, dtype=np.int64)
            if self.labels is not None:
                counts[rank[self.labels - lo]] = self.counts
            self.labels, self.counts = np.flatnonzero(present) + lo, counts
            self._slots = np.where(present, rank, -1)
            codes = self._slots[values - lo]
        return codes

    def add(self, codes) -> None:
        """Count records of the users ``codes``."""
        self.counts += np.bincount(codes, minlength=self.counts.size)

    def select(self, batch) -> Selection:
        """The records of ``batch`` (the next records in file order) used, and their epsilons."""
        codes = self.codes(batch.user)
        keep = None
        if self.max_answers is not None:
            before = self.counts[codes]
            self.add(codes)
            over = np.flatnonzero(self.counts[codes] > self.max_answers)  # records of users past the bound
            if over.size:
                keep = np.ones(codes.size, dtype=bool)
                keep[over] = before[over] + occurrence(codes[over]) < self.max_answers
                codes = codes[keep]
        first, self.used = self.used, self.used + codes.size
        return Selection(keep, first, None if self.budget is None else personal_levels(self.budget, self.counts, codes))


def _keys(dictionary, labels):
    """The distinct labels of a batch as the user table holds them: integers as numpy, others as Arrow."""
    pa = pyarrow_module()
    if pa.types.is_integer(dictionary.type):
        return dictionary.to_numpy(zero_copy_only=False)
    return dictionary if labels is None or dictionary.type == labels.type else dictionary.cast(labels.type)


def _find(labels, keys) -> np.ndarray:
    """Each key's index in ``labels`` (sorted numpy, or Arrow), -1 for a key not in it."""
    if isinstance(labels, np.ndarray):
        at = np.searchsorted(labels, keys)
        found = (at < labels.size) & (labels[np.minimum(at, max(labels.size - 1, 0))] == keys) if labels.size else \
            np.zeros(len(keys), dtype=bool)
        return np.where(found, at, -1)
    import pyarrow.compute as pc

    keys = keys if keys.type == labels.type else keys.cast(labels.type)
    return pc.fill_null(pc.index_in(keys, value_set=labels), -1).to_numpy(zero_copy_only=False).astype(np.int64)


#: the partition in which a user within the bound reaches it: none
NEVER = np.iinfo(np.int64).max


def _moved(values: np.ndarray, moved: np.ndarray, size: int, fill) -> np.ndarray:
    """``values`` of the labels that moved to ``moved`` in a table of ``size`` labels, ``fill`` elsewhere."""
    out = np.full(size, fill, dtype=values.dtype)
    out[moved] = values
    return out


def _where(labels, mask):
    """The labels (numpy or Arrow) where ``mask`` holds."""
    return labels[mask] if isinstance(labels, np.ndarray) else labels.filter(pyarrow_module().array(mask))


def _union(labels, new) -> tuple:
    """``(labels with new ones, where each old label is now)``: sorted for numpy, appended for Arrow."""
    if isinstance(labels, np.ndarray):
        merged = np.union1d(labels, new)
        return merged, np.searchsorted(merged, labels)
    pa = pyarrow_module()
    import pyarrow.compute as pc

    return pa.concat_arrays([labels, pc.unique(new).cast(labels.type)]), np.arange(len(labels))


def occurrence(codes: np.ndarray) -> np.ndarray:
    """For each record, how many earlier records of the batch have its code."""
    if codes.size and codes.max() < 2 ** 31:
        codes = codes.astype(np.int32)  # numpy sorts 32-bit keys faster
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    start = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    rank = np.empty(codes.size, dtype=np.int64)
    rank[order] = np.arange(codes.size) - np.repeat(start, np.diff(np.r_[start, codes.size]))
    return rank


def personal_levels(budget: float, totals: np.ndarray, codes: np.ndarray) -> EpsilonLevels:
    """The epsilon levels of records of users ``codes`` whose budget ``budget`` is split evenly over
    their ``totals[code]`` records, levelled among the users present (as in memory)."""
    present, group = np.unique(codes, return_inverse=True)
    return EpsilonLevels.of_groups(budget / np.maximum(totals[present], 1), group.reshape(-1),
                                   np.bincount(group.reshape(-1), minlength=present.size))


def partition_users(file, table) -> tuple:
    """``(labels, counts)``: the users of a table of ``file`` (its user column and, in a counted
    file, its count column) and how many records each has. A null user is left out here; the pass
    that validates the records refuses it."""
    col = file.column(table, file.header[file.columns.user])
    weights = file.counts(table, file.header[file.columns.count], None) if file.counted else None
    if col.null_count:
        valid = col.is_valid()
        col = col.filter(valid)
        weights = None if weights is None else weights[valid.to_numpy(zero_copy_only=False)]
    users = Users()
    codes = users.codes(col)
    counts = np.bincount(codes, weights, minlength=len(users.labels)).astype(np.int64)
    return users.labels, counts


@dataclass(frozen=True)
class Plan:
    """What every partition's task needs to select its records as the sequential pass does:
    the user labels, and each user's total (a personal budget) or the partition holding the
    user's ``max_answers``-th record and how many of the user's records it keeps (``cross``,
    ``quota``; ``cross`` is ``NEVER`` for a user with fewer records than the bound), and the
    number of records each partition uses (``used``)."""

    labels: object
    max_answers: int | None
    budget: float | None
    values: np.ndarray
    cross: np.ndarray | None
    used: np.ndarray

    @classmethod
    def of(cls, parts, max_answers: int | None, budget: float | None) -> "Plan":
        """The plan from every partition's ``(labels, counts)`` (:func:`partition_users`), in file
        order: an iterable, read once, so the client holds one partition's counts at a time beside
        the plan (one entry per user)."""
        labels = None
        totals, quota, cross = (np.zeros(0, dtype=np.int64) for _ in range(3))
        used = []
        for k, (part_labels, counts) in enumerate(parts):
            labels = part_labels[:0] if labels is None else labels
            index = _find(labels, part_labels) if len(labels) else np.full(len(part_labels), -1)
            if np.any(index < 0):  # users met for the first time (sorted integers move: their entries follow)
                labels, moved = _union(labels, _where(part_labels, index < 0))
                totals, quota, cross = (_moved(a, moved, len(labels), fill) for a, fill in
                                        ((totals, 0), (quota, 0), (cross, NEVER)))
                index = _find(labels, part_labels)
            before = totals[index]
            if max_answers is None:
                used.append(int(counts.sum()))
            else:
                left = np.maximum(max_answers - before, 0)
                crossing = (before < max_answers) & (before + counts >= max_answers)
                cross[index[crossing]] = k
                quota[index[crossing]] = left[crossing]
                used.append(int(np.minimum(counts, left).sum()))
            totals[index] += counts
        return cls(labels, max_answers, budget, quota if max_answers is not None else totals,
                   cross if max_answers is not None else None, np.array(used, dtype=np.int64))

    def users(self, partition: int) -> Users:
        """The :class:`Users` a partition's task starts from: with a bound, each user's records
        before the partition as far as the bound is concerned (none before the partition that
        holds the user's last kept record, the bound less that partition's quota in it, the bound
        after it); with a budget, each user's total."""
        first = int(self.used[:partition].sum())
        k = self.max_answers
        if k is None or self.cross is None:
            return Users(budget=self.budget, labels=self.labels, counts=self.values, used=first)
        before = np.where(partition < self.cross, 0, np.where(partition == self.cross, k - self.values, k))
        return Users(max_answers=k, labels=self.labels, counts=before.astype(np.int64), used=first)
