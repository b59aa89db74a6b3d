"""Per-user bookkeeping of the comparison engines: one counter per user, kept only when asked for.

Two requests need to know whose record is whose, and nothing else does:

* a declared bound ``max_answers=K`` (each user's first ``K`` records in file order are used,
  exactly :meth:`~privrank.data.comparisons.PairwiseComparisons.first_answers`), and
* a personal budget ``user_epsilon=B`` of the local model (each user's ``B`` split evenly over
  that user's records: a user with ``c`` records answers each at ``B / c``,
  :func:`~privrank.pairwise.local.record_epsilon_levels`).

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

    def codes(self, user) -> np.ndarray:
        """Each record's user index, for a pyarrow array of user labels; labels not met yet are
        added (with count 0). Labels are hashed once per distinct value of the batch."""
        pa = pyarrow_module()
        import pyarrow.compute as pc

        encoded = dictionary_encoded(user)
        dictionary = encoded.dictionary
        if self.labels is None:
            self.labels = dictionary.slice(0, 0)
        found = pc.index_in(dictionary, value_set=self.labels)
        if found.null_count:
            new = pc.unique(dictionary.filter(pc.is_null(found))).cast(self.labels.type)
            self.labels = pa.concat_arrays([self.labels, new])
            self.counts = np.concatenate([self.counts, np.zeros(len(new), dtype=np.int64)])
            found = pc.index_in(dictionary, value_set=self.labels)
        return found.to_numpy(zero_copy_only=False).astype(np.int64)[encoded.indices.to_numpy(zero_copy_only=False)]

    def add(self, codes) -> None:
        """Count records of the users ``codes``."""
        self.counts += np.bincount(codes, minlength=self.counts.size)

    def select(self, batch) -> Selection:
        """The records of ``batch`` (the next records in file order) used, and their epsilons."""
        codes = self.codes(batch.user)
        keep = None
        if self.max_answers is not None:
            keep = self.counts[codes] + occurrence(codes) < self.max_answers
            self.add(codes)
            codes = codes[keep]
        first, self.used = self.used, self.used + codes.size
        return Selection(keep, first, None if self.budget is None else personal_levels(self.budget, self.counts, codes))


def occurrence(codes: np.ndarray) -> np.ndarray:
    """For each record, how many earlier records of the batch have its code."""
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
    ``quota``; ``cross`` is the number of partitions for a user with no more records than the
    bound), and the number of records each partition uses (``used``)."""

    labels: object
    max_answers: int | None
    budget: float | None
    values: np.ndarray
    cross: np.ndarray | None
    used: np.ndarray

    @classmethod
    def of(cls, parts, max_answers: int | None, budget: float | None) -> "Plan":
        """The plan from every partition's ``(labels, counts)`` (:func:`partition_users`), in file order."""
        pa = pyarrow_module()
        import pyarrow.compute as pc

        labels = pc.unique(pa.concat_arrays([p[0].cast(parts[0][0].type) for p in parts]))
        totals = np.zeros(len(labels), dtype=np.int64)
        cross = np.full(len(labels), len(parts), dtype=np.int64) if max_answers is not None else None
        quota = np.zeros(len(labels), dtype=np.int64)
        used = []
        for k, (part_labels, counts) in enumerate(parts):
            index = pc.index_in(part_labels, value_set=labels).to_numpy(zero_copy_only=False).astype(np.int64)
            before = totals[index]
            if max_answers is None:
                used.append(int(counts.sum()))
            else:
                left = np.maximum(max_answers - before, 0)
                crossing = (before < max_answers) & (before + counts >= max_answers)
                cross[index[crossing]] = k
                quota[index[crossing]] = left[crossing]
                used.append(int(np.minimum(counts, left).sum()))
            np.add.at(totals, index, counts)
        return cls(labels, max_answers, budget, quota if max_answers is not None else totals, cross,
                   np.array(used, dtype=np.int64))

    def users(self, partition: int) -> Users:
        """The :class:`Users` a partition's task starts from: with a bound, each user's records
        before the partition as far as the bound is concerned (none before the partition that
        holds the user's last kept record, the bound less that partition's quota in it, the bound
        after it); with a budget, each user's total."""
        first = int(self.used[:partition].sum())
        if self.cross is None:
            return Users(budget=self.budget, labels=self.labels, counts=self.values, used=first)
        k = self.max_answers
        before = np.where(partition < self.cross, 0, np.where(partition == self.cross, k - self.values, k))
        return Users(max_answers=k, labels=self.labels, counts=before.astype(np.int64), used=first)
