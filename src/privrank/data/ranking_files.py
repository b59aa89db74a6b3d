"""Ranking files: PrefLib or CSV with one ranking per row, in memory or in batches (see :mod:`privrank.data.io`).

:func:`as_rankings` turns any ranking profile argument (rankings, an array of orders, or a table
in memory) into :class:`~privrank.data.rankings.Rankings`.
"""
from __future__ import annotations

import os
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from .comparisons import sorted_labels
from .rankings import Rankings, RankingTally
from .ballots import PARTIAL_POLICIES, check_ballots, complete_ballots
from .comparison_files import SIDE_COLUMNS, WINNER_COLUMNS, ComparisonColumns
from .preflib import read_preflib
from .ratings import holds_ratings
from .parts import PREFLIB_SUFFIXES, DataParts, data_source, file_format, file_suffix, is_text_table
from .pinned import PinnedFile, check_data_file
from .arrow_columns import is_table, pyarrow_module
from .tabular import (ColumnarFile, DEFAULT_BATCH_SIZE, MAX_EXACT_COUNT, TextColumns, csv_header, TableLike, is_number,
                      item_list, open_text, read_text)

#: most ranking cells (rows x item columns) in one batch of a RankingFile
RANKING_BATCH_CELLS = 1 << 20
RANKING_ID_COLUMNS = ("voter", "user", "respondent", "judge", "id", "ballot")
_RANK_COLUMN = re.compile(r"rank\s*_?\s*\d+$")


def _no_ballot_columns(path) -> InputError:
    """The error for a rankings header with no column but the count and the id."""
    return InputError(f"{path}: no item or rank columns: name them rank1, rank2, ... (item labels, best first) or "
                      f"after the items (each its rank); count and an id column ({', '.join(RANKING_ID_COLUMNS)}) "
                      "are not ballots")


def _not_ranks(where: str, header) -> InputError:
    """The error for a rank cell that is no number: a file of comparisons (its header names the two items of
    a comparison) is told so, with the command that reads it."""
    if names_comparison_items(header):
        return InputError(f"{where}: this file holds pairwise comparisons, not rankings: rank them with "
                          "privrank rank (privrank aggregate reads ballots)")
    return InputError(f"{where}: ranks must be numbers (1 = best); for ballots of item labels the header must read "
                      "rank1,rank2,...")


def read_item_list(path) -> list:
    """The public item list from a file: one label per line, or a CSV with an ``item`` column.

    Blank lines are ignored. A first line that is a CSV header naming an ``item`` column (as the
    item tables of the shipped data sets have) selects that column. ``path`` may be a
    :class:`~privrank.data.pinned.PinnedFile` (standard input, spooled once).
    """
    if not isinstance(path, PinnedFile):
        check_data_file(path)
        path = Path(path)

    def read(source):
        with open_text(source) as fh:
            return fh.read()

    lines = [line for line in read_text(read, path).splitlines() if line.strip()]
    try:
        names = [h.strip().lower() for h in csv_header(path)] if lines else []
    except InputError:  # a first label no CSV parser reads (a stray quote): a plain list
        names = []
    if "item" in names:
        col = names.index("item")
        labels = [fields[col] for _, fields in TextColumns(path).rows() if fields[col]]
    else:
        labels = [line.strip() for line in lines]
    if len(labels) < 2:
        raise InputError(f"{path}: the item list needs at least two labels, one per line")
    if len(set(labels)) != len(labels):
        raise InputError(f"{path}: the item list has a repeated label")
    return labels


def read_rankings(path: str | os.PathLike[str] | TableLike, *, partial: str = "error",
                  rng: int | np.random.Generator | None = None, items: Sequence[Hashable] | None = None) -> Rankings:
    """Read rankings from a PrefLib (``.soc``, ``.soi``, ``.toc``) or CSV file, or a table in memory.

    CSV files have a header row and one ranking per row, in one of two layouts recognised
    from the header:

    * order layout -- columns ``rank1, rank2, ...``: each cell is an item label, best first
      (trailing empty cells leave items unranked);
    * rank layout -- one column per item: each cell is that item's rank, 1 = best (equal ranks
      are ties, an empty cell leaves the item unranked).

    In both, an optional ``count`` column gives how many voters cast the row (rows with count 0
    are skipped, as are PrefLib lines with count 0), and one optional
    id column (``voter``, ``user``, ``respondent``, ``judge``, ``id`` or ``ballot``) is ignored.
    Parquet and Arrow files (``.parquet``, ``.pq``, ``.arrow``, ``.feather``, ``.ipc``) and tables in
    memory (pandas or polars DataFrames, Arrow tables) have the same columns and are read by
    :class:`RankingFile`; they must hold complete strict rankings.

    Parameters
    ----------
    path
        The file; the extension selects the reader. A directory or glob pattern names a data set of
        many CSV, Parquet or Arrow files, read as one (:mod:`privrank.data.parts`).
    partial
        What to do with ballots that have ties or unranked items: ``"error"``, ``"drop"`` or
        ``"randomize"`` (module docstring).
    rng
        Randomness of ``partial="randomize"``.
    items
        The public item list. Ballots naming an item outside it are refused; items it lists
        that no ballot ranks are unranked on every ballot. Without it, a CSV of the order layout
        takes its items from the ballots: when ballots are completed at random the result is
        marked ``items_declared=False`` and private algorithms refuse it (which items occur would
        be a fact of the data). PrefLib files and the rank layout name their items in the header.

    Raises
    ------
    InputError
        On a missing file, a malformed line (named by number, never echoed), an unknown item,
        an item ranked twice, or incomplete ballots under ``partial="error"``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import privrank as pr
    >>> table = pa.table({"rank1": ["a", "b", "a"], "rank2": ["b", "a", "c"], "rank3": ["c", "c", "b"],
    ...                   "count": [5, 2, 3]})
    >>> profile = pr.read_rankings(table)
    >>> profile.items, profile.n_voters
    (('a', 'b', 'c'), 10)
    >>> profile.orders, profile.weights
    (array([[0, 1, 2],
           [1, 0, 2],
           [0, 2, 1]]), array([5, 2, 3]))
    """
    if not isinstance(partial, str) or partial not in PARTIAL_POLICIES:
        raise InputError(f"partial must be one of {', '.join(PARTIAL_POLICIES)}")
    path = data_source(path)
    table = is_table(path)
    if table or file_suffix(path) not in PREFLIB_SUFFIXES and file_format(path) != "csv":
        what = "tables in memory" if table else f"{path}: Parquet and Arrow rankings"
        if partial != "error":
            raise InputError(f"{what} are read as complete strict rankings; the partial policies apply to CSV "
                             "and PrefLib files")
        if items is not None:
            raise InputError(f"{what} take their items from the columns; drop items")
        return RankingFile(path).read()
    labels, ballots = read_ballots(path)
    declared = items is not None or not _names_items_in_ballots(path)
    if items is not None:
        labels, ballots = _on_item_list(labels, ballots, item_list(items), path)
    R = complete_ballots(labels, ballots, partial, rng, path)
    return R.marked(items_declared=declared or partial != "randomize", selected=partial == "drop")


def as_rankings(profile, weights=None) -> "Rankings":
    """``profile`` (:class:`~privrank.data.rankings.Rankings`, an ``(n, m)`` array of orders, or a
    DataFrame / Arrow table of complete rankings as :func:`read_rankings` reads them) as
    :class:`~privrank.data.rankings.Rankings`.

    ``weights`` (multiplicities, as in :meth:`~privrank.data.rankings.Rankings.from_orders`)
    replace the profile's own when given.
    """
    if isinstance(profile, RankingTally):
        raise InputError("this algorithm needs the rankings themselves, not their statistics (a "
                         "RankingTally): read the file with read_rankings")
    if is_table(profile):
        profile = read_rankings(profile)
    if isinstance(profile, Rankings):
        if weights is None:
            return profile
        return Rankings.from_orders(profile.orders, items=profile.items, weights=weights)
    return Rankings.from_orders(profile, weights=weights)


def _names_items_in_ballots(path) -> bool:
    """Whether a rankings file names its items only in the ballots (the CSV order layout)."""
    if file_suffix(path) in PREFLIB_SUFFIXES:
        return False
    header = [h.lower() for h in ColumnarFile(path).header]
    cols = [h for h in header if h != "count" and h not in RANKING_ID_COLUMNS]
    return bool(cols) and all(_RANK_COLUMN.match(h) for h in cols)


def _on_item_list(labels, ballots, items: tuple, path):
    """Ballots re-indexed onto the declared item list (every ballot's items must be on it)."""
    index = {str(x): k for k, x in enumerate(items)}
    try:
        new = np.array([index[str(lab)] for lab in labels], dtype=np.int64)
    except KeyError:
        raise InputError(f"{path}: a ballot names an item that is not in the given item list") from None
    return items, [(line, count, [[int(new[i]) for i in g] for g in groups]) for line, count, groups in ballots]


def read_ballots(path) -> tuple[tuple, list]:
    """The ballots of a rankings file as they are, before any ``partial`` policy.

    Returns ``(labels, ballots)``: the item labels and one ``(line, count, groups)`` per ballot
    line, ``groups`` the ranked items (0-based) best first, tied items sharing a group, unranked
    items absent. Raises :class:`InputError` as :func:`read_rankings` does.
    """
    path = data_source(path)
    if not isinstance(path, DataParts):
        check_data_file(path)
    path = path if isinstance(path, (PinnedFile, DataParts)) else Path(path)
    if file_suffix(path) in PREFLIB_SUFFIXES:
        labels, ballots = read_text(read_preflib, path)
    elif is_text_table(path):
        labels, ballots = read_text(_read_ranking_csv, path)
    else:
        raise InputError(f"{path}: unknown ranking file type; use .soc, .soi, .toc, .csv or .tsv")
    check_ballots(labels, ballots, path)
    return labels, ballots


def holds_rankings(path) -> bool:
    """Whether a data file, or a table in memory, holds rankings rather than comparisons.

    PrefLib files hold rankings; a CSV, Parquet or Arrow file, or a table, holds comparisons when
    its header has the comparison columns (module docstring) or is a ratings header, else
    rankings. A remote path (``scheme://...``, read by the engines) holds comparisons unless it is
    PrefLib.
    """
    source = path
    where: str | PinnedFile | DataParts | Path = "the table"
    if not is_table(source):
        remote = "://" in str(source)
        source = data_source(source)
        source = where = source if isinstance(source, (PinnedFile, DataParts)) else Path(str(source))
        if file_suffix(source) in PREFLIB_SUFFIXES:
            return True
        if remote:
            return False
        if not isinstance(source, DataParts):
            check_data_file(source)
    header = None
    try:
        header = ColumnarFile(source).header
        if holds_ratings(header):  # ratings give comparisons
            return False
        ComparisonColumns.from_header(header, where)
    except InputError:
        if header is not None and names_comparison_items(header):
            raise  # a comparisons header with a mistake (a column twice, two layouts): its own message, not a ballot's
        return True
    return False


def names_comparison_items(header) -> bool:
    """Whether a header names the two items of a comparison (item_a and item_b, winner and loser, or
    the two sides of a winner column's layout): a file of comparisons, whatever else is wrong with it."""
    names = {str(h).strip().lower() for h in header}
    pairs = (("item_a", "item_b"), ("winner", "loser"))
    return any(a in names and b in names for a, b in pairs) or \
        any(a in names and b in names and names & set(WINNER_COLUMNS) for a, b in SIDE_COLUMNS)


def _read_ranking_csv(path: Path):
    table = TextColumns(path)
    header = [h.strip() for h in table.header]
    lower = [h.lower() for h in header]
    count_col = lower.index("count") if "count" in lower else None
    id_col = next((lower.index(c) for c in RANKING_ID_COLUMNS if c in lower), None)
    cols = [k for k in range(len(header)) if k not in (count_col, id_col)]
    if len(cols) < 1:
        raise _no_ballot_columns(path)
    order_layout = all(_RANK_COLUMN.match(lower[k]) for k in cols)
    rows = []
    for line_no, row in table.rows():
        if not any(row):  # a line of empty fields: blank
            continue
        count = 1
        if count_col is not None:
            try:
                count = int(row[count_col])
            except ValueError:
                raise InputError(f"{path}, line {line_no}: count must be an integer >= 0") from None
            if count < 0 or count > MAX_EXACT_COUNT:
                raise InputError(f"{path}, line {line_no}: count must be a whole number from 0 to 2^53")
        if count:
            rows.append((line_no, count, [row[k] for k in cols]))
    if not rows:
        raise InputError(f"{path} has a header but no rankings")
    if order_layout:
        found = {c for _, _, cells in rows for c in cells if c}
        try:
            labels = tuple(sorted(found))
        except TypeError:  # pragma: no cover - csv cells are strings
            labels = tuple(sorted(found, key=str))
        index = {lab: k for k, lab in enumerate(labels)}
        ballots = []
        for line_no, count, cells in rows:
            filled = [c for c in cells if c]
            if len(filled) != len(cells) and any(cells[len(filled):]):
                raise InputError(f"{path}, line {line_no}: empty cells may only trail the ranking")
            ballots.append((line_no, count, [[index[c]] for c in filled]))
        return labels, ballots
    labels = tuple(header[k] for k in cols)
    if all(is_number(h) for h in labels):
        raise InputError(f"{path}: the first row holds numbers, not item names: a ballot, not a header? Add a "
                         "header row: rank1,rank2,... for ballots of item labels (best first), or one column "
                         "per item holding its rank")
    ballots = []
    for line_no, count, cells in rows:
        ranks = np.full(len(cells), np.nan)
        for k, c in enumerate(cells):
            if c and c.lower() not in ("na", "nan"):
                try:
                    ranks[k] = float(c)
                except ValueError:
                    raise _not_ranks(f"{path}, line {line_no}", header) from None
        ranked = np.flatnonzero(np.isfinite(ranks))
        levels = np.unique(ranks[ranked])
        ballots.append((line_no, count, [list(ranked[ranks[ranked] == v]) for v in levels]))
    return labels, ballots


@dataclass(frozen=True, eq=False)
class RankingBatch:
    """Validated complete rankings of one batch of a :class:`RankingFile`.

    ``items`` are the labels in index order (empty when the batch holds no voter); ``orders``
    the ``(k, m)`` rankings (item indices, best first) of the batch's rows with a count of at
    least 1, and ``weights`` those counts. ``first_row`` and ``first_voter`` are the file
    indices of the batch's first row and first voter (voters are numbered in file order, a row
    of count ``c`` holding ``c`` of them); ``rows`` counts every row read, count 0 included.
    """

    items: tuple
    orders: np.ndarray
    weights: np.ndarray
    first_row: int
    first_voter: int
    rows: int

    def __len__(self) -> int:
        return self.rows

    def __repr__(self) -> str:  # never print raw preferences
        return f"RankingBatch({self.rows} rows, {self.n_voters} voters, {len(self.items)} items)"

    @property
    def n_voters(self) -> int:
        return int(self.weights.sum())


def different_items_error() -> InputError:
    """The error for ballots that do not all rank the same items."""
    return InputError("the ballots do not all rank the same items: some rankings are incomplete, but the "
                      "stream and dask engines and Parquet files need complete strict rankings (read a CSV "
                      "file in memory with partial='drop' or 'randomize'; CLI: --engine local --partial drop or "
                      "randomize)")


class RankingFile(ColumnarFile):
    """A rankings file (CSV, Parquet or Arrow IPC) read in batches of complete rankings.

    The columns are those of the CSV layouts of :func:`read_rankings` in every format: the
    *order* layout (columns ``rank1, rank2, ...`` holding item labels, best first) or the
    *rank* layout (one column per item holding its rank, 1 = best), an optional ``count``
    column (voters per row; rows of count 0 are skipped) and an optional id column, ignored.
    In Parquet and Arrow files labels keep their type (strings, integers) and ranks are
    numbers; a null or an empty string is an empty cell (an unranked item).

    Every ballot must be a complete strict ranking: each item ranked exactly once, no ties (a
    batch refuses any other ballot, naming its record; ballots of different batches that rank
    different item sets are refused when their statistics are added). Items are indexed in
    sorted label order (order layout) or in column order (rank layout), as :func:`read_rankings`
    does. A batch holds at most ``batch_size`` rows and at most ``RANKING_BATCH_CELLS`` cells.
    A position in the file is the pair (row, voter): :meth:`validate` takes the position of a
    table's first row and :meth:`extent` returns how far a table reaches.
    """

    def __init__(self, path):
        if not is_table(path) and file_suffix(path) in PREFLIB_SUFFIXES:
            raise InputError(f"{path}: PrefLib files are read whole (the local engine); convert them to "
                             "CSV or Parquet to read them in batches")
        super().__init__(path)
        self.refuse_partition_keys(["count"])
        lower = [str(h).strip().lower() for h in self.header]
        count = lower.index("count") if "count" in lower else None
        ident = next((lower.index(c) for c in RANKING_ID_COLUMNS if c in lower), None)
        cols = [k for k in range(len(self.header)) if k not in (count, ident)]
        if not cols:
            raise _no_ballot_columns(self.path)
        self.order_layout = all(_RANK_COLUMN.match(lower[k]) for k in cols)
        self.cells = [self.header[k] for k in cols]
        self.count = None if count is None else self.header[count]
        self.items = None if self.order_layout else tuple(str(h).strip() for h in self.cells)
        if self.items is not None and len(set(self.items)) != len(self.items):
            raise InputError(f"{self.path}: two item columns have the same name")
        self.names = self.cells + ([] if self.count is None else [self.count])
        self.label_names = self.cells if self.order_layout else []

    @property
    def extent_columns(self) -> list:
        return [self.count] if self.count is not None else self.cells[:1]

    def extent(self, table) -> np.ndarray:
        """``[rows, voters]`` of a table of this file's columns."""
        return np.array([len(table), int(self._counts(table, None).sum())])

    def batches(self, batch_size: int = DEFAULT_BATCH_SIZE):
        """Validated :class:`RankingBatch` objects covering the file in order."""
        size = min(int(batch_size), max(1, RANKING_BATCH_CELLS // len(self.cells)))
        position = (0, 0)
        for raw in self.raw_batches(size):
            batch = self.validate(raw, position)
            position = (position[0] + batch.rows, position[1] + batch.n_voters)
            yield batch

    def read(self) -> Rankings:
        """The whole file in memory."""
        batches = [b for b in self.batches() if b.weights.size]
        if not batches:
            raise InputError(f"{self.path} has a header but no rankings")
        if any(b.items != batches[0].items for b in batches):
            raise different_items_error()
        return Rankings.from_orders(np.concatenate([b.orders for b in batches]), items=batches[0].items,
                                    weights=np.concatenate([b.weights for b in batches]))

    def _counts(self, table, first_row: int | None) -> np.ndarray:
        """Voters per row (the count column, or 1); ``first_row`` as in
        :meth:`~privrank.data.tabular.ColumnarFile.counts`."""
        if self.count is None:
            return np.ones(len(table), dtype=np.int64)
        return self.counts(table, self.count, first_row)

    def validate(self, table, first) -> RankingBatch:
        """Check and convert a table (or record batch) of this file's columns whose first row is
        at position ``first = (row, voter)`` of the file (see the class docstring)."""
        first_row, first_voter = (int(x) for x in first)
        counts = self._counts(table, first_row)
        kept = np.flatnonzero(counts > 0)
        if self.order_layout:
            items, orders = self._orders_from_labels(table, kept, first_row)
        else:
            items, orders = self.items, self._orders_from_ranks(table, kept, first_row)
        return RankingBatch(items if kept.size else (), orders, counts[kept], first_row, first_voter, len(table))

    def _incomplete(self, row: int) -> InputError:
        return InputError(f"{self.numbered(row)}: a ballot with ties or unranked items; the stream and dask "
                          "engines and Parquet files need complete strict rankings (read a CSV file in memory "
                          "with partial='drop' or 'randomize'; CLI: --engine local --partial drop or randomize)")

    def _orders_from_labels(self, table, kept, first_row):
        pa = pyarrow_module()
        import pyarrow.compute as pc

        cols = [self.column(table, name) for name in self.cells]
        cols = [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in cols]
        try:
            flat = pa.concat_arrays([c.cast(cols[0].type) for c in cols])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            raise InputError(f"{self.path}: the rank columns must hold labels of one type") from None
        encoded = pc.dictionary_encode(flat)
        indices = pc.fill_null(encoded.indices, -1) if encoded.indices.null_count else encoded.indices
        codes = indices.to_numpy(zero_copy_only=False).astype(np.int64)
        labels = encoded.dictionary.to_pylist()
        empty = np.array([label == "" for label in labels] + [True])  # code -1: null
        codes = codes.reshape(len(cols), -1).T[kept]  # (kept rows, rank columns)
        present = ~empty[codes]
        gap = np.flatnonzero(np.any(present[:, 1:] & ~present[:, :-1], axis=1))
        if gap.size:
            raise InputError(f"{self.numbered(first_row + int(kept[gap[0]]))}: empty cells may only trail the ranking")
        used = np.flatnonzero(np.bincount(codes[present], minlength=len(labels)))  # codes that occur, sorted
        items = sorted_labels(labels[c] for c in used)
        position = {label: k for k, label in enumerate(items)}
        index = np.full(len(labels) + 1, -1, dtype=np.int64)
        index[used] = [position[labels[c]] for c in used]  # one step per distinct label
        m = len(items)
        idx = index[codes]
        twice = np.flatnonzero(np.any(np.diff(np.sort(np.where(present, idx, -1 - np.arange(idx.shape[1])),
                                                      axis=1), axis=1) == 0, axis=1))
        if twice.size:
            raise InputError(f"{self.numbered(first_row + int(kept[twice[0]]))}: an item is ranked twice")
        short = np.flatnonzero(present.sum(axis=1) != m)
        if short.size:
            raise self._incomplete(first_row + int(kept[short[0]]))
        return items, np.ascontiguousarray(idx[:, :m])

    def _orders_from_ranks(self, table, kept, first_row):
        pa = pyarrow_module()
        import pyarrow.compute as pc

        ranks = np.empty((kept.size, len(self.cells)))
        for k, name in enumerate(self.cells):  # one step per item column, vectorised over rows
            col = self.column(table, name)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                missing = pc.or_(pc.equal(col, ""), pc.equal(pc.utf8_lower(col), "na"))  # type: ignore[call-overload]  # pyarrow takes a Python value as a scalar; its stubs do not say so
                col = pc.if_else(missing, pa.scalar(None, col.type), col)
                try:
                    col = col.cast(pa.float64())
                except pa.ArrowInvalid:
                    bad = [r for r, text in enumerate(col.to_pylist()) if text is not None and not is_number(text)]
                    raise _not_ranks(self.numbered(first_row + bad[0]), self.header) from None
            ranks[:, k] = self._numbers(col, "rank", first_row)[kept]
        ordered = np.sort(ranks, axis=1)
        invalid = np.flatnonzero(~np.all(np.isfinite(ranks), axis=1) | np.any(ordered[:, 1:] == ordered[:, :-1], axis=1))
        if invalid.size:
            raise self._incomplete(first_row + int(kept[invalid[0]]))
        return np.argsort(ranks, axis=1, kind="stable")
