"""Readers and writers for comparison and ranking files.

Comparison files are CSV, Parquet (``.parquet``, ``.pq``) or Arrow IPC / Feather (``.arrow``,
``.feather``, ``.ipc``); the last two need pyarrow. They come in two shapes, recognised from the
header (column names are matched case-insensitively):

* long format ``user,item_a,item_b,outcome`` with outcome 1 (item_a preferred), -1 (item_b)
  or 0 (tie). ``respondent`` and ``worker`` are accepted for ``user``, ``result`` for
  ``outcome``; the user column is optional.
* ``winner,loser`` (optionally with ``user``): every record is a win for ``winner``.

An optional ``epsilon`` column marks the records as randomized reports (respondents already
applied randomized response with that epsilon on their device): they will be debiased, never
randomized again. Errors name the offending line or record number but never echo its contents.

:class:`ComparisonFile` reads any of the three formats in batches of bounded size with pyarrow
(the streaming and Dask engines of :mod:`privrank.engines` use it, and :class:`RankingFile` for
rankings); :func:`read_comparisons` reads a whole file into memory. Both apply the same rules: CSV fields are text with surrounding
whitespace removed (so labels are strings), Parquet and Arrow columns keep their types.

Rankings (:func:`read_rankings`) come from PrefLib files (``.soc`` complete strict orders,
``.soi`` strict incomplete orders, ``.toc`` complete orders with ties; the 2022 PrefLib format
with ``# ALTERNATIVE NAME k: label`` headers and lines ``count: a,b,{c,d},e``) or from CSV with
one ranking per row (see :func:`read_rankings`). Kemeny and footrule aggregation need complete
strict rankings; the ``partial`` policy says what to do with a ballot that has ties or unranked
items:

``"error"`` (default)
    refuse the file, saying how many ballots are affected and which options exist;
``"drop"``
    keep only the complete strict ballots;
``"randomize"``
    complete every such voter's ballot independently and uniformly at random: each tied group
    is put in a uniformly random order, and the unranked items follow the ranked ones in a
    uniformly random order. A pair the voter did not order then counts as "i before j" with
    probability 1/2, i.e. as no preference in expectation. The completion depends only on that
    voter's own ballot, so neighbouring profiles (one ballot changed) stay neighbours and every
    privacy guarantee of the aggregation holds for the original ballots.
"""
from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path

from dataclasses import dataclass

import numpy as np

from .._rng import as_generator
from ..errors import InputError
from .comparisons import PairwiseComparisons, sorted_labels
from .rankings import Rankings

USER_COLUMNS = ("user", "respondent", "worker", "user_id", "respondent_id", "worker_id")
OUTCOME_COLUMNS = ("outcome", "result")
PARQUET_SUFFIXES = (".parquet", ".pq")
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc")
CSV_BLOCK_BYTES = 16 << 20
DEFAULT_BATCH_SIZE = 1 << 20
#: largest count of voters or records that float64 arithmetic represents exactly
MAX_EXACT_COUNT = 2 ** 53
#: most items a file may declare (a ranking of more is far beyond every method here)
MAX_DECLARED_ITEMS = 1_000_000


def _pick(header: list[str], names) -> str | None:
    for n in names:
        if n in header:
            return n
    return None


def _parse_outcome(text: str, line: int) -> int:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"line {line}: outcome must be 1, -1 or 0") from None
    if x not in (1.0, -1.0, 0.0):
        raise InputError(f"line {line}: outcome must be 1, -1 or 0")
    return int(x)


def _parse_epsilon(text: str, line: int) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"line {line}: epsilon must be a number > 0") from None
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"line {line}: epsilon must be finite and > 0")
    return x


def _rows(reader):
    """Rows of a CSV reader; malformed CSV (e.g. a NUL byte) is an input error naming the line."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error:
            raise InputError(f"line {reader.line_num}: malformed CSV") from None


@dataclass(frozen=True)
class ComparisonColumns:
    """Positions in a file's header of the fields of a comparison.

    ``outcome`` is None for a ``winner,loser`` file (every record is a win for ``item_a``, the
    winner); ``user`` and ``epsilon`` are None when the file has no such column.
    """

    item_a: int
    item_b: int
    outcome: int | None
    user: int | None
    epsilon: int | None

    @classmethod
    def from_header(cls, header, source) -> "ComparisonColumns":
        """The layout named by ``header``. The header is never echoed: a file without one would
        show its first record in the message."""
        names = [str(h).strip().lower() for h in header]
        known = {"winner", "loser", "item_a", "item_b", "epsilon", *OUTCOME_COLUMNS, *USER_COLUMNS}
        repeated = sorted({n for n in names if n in known and names.count(n) > 1})
        if repeated:
            raise InputError(f"{source}: the column {repeated[0]!r} appears more than once; name each column once")
        if len([n for n in names if n in USER_COLUMNS]) > 1:
            raise InputError(f"{source}: more than one user column ({', '.join(USER_COLUMNS)}); keep one")
        user = _pick(names, USER_COLUMNS)
        outcome = _pick(names, OUTCOME_COLUMNS)
        if "winner" in names and "loser" in names:
            a, b, outcome = "winner", "loser", None
        elif "item_a" in names and "item_b" in names and outcome:
            a, b = "item_a", "item_b"
        else:
            raise InputError(f"{source}: need a header row naming the columns item_a,item_b,outcome (or result) "
                             f"or winner,loser; the first row has {len(names)} fields and none of these names "
                             "(is the header missing?)")

        def pos(name):
            return None if name is None else names.index(name)
        return cls(pos(a), pos(b), pos(outcome), pos(user), pos("epsilon" if "epsilon" in names else None))

    def positions(self) -> list[int]:
        """Header positions of the fields present, in the order item_a, item_b, outcome, user, epsilon."""
        return [k for k in (self.item_a, self.item_b, self.outcome, self.user, self.epsilon) if k is not None]


def check_items(m: int, source: str) -> None:
    """Refuse a declared number of items beyond what privrank can rank (``MAX_DECLARED_ITEMS``)."""
    if m > MAX_DECLARED_ITEMS:
        raise InputError(f"{source} declares more than {MAX_DECLARED_ITEMS:,} items; privrank ranks at most that many")


def check_data_file(path) -> None:
    """Refuse a path that is not a readable regular file, saying what it is instead."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"no such file: {path}")
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a data file")
    if not path.is_file():
        raise InputError(f"{path} is not a regular file (a pipe or device); save the data to a file first")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path} is not readable")


def file_format(path) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"``, from the file name's suffix (CSV by default)."""
    suffix = Path(str(path)).suffix.lower()
    return "parquet" if suffix in PARQUET_SUFFIXES else "arrow" if suffix in ARROW_SUFFIXES else "csv"


def read_comparisons(path, *, items=None) -> PairwiseComparisons:
    """Read pairwise comparisons from a CSV, Parquet or Arrow file into memory.

    See the module docstring for the formats. CSV needs only the standard library; Parquet and
    Arrow files are read with :class:`ComparisonFile` (pyarrow).

    Raises
    ------
    InputError
        On a missing file or column, an unknown outcome, an empty field, NaN, or fewer than two
        items; the message names the line (CSV) or the record.
    """
    path = Path(path)
    check_data_file(path)
    if file_format(path) != "csv":
        return ComparisonFile(path).read(items=items)
    return _read_text(_read_comparisons, path, items)


def _read_text(read, path: Path, *args):
    """``read(path, *args)`` on a text file: bytes that are not UTF-8 are an input error."""
    try:
        return read(path, *args)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None


def _read_comparisons(path: Path, items) -> PairwiseComparisons:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        rows = _rows(reader)
        try:
            header = [h.strip().lower() for h in next(rows)]
        except StopIteration:
            raise InputError(f"{path} is empty") from None
        layout = ComparisonColumns.from_header(header, path)
        cols = [layout.item_a, layout.item_b] + ([] if layout.outcome is None else [layout.outcome])
        uidx, eidx = layout.user, layout.epsilon
        a, b, out, users, eps, lines = [], [], [], [], [], []
        width = len(header)
        for line, row in enumerate(rows, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != width:
                raise InputError(f"line {line}: expected {width} fields, found {len(row)}")
            fields = [row[c].strip() for c in cols]
            if any(f == "" or f.lower() in ("nan", "na") for f in fields):
                raise InputError(f"line {line}: empty or NaN field")
            a.append(fields[0])
            b.append(fields[1])
            lines.append(line)
            out.append(1 if layout.outcome is None else _parse_outcome(fields[2], line))
            if uidx is not None:
                u = row[uidx].strip()
                if u == "":
                    raise InputError(f"line {line}: empty user id")
                users.append(u)
            if eidx is not None:
                eps.append(_parse_epsilon(row[eidx].strip(), line))
    if not a:
        raise InputError(f"{path} has a header but no comparisons")
    for line, x, y in zip(lines, a, b):
        if x == y:
            raise InputError(f"line {line}: a comparison of an item with itself")
    labels = set(a) | set(b)
    if len(labels) < 2 and items is None:
        raise InputError(f"{path}: only one item occurs; at least two are needed to rank")
    return PairwiseComparisons.from_labels(
        a, b, out, user=users if uidx is not None else None,
        epsilon=eps if eidx is not None else None, items=items)


def _pyarrow():
    try:
        import pyarrow
    except ImportError:
        raise InputError("reading Parquet or Arrow files, and the stream and dask engines, need pyarrow: "
                         "pip install 'privrank[pandas]'") from None
    return pyarrow


@dataclass(frozen=True, eq=False)
class ComparisonBatch:
    """Validated records of one batch of a comparison file.

    ``item_a``, ``item_b`` and ``user`` are pyarrow arrays of labels (possibly
    dictionary-encoded); ``outcome`` int8 in {1, -1, 0}; ``epsilon`` the per-record epsilon of
    randomized reports or None. ``first_record`` is the index in the file of the first record.
    """

    item_a: object
    item_b: object
    outcome: np.ndarray
    user: object
    epsilon: np.ndarray | None
    first_record: int

    def __len__(self) -> int:
        return int(self.outcome.size)

    def labels(self, used_only: bool = True) -> set:
        """Item labels that occur in the batch; with ``used_only=False`` possibly more: the whole
        dictionary of a dictionary-encoded column (no pass over the records)."""
        return set(_present(self.item_a, used_only)) | set(_present(self.item_b, used_only))

    def item_indices(self, items: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Indices of each record's two items in ``items``; refuses unknown items and self-comparisons."""
        a = _indices(self.item_a, items)
        b = _indices(self.item_b, items)
        same = np.flatnonzero(a == b)
        if same.size:
            raise InputError(f"record {self.first_record + int(same[0]) + 1} compares an item with itself")
        return a, b


def item_list(items) -> tuple:
    """A caller's item list as a tuple, refusing repeated labels."""
    labels = tuple(items)
    if len(set(labels)) != len(labels):
        raise InputError("the item list has a repeated label")
    return labels


def _present(labels, used_only: bool = True) -> list:
    """Distinct values of a label array (for a dictionary array: the entries actually used, or
    with ``used_only=False`` the whole dictionary)."""
    pa = _pyarrow()
    if pa.types.is_dictionary(labels.type):
        if not used_only:
            return labels.dictionary.to_pylist()
        used = np.bincount(labels.indices.to_numpy(zero_copy_only=False), minlength=len(labels.dictionary)) > 0
        return labels.dictionary.filter(pa.array(used)).to_pylist()
    import pyarrow.compute as pc
    return pc.unique(labels).to_pylist()


def _indices(labels, known: tuple) -> np.ndarray:
    """Index of every label of a pyarrow array in the tuple ``known`` (a dictionary array is
    mapped through its dictionary)."""
    pa = _pyarrow()
    import pyarrow.compute as pc
    dictionary = pa.types.is_dictionary(labels.type)
    values = labels.dictionary if dictionary else labels
    try:
        idx = pc.index_in(values, value_set=pa.array(known, type=values.type))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        raise InputError("the given item list does not match the type of the file's item labels") from None
    idx = pc.fill_null(idx, -1).to_numpy().astype(np.int64)
    unknown = idx.size and idx.min() < 0
    if dictionary:
        idx = idx[labels.indices.to_numpy(zero_copy_only=False)]
        unknown = unknown and idx.min() < 0  # an unknown dictionary entry matters only if used
    if unknown:
        raise InputError("a comparison names an item that is not in the given item list")
    return idx


class ColumnarFile:
    """A CSV, Parquet or Arrow IPC file read in batches of columns with pyarrow.

    Parameters
    ----------
    path : str or Path
        The file. Its header is read on construction; a subclass checks it and sets ``names``
        (the columns to read) and ``label_names`` (those of them holding labels, read
        dictionary-encoded from Parquet when they are strings).

    Batches hold at most ``batch_size`` records; Parquet files are read row group by row group
    and CSV files in blocks of 16 MB, so memory stays bounded whatever the file size. CSV fields
    are text without surrounding whitespace; Parquet and Arrow columns keep their types. Records
    are numbered from 0 in file order (blank CSV lines are not records); errors name the record
    (counting from 1) and never echo its contents. The object holds no open file and can be sent
    to other processes (the Dask engine does).
    """

    names: list
    label_names: list

    def __init__(self, path):
        self.path = str(path)
        self.format = file_format(path)
        if "://" not in self.path:
            check_data_file(self.path)
        self.header = self._header()

    def _header(self) -> list[str]:
        pa = _pyarrow()
        try:
            if self.format == "parquet":
                import pyarrow.parquet as pq
                return list(pq.read_schema(self.path).names)
            if self.format == "arrow":
                with pa.memory_map(self.path) as source:
                    return list(pa.ipc.open_file(source).schema.names)
        except (pa.ArrowInvalid, OSError):
            raise InputError(f"{self.path} is not a readable {self.format} file") from None
        with open(self.path, newline="", encoding="utf-8-sig") as fh:
            try:
                return next(csv.reader(fh))
            except StopIteration:
                raise InputError(f"{self.path} is empty") from None

    def n_records(self) -> int | None:
        """Number of records from the file's metadata (None for CSV, which has none)."""
        pa = _pyarrow()
        if self.format == "parquet":
            import pyarrow.parquet as pq
            return pq.ParquetFile(self.path).metadata.num_rows
        if self.format == "arrow":
            with pa.memory_map(self.path) as source:
                reader = pa.ipc.open_file(source)
                return sum(reader.get_batch(k).num_rows for k in range(reader.num_record_batches))
        return None

    @property
    def extent_columns(self) -> list:
        """The columns :meth:`extent` needs."""
        return self.names[:1]

    def extent(self, table):
        """How far a table of this file's columns reaches: its number of records (the Dask
        engine's first pass, which tells every partition where it starts)."""
        return len(table)

    def raw_batches(self, batch_size: int):
        """The file's columns of interest in pyarrow record batches of at most ``batch_size`` rows."""
        pa = _pyarrow()
        size = int(batch_size)
        if size < 1:
            raise InputError("batch_size must be >= 1")
        if self.format == "parquet":
            import pyarrow.parquet as pq
            schema = pq.read_schema(self.path)
            dictionary = [n for n in self.label_names if pa.types.is_string(schema.field(n).type)
                          or pa.types.is_large_string(schema.field(n).type)]
            source = pq.ParquetFile(self.path, read_dictionary=dictionary, pre_buffer=False)
            yield from source.iter_batches(batch_size=size, columns=self.names, use_pandas_metadata=False)
            return
        if self.format == "arrow":
            with pa.memory_map(self.path) as mapped:
                reader = pa.ipc.open_file(mapped)
                for k in range(reader.num_record_batches):
                    batch = reader.get_batch(k).select(self.names)
                    for start in range(0, batch.num_rows, size):
                        yield batch.slice(start, size)
            return
        yield from self._csv_batches(size)

    def _csv_batches(self, size: int):
        pa = _pyarrow()
        import pyarrow.csv as pcsv

        bad = []

        def invalid_row(row):
            bad.append(row)
            return "error"
        try:
            reader = pcsv.open_csv(
                self.path, read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES),
                parse_options=pcsv.ParseOptions(invalid_row_handler=invalid_row),
                convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in self.header},
                                                    include_columns=self.names, strings_can_be_null=False))
            for batch in reader:
                for start in range(0, batch.num_rows, size):
                    yield batch.slice(start, size)
        except pa.ArrowInvalid:  # the parser's own message would quote the row
            if bad:
                row = bad[0]
                where = f"row {row.number}: " if row.number is not None else "a row "
                raise InputError(f"{self.path}: {where}has {row.actual_columns} fields, "
                                 f"expected {row.expected_columns}") from None
            raise InputError(f"{self.path} could not be parsed as CSV") from None

    def column(self, table, name):
        """Column ``name`` of a table of this file as one array (CSV text without surrounding whitespace)."""
        pa = _pyarrow()
        col = table.column(name)
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if self.format == "csv":
            import pyarrow.compute as pc
            col = pc.utf8_trim_whitespace(col)
        return col

    @staticmethod
    def _numbers(col, name, first_record) -> np.ndarray:
        pa = _pyarrow()
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            return col.to_numpy(zero_copy_only=False)
        try:
            return col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            for k, text in enumerate(col.to_pylist()):  # locate the culprit only on the error path
                try:
                    float(text)
                except (TypeError, ValueError):
                    raise InputError(f"record {first_record + k + 1}: {name} must be a number") from None
            raise InputError(f"{name} must be numeric") from None


class ComparisonFile(ColumnarFile):
    """A comparison file (CSV, Parquet or Arrow IPC) read in batches (:class:`ColumnarFile`)."""

    def __init__(self, path):
        super().__init__(path)
        self.columns = ComparisonColumns.from_header(self.header, self.path)
        self.names = [self.header[k] for k in self.columns.positions()]
        self.label_names = [self.header[k] for k in (self.columns.item_a, self.columns.item_b)]

    @property
    def is_randomized(self) -> bool:
        """True when the file has an epsilon column (randomized reports)."""
        return self.columns.epsilon is not None

    @property
    def has_users(self) -> bool:
        return self.columns.user is not None

    def batches(self, batch_size: int = DEFAULT_BATCH_SIZE):
        """Validated :class:`ComparisonBatch` objects covering the file in order."""
        first = 0
        for raw in self.raw_batches(batch_size):
            batch = self.validate(raw, first)
            first += len(batch)
            yield batch

    def validate(self, table, first_record: int) -> ComparisonBatch:
        """Check and convert a table (or record batch) of this file's columns, whose first record
        has index ``first_record`` in the file (see the class docstring)."""
        pa = _pyarrow()
        c = self.columns

        def column(pos):
            return self.column(table, self.header[pos])

        def check_present(col, name):
            if col.null_count:
                bad = np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))
                raise InputError(f"record {first_record + int(bad[0]) + 1}: empty {name}")
            dictionary = pa.types.is_dictionary(col.type)
            values = col.dictionary if dictionary else col
            t = values.type
            if pa.types.is_boolean(t):
                raise InputError(f"the {name} column must hold numbers, not true/false (an outcome is 1 when the "
                                 "first item wins, -1 when the second does, 0 for a tie)")
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
                    or pa.types.is_floating(t)):
                raise InputError(f"the {name} column must hold text or numbers, not {t}")
            empty = None
            if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
                import pyarrow.compute as pc
                empty = pc.is_in(pc.utf8_lower(values), pa.array(["", "nan", "na"])).to_numpy(zero_copy_only=False)
            elif pa.types.is_floating(values.type):
                empty = np.isnan(values.to_numpy(zero_copy_only=False))
            if empty is not None:  # the same fields the CSV reader of the local engine refuses
                if dictionary and empty.any():
                    empty = np.isin(col.indices.to_numpy(zero_copy_only=False), np.flatnonzero(empty))
                bad = np.flatnonzero(empty)
                if bad.size:
                    raise InputError(f"record {first_record + int(bad[0]) + 1}: empty or NaN {name}")
            return col

        item_a = check_present(column(c.item_a), "item")
        item_b = check_present(column(c.item_b), "item")
        n = len(item_a)
        if c.outcome is None:
            outcome = np.ones(n, dtype=np.int8)
        else:
            x = self._numbers(check_present(column(c.outcome), "outcome"), "outcome", first_record)
            bad = np.flatnonzero((x != 1) & (x != -1) & (x != 0))
            if bad.size:
                raise InputError(f"record {first_record + int(bad[0]) + 1}: outcome must be 1, -1 or 0")
            outcome = x.astype(np.int8)
        user = None if c.user is None else check_present(column(c.user), "user id")
        epsilon = None
        if c.epsilon is not None:
            epsilon = self._numbers(check_present(column(c.epsilon), "epsilon"), "epsilon", first_record)
            bad = np.flatnonzero(~np.isfinite(epsilon) | (epsilon <= 0))
            if bad.size:
                raise InputError(f"record {first_record + int(bad[0]) + 1}: epsilon must be finite and > 0")
            ties = np.flatnonzero(outcome == 0)
            if ties.size:
                raise InputError(f"record {first_record + int(ties[0]) + 1}: a randomized report must be 1 or -1, "
                                 "not a tie (randomized response never outputs a tie)")
        return ComparisonBatch(item_a, item_b, outcome, user, epsilon, int(first_record))

    def read(self, *, items=None) -> PairwiseComparisons:
        """The whole file in memory (items in sorted label order unless ``items`` is given)."""
        batches = list(self.batches())
        if not batches or not sum(len(b) for b in batches):
            raise InputError(f"{self.path} has a header but no comparisons")
        labels = sorted_labels(set().union(*(b.labels() for b in batches))) if items is None else item_list(items)
        pairs = [b.item_indices(labels) for b in batches]
        user = users = None
        if self.has_users:
            users = sorted_labels(set().union(*(_present(b.user) for b in batches)))
            user = np.concatenate([_indices(b.user, users) for b in batches])
        epsilon = np.concatenate([b.epsilon for b in batches]) if self.is_randomized else None
        return PairwiseComparisons.from_indices(
            labels, np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]),
            np.concatenate([b.outcome for b in batches]), user=user, users=users, epsilon=epsilon,
            items_declared=items is not None)


def comparisons_to_csv(comps: PairwiseComparisons) -> str:
    """CSV text of comparisons in the long format (with ``epsilon`` for randomized reports)."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = (["user"] if comps.user is not None else []) + ["item_a", "item_b", "outcome"]
    if comps.is_randomized:
        header.append("epsilon")
    w.writerow(header)
    items = comps.items
    for k in range(comps.n_records):
        row = [comps.users[comps.user[k]]] if comps.user is not None else []
        row += [items[comps.item_a[k]], items[comps.item_b[k]], int(comps.outcome[k])]
        if comps.is_randomized:
            row.append(repr(float(comps.epsilon[k])))
        w.writerow(row)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# rankings
# --------------------------------------------------------------------------------------------

PARTIAL_POLICIES = ("error", "drop", "randomize")
PREFLIB_SUFFIXES = (".soc", ".soi", ".toc", ".toi")
#: most ranking cells (rows x item columns) in one batch of a RankingFile
RANKING_BATCH_CELLS = 1 << 20
RANKING_ID_COLUMNS = ("voter", "user", "respondent", "judge", "id", "ballot")
_PREFLIB_NAME = re.compile(r"#\s*ALTERNATIVE NAME\s+(\d+)\s*:\s*(.*)$")
_PREFLIB_COUNT = re.compile(r"#\s*NUMBER ALTERNATIVES\s*:\s*(\d+)\s*$")
_PREFLIB_GROUP = re.compile(r"\{[^}]*\}|[^,{}\s]+")
_RANK_COLUMN = re.compile(r"rank\s*_?\s*\d+$")


def read_item_list(path) -> list:
    """The public item list from a file: one label per line, or a CSV with an ``item`` column.

    Blank lines are ignored. A first line that is a CSV header naming an ``item`` column (as the
    item tables of the shipped data sets have) selects that column.
    """
    path = Path(path)
    check_data_file(path)
    lines = [line for line in _read_text(lambda p: p.read_text(encoding="utf-8-sig"), path).splitlines()
             if line.strip()]
    header = next(csv.reader(lines[:1]), [])
    names = [h.strip().lower() for h in header]
    if "item" in names:
        col = names.index("item")
        rows = list(csv.reader(lines[1:]))
        if any(len(r) != len(header) for r in rows):
            raise InputError(f"{path}: every row of the item table needs {len(header)} fields")
        labels = [r[col].strip() for r in rows if r[col].strip()]
    else:
        labels = [line.strip() for line in lines]
    if len(labels) < 2:
        raise InputError(f"{path}: the item list needs at least two labels, one per line")
    if len(set(labels)) != len(labels):
        raise InputError(f"{path}: the item list has a repeated label")
    return labels


def read_rankings(path, *, partial: str = "error", rng=None, items=None) -> Rankings:
    """Read rankings from a PrefLib (``.soc``, ``.soi``, ``.toc``) or CSV file.

    CSV files have a header row and one ranking per row, in one of two layouts recognised
    from the header:

    * order layout -- columns ``rank1, rank2, ...``: each cell is an item label, best first
      (trailing empty cells leave items unranked);
    * rank layout -- one column per item: each cell is that item's rank, 1 = best (equal ranks
      are ties, an empty cell leaves the item unranked).

    In both, an optional ``count`` column gives how many voters cast the row (rows with count 0
    are skipped, as are PrefLib lines with count 0), and one optional
    id column (``voter``, ``user``, ``respondent``, ``judge``, ``id`` or ``ballot``) is ignored.
    Parquet and Arrow files (``.parquet``, ``.pq``, ``.arrow``, ``.feather``, ``.ipc``) have the
    same columns and are read by :class:`RankingFile`; they must hold complete strict rankings.

    Parameters
    ----------
    path
        The file; the extension selects the reader.
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
    """
    if partial not in PARTIAL_POLICIES:
        raise InputError(f"partial must be one of {', '.join(PARTIAL_POLICIES)}")
    if Path(path).suffix.lower() not in PREFLIB_SUFFIXES and file_format(path) != "csv":
        if partial != "error":
            raise InputError(f"{path}: Parquet and Arrow rankings are read as complete strict rankings; "
                             "the partial policies apply to CSV and PrefLib files")
        if items is not None:
            raise InputError(f"{path}: Parquet and Arrow rankings take their items from the file; drop items")
        return RankingFile(path).read()
    labels, ballots = read_ballots(path)
    declared = items is not None or not _names_items_in_ballots(path)
    if items is not None:
        labels, ballots = _on_item_list(labels, ballots, item_list(items), path)
    R = _complete_ballots(labels, ballots, partial, rng, path)
    return R.marked(items_declared=declared or partial != "randomize", selected=partial == "drop")


def _names_items_in_ballots(path) -> bool:
    """Whether a rankings file names its items only in the ballots (the CSV order layout)."""
    if Path(path).suffix.lower() in PREFLIB_SUFFIXES:
        return False
    header = [h.lower() for h in _csv_header(Path(path))]
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
    path = Path(path)
    check_data_file(path)
    suffix = path.suffix.lower()
    if suffix in PREFLIB_SUFFIXES:
        return _read_text(_read_preflib, path)
    if suffix == ".csv":
        return _read_text(_read_ranking_csv, path)
    raise InputError(f"{path}: unknown ranking file type; use .soc, .soi, .toc or .csv")


def holds_rankings(path) -> bool:
    """Whether a data file holds rankings rather than comparisons.

    PrefLib files hold rankings; a CSV, Parquet or Arrow file holds comparisons when its header
    has the comparison columns (module docstring), else rankings. A remote path
    (``scheme://...``, read by the engines) holds comparisons unless it is PrefLib.
    """
    remote = "://" in str(path)
    path = Path(str(path))
    if path.suffix.lower() in PREFLIB_SUFFIXES:
        return True
    if remote:
        return False
    check_data_file(path)
    try:
        header = _read_text(_csv_header, path) if file_format(path) == "csv" else ColumnarFile(path).header
        ComparisonColumns.from_header(header, path)
    except InputError:
        return True
    return False


def _csv_header(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        return next(_rows(csv.reader(fh)), [])


def _read_preflib(path: Path):
    names: dict[int, str] = {}
    m = None
    ballots = []  # (line, count, groups of 0-based items)
    with path.open(encoding="utf-8-sig") as fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                hit = _PREFLIB_NAME.match(line)
                if hit:
                    names[int(hit.group(1))] = hit.group(2).strip()
                hit = _PREFLIB_COUNT.match(line)
                if hit:
                    m = int(hit.group(1))
                continue
            if ":" not in line:
                raise InputError(f"{path}, line {line_no}: expected 'count: a,b,...' "
                                 "(the 2022 PrefLib format)")
            count_text, order_text = line.split(":", 1)
            try:
                count = int(count_text)
                groups = [[int(x) - 1 for x in g.strip("{}").split(",") if x.strip()]
                          for g in _PREFLIB_GROUP.findall(order_text)]
            except ValueError:
                raise InputError(f"{path}, line {line_no}: counts and items must be integers") from None
            if count < 0 or count > MAX_EXACT_COUNT:
                raise InputError(f"{path}, line {line_no}: the count must be a whole number from 0 to 2^53")
            if count:  # PrefLib lists some orders with count 0
                ballots.append((line_no, count, [g for g in groups if g]))
    if m is None:
        m = max(names) if names else None
    if not m:
        raise InputError(f"{path}: no '# NUMBER ALTERNATIVES' or '# ALTERNATIVE NAME' header")
    if names and m > len(names):
        raise InputError(f"{path}: the header declares more alternatives than it names; give every alternative "
                         "an '# ALTERNATIVE NAME' line")
    check_items(m, str(path))
    labels = tuple(names.get(k + 1, str(k + 1)) for k in range(m))
    if len(set(labels)) != m:
        labels = tuple(str(k + 1) for k in range(m))
    return labels, ballots


def _read_ranking_csv(path: Path):
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        lines = _rows(reader)
        try:
            header = [h.strip() for h in next(lines)]
        except StopIteration:
            raise InputError(f"{path} is empty") from None
        lower = [h.lower() for h in header]
        count_col = lower.index("count") if "count" in lower else None
        id_col = next((lower.index(c) for c in RANKING_ID_COLUMNS if c in lower), None)
        cols = [k for k in range(len(header)) if k not in (count_col, id_col)]
        if len(cols) < 1:
            raise InputError(f"{path}: no item or rank columns")
        order_layout = all(_RANK_COLUMN.match(lower[k]) for k in cols)
        rows = []
        for line_no, row in enumerate(lines, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{path}, line {line_no}: expected {len(header)} fields, found {len(row)}")
            count = 1
            if count_col is not None:
                try:
                    count = int(row[count_col])
                except ValueError:
                    raise InputError(f"{path}, line {line_no}: count must be an integer >= 0") from None
                if count < 0 or count > MAX_EXACT_COUNT:
                    raise InputError(f"{path}, line {line_no}: count must be a whole number from 0 to 2^53")
            if count:
                rows.append((line_no, count, [row[k].strip() for k in cols]))
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
    if all(_is_number(h) for h in labels):
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
                    raise InputError(f"{path}, line {line_no}: ranks must be numbers (1 = best); for ballots of "
                                     "item labels the header must read rank1,rank2,...") from None
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
                      "file with --engine local and --partial drop or randomize)")


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
        if Path(str(path)).suffix.lower() in PREFLIB_SUFFIXES:
            raise InputError(f"{path}: PrefLib files are read whole (the local engine); convert them to "
                             "CSV or Parquet to read them in batches")
        super().__init__(path)
        lower = [str(h).strip().lower() for h in self.header]
        count = lower.index("count") if "count" in lower else None
        ident = next((lower.index(c) for c in RANKING_ID_COLUMNS if c in lower), None)
        cols = [k for k in range(len(self.header)) if k not in (count, ident)]
        if not cols:
            raise InputError(f"{self.path}: no item or rank columns")
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
        return np.array([len(table), int(self._counts(table, 0).sum())])

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

    def _counts(self, table, first_row: int) -> np.ndarray:
        """Voters per row (the count column, or 1)."""
        pa = _pyarrow()
        if self.count is None:
            return np.ones(len(table), dtype=np.int64)
        col = self.column(table, self.count)
        if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
            try:
                x = col.cast(pa.int64()).to_numpy(zero_copy_only=False)
            except pa.ArrowInvalid:  # find the culprit only on the error path
                x = np.array([int(text) if _is_count(text) else -1 for text in col.to_pylist()])
        else:
            x = self._numbers(col, "count", first_row)
        x = np.asarray(x, dtype=float)
        bad = np.flatnonzero(~np.isfinite(x) | (x < 0) | (x != np.round(x)))
        if bad.size:
            raise InputError(f"record {first_row + int(bad[0]) + 1}: count must be an integer >= 0")
        return x.astype(np.int64)

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
        return InputError(f"record {row + 1}: a ballot with ties or unranked items; the stream and dask "
                          "engines and Parquet files need complete strict rankings (read a CSV file with "
                          "--engine local and --partial drop or randomize)")

    def _orders_from_labels(self, table, kept, first_row):
        pa = _pyarrow()
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
            raise InputError(f"record {first_row + int(kept[gap[0]]) + 1}: empty cells may only trail the ranking")
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
            raise InputError(f"record {first_row + int(kept[twice[0]]) + 1}: an item is ranked twice")
        short = np.flatnonzero(present.sum(axis=1) != m)
        if short.size:
            raise self._incomplete(first_row + int(kept[short[0]]))
        return items, np.ascontiguousarray(idx[:, :m])

    def _orders_from_ranks(self, table, kept, first_row):
        pa = _pyarrow()
        import pyarrow.compute as pc

        ranks = np.empty((kept.size, len(self.cells)))
        for k, name in enumerate(self.cells):  # one step per item column, vectorised over rows
            col = self.column(table, name)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
                missing = pc.or_(pc.equal(col, ""), pc.equal(pc.utf8_lower(col), "na"))
                col = pc.if_else(missing, pa.scalar(None, col.type), col)
                try:
                    col = col.cast(pa.float64())
                except pa.ArrowInvalid:
                    bad = [r for r, text in enumerate(col.to_pylist()) if text is not None and not _is_number(text)]
                    raise InputError(f"record {first_row + bad[0] + 1}: ranks must be numbers (1 = best)") from None
            ranks[:, k] = self._numbers(col, "rank", first_row)[kept]
        ordered = np.sort(ranks, axis=1)
        bad = np.flatnonzero(~np.all(np.isfinite(ranks), axis=1) | np.any(ordered[:, 1:] == ordered[:, :-1], axis=1))
        if bad.size:
            raise self._incomplete(first_row + int(kept[bad[0]]))
        return np.argsort(ranks, axis=1, kind="stable")


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _is_count(text) -> bool:
    try:
        return int(text) >= 0
    except (TypeError, ValueError):
        return False


def _complete_ballots(labels, ballots, partial, rng, path) -> Rankings:
    """Apply the ``partial`` policy and build :class:`Rankings` (module docstring)."""
    m = len(labels)
    if not ballots:
        raise InputError(f"{path} holds no rankings")
    if sum(count for _, count, _ in ballots) > MAX_EXACT_COUNT:
        raise InputError(f"{path}: the ballots' counts add up to more than 2^53 voters, which cannot be "
                         "counted exactly")
    complete_rows, complete_w = [], []
    incomplete = []  # (count, groups)
    for line_no, count, groups in ballots:
        flat = [i for g in groups for i in g]
        if any(i < 0 or i >= m for i in flat):
            raise InputError(f"{path}, line {line_no}: an item number is outside 1..{m}")
        if len(set(flat)) != len(flat):
            raise InputError(f"{path}, line {line_no}: an item is ranked twice")
        if len(flat) == m and all(len(g) == 1 for g in groups):
            complete_rows.append(flat)
            complete_w.append(count)
        else:
            incomplete.append((count, groups))
    if incomplete and partial == "error":
        raise InputError(f"{path}: some ballots have ties or unranked items, but Kemeny and "
                         "footrule aggregation need complete strict rankings; choose a policy: "
                         "partial='drop' (--partial drop) keeps only complete ballots, "
                         "partial='randomize' (--partial randomize) completes each such ballot "
                         "uniformly at random")
    orders = [np.asarray(complete_rows, dtype=np.int64).reshape(-1, m)]
    weights = [np.asarray(complete_w, dtype=np.int64)]
    if incomplete and partial == "randomize":
        gen = as_generator(rng)
        for count, groups in incomplete:  # one vectorised draw per distinct ballot
            level = np.full(m, len(groups), dtype=float)
            for g, members in enumerate(groups):
                level[members] = g
            key = level[None, :] + gen.random((count, m))
            orders.append(np.argsort(key, axis=1))
            weights.append(np.ones(count, dtype=np.int64))
    orders_all = np.concatenate(orders, axis=0)
    if orders_all.shape[0] == 0:
        raise InputError(f"{path}: no complete strict ballot is left after partial='drop'")
    return Rankings.from_orders(orders_all, items=labels, weights=np.concatenate(weights))
