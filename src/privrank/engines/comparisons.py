"""The ``comparisons`` kind of the engines: pairwise comparison records to a :class:`ComparisonTally`.

A partial statistic counts the record codes of some records (:func:`record_codes`: level, pair
and value), with the items and privacy levels it saw, plus (for randomized reports with user
ids) tables of records per (user, epsilon): the per-user guarantee is a maximum over users of
sums that may span batches. Counts are a dense array when the code space is at most
``DENSE_CODES`` long (m up to about 1,180 for one privacy level), else sparse. Partials add
exactly: re-indexed on the union of their items and levels when these differ, then summed;
user tables are concatenated and grouped now and then.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data.comparisons import (ComparisonTally, PairwiseComparisons, epsilon_levels, group_sums,
                                largest_user_sum, record_codes, sorted_labels, user_level_counts)
from ..data.io import ComparisonFile, item_list, read_comparisons
from ..errors import InputError
from ..mechanisms.randomized_response import randomize_records
from ..pairwise.local import randomized_response

CONTAINER = PairwiseComparisons
DENSE_CODES = 1 << 22
USER_TABLE_SLACK = 1 << 16
open_file = ComparisonFile


@dataclass(frozen=True, eq=False)
class Partial:
    """Counts of the record codes of some records.

    ``codes`` is None when ``counts`` is dense (indexed by code); otherwise ``counts[k]``
    records have code ``codes[k]``. ``levels`` are the distinct epsilons (None for raw
    answers). ``users`` holds user tables ``(user, epsilon, records)`` (see :func:`_user_table`;
    a user may appear in several); it is empty for raw answers or records without user ids.
    """

    items: tuple
    levels: np.ndarray | None
    counts: np.ndarray
    codes: np.ndarray | None = None
    users: tuple = ()

    @property
    def size(self) -> int:
        """Length of the code space."""
        return (1 if self.levels is None else self.levels.size) * len(self.items) ** 2 * 3

    def sparse(self) -> tuple[np.ndarray, np.ndarray]:
        """``(codes, counts)`` of the codes that occur."""
        if self.codes is not None:
            return self.codes, self.counts
        codes = np.flatnonzero(self.counts)
        return codes, self.counts[codes]


def read(path, options) -> PairwiseComparisons:
    return read_comparisons(path, items=options.items)


def check(source, options) -> None:
    """Refuse to randomize randomized reports (``source`` is a file or in-memory data)."""
    if options.statistic is not None or options.kappa is not None:
        raise InputError("statistic and kappa apply to kind='rankings'")
    if options.epsilon is not None and source.is_randomized:
        raise InputError("the data are randomized reports with their own epsilon column; they are "
                         "counted as they are, so give no epsilon")


def in_memory(comps: PairwiseComparisons, options, rng) -> ComparisonTally:
    """The tally of in-memory comparisons, randomized first when ``options.epsilon`` is set."""
    if options.items is not None and tuple(comps.items) != options.items:
        raise InputError("in-memory comparisons carry their own item list; build them with items=... instead")
    if options.epsilon is not None:
        comps = randomized_response(comps, options.epsilon, rng=rng)
    return comps.tally()


def partial(batch, options) -> Partial:
    """Map step: the partial statistic of one :class:`~privrank.data.io.ComparisonBatch`."""
    items = options.items if options.items is not None else sorted_labels(batch.labels(used_only=False))
    a, b = batch.item_indices(items)
    values2 = batch.outcome + np.int8(1)
    epsilon = batch.epsilon
    if options.epsilon is not None:
        values2 = 2 * randomize_records(values2, options.epsilon, options.key, batch.first_record)
        epsilon = options.epsilon
    levels, level = (None, 0) if epsilon is None else epsilon_levels(epsilon, len(batch))
    codes = record_codes(len(items), a, b, values2, level)
    users = () if epsilon is None or batch.user is None else (_user_table(batch.user, level, levels),)
    return _counted(items, levels, codes, None, users)


def _counted(items, levels, codes, counts, users) -> Partial:
    """A partial from (possibly repeated) codes, dense when the code space is small."""
    part = Partial(items, levels, np.zeros(0, dtype=np.int64), None, users)
    if part.size <= DENSE_CODES:
        dense = np.bincount(codes, counts, minlength=part.size)
        return replace(part, counts=dense.astype(np.int64) if counts is not None else dense)
    keys, (n,) = group_sums(codes, part.size, counts)
    return replace(part, counts=np.asarray(n).astype(np.int64), codes=keys)


def _user_table(user, level, levels) -> tuple:
    """Records per (user, epsilon) of one batch: a user table ``(user, epsilon, records)``, one row
    per (user, epsilon), each user's rows together and in increasing epsilon. Integer ids are a
    numpy array, sorted (a range not much wider than the batch is counted densely); other ids
    are dictionary-encoded and kept as a pyarrow array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if pa.types.is_integer(user.type):
        ids = user.to_numpy()
        if ids.size and int(ids.max()) - int(ids.min()) < 4 * ids.size:
            low = ids.min()
            who, eps, n = user_level_counts(ids - low, level, levels)
            return who.astype(ids.dtype) + low, eps, n
        ids, codes = np.unique(ids, return_inverse=True)
        who, eps, n = user_level_counts(codes, level, levels)
        return ids[who], eps, n
    encoded = pc.dictionary_encode(user)
    who, eps, n = user_level_counts(encoded.indices.to_numpy(zero_copy_only=False), level, levels)
    return encoded.dictionary.take(pa.array(who)), eps, n


def combine(partials) -> Partial:
    """Exact sum of partial statistics of disjoint sets of records."""
    first = partials[0]
    items, levels = first.items, first.levels
    if any(p.items != items for p in partials[1:]):
        items = sorted_labels(set().union(*(p.items for p in partials)))
    if levels is not None and any(not np.array_equal(p.levels, levels) for p in partials[1:]):
        levels = np.unique(np.concatenate([p.levels for p in partials]))
    users = _user_tables([t for p in partials for t in p.users])
    aligned = [p.items == items and (levels is None or np.array_equal(p.levels, levels)) for p in partials]
    if all(aligned) and all(p.codes is None for p in partials):
        total = first.counts if len(partials) == 1 else np.add(first.counts, partials[1].counts)
        for p in partials[2:]:
            total += p.counts
        return Partial(items, levels, total, None, users)
    m = len(items)
    position = {label: k for k, label in enumerate(items)}
    codes, counts = [], []
    for p, same in zip(partials, aligned):  # one step per partial; within it everything is vectorised
        c, n = p.sparse()
        if not same:
            index = np.array([position[x] for x in p.items], dtype=np.int64)
            c = _reindex(c, len(p.items), index, m, None if levels is None else np.searchsorted(levels, p.levels))
        codes.append(c)
        counts.append(n)
    return _counted(items, levels, np.concatenate(codes), np.concatenate(counts), users)


def _reindex(codes, m: int, index, new_m: int, level_index=None) -> np.ndarray:
    """Codes over ``m`` items re-expressed over ``new_m`` items (item k becomes ``index[k]``) and,
    if given, new privacy levels (level l becomes ``level_index[l]``)."""
    value, rest = codes % 3, codes // 3
    b, rest = rest % m, rest // m
    a, level = rest % m, rest // m
    return record_codes(new_m, index[a], index[b], value, level if level_index is None else level_index[level])


def _user_tables(tables: list) -> tuple:
    """Keep user tables compact: group them into one when the ungrouped rows outgrow it."""
    rows = [len(t[1]) for t in tables]
    if len(tables) < 2 or sum(rows) - max(rows) <= max(max(rows), USER_TABLE_SLACK):
        return tuple(tables)
    return (_grouped(tables),)


def _grouped(tables: list) -> tuple:
    """One user table of the rows of ``tables``: records summed per (user, epsilon), sorted by
    user, then epsilon. Integer ids already in order (files stored user by user) are not sorted
    again; the arrays are fresh, so they pickle at their own size (Dask sends partials between
    processes)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    numeric = all(isinstance(t[0], np.ndarray) for t in tables)
    user = np.concatenate([t[0] for t in tables]) if numeric else pa.concat_arrays([t[0] for t in tables])
    epsilon = np.concatenate([t[1] for t in tables])
    records = np.concatenate([t[2] for t in tables])
    if not numeric:
        order = pc.sort_indices(pa.table({"user": user, "epsilon": epsilon}),
                                sort_keys=[("user", "ascending"), ("epsilon", "ascending")]).to_numpy()
    elif not np.all((user[1:] > user[:-1]) | ((user[1:] == user[:-1]) & (epsilon[1:] >= epsilon[:-1]))):
        order = np.lexsort((epsilon, user))
    else:
        order = None
    if order is not None:
        user = user[order] if numeric else user.take(order)
        epsilon, records, order = epsilon[order], records[order], None
    change = np.ones(len(epsilon), dtype=bool)
    change[1:] = (epsilon[1:] != epsilon[:-1]) | _user_changes(user)
    first = np.flatnonzero(change)
    del change
    return (user[first] if numeric else user.take(first)), epsilon[first], np.add.reduceat(records, first)


def _user_changes(user) -> np.ndarray:
    """Whether each row of a user table after the first has another user than the row before."""
    if isinstance(user, np.ndarray):
        return user[1:] != user[:-1]
    import pyarrow.compute as pc

    return pc.not_equal(user[1:], user[:-1]).to_numpy(zero_copy_only=False)


def finish(part: Partial | None, options) -> ComparisonTally:
    """The final tally, with the per-user epsilon of randomized reports that carry user ids."""
    if part is None or not part.counts.any():
        raise InputError("the file has a header but no comparisons")
    items, (codes, counts) = part.items, part.sparse()
    if options.items is None:  # dictionary-encoded batches name every label of their dictionary
        m = len(items)
        seen = np.zeros(m, dtype=bool)
        seen[codes // 3 % m] = True
        seen[codes // (3 * m) % m] = True
        if not seen.all():
            codes = _reindex(codes, m, np.cumsum(seen) - 1, int(seen.sum()))
            items = tuple(label for label, s in zip(items, seen) if s)
    if len(items) < 2:
        raise InputError("at least two distinct items are needed to rank anything")
    tally = ComparisonTally.from_codes(items, part.levels, codes, counts)
    if part.users:
        user, epsilon, records = part.users[0] if len(part.users) == 1 else _grouped(list(part.users))
        starts = np.flatnonzero(np.concatenate(([True], _user_changes(user))))
        tally = replace(tally, epsilon_per_user=largest_user_sum(starts, epsilon, records))
    return tally
