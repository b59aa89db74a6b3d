"""Per-pair counts computed where the comparisons are kept (a SQL warehouse, Spark, DuckDB).

A team whose comparisons live in a warehouse need not export them: one row per pair of items,
``item_a,item_b,wins_a,wins_b,ties`` (``ties`` optional), is their sufficient statistic for every
central release (:func:`read_pair_counts`). ``wins_a`` counts the comparisons of the pair that
``item_a`` won, ``wins_b`` those ``item_b`` won, ``ties`` the ties; the columns are recognised from
the header (case-insensitively), in a CSV, Parquet or Arrow file or a table in memory (a pandas or
polars DataFrame, a pyarrow Table, a DuckDB result).

A row stands for its comparisons exactly: ``wins_a`` records ``(item_a, item_b, 1)``, ``wins_b``
records ``(item_a, item_b, -1)`` and ``ties`` records ``(item_a, item_b, 0)``. So the counts give
the release the comparisons would give, and the ledger knows them by the fingerprint of those
comparisons (:class:`PairCountFile` hands them out as records, a row's counts being multiplicities).

A per-respondent bound is declared, not checked. The query that computed the counts keeps each
respondent's first ``K`` comparisons (``ROW_NUMBER() OVER (PARTITION BY user ORDER BY time) <= K``)
and whoever reads the counts declares that ``K`` (``max_answers=``), as the item list is declared:
the counts carry no respondent ids, so privrank cannot check it, and every guarantee that uses it
says so.
"""
from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np

from ..errors import InputError, check_whole
from .arrow_columns import is_table, pyarrow_module
from .comparison_files import (MULTIPLICITY_COLUMNS, PAIR_COUNTS_LAYOUT, QUOTA_COLUMN, WINNER_COLUMNS, add_counted,
                               ComparisonColumns, ComparisonFile, holds_pair_counts)
from .comparisons import sorted_labels
from .pair_counts import PairCounts
from .tabular import (DEFAULT_BATCH_SIZE, OUTCOME_COLUMNS, PREFLIB_SUFFIXES, USER_COLUMNS,
                      ColumnarFile, TableLike, file_suffix, item_list)

#: the columns of a counts table: the two items, then the counts of each outcome (``ties`` optional)
ITEM_COLUMNS = ("item_a", "item_b")
COUNT_COLUMNS = ("wins_a", "wins_b", "ties")
#: the outcome each count column stands for (1: item_a won, -1: item_b won, 0: a tie)
OUTCOMES = np.array([1, -1, 0], dtype=np.int8)
#: columns of comparison layouts, which a table of counts summed over everyone does not have
OTHER_COLUMNS = (*USER_COLUMNS, *OUTCOME_COLUMNS, *WINNER_COLUMNS, *MULTIPLICITY_COLUMNS, "winner", "loser", "epsilon",
                 QUOTA_COLUMN)


def holds_pair_count_table(source) -> bool:
    """Whether a data file (a path or pinned file) or a table in memory holds per-pair counts."""
    if not is_table(source) and file_suffix(source) in PREFLIB_SUFFIXES:
        return False
    return holds_pair_counts(ColumnarFile(source).header)


class PairCountFile(ComparisonFile):
    """A table of per-pair counts (CSV, Parquet, Arrow or in memory), read in batches.

    As a :class:`~privrank.data.comparison_files.ComparisonFile` it gives the comparisons the
    counts stand for (:meth:`batches`: a row's three counts are the multiplicities of its three
    outcomes), which is how the ledger fingerprints it; :meth:`pair_counts` reads the statistic.
    Every row is checked as it is read: item labels present, counts whole numbers from 0 to 2^53
    (in CSV written as integers), and all of them together at most 2^53. Reading the statistic and
    the fingerprint take one step per row; only reading the comparisons one by one (:meth:`batches`,
    :meth:`read`) is bounded by ``PRIVRANK_MAX_COUNTED_RECORDS``.
    """

    def __init__(self, source):
        ColumnarFile.__init__(self, source)
        names = [str(h).strip().lower() for h in self.header]
        if not holds_pair_counts(names):
            raise InputError(f"{self.path}: a table of per-pair counts needs the columns {PAIR_COUNTS_LAYOUT} "
                             "(ties optional)")
        wanted = (*ITEM_COLUMNS, *COUNT_COLUMNS)
        repeated = [n for n in wanted if names.count(n) > 1]
        if repeated:
            raise InputError(f"{self.path}: the column {repeated[0]!r} appears more than once; name each column once")
        other = next((n for n in names if n in OTHER_COLUMNS), None)
        if other is not None:
            raise InputError(f"{self.path}: a table of per-pair counts ({PAIR_COUNTS_LAYOUT}) has one row per pair, "
                             f"summed over everyone; its {other!r} column belongs to another layout: drop it")
        self.columns = ComparisonColumns(names.index("item_a"), names.index("item_b"), None, None, None,
                                         layout=PAIR_COUNTS_LAYOUT)
        self.count_names = [self.header[names.index(n)] for n in COUNT_COLUMNS if n in names]
        self.names = [self.header[k] for k in self.columns.positions()] + self.count_names
        self.label_names = self.names[:2]

    @property
    def counted(self) -> bool:
        """True: every row stands for its counts' comparisons."""
        return True

    @property
    def extent_columns(self) -> list:
        return list(self.count_names)

    def _counts(self, table, first_row: int | None) -> np.ndarray:
        """The ``(n, 3)`` counts ``wins_a, wins_b, ties`` of a table's rows (ties 0 without their column),
        each a whole number from 0 to 2^53 (:meth:`~privrank.data.tabular.ColumnarFile.counts`)."""
        counts = np.zeros((len(table), 3), dtype=np.int64)
        for k, name in enumerate(self.count_names):
            counts[:, k] = self.counts(table, name, first_row)
        return counts

    def _add_records(self, done: int, counts, expanded: bool = False) -> int:
        """``done`` comparisons and those ``counts`` stand for (:func:`~privrank.data.comparison_files.add_counted`),
        limited as records only when ``expanded`` (each to be read as a record)."""
        return add_counted(self.path, done, counts, "the counts",
                           "read the counts as counts (read_pair_counts), which takes one step per pair" if expanded
                           else None)

    def rows(self, batch_size: int = DEFAULT_BATCH_SIZE):
        """Validated batches of rows: :class:`ComparisonBatch` objects whose ``first_record`` is their
        first row and whose ``counts`` are an ``(n, 3)`` array of ``wins_a, wins_b, ties``."""
        row = records = 0
        for raw in self.raw_batches(batch_size):
            batch = self.validate(raw, (row, row))
            records = self._add_records(records, batch.counts)
            row += len(raw)
            yield batch

    def record_batches(self, batch_size: int = DEFAULT_BATCH_SIZE, expanded: bool = False):
        """Per batch of rows, the comparisons they stand for: three records per row (its items with
        the outcomes 1, -1 and 0) whose ``counts`` are the row's counts (how the ledger fingerprints
        the table, one step per row). ``expanded``: the records are to be read one by one, which
        the limit ``PRIVRANK_MAX_COUNTED_RECORDS`` bounds."""
        pa = pyarrow_module()
        records = 0
        for batch in self.rows(batch_size):
            counts = batch.counts
            n, first, done = len(counts), batch.first_record, records
            records = self._add_records(records, counts, expanded)  # refused before the batch is given
            taken = pa.array(np.repeat(np.arange(n), 3), type=pa.int64())
            yield replace(batch, item_a=batch.item_a.take(taken), item_b=batch.item_b.take(taken),
                          outcome=np.tile(OUTCOMES, n), first_record=done, counts=counts.reshape(-1), first_row=0,
                          where=lambda k, first=first: self.where(first + k // 3))

    def _row_batches(self, batch_size: int):
        """The batches :meth:`batches` and :meth:`read` expand into records one by one."""
        return self.record_batches(batch_size, expanded=True)

    def pair_counts(self, items=None, max_answers=None) -> PairCounts:
        """The per-pair statistic (see :func:`read_pair_counts`)."""
        bound = None if max_answers is None else check_whole(max_answers, name="max_answers")
        read = list(self.rows())
        if not sum(len(batch) for batch in read):
            raise InputError(f"{self.path} has a header but no comparisons")
        labels = sorted_labels(set().union(*(batch.labels() for batch in read))) if items is None else item_list(items)
        if len(labels) < 2:
            raise InputError(f"{self.path}: only one item occurs; at least two are needed to rank")
        m = len(labels)
        a, b = (np.concatenate(x) for x in zip(*(batch.item_indices(labels) for batch in read)))
        counts = np.concatenate([batch.counts for batch in read])
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        key = lo * np.int64(m) + hi
        order = np.argsort(key, kind="stable")
        twice = np.flatnonzero(key[order][1:] == key[order][:-1])
        if twice.size:
            raise InputError(f"{self.where(int(order[twice[0] + 1]))}: a pair of items is listed twice (in either "
                             "order); a table of counts has one row per pair")
        kept = order[counts[order].sum(axis=1) > 0]  # a pair of zero comparisons says nothing: dropped
        swap = a[kept] > b[kept]
        wins = np.where(swap, counts[kept, 1], counts[kept, 0]) + 0.5 * counts[kept, 2]
        totals = counts[kept].sum(axis=1).astype(float)
        return PairCounts(m, lo[kept], hi[kept], wins.astype(float), totals, labels, items is not None, bound)


def declared_bound(counts: PairCounts, max_answers) -> int | None:
    """The per-respondent bound of counts computed elsewhere: the one they were read with
    (:func:`read_pair_counts`) or a release's ``max_answers``; both given, they must agree."""
    if max_answers is None:
        return counts.max_answers
    bound = check_whole(max_answers, name="max_answers")
    if counts.max_answers is not None and bound != counts.max_answers:
        raise InputError(f"max_answers = {bound} differs from the bound the counts were read with "
                         f"({counts.max_answers}); give the bound the query applied, once")
    return bound


def declared_note(bound: int) -> str:
    """What a guarantee on counts says of their per-respondent bound."""
    return (f" The bound of {bound} answers per respondent was applied where the counts were computed (each "
            f"respondent's first {bound} kept); privrank cannot check it: it is a declared public parameter, "
            "like the item list.")


def read_pair_counts(source: str | os.PathLike[str] | TableLike, *, items: Sequence[Hashable] | None = None,
                     max_answers: int | None = None) -> PairCounts:
    """Per-pair counts ``item_a,item_b,wins_a,wins_b,ties`` computed where the comparisons are kept.

    ``source`` is a CSV, Parquet or Arrow file, or a table in memory (a pandas or polars
    DataFrame, a pyarrow Table, a DuckDB result): one row per unordered pair of items, with the
    number of its comparisons ``item_a`` won, ``item_b`` won and tied (the ``ties`` column is
    optional). The result is the :class:`~privrank.data.pair_counts.PairCounts` of those
    comparisons (a tie half a win each), which :func:`~privrank.pairwise.central.perturbed_mle`
    and :func:`~privrank.pairwise.central.noisy_copeland` release as they release comparisons.

    Parameters
    ----------
    items : sequence, optional
        The public item list, which every central release needs declared (default: the labels the
        table names, which only the non-private baselines take).
    max_answers : int, optional
        The per-respondent bound the counts were computed with: each respondent's first
        ``max_answers`` comparisons counted (``ROW_NUMBER() OVER (PARTITION BY user ORDER BY
        time) <= max_answers``). Declared, not checked: the counts carry no respondent ids. A
        release per respondent (``user_epsilon=``) needs it; a release per comparison
        (``epsilon=``) then also states ``max_answers x epsilon`` per respondent.

    Raises
    ------
    InputError
        For a missing column, a column of another layout (a user, an outcome), an empty label, a
        count that is not a whole number from 0 to 2^53 (in CSV written as an integer: ``3``, not
        ``3.0``), a pair listed twice (in either order), an item compared with itself, an item not
        in ``items``, no comparisons at all, or more than 2^53 comparisons in all.
        The message names the line (CSV) or the row, never its contents. Pairs with no comparison
        (all three counts 0) are dropped.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import privrank as pr
    >>> table = pa.table({"item_a": ["a", "c", "b"], "item_b": ["b", "a", "c"],
    ...                   "wins_a": [3, 1, 0], "wins_b": [1, 2, 0], "ties": [0, 1, 2]})
    >>> counts = pr.read_pair_counts(table, items=["a", "b", "c"], max_answers=20)
    >>> counts.i, counts.j, counts.wins, counts.totals, counts.max_answers
    (array([0, 0, 1]), array([1, 2, 2]), array([3. , 2.5, 1. ]), array([4., 4., 2.]), 20)
    """
    return PairCountFile(source).pair_counts(items, max_answers)

