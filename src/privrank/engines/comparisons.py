"""The ``comparisons`` kind of the engines: pairwise comparison records to a :class:`ComparisonTally`.

A partial statistic counts the record codes of some records (:func:`record_codes`: level, pair
and value), with the items and privacy levels it saw. Counts are a dense array when the code
space is at most ``DENSE_CODES`` long (m up to about 1,180 for one privacy level), else sparse.
Partials add exactly: re-indexed on the union of their items and levels when these differ, then
summed. Nothing is kept per user unless a per-user bound (``max_answers``) or a personal budget
(``user_epsilon``) is requested: then one count per user decides which records are used and at
which epsilon (:mod:`privrank.engines.users`), as in memory, and is never released.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data.comparisons import PairwiseComparisons, sorted_labels
from ..data.pair_counts import group_sums
from ..data.tally import ComparisonTally, EpsilonLevels, epsilon_levels, folds, ordered_counts, record_codes
from ..data.io import ComparisonFile, item_list, read_comparisons  # noqa: F401 (item_list: part of the engine interface)
from ..data.arrow_columns import dictionary_encoded, is_text_type, known_indices, present_labels, pyarrow_module
from ..errors import InputError
from ..mechanisms.randomized_response import randomize_comparisons, randomize_records

KIND = "comparisons"
CONTAINER = PairwiseComparisons
DENSE_CODES = 1 << 22


@dataclass(frozen=True, eq=False)
class Partial:
    """Counts of the record codes of some records.

    ``codes`` is None when ``counts`` is dense (indexed by code); otherwise ``counts[k]``
    records have code ``codes[k]``. ``levels`` are the distinct epsilons (None for raw
    answers).
    """

    items: tuple
    levels: np.ndarray | None
    counts: np.ndarray
    codes: np.ndarray | None = None

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


def open_file(path, options=None) -> ComparisonFile:
    """The comparison file, its user column left unread when it holds integers, the file declares
    no null among them and no per-user bound or budget is requested.

    Without such a request no count reads a user (the reports are randomized per comparison), so
    the user column is read only to refuse a record without a user, as in memory. An integer id is missing only as a null (text may be empty, a float NaN: those
    columns are read), and a Parquet file declares its columns' nulls: when it declares none in an
    integer user column (:meth:`~privrank.data.tabular.ColumnarFile.integers_without_nulls`), that
    column is not decoded. The declaration is not checked against the data: a crafted file whose
    metadata hides a null user has that record counted, as it would be with a user, where the
    in-memory reader refuses it. The guarantee is unchanged (it protects one comparison, and no
    user is counted); every other check reads the records.

    A file of randomized reports with a user column is refused: the reports must hold at most one
    report per respondent and pair, which only the local engine, with every report in memory,
    checks (the engines here keep nothing per respondent).
    """
    file = ComparisonFile(path)
    if file.is_randomized and file.has_users:
        raise InputError(f"{file.path}: a file of randomized reports with a user column is read by the local engine "
                         "(engine='local'; CLI: --engine local), which checks that no respondent reported a pair "
                         "twice; the stream and dask engines keep nothing per respondent")
    user = file.columns.user
    if options is not None and per_user(options):
        if user is None:
            raise InputError(f"{file.path}: a bound on answers per user (max_answers) or a budget per user "
                             "(user_epsilon) needs user ids in the data")
        return file
    if user is not None and file.integers_without_nulls(file.header[user]):
        return file.without_users()
    return file


def per_user(options) -> bool:
    """Whether the statistic needs each record's user: a per-user bound or a personal budget."""
    return options.max_answers is not None or options.user_epsilon is not None


def read(path, options) -> PairwiseComparisons:
    return read_comparisons(path, items=options.items)


def check(source, options) -> None:
    """Refuse to randomize randomized reports (``source`` is a file or in-memory data), and a file
    whose count column stands for more comparisons than the readers take on
    (:meth:`~privrank.data.io.ComparisonFile.n_records` reads that column through the file), so
    that neither is refused after the charge."""
    if options.statistic is not None or options.kappa is not None:
        raise InputError("statistic and kappa apply to kind='rankings'")
    if (options.epsilon is not None or per_user(options)) and source.is_randomized:
        raise InputError("the data are randomized reports with their own epsilon column; they are "
                         "counted as they are, so give no epsilon, user_epsilon or max_answers")
    if isinstance(source, ComparisonFile) and source.counted:
        source.n_records()


def in_memory(comps: PairwiseComparisons, options, rng) -> ComparisonTally:
    """The tally of in-memory comparisons, randomized first when ``options.epsilon`` is set."""
    if options.items is not None and tuple(comps.items) != options.items:
        raise InputError("in-memory comparisons carry their own item list; build them with items=... instead")
    given = comps.n_records
    if options.max_answers is not None:
        comps = comps.first_answers(options.max_answers)
    if options.epsilon is None and options.user_epsilon is None:
        tally = comps.tally()
    else:  # charged by sufficient_statistics
        if options.user_epsilon is None:
            levels = epsilon_levels(options.epsilon, comps.n_records)
        elif comps.user is None:
            raise InputError("user_epsilon needs user ids in the data")
        else:
            counts = comps.records_per_user()  # indexed by the user codes: levelled among the users present
            levels = EpsilonLevels.of_groups(options.user_epsilon / np.maximum(counts, 1), comps.user, counts,
                                             comps.users_grouped)
        tally = randomize_comparisons(comps, levels, rng).tally()  # seeded when rng is a seed
    return bounded(tally, options, given)


def bounded(tally, options, given: int) -> ComparisonTally:
    """``tally`` declaring the bound on answers per user it was counted under, and the answers given."""
    if options.max_answers is None:
        return tally
    return replace(tally, max_answers=options.max_answers, answers_given=given)


def records(batch) -> int:
    return len(batch)


def partial(batch, options, users=None) -> Partial:
    """Map step: the partial statistic of one :class:`~privrank.data.io.ComparisonBatch`, reduced
    piece by piece (:meth:`~privrank.data.io.ComparisonBatch.pieces`: a batch of rows with counts,
    a Dask partition of a counted file, as ordinary records of bounded number).

    Labels are counted as the codes of the batch's dictionaries (:func:`item_codes`), and the small
    table of counts is mapped to items once, not each record, when the table is small (a few
    entries per record at most); the records naming an unknown item or one item twice are refused
    from that table.

    ``users`` (:class:`~privrank.engines.users.Users`, for a per-user bound or budget) selects the
    records used, piece after piece in file order, and gives their numbers and epsilons."""
    parts = [_partial(piece, options, None if users is None else users.select(piece)) for piece in batch.pieces()]
    return parts[0] if len(parts) == 1 else combine(parts)


def _partial(batch, options, selection=None) -> Partial:
    """The partial statistic of a batch of ordinary records (:func:`partial`), of the records
    ``selection`` uses (:class:`~privrank.engines.users.Selection`; default all)."""
    items, (a, index_a), (b, index_b) = item_codes(batch, options.items)
    values2 = batch.outcome + np.int8(1)
    epsilon, first = batch.epsilon, batch.first_record
    if selection is not None:
        if selection.keep is not None:  # every record is checked, as in memory; the records used are counted
            if index_a is not None:
                _item_indices(batch, items, index_a[a], index_b[b])
            a, b, values2 = a[selection.keep], b[selection.keep], values2[selection.keep]
        first = selection.first
    if options.epsilon is not None or options.user_epsilon is not None:
        epsilon = options.epsilon if selection is None or selection.epsilon is None else selection.epsilon
        values2 = 2 * randomize_records(values2, epsilon, options.key, first)
    levels, level = (None, 0) if epsilon is None else epsilon_levels(epsilon, values2.size)
    m, n_levels = len(items), 1 if levels is None else levels.size
    shape = (n_levels, m if index_a is None else index_a.size, m if index_b is None else index_b.size)
    size = int(np.prod(shape)) * 3
    if size <= DENSE_CODES and folds(size, len(batch)):
        cells = ordered_counts(a, b, values2, level, shape)
        code = np.flatnonzero(cells)
        value, rest = code % 3, code // 3
        b, rest = rest % shape[2], rest // shape[2]
        a, level = rest % shape[1], rest // shape[1]
        if index_a is not None:
            a, b = _item_indices(batch, items, index_a[a], index_b[b])
        return _counted(items, levels, record_codes(m, a, b, value, level), cells[code])
    if index_a is not None:
        a, b = _item_indices(batch, items, index_a[a], index_b[b])
    return _counted(items, levels, record_codes(m, a, b, values2, level), None)


def _item_indices(batch, items, a, b):
    """``(a, b)``, the item indices of codes mapped through their dictionaries' index; a batch in
    which one is -1 (not in ``items``) or a record compares an item with itself is refused, naming
    its first record at fault."""
    if np.any(a < 0) or np.any(b < 0) or np.any(a == b):
        batch.item_indices(items)
    return a, b


def item_codes(batch, items=None) -> tuple[tuple, tuple, tuple]:
    """``(items, (a, index_a), (b, index_b))``: the item list (default: the labels of the batch,
    sorted) and, for each side of the comparisons, each record's item as a code and each code's
    index in ``items`` (-1: not in it).

    Text labels are dictionary-encoded (a dictionary column as it is read, other text by
    ``pyarrow.compute.dictionary_encode``): the codes are the dictionary's indices, as they are,
    and the index maps the dictionary, so no record is looked up. Other labels are looked up
    record by record (:meth:`~privrank.data.io.ComparisonBatch.indexed`, which refuses an unknown
    item or a comparison of an item with itself): the codes are the item indices and the index
    is None.
    """
    pa = pyarrow_module()
    columns = (batch.item_a, batch.item_b)
    if not all(pa.types.is_dictionary(c.type) or is_text_type(c.type) for c in columns):
        items, a, b = batch.indexed(items)
        return items, (a, None), (b, None)
    encoded = [dictionary_encoded(c) for c in columns]
    if items is None:  # every label of the dictionaries: the unused ones are dropped at the end
        items = sorted_labels(set().union(*(present_labels(c, used_only=False) for c in encoded)))
    return items, *((c.indices.to_numpy(), known_indices(c.dictionary, items)) for c in encoded)


def _counted(items, levels, codes, counts) -> Partial:
    """A partial from (possibly repeated) codes, dense when the code space is small."""
    part = Partial(items, levels, np.zeros(0, dtype=np.int64), None)
    if part.size <= DENSE_CODES:
        dense = np.bincount(codes, counts, minlength=part.size)
        return replace(part, counts=dense.astype(np.int64) if counts is not None else dense)
    keys, (n,) = group_sums(codes, part.size, counts)
    return replace(part, counts=np.asarray(n).astype(np.int64), codes=keys)


def combine(partials) -> Partial:
    """Exact sum of partial statistics of disjoint sets of records."""
    first = partials[0]
    items, levels = first.items, first.levels
    if any(p.items != items for p in partials[1:]):
        items = sorted_labels(set().union(*(p.items for p in partials)))
    if levels is not None and any(not np.array_equal(p.levels, levels) for p in partials[1:]):
        levels = np.unique(np.concatenate([p.levels for p in partials]))
    aligned = [p.items == items and (levels is None or np.array_equal(p.levels, levels)) for p in partials]
    if all(aligned) and all(p.codes is None for p in partials):
        total = first.counts if len(partials) == 1 else np.add(first.counts, partials[1].counts)
        for p in partials[2:]:
            total += p.counts
        return Partial(items, levels, total, None)
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
    return _counted(items, levels, np.concatenate(codes), np.concatenate(counts))


def _reindex(codes, m: int, index, new_m: int, level_index=None) -> np.ndarray:
    """Codes over ``m`` items re-expressed over ``new_m`` items (item k becomes ``index[k]``) and,
    if given, new privacy levels (level l becomes ``level_index[l]``)."""
    value, rest = codes % 3, codes // 3
    b, rest = rest % m, rest // m
    a, level = rest % m, rest // m
    return record_codes(new_m, index[a], index[b], value, level if level_index is None else level_index[level])


def finish(part: Partial | None, options) -> ComparisonTally:
    """The final tally; ``seeded`` when its reports were drawn from a seeded key, ``items_declared``
    when the item list was given, and declaring the epsilon its reports were drawn at, if any."""
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
    declared = (options.epsilon,) if options.epsilon is not None else None
    if options.user_epsilon is not None and part.levels is not None:  # the levels its reports were drawn at
        declared = tuple(part.levels.tolist())
    return replace(tally, seeded=options.seeded, items_declared=options.items is not None, declared_epsilons=declared)
