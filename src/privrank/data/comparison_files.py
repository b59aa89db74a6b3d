"""Comparisons from files (CSV, Parquet, Arrow) and tables in memory, in the layouts of :mod:`privrank.data.io`."""
from __future__ import annotations

import copy
import csv
import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .. import limits
from ..errors import InputError, epsilons_out_of_range
from .comparisons import PairwiseComparisons, sorted_labels
from .arrow_columns import (arrow_table, dictionary_encoded, first_null, integer_range_codes, is_table, is_text_type,
                            label_indices, present_labels, pyarrow_module, sorted_codes)
from .tabular import (ColumnarFile, DEFAULT_BATCH_SIZE, MAX_EXACT_COUNT, MAX_FIELD_CHARS, OUTCOME_COLUMNS, USER_COLUMNS,
                      TableLike, item_list, pick_column)

if TYPE_CHECKING:
    import pyarrow as pa


#: layouts whose records name two items and a ``winner`` column: evalica and crowd-kit's
#: ``left,right,winner`` (crowd-kit calls it ``label``) and arena-style ``model_a,model_b,winner``
SIDE_COLUMNS = (("left", "right"), ("model_a", "model_b"))
WINNER_COLUMNS = ("winner", "label")
#: values of a winner column, lower case, and the outcome they mean (else: the winning item's label)
#: the optional column of a reports file that declares the quota of reports per respondent
QUOTA_COLUMN = "max_answers"
#: the names of the optional column that says how many comparisons a row stands for (its multiplicity)
MULTIPLICITY_COLUMNS = ("count", "counts", "weight", "weights", "multiplicity")
#: bytes the in-memory reader holds per comparison at its peak (the batches read, the arrays they
#: are gathered into and the comparisons built from them; measured 67 to 76 with a user column),
#: for its memory check of a file with a count column
RECORD_BYTES = 80
#: every column name a layout reads (lower case)
LAYOUT_COLUMNS = frozenset({"winner", "loser", "item_a", "item_b", "epsilon", QUOTA_COLUMN, *OUTCOME_COLUMNS,
                            *USER_COLUMNS, *(s for pair in SIDE_COLUMNS for s in pair), *WINNER_COLUMNS,
                            *MULTIPLICITY_COLUMNS})
WINNER_WORDS = {"left": 1, "model_a": 1, "right": -1, "model_b": -1,
                "tie": 0, "draw": 0, "tie (bothbad)": 0, "both_bad": 0}

#: the columns of a table of per-pair counts (:mod:`privrank.data.pair_count_files`; ``ties`` optional)
PAIR_COUNTS_LAYOUT = "item_a,item_b,wins_a,wins_b,ties"


def holds_pair_counts(header) -> bool:
    """Whether a header names a table of per-pair counts (``item_a``, ``item_b``, ``wins_a`` and ``wins_b``)."""
    names = {str(h).strip().lower() for h in header}
    return {"item_a", "item_b", "wins_a", "wins_b"} <= names


@dataclass(frozen=True)
class ComparisonColumns:
    """Positions in a file's header of the fields of a comparison.

    ``outcome`` is None for a ``winner,loser`` file (every record is a win for ``item_a``, the
    winner); ``user`` and ``epsilon`` are None when the file has no such column. With
    ``winner_column`` the outcome column names the winner (:data:`WINNER_WORDS`, or the label of
    one of the record's two items) instead of holding 1, -1 or 0. ``layout`` names the layout read.
    ``max_answers``: the optional column of a reports file that declares the quota of reports per
    respondent (the same positive integer on every row); ``count``: the optional multiplicity column
    (:data:`MULTIPLICITY_COLUMNS`), how many comparisons each row stands for.
    """

    item_a: int
    item_b: int
    outcome: int | None
    user: int | None
    epsilon: int | None
    winner_column: bool = False
    layout: str = "item_a,item_b,outcome"
    max_answers: int | None = None
    count: int | None = None

    @classmethod
    def from_header(cls, header, source) -> "ComparisonColumns":
        """The layout named by ``header``. The header is never echoed: a file without one would
        show its first record in the message."""
        names = [str(h).strip().lower() for h in header]
        if holds_pair_counts(names):
            raise InputError(f"{source}: per-pair counts ({PAIR_COUNTS_LAYOUT}), not comparisons: central releases "
                             "take them, read with read_pair_counts(path or table, items=...) (CLI: privrank rank or "
                             "top-k with a central mechanism, --items and the default --engine local: counts are "
                             "already the statistic the engines compute)")
        repeated = sorted({n for n in names if n in LAYOUT_COLUMNS and names.count(n) > 1})
        if repeated:
            raise InputError(f"{source}: the column {repeated[0]!r} appears more than once; name each column once")
        if len([n for n in names if n in USER_COLUMNS]) > 1:
            raise InputError(f"{source}: more than one user column ({', '.join(USER_COLUMNS)}); keep one")
        user = pick_column(names, USER_COLUMNS)
        outcome = pick_column(names, OUTCOME_COLUMNS)
        side = next((pair for pair in SIDE_COLUMNS if pair[0] in names and pair[1] in names), None)
        layouts = [name for name, present in (
            ("winner,loser", "winner" in names and "loser" in names),
            (f"item_a,item_b,{outcome}", "item_a" in names and "item_b" in names and outcome),
            (f"{side[0]},{side[1]},{pick_column(names, WINNER_COLUMNS)}" if side else "",
             side and pick_column(names, WINNER_COLUMNS))) if present]
        if len(layouts) > 1:
            raise InputError(f"{source}: the header names the columns of two layouts ({layouts[0]} and {layouts[1]}); "
                             "they may disagree, so keep the columns of one")
        counted = [n for n in names if n in MULTIPLICITY_COLUMNS]
        if len(counted) > 1:
            raise InputError(f"{source}: the columns {counted[0]!r} and {counted[1]!r} both say how many comparisons "
                             "a row stands for; keep one")
        winner_column = False
        if "winner" in names and "loser" in names:
            a, b, outcome = "winner", "loser", None
            layout = "winner,loser"
        elif "item_a" in names and "item_b" in names and outcome:
            a, b = "item_a", "item_b"
            layout = f"item_a,item_b,{outcome}"
        elif side and pick_column(names, WINNER_COLUMNS):
            (a, b), outcome, winner_column = side, pick_column(names, WINNER_COLUMNS), True
            layout = f"{a},{b},{outcome}"
        else:
            raise InputError(f"{source}: need a header row naming the columns of one layout: item_a,item_b,outcome "
                             "(or result); winner,loser; left,right,winner (or label); model_a,model_b,winner; or "
                             "user,item,rating for ratings; optionally a user column "
                             f"({', '.join(USER_COLUMNS)}); the first row has {len(names)} fields and none of "
                             "these layouts (is the header missing?)")
        if user:
            layout = f"{user},{layout}"
        if QUOTA_COLUMN in names and "epsilon" not in names:
            raise InputError(f"{source}: a {QUOTA_COLUMN} column (the quota of reports per respondent) belongs to a "
                             "file of randomized reports, with an epsilon column")

        def pos(name):
            return None if name is None else names.index(name)
        return cls(pos(a), pos(b), pos(outcome), pos(user), pos("epsilon" if "epsilon" in names else None),
                   winner_column, layout, pos(QUOTA_COLUMN if QUOTA_COLUMN in names else None),
                   pos(counted[0] if counted else None))

    def positions(self) -> list[int]:
        """Header positions of the fields present, in the order item_a, item_b, outcome, user, epsilon,
        max_answers, count."""
        return [k for k in (self.item_a, self.item_b, self.outcome, self.user, self.epsilon, self.max_answers,
                            self.count) if k is not None]


def read_comparisons(source: str | os.PathLike[str] | TableLike, *, items: Sequence[Hashable] | None = None,
                     left: str | None = None, right: str | None = None, winner: str | None = None,
                     outcome: str | None = None, user: str | None = None) -> PairwiseComparisons:
    """Read pairwise comparisons from a CSV, Parquet or Arrow file, or a table in memory.

    ``source`` is a path or a table (a pandas or polars DataFrame, a pyarrow Table, a DuckDB
    result: anything that speaks the Arrow stream protocol); a directory (Hive-partitioned or not)
    or a glob pattern such as ``"votes/*.parquet"`` names a data set of many files, read as the one
    file that concatenates them in the order of their paths (:mod:`privrank.data.parts`). The layout is recognised from the
    column names (module docstring of :mod:`privrank.data.io`); a table with other names says
    which column is which: ``left=`` and ``right=`` name the two items' columns, and ``winner=``
    (left, right, tie or the winning item's label) or ``outcome=`` (1, -1, 0) the result;
    ``user=`` the respondent's column. A multiplicity column (``count``, ``weight``...: how many
    comparisons a row stands for) is read under its own name. Every source goes through the same
    Arrow reader (:class:`ComparisonFile`).

    Raises
    ------
    InputError
        On a missing file or column, an unknown outcome, an empty field, NaN, a count that is not a
        whole number from 0 to 2^53, or fewer than two items; the message names the line (CSV) or
        the record, never its contents.

    Examples
    --------
    From a table in memory (a file path works the same way):

    >>> import pyarrow as pa
    >>> import privrank as pr
    >>> table = pa.table({"left": ["a", "a", "b"], "right": ["b", "c", "c"],
    ...                   "winner": ["left", "tie", "right"]})
    >>> comps = pr.read_comparisons(table, items=["a", "b", "c"])
    >>> comps.items, comps.outcome, comps.items_declared
    (('a', 'b', 'c'), array([ 1,  0, -1], dtype=int8), True)
    """
    if is_table(source):
        source = named_columns(arrow_table(source), left=left, right=right, winner=winner, outcome=outcome,
                               user=user)
    elif any(k is not None for k in (left, right, winner, outcome, user)):
        raise InputError("left=, right=, winner=, outcome= and user= name the columns of a table in memory; "
                         "a file's header names its own (see privrank.data.io)")
    comps = ComparisonFile(source).read(items=items)
    if len(comps.items) < 2:
        raise InputError(f"{'the table' if is_table(source) else source}: only one item occurs; at least two "
                         "are needed to rank")
    return comps


def as_comparisons(data):
    """``data`` as it is, or a table in memory (a DataFrame...) read by :func:`read_comparisons` --
    how every function that takes comparisons accepts a DataFrame."""
    return read_comparisons(data) if is_table(data) else data


def named_columns(table, *, left=None, right=None, winner=None, outcome=None, user=None):
    """``table`` with the columns named by keywords renamed to a layout :class:`ComparisonColumns`
    knows (``item_a,item_b,outcome`` or ``left,right,winner``), and a multiplicity column
    (:data:`MULTIPLICITY_COLUMNS`) kept as it is; unchanged without keywords."""
    if all(k is None for k in (left, right, winner, outcome, user)):
        return table
    if left is None or right is None or (winner is None) == (outcome is None):
        raise InputError("name the columns with left= and right= (the two items) and one of winner= "
                         "(left, right, tie or an item's label) or outcome= (1, -1 or 0)")
    given = {left: "item_a", right: "item_b", **({winner: "winner"} if winner is not None else {}),
             **({outcome: "outcome"} if outcome is not None else {}), **({user: "user"} if user is not None else {})}
    missing = [name for name in given if name not in table.column_names]
    if missing:
        raise InputError(f"the table has no column {missing[0]!r}")
    if len(given) < 3 + (user is not None):
        raise InputError("left=, right=, winner= (or outcome=) and user= must name different columns")
    if winner is not None:  # the winner layout's own names
        given = {left: "left", right: "right", winner: "winner", **({user: "user"} if user is not None else {})}
    given.update({name: name for name in table.column_names  # rows standing for several comparisons stay so
                  if str(name).strip().lower() in MULTIPLICITY_COLUMNS and name not in given})
    return table.select(list(given)).rename_columns(list(given.values()))


@dataclass(frozen=True, eq=False)
class ComparisonBatch:
    """Validated records of one batch of a comparison file.

    ``item_a``, ``item_b`` and ``user`` are pyarrow arrays of labels (possibly
    dictionary-encoded); ``outcome`` int8 in {1, -1, 0}; ``epsilon`` the per-record epsilon of
    randomized reports or None. ``first_record`` is the index in the file of the first record
    (comparisons are numbered in file order, a row of count ``c`` holding ``c`` of them);
    ``max_answers`` the quota the batch's ``max_answers`` column declares (None without the column).

    With ``counts`` (a file with a count column) the arrays hold the batch's rows and ``counts``
    how many comparisons each stands for; :meth:`pieces` gives them as ordinary records, which is
    how every consumer reads them. ``first_row`` is the index in the file of the batch's first
    row (None: ``first_record``, every row one record) and ``rows`` each record's row in the batch,
    when rows were repeated: error messages name a record's row.
    """

    item_a: pa.Array
    item_b: pa.Array
    outcome: np.ndarray
    user: pa.Array | None
    epsilon: np.ndarray | None
    first_record: int
    where: Callable[[int], str] = str  # row index -> where it is, for error messages (ColumnarFile.where)
    max_answers: int | None = None
    first_row: int | None = None
    counts: np.ndarray | None = None
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        """The number of comparisons (with ``counts``, their sum)."""
        return int(self.outcome.size if self.counts is None else self.counts.sum())

    def locate(self, record: int) -> str:
        """Where record ``record`` of the batch is in the file (its row's line or number), for an error message."""
        if self.first_row is None:
            return self.where(self.first_record + record)
        return self.where(self.first_row + int(record if self.rows is None else self.rows[record]))

    def pieces(self, size: int = DEFAULT_BATCH_SIZE):
        """The batch as ordinary records, in batches of at most ``size``: each row repeated as many
        times as its count says (rows of count 0 dropped), in file order. A batch without counts is
        its own one piece; a batch with counts gives at least one (possibly empty) piece."""
        if self.counts is None:
            yield self
            return
        pa = pyarrow_module()
        ends = np.cumsum(self.counts)
        total = int(ends[-1]) if ends.size else 0
        for start in range(0, max(total, 1), size):
            rows = np.searchsorted(ends, np.arange(start, min(start + size, total)), side="right")
            taken = pa.array(rows, type=pa.int64())
            yield replace(self, item_a=self.item_a.take(taken), item_b=self.item_b.take(taken),
                          outcome=self.outcome[rows], user=None if self.user is None else self.user.take(taken),
                          epsilon=None if self.epsilon is None else self.epsilon[rows],
                          first_record=self.first_record + start, counts=None, rows=rows)

    def labels(self, used_only: bool = True) -> set:
        """Item labels that occur in the batch; with ``used_only=False`` possibly more: the whole
        dictionary of a dictionary-encoded column (no pass over the records)."""
        return set(present_labels(self.item_a, used_only)) | set(present_labels(self.item_b, used_only))

    def indexed(self, items=None) -> tuple[tuple, np.ndarray, np.ndarray]:
        """``(items, a, b)``: ``items`` (default: the batch's labels, sorted; the whole dictionary of
        a dictionary-encoded column, the whole range of integer ids) and each record's two item
        indices in it."""
        if items is None:
            coded = integer_range_codes(self.item_a, self.item_b)
            if coded is not None:
                items, (a, b) = coded
                return items, *self.distinct(a, b)
            items = sorted_labels(self.labels(used_only=False))
        return items, *self.item_indices(items)

    def item_indices(self, items: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Indices of each record's two items in ``items``; refuses unknown items and self-comparisons."""
        return self.distinct(label_indices(self.item_a, items), label_indices(self.item_b, items))

    def distinct(self, a, b) -> tuple[np.ndarray, np.ndarray]:
        """``(a, b)`` (indices, or any per-label codes), refusing a record that compares an item with itself."""
        same = np.flatnonzero(a == b)
        if same.size:
            raise InputError(f"{self.locate(int(same[0]))}: a comparison of an item with itself")
        return a, b



def add_counted(path, done: int, counts, what: str, advice: str | None) -> int:
    """``done`` comparisons plus those ``counts`` stand for, refused past 2^53 (counts as floats are no
    longer exact) and, with ``advice`` (the records are to be read one by one), past the limit
    ``PRIVRANK_MAX_COUNTED_RECORDS`` (:mod:`privrank.limits`); ``what`` names the counts in messages."""
    total = done + float(counts.sum(dtype=np.float64))
    if advice is not None:
        limits.check("COUNTED_RECORDS", total, f"{path}: the number of comparisons in {what}", advice)
    if total > MAX_EXACT_COUNT:
        raise InputError(f"{path}: more than 2^53 comparisons in {what}, more than privrank counts exactly")
    return done + int(counts.sum())

class ComparisonFile(ColumnarFile):
    """A comparison file (CSV, Parquet or Arrow IPC) read in batches (:class:`ColumnarFile`).

    A position in the file is the pair (row, record): a row of count ``c`` (a file with a
    multiplicity column) holds ``c`` records, every other row one. :meth:`validate` takes the
    position of a table's first row and :meth:`extent` returns how far a table reaches.
    """

    def __init__(self, path):
        super().__init__(path)
        self.refuse_partition_keys(LAYOUT_COLUMNS)
        self.columns = ComparisonColumns.from_header(self.header, self.path)
        self.names = [self.header[k] for k in self.columns.positions()]
        c = self.columns
        # item labels, user ids and winners (words or labels): few distinct values, read dictionary-encoded
        texts = (c.item_a, c.item_b, c.user, c.outcome if c.winner_column else None)
        self.label_names = [self.header[k] for k in texts if k is not None]

    @property
    def is_randomized(self) -> bool:
        """True when the file has an epsilon column (randomized reports)."""
        return self.columns.epsilon is not None

    @property
    def has_users(self) -> bool:
        return self.columns.user is not None

    @property
    def counted(self) -> bool:
        """True when the file has a multiplicity column (:data:`MULTIPLICITY_COLUMNS`)."""
        return self.columns.count is not None

    @property
    def extent_columns(self) -> list:
        count = self.columns.count
        return [self.header[count]] if count is not None else self.names[:1]

    def extent(self, table) -> np.ndarray:
        """``[rows, records]`` of a table of this file's :attr:`extent_columns`."""
        return np.array([len(table), self._add_records(0, self._counts(table, None)) if self.counted else len(table)])

    def n_records(self) -> int | None:
        """Number of comparisons: from the file's metadata (None for CSV), or, with a count column,
        the sum of its counts, read through the file (that column only) and refused, as the
        batches are, past what the readers take on (:meth:`_add_records`)."""
        if not self.counted:
            return super().n_records()
        column = copy.copy(self)
        column.names, column.label_names = self.extent_columns, []
        row = done = 0
        for raw in column.raw_batches(DEFAULT_BATCH_SIZE):
            done = self._add_records(done, self._counts(raw, row))
            row += len(raw)
        return done

    def _counts(self, table, first_row: int | None) -> np.ndarray:
        """Comparisons per row of a table of this file, which has a count column
        (:meth:`~privrank.data.tabular.ColumnarFile.counts`)."""
        assert self.columns.count is not None, "only a file with a count column has counts"
        return self.counts(table, self.header[self.columns.count], first_row)

    def _add_records(self, done: int, counts) -> int:
        """``done`` comparisons and those ``counts`` stand for (:func:`add_counted`): a few bytes of a
        count column must not start hours of work."""
        return add_counted(self.path, done, counts, "its count column", "read a sample of the file, or lower its counts")

    def without_users(self) -> "ComparisonFile":
        """This file with its user column left unread: its batches carry no users."""
        assert self.columns.user is not None, "only a file with a user column has users to leave unread"
        file, user = copy.copy(self), self.header[self.columns.user]
        file.columns = replace(self.columns, user=None)
        file.names, file.label_names = ([n for n in names if n != user] for names in (self.names, self.label_names))
        return file

    def batches(self, batch_size: int = DEFAULT_BATCH_SIZE):
        """Validated :class:`ComparisonBatch` objects of ordinary records (:meth:`ComparisonBatch.pieces`),
        at most ``batch_size`` each, covering the file in order."""
        for batch in self._row_batches(batch_size):
            yield from batch.pieces(batch_size)

    def _row_batches(self, batch_size: int):
        """Validated batches of at most ``batch_size`` rows covering the file, with their counts if any;
        a batch whose counts take the file past the limit of :meth:`_add_records` is refused before it
        is given."""
        row = record = 0
        for raw in self.raw_batches(batch_size):
            batch = self.validate(raw, (row, record))
            row += batch.outcome.size
            record = self._add_records(record, batch.counts) if self.counted else record + len(batch)
            yield batch

    def validate(self, table, first) -> ComparisonBatch:
        """Check and convert a table (or record batch) of this file's columns, whose first row is at
        position ``first = (row, record)`` of the file (see the class docstring)."""
        pa = pyarrow_module()
        c = self.columns
        first_row, first_record = (int(x) for x in first)

        def column(pos):
            return self.column(table, self.header[pos])

        def check_present(col, name):
            missing = first_null(col)
            if missing is not None:
                raise InputError(f"{self.where(first_row + missing)}: empty {name}")
            dictionary = pa.types.is_dictionary(col.type)
            values = col.dictionary if dictionary else col
            t = values.type
            if pa.types.is_boolean(t):
                raise InputError(f"the {name} column must hold numbers, not true/false (an outcome is 1 when the "
                                 "first item wins, -1 when the second does, 0 for a tie)")
            if not (is_text_type(t) or pa.types.is_integer(t) or pa.types.is_floating(t)):
                raise InputError(f"the {name} column must hold text or numbers, not {t}")
            empty = None
            if is_text_type(t):
                from . import arrow_compute as pc
                empty = pc.is_in(pc.utf8_lower(values), pa.array(["", "nan", "na"])).to_numpy(zero_copy_only=False)
                long = pc.utf8_length(values).to_numpy(zero_copy_only=False) > MAX_FIELD_CHARS
                if long.any():  # no one types such a label; Python's csv module refuses it too
                    bad = np.flatnonzero(np.isin(col.indices.to_numpy(zero_copy_only=False), np.flatnonzero(long))
                                         if dictionary else long)
                    kind = "CSV" if self.format == "csv" else "data"
                    raise InputError(f"{self.where(first_row + int(bad[0]))}: malformed {kind}: a field "
                                     f"longer than {MAX_FIELD_CHARS:,} characters")
            elif pa.types.is_floating(t):
                empty = np.isnan(values.to_numpy(zero_copy_only=False))
            if empty is not None:
                if dictionary and empty.any():
                    empty = np.isin(col.indices.to_numpy(zero_copy_only=False), np.flatnonzero(empty))
                bad = np.flatnonzero(empty)
                if bad.size:
                    raise InputError(f"{self.where(first_row + int(bad[0]))}: empty or NaN {name}")
            return col

        item_a = check_present(column(c.item_a), "item")
        item_b = check_present(column(c.item_b), "item")
        n = len(item_a)
        if c.outcome is None:
            outcome = np.ones(n, dtype=np.int8)
        elif c.winner_column:
            outcome = self._winner_outcome(check_present(column(c.outcome), "winner"), item_a, item_b, first_row)
        else:
            x = self._numbers(check_present(column(c.outcome), "outcome"), "outcome", first_row)
            if not (np.issubdtype(x.dtype, np.integer) and (not x.size or x.min() >= -1 and x.max() <= 1)):
                bad = np.flatnonzero((x != 1) & (x != -1) & (x != 0))  # integers from -1 to 1 need no pass
                if bad.size:
                    raise InputError(f"{self.where(first_row + int(bad[0]))}: outcome must be 1, -1 or 0")
            outcome = x.astype(np.int8, copy=False)
        user = None if c.user is None else check_present(column(c.user), "user id")
        epsilon = None
        if c.epsilon is not None:
            epsilon = self._numbers(check_present(column(c.epsilon), "epsilon"), "epsilon", first_row)
            bad, why = epsilons_out_of_range(epsilon)
            if bad.size:
                raise InputError(f"{self.where(first_row + int(bad[0]))}: {why}")
            ties = np.flatnonzero(outcome == 0)
            if ties.size:
                raise InputError(f"{self.where(first_row + int(ties[0]))}: a randomized report must be 1 or -1, "
                                 "not a tie (randomized response never outputs a tie)")
        quota = None if c.max_answers is None else self._quota(
            self._numbers(check_present(column(c.max_answers), QUOTA_COLUMN), QUOTA_COLUMN, first_row), first_row)
        counts = self._counts(table, first_row) if self.counted else None
        return ComparisonBatch(item_a, item_b, outcome, user, epsilon, first_record, self.where, quota, first_row,
                               counts)

    def _quota(self, values, first_row) -> int | None:
        """The one quota a batch's ``max_answers`` column declares (None for an empty batch)."""
        if not values.size:
            return None
        bad = np.flatnonzero((values != values[0]) | (values < 1) | (values != np.floor(values)))
        if bad.size:
            raise InputError(f"{self.where(first_row + int(bad[0]))}: {QUOTA_COLUMN} must be the same whole "
                             "number >= 1 on every row (the declared quota of reports per respondent)")
        return int(values[0])

    def _winner_outcome(self, winner, item_a, item_b, first_row) -> np.ndarray:
        """Outcomes from a winner column: the label of one of the two items, or a word of
        :data:`WINNER_WORDS` (an item label matches first, so an item may be called "left").

        Every column is compared through its dictionary: the words and the labels are looked up
        once per distinct value, and the records are compared as integer codes."""
        pa = pyarrow_module()
        from . import arrow_compute as pc

        def encoded(col):  # (codes, distinct texts)
            col = dictionary_encoded(col)
            values = col.dictionary
            return col.indices.to_numpy(zero_copy_only=False), \
                values if pa.types.is_string(values.type) else values.cast(pa.string())
        try:
            (w, w_values), (a, a_values), (b, b_values) = encoded(winner), encoded(item_a), encoded(item_b)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise InputError("the winner column must hold text: left, right, tie or an item's label") from None

        def in_winners(values):  # each value's index of its first equal winner text, or -1
            return pc.fill_null(pc.index_in(values, value_set=w_values), -1).to_numpy(zero_copy_only=False)

        words = pc.fill_null(pc.index_in(pc.utf8_lower(w_values), value_set=pa.array(list(WINNER_WORDS))), -1)
        word_outcome = np.append(np.array(list(WINNER_WORDS.values()), dtype=np.int8), np.int8(2))
        outcome = word_outcome[words.to_numpy(zero_copy_only=False)][w]  # -1 (no word) takes the last entry, 2
        named_b, named_a = in_winners(b_values), in_winners(a_values)
        if max(named_a.max(initial=-1), named_b.max(initial=-1)) >= 0:  # some winner names an item
            w = in_winners(w_values)[w]  # a repeated dictionary entry compares as its first
            outcome[named_b[b] == w] = -1
            outcome[named_a[a] == w] = 1
        bad = np.flatnonzero(outcome == 2)
        if bad.size:
            raise InputError(f"{self.where(first_row + int(bad[0]))}: the winner must be left, right, tie "
                             "(or model_a, model_b, tie (bothbad)) or the label of one of the two items")
        return outcome

    def read(self, *, items=None) -> PairwiseComparisons:
        """The whole file in memory (items in sorted label order unless ``items`` is given)."""
        try:
            return self._read(items)
        except MemoryError:  # numpy's and pyarrow's allocation errors included
            raise InputError(f"{self.path}: the comparisons do not fit in memory; use the stream engine, which "
                             "reads the file in bounded memory (privrank.sufficient_statistics(path, "
                             "engine='stream'); CLI: --engine stream)") from None

    def _read(self, items) -> PairwiseComparisons:
        batches = list(self._row_batches(DEFAULT_BATCH_SIZE))
        if self.counted:  # a few bytes of counts may stand for more comparisons than memory holds
            limits.check("MEMORY_MB", sum(len(b) for b in batches) * RECORD_BYTES / 2 ** 20,
                         f"{self.path}: the memory (MiB) the comparisons its count column stands for take",
                         "the stream engine reads them in bounded memory (privrank.sufficient_statistics(path, "
                         "engine='stream'); CLI: --engine stream)")
            batches = [piece for b in batches for piece in b.pieces()]
        if not batches or not sum(len(b) for b in batches):
            raise InputError(f"{self.path} has a header but no comparisons")
        labels = sorted_labels(set().union(*(b.labels() for b in batches))) if items is None else item_list(items)
        pairs = [b.item_indices(labels) for b in batches]
        user = users = None
        if self.has_users:
            users, user = sorted_codes([b.user for b in batches])
        epsilon = np.concatenate([b.epsilon for b in batches]) if self.is_randomized else None
        comps = PairwiseComparisons.from_indices(
            labels, np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]),
            np.concatenate([b.outcome for b in batches]), user=user, users=users, epsilon=epsilon,
            items_declared=items is not None)
        quotas = {b.max_answers for b in batches if b.max_answers is not None}
        if len(quotas) > 1:
            raise InputError(f"{self.path}: {QUOTA_COLUMN} must be the same whole number >= 1 on every row (the "
                             "declared quota of reports per respondent)")
        return comps.with_quota(quotas.pop()) if quotas else comps


def comparisons_to_csv(comps: PairwiseComparisons, *, max_answers: int | None = None) -> str:
    """CSV text of comparisons in the long format (with ``epsilon`` for randomized reports).

    ``max_answers``: the declared quota of reports per respondent of randomized reports, written
    as an integer column ``max_answers`` (the same on every row) that :func:`read_comparisons`
    reads back, so the file states its per-respondent guarantee. Default: the quota the reports
    carry, if any. Refused when a respondent sent more reports (see
    :meth:`~privrank.data.comparisons.PairwiseComparisons.with_quota`).
    """
    import io

    if max_answers is not None:
        comps = comps.with_quota(max_answers)
    quota = comps.max_answers
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = (["user"] if comps.user is not None else []) + ["item_a", "item_b", "outcome"]
    if comps.is_randomized:
        header.append("epsilon")
    if quota is not None:
        header.append(QUOTA_COLUMN)
    w.writerow(header)
    items = comps.items
    for k in range(comps.n_records):
        row = [comps.users[comps.user[k]]] if comps.user is not None and comps.users is not None else []
        row += [items[comps.item_a[k]], items[comps.item_b[k]], int(comps.outcome[k])]
        if comps.epsilon is not None:
            row.append(repr(float(comps.epsilon[k])))
        if quota is not None:
            row.append(quota)
        w.writerow(row)
    return buf.getvalue()
