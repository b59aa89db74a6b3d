"""Tabular data files: formats, size checks and the batched columnar reader shared by comparisons and rankings.

The reader opens CSV (also gzip'd, or tab-separated), Parquet and Arrow IPC files, data sets of
many such files (:mod:`privrank.data.parts`: a directory, a Hive-partitioned directory, a glob
pattern), and tables in memory, and hands out batches of columns; the Arrow conversions it and the
engines use (tables in memory as Arrow, validation, labels coded as indices) are
:mod:`privrank.data.arrow_columns`'s.
"""
from __future__ import annotations

import copy
import gzip
import io
import itertools
import sys
import time
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np

from ..errors import InputError, check_labels
from . import arrow_compute as pc
from .arrow_columns import (arrow_table, fixed_width, is_table, is_text_type, plain_text, pyarrow_module, read_errors,
                            validate_full)
from .parts import PREFLIB_SUFFIXES, DataParts, data_source, delimiter, file_format, file_suffix, is_gzip
from .pinned import PinnedFile, check_data_file

#: a rater's id column (``judge``: LMSYS arena data)
#: a table in memory (:func:`is_table`): a pyarrow Table, a pandas or polars frame, anything that
#: speaks the Arrow stream protocol; ``Any`` to a type checker, as no one protocol covers them all
TableLike: TypeAlias = Any
USER_COLUMNS = ("user", "respondent", "worker", "user_id", "respondent_id", "worker_id", "judge")
OUTCOME_COLUMNS = ("outcome", "result")
#: the first bytes of an Arrow IPC file (a stream has none)
ARROW_FILE_MAGIC = b"ARROW1"
FORMAT_NAMES = {"parquet": "Parquet", "arrow": "Arrow IPC", "csv": "CSV"}
CSV_BLOCK_BYTES = 16 << 20
#: seconds a streaming CSV reader given up on may take to let go of a pinned file (:func:`csv_batches`)
READ_AHEAD_WAIT = 10.0
DEFAULT_BATCH_SIZE = 1 << 20
#: largest count of voters or records that float64 arithmetic represents exactly
MAX_EXACT_COUNT = 2 ** 53
#: longest text field read (Python's csv module's limit): longer is a malformed file, not a label
MAX_FIELD_CHARS = 131_072
#: most items a file may declare (a ranking of more is far beyond every method here)
MAX_DECLARED_ITEMS = 1_000_000


def pick_column(header: list[str], names) -> str | None:
    for n in names:
        if n in header:
            return n
    return None


def check_items(m: int, source: str) -> None:
    """Refuse a declared number of items beyond what privrank can rank (``MAX_DECLARED_ITEMS``)."""
    if m > MAX_DECLARED_ITEMS:
        raise InputError(f"{source} declares more than {MAX_DECLARED_ITEMS:,} items; privrank ranks at most that many")


def arrow_input(path):
    """What pyarrow reads a file from: its path, or a new reader of a pinned file's one descriptor."""
    return path.reader() if isinstance(path, PinnedFile) else path


def read_text(read, path: Path, *args):
    """``read(path, *args)`` on a text file: bytes that are not UTF-8 are an input error."""
    try:
        return read(path, *args)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None
    except (OSError, EOFError):  # a damaged or truncated .gz file (gzip'd standard input too)
        if not is_gzip(path):
            raise
        raise InputError(f"{path} is not a readable gzip file") from None


def item_list(items) -> tuple:
    """A caller's item list as a tuple, refusing repeated labels (and what :func:`check_labels` refuses)."""
    labels = check_labels(items)
    if len(set(labels)) != len(labels):
        raise InputError("the item list has a repeated label")
    return labels


class ColumnarFile:
    """A CSV, Parquet or Arrow IPC file, or a table in memory, read in batches of columns with pyarrow.

    Parameters
    ----------
    source : str, Path, DataParts or table
        The file; a directory or glob pattern naming a data set of many files, read one after the
        other as one file (:mod:`privrank.data.parts`); or a table in memory (:func:`is_table`:
        pyarrow, pandas, polars, DuckDB...).
        Its header is read on construction; a subclass checks it and sets ``names``
        (the columns to read) and ``label_names`` (those of them holding labels, read
        dictionary-encoded from Parquet when they are strings).

    Batches hold at most ``batch_size`` records; Parquet files are read row group by row group
    and CSV files in blocks of 16 MB, so memory stays bounded whatever the file size. CSV fields
    are text without surrounding whitespace; Parquet and Arrow columns keep their types. Records
    are numbered from 0 in file order (blank CSV lines are not records; the parts of a data set in
    their order); errors name the record (counting from 1; in a data set, the part and its record)
    and never echo its contents. Every part of a data set must have the header (CSV) or the
    columns and types (Parquet, Arrow) of the first; a part that differs is refused, naming it. The
    object holds no open file and can be sent to other processes (the Dask engine does).
    """

    names: list
    label_names: list

    def __init__(self, source):
        self.table = self.source = None
        self.parts: list[ColumnarFile] | None = None  # a data set's parts, each read as a file
        if is_table(source):
            self.table = arrow_table(source)
            self.path, self.format = "the table", "table"
        else:
            source = data_source(source)
            if not isinstance(source, DataParts):  # a data set's parts are checked as each is read
                check_data_file(source, remote=True)
            if file_suffix(source) in PREFLIB_SUFFIXES:  # else read as a CSV of one column: "need a header row ..."
                raise InputError(f"{source} is a PrefLib file of rankings, not a table of comparisons or ratings: read "
                                 "it with read_rankings (CLI: privrank aggregate)")
            self.source = source if isinstance(source, (PinnedFile, DataParts)) else str(source)
            self.path = str(source)
            self.format = file_format(source)
            if isinstance(source, DataParts):
                self.parts = [ColumnarFile(part) for part in source.parts]
        self.header = self._header()

    def _header(self) -> list[str]:
        if self.table is not None:
            return [str(name) for name in self.table.column_names]
        if self.parts is not None:
            return self._parts_header()
        if self.format == "csv":
            return csv_header(self.source)
        return list(self._schema().names)

    def _schema(self):
        """The Arrow schema of a Parquet or Arrow file, without its metadata."""
        with self.reading():
            if self.format == "parquet":
                import pyarrow.parquet as pq
                return pq.read_schema(arrow_input(self.source)).remove_metadata()
            with self._ipc_source() as source:
                return self._ipc_reader(source).schema.remove_metadata()

    def _parts_header(self) -> list[str]:
        """The header of a data set's parts, which every part must share (CSV: its header; else its
        columns' names, order and types, a column declared non-null or not alike)."""
        assert self.parts is not None, "only a data set has parts"
        first = self.parts[0]
        layout = (lambda part: part.header) if self.format == "csv" else \
            (lambda part: [(field.name, field.type) for field in part._schema()])  # nullable or not alike
        expected = layout(first)
        for part in self.parts[1:]:
            if layout(part) != expected:
                raise InputError(f"{part.path}: its columns (names, order or types) differ from those of {first.path}; "
                                 f"every part of the data set {self.path} must have the same columns")
        return first.header

    def refuse_partition_keys(self, names) -> None:
        """Refuse a data set whose Hive partition keys (:mod:`privrank.data.parts`) name a column of
        ``names`` (lower case: those the layout reads) that its files do not hold: keys are not read."""
        if isinstance(self.source, DataParts):
            claimed = sorted(self.source.keys & set(names) - {str(h).strip().lower() for h in self.header})
            if claimed:
                raise InputError(f"{self.path}: its directories name the column {claimed[0]!r} (a Hive partition "
                                 "key); privrank reads the columns of the files only, not partition keys: write the "
                                 "data set with that column kept in the files")

    def _reader(self, part: int) -> ColumnarFile:
        """Part ``part`` of a data set, as a reader of this file's columns."""
        assert self.parts is not None, "only a data set has parts"
        reader = copy.copy(self.parts[part])
        reader.names, reader.label_names = self.names, self.label_names
        return reader

    def _readers(self):
        """Each part of a data set, in order, as a reader of this file's columns."""
        return (self._reader(k) for k in range(len(self.parts or ())))

    @contextmanager
    def reading(self):
        """Every failure of the file-format layer within (:func:`read_errors`) as an :class:`InputError`
        naming the file, never the data; a file changed while read stays a
        :class:`~privrank.data.pinned.FileChangedError`."""
        pa = pyarrow_module()
        try:
            yield
        except InputError:
            raise
        except MemoryError:  # pyarrow's allocation errors included
            raise InputError(f"{self.path}: not enough memory to read it (a damaged file, or a record batch too "
                             "large for memory)") from None
        except read_errors(pa):
            name = FORMAT_NAMES[self.format]
            raise InputError(f"{self.path} is not a readable {name} file: it is damaged, truncated or not "
                             f"{name} data") from None

    def _ipc_source(self):
        """The Arrow IPC file, or a reader of the pinned file."""
        pa = pyarrow_module()
        return self.source.reader() if isinstance(self.source, PinnedFile) else pa.OSFile(self.path)

    @staticmethod
    def _ipc_reader(source, options=None):
        """A reader of the Arrow IPC file or stream ``source`` (told apart by the file format's first bytes)."""
        pa = pyarrow_module()
        source.seek(0)
        file = source.read(len(ARROW_FILE_MAGIC)) == ARROW_FILE_MAGIC
        source.seek(0)
        return pa.ipc.open_file(source, options=options) if file else pa.ipc.open_stream(source, options=options)

    def _ipc_batches(self, source, field=None):
        """The record batches of an Arrow IPC file or stream, in order (only the column ``field`` when given)."""
        pa = pyarrow_module()
        reader = self._ipc_reader(source, None if field is None else pa.ipc.IpcReadOptions(included_fields=[field]))
        if isinstance(reader, pa.ipc.RecordBatchFileReader):
            return (reader.get_batch(k) for k in range(reader.num_record_batches))
        return iter(reader)

    def n_records(self) -> int | None:
        """Number of records from the file's metadata (None for CSV, which has none)."""
        if self.table is not None:
            return self.table.num_rows
        if self.format == "csv":
            return None
        if self.parts is not None:
            return sum(part.n_records() or 0 for part in self.parts)
        with self.reading():
            if self.format == "parquet":
                import pyarrow.parquet as pq
                return pq.ParquetFile(arrow_input(self.source)).metadata.num_rows
            with self._ipc_source() as source:  # each batch's length, reading one narrow column of it
                schema = self._ipc_reader(source).schema
                narrowest = min(range(len(schema)), key=lambda k: fixed_width(schema.field(k).type))
                return sum(batch.num_rows for batch in self._ipc_batches(source, narrowest))

    def integers_without_nulls(self, name: str) -> bool:
        """Whether the file's metadata declares that its column ``name`` holds integers and no null:
        a Parquet column that is required (it has no definition levels), or whose every row group's
        statistics count no null. The declaration is not checked against the data. False for
        tables, CSV and Arrow files, and whenever the metadata does not say so."""
        if self.table is not None or self.format != "parquet":
            return False
        if self.parts is not None:
            return all(part.integers_without_nulls(name) for part in self.parts)
        import pyarrow.parquet as pq
        with self.reading():  # a damaged footer or statistics: an InputError naming the file
            meta = pq.read_metadata(arrow_input(self.source))
            if not pyarrow_module().types.is_integer(meta.schema.to_arrow_schema().field(name).type):
                return False
            leaves = [k for k in range(meta.num_columns) if meta.schema.column(k).path == name]
            if len(leaves) != 1:
                return False
            if meta.schema.column(leaves[0]).max_definition_level == 0:
                return True
            stats = [meta.row_group(g).column(leaves[0]).statistics for g in range(meta.num_row_groups)]
            return all(s is not None and s.has_null_count and s.null_count == 0  # type: ignore[attr-defined]  # in pyarrow, not in its stubs
                       for s in stats)

    @property
    def extent_columns(self) -> list:
        """The columns :meth:`extent` needs."""
        return self.names[:1]

    def extent(self, table):
        """How far a table of this file's columns reaches: its number of records (the Dask
        engine's first pass, which tells every partition where it starts)."""
        return len(table)

    def _parquet_file(self):
        """The Parquet file, its label columns of text read dictionary-encoded."""
        import pyarrow.parquet as pq
        schema = pq.read_schema(arrow_input(self.source))
        dictionary = [n for n in self.label_names if is_text_type(schema.field(n).type)]
        return pq.ParquetFile(arrow_input(self.source), read_dictionary=dictionary, pre_buffer=False)

    def row_groups(self) -> int:
        """Number of row groups of a Parquet file (the Dask engine's partitions); of a data set, of
        all its parts, numbered part after part."""
        if self.parts is not None:
            self._groups = [(part, k) for part, reader in enumerate(self._readers()) for k in range(reader.row_groups())]
            return len(self._groups)
        with self.reading():
            return self._parquet_file().num_row_groups

    def row_group(self, k: int, columns):
        """Row group ``k`` of a Parquet file (of a data set: as :meth:`row_groups` numbers them),
        its ``columns`` read and validated."""
        if self.parts is not None:
            part, group = self._groups[k]
            return self._reader(part).row_group(group, columns)
        with self.reading():
            table = self._parquet_file().read_row_group(k, columns=columns, use_pandas_metadata=False)
            validate_full(table)
        return table

    def raw_batches(self, batch_size: int):
        """The file's columns of interest in pyarrow record batches of at most ``batch_size`` rows.

        Every batch read from a file is fully validated (offsets, indices, UTF-8) before it is
        used, so a damaged file is an :class:`InputError` (:meth:`reading`), never a crash."""
        size = int(batch_size)
        if size < 1:
            raise InputError("batch_size must be >= 1")
        if self.table is not None:
            yield from self.table.select(self.names).to_batches(max_chunksize=size)
            return
        if self.parts is not None:
            for reader in self._readers():
                yield from reader.raw_batches(size)
            return
        if self.format == "csv":
            yield from self._csv_batches(size)
            return
        with self.reading():
            if self.format == "parquet":
                for batch in self._parquet_file().iter_batches(batch_size=size, columns=self.names,
                                                               use_pandas_metadata=False):
                    validate_full(batch)
                    yield batch
                return
            with self._ipc_source() as source:
                for batch in self._ipc_batches(source):
                    validate_full(batch)
                    batch = batch.select(self.names)
                    for start in range(0, batch.num_rows, size):
                        yield batch.slice(start, size)

    def _csv_batches(self, size: int):
        pa = pyarrow_module()
        import pyarrow.csv as pcsv

        bad = []

        def invalid_row(row):
            if not (row.text or "").strip():  # a line of spaces: blank, like an empty line
                return "skip"
            bad.append(row)
            return "error"
        try:
            for batch in csv_batches(
                    self.source, read_options=pcsv.ReadOptions(block_size=CSV_BLOCK_BYTES),
                    parse_options=pcsv.ParseOptions(delimiter=delimiter(self.source), invalid_row_handler=invalid_row),
                    convert_options=pcsv.ConvertOptions(column_types={n: pa.string() for n in self.header},
                                                        include_columns=self.names, strings_can_be_null=False)):
                for start in range(0, batch.num_rows, size):
                    yield batch.slice(start, size)
        except (pa.ArrowInvalid, OSError, EOFError) as error:
            if isinstance(error, pa.ArrowInvalid):  # the parser's own message would quote the row
                self._refuse_parse(error, bad)
            raise InputError(f"{self.path} could not be read to the end (a damaged or truncated file?)") from None

    def _refuse_parse(self, error, bad):
        """The input error for Arrow's parse ``error``; ``bad`` holds the rows it refused."""
        if bad:
            row = bad[0]
            raise InputError(f"{self.path}: {self._line_holding(row.text)}: expected {row.expected_columns} "
                             f"fields, found {row.actual_columns}") from None
        if "UTF8" in str(error):
            raise InputError(f"{self.path} is not UTF-8 text") from None
        raise InputError(f"{self.path} could not be parsed as CSV") from None

    def _line_holding(self, text) -> str:
        """``"line N"`` of the first line of this CSV file that reads ``text`` (error path only)."""
        with open_text(self.source, errors="replace") as fh:
            for number, line in enumerate(fh, start=1):
                if line.rstrip("\r\n") == text:
                    return f"line {number}"
        return "a line"

    def column(self, table, name):
        """Column ``name`` of a table of this file as one array (CSV text without surrounding whitespace,
        view text as :func:`plain_text`)."""
        pa = pyarrow_module()
        col = table.column(name)
        col = plain_text(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
        if self.format == "csv":
            col = pc.utf8_trim_whitespace(col)
        return col

    def where(self, record: int) -> str:
        """Where record ``record`` (counting from 0) is, for an error message: its line in a CSV
        file (found on the error path only), else its number counting from 1; in a data set, the
        part that holds it and its place there."""
        if self.parts is not None:
            reader, record = self._part_of(record)
            return f"{reader.path}, {reader.where(record)}"
        if self.format != "csv":
            return f"record {record + 1}"
        with open_text(self.source, errors="replace") as fh:
            lines = record_lines(fh, len(self.header))
            next(lines, None)  # the header
            return f"line {next(itertools.islice(lines, record, None), '?')}"

    def numbered(self, record: int) -> str:
        """``"record N"`` for record ``record`` (counting from 0; N from 1); in a data set, the part
        that holds it and its number there (found on the error path only)."""
        if self.parts is None:
            return f"record {record + 1}"
        reader, record = self._part_of(record)
        return f"{reader.path}, record {record + 1}"

    def _part_of(self, record: int) -> tuple[ColumnarFile, int]:
        """The part of a data set that holds record ``record``, and the record's index in it."""
        readers = list(self._readers())
        for reader in readers[:-1]:
            rows = reader._rows()
            if record < rows:
                return reader, record
            record -= rows
        return readers[-1], record

    def _rows(self) -> int:
        """The file's number of rows (of a CSV file, counted; the error path only)."""
        if self.format != "csv":
            return self.n_records() or 0
        with open_text(self.source, errors="replace") as fh:
            return sum(1 for _ in record_lines(fh, len(self.header))) - 1

    def counts(self, table, name: str, first_row: int | None) -> np.ndarray:
        """The column ``name`` of a table of this file as counts: int64 whole numbers from 0 to
        ``MAX_EXACT_COUNT`` (integers, or floats holding whole numbers; text must be written as an
        integer). ``first_row`` is the file index of the table's first row, for the message that
        names a bad value's row (None: the row is not known, the message names the file)."""
        pa = pyarrow_module()
        col = self.column(table, name)
        if pa.types.is_dictionary(col.type):
            col = col.dictionary_decode()
        if is_text_type(col.type):
            try:
                x = pc.cast(col, pa.int64()).to_numpy(zero_copy_only=False)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # find the culprit only on the error path
                x = np.array([int(text) if is_count(text) else -1 for text in col.to_pylist()], dtype=object)
        elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            x = col.to_numpy(zero_copy_only=False)  # a null becomes NaN
        else:
            x = np.full(len(col), -1)
        whole = np.isfinite(x) & (x >= 0) & (x <= MAX_EXACT_COUNT) & (np.floor(x) == x) if x.dtype.kind == "f" \
            else (x >= 0) & (x <= MAX_EXACT_COUNT)
        bad = np.flatnonzero(~whole)
        if bad.size:
            where = self.path if first_row is None else self.where(first_row + int(bad[0]))
            raise InputError(f"{where}: a {name} must be a whole number from 0 to 2^53 (how many times the "
                             "row occurred), written as an integer")
        return x.astype(np.int64)

    def _numbers(self, col, name, first_record) -> np.ndarray:
        pa = pyarrow_module()
        if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            return col.to_numpy(zero_copy_only=False)
        try:
            return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            for k, text in enumerate(col.to_pylist()):  # locate the culprit only on the error path
                try:
                    float(text)
                except (TypeError, ValueError):
                    raise InputError(f"{self.where(first_record + k)}: {name} must be a number") from None
            raise InputError(f"{name} must be numeric") from None


class TextColumns(ColumnarFile):
    """Every column of a CSV file as text, parsed by Arrow: the rows the in-memory readers of
    layouts that need Python logic per row (ranking ballots with ties and gaps) work on."""

    def __init__(self, path):
        super().__init__(path)
        if len(set(self.header)) != len(self.header):
            raise InputError(f"{self.path}: two columns have the same name; name each column once")
        self.names = list(self.header)
        self.label_names = []

    def rows(self):
        """``(line, fields)`` of every record in file order; fields are text without surrounding
        whitespace, ``line`` the record's line number (blank lines are not records); in a data set,
        ``"N of PART"``."""
        for reader in [self] if self.parts is None else self._readers():
            with open_text(reader.source, errors="replace") as fh:
                lines: list = list(record_lines(fh, len(self.header)))[1:]
            if self.parts is not None:
                lines = [f"{line} of {reader.path}" for line in lines]
            k = 0
            for batch in reader.raw_batches(DEFAULT_BATCH_SIZE):
                for fields in zip(*(reader.column(batch, n).to_pylist() for n in self.names)):
                    yield lines[k], list(fields)
                    k += 1


def record_lines(fh, columns: int):
    """The numbers of the lines of ``fh`` that the CSV reader reads as records (or the header) in a file of
    ``columns`` columns: every line but the empty ones, and but the lines of spaces when there are several
    columns (Arrow reads them as rows of too few fields, which the reader skips as blank); in a file of
    one column a line of spaces is a record."""
    return (number for number, text in enumerate(fh, start=1)
            if (text.strip("\r\n") if columns == 1 else text.strip()))


def csv_batches(path, **options):
    """The record batches of pyarrow's streaming CSV reader (``options``: those of
    ``pyarrow.csv.open_csv``) on a path, or on the pinned file's bytes (decompressed when gzip'd).

    The reader reads ahead in threads of its own. From a pinned file those threads call into
    Python, and a reader given up while they still hold the file (a parse error in the first block
    of a large file) would leave one of them in Python code while the interpreter exits, which
    aborts the process. So on leaving, however it happens, the file is made to end at once and the
    generator waits (at most ``READ_AHEAD_WAIT`` seconds) until pyarrow holds the file no more."""
    pa = pyarrow_module()
    import pyarrow.csv as pcsv

    if not isinstance(path, PinnedFile):
        yield from pcsv.open_csv(path, **options)
        return
    source = _Stoppable(path.reader())
    alone = sys.getrefcount(source)
    stream = reader = None
    try:
        stream = pa.CompressedInputStream(source, "gzip") if is_gzip(path) else source
        reader = pcsv.open_csv(stream, **options)  # type: ignore[arg-type]  # pyarrow reads any object with read(); the stubs ask for IO
        for batch in reader:
            yield batch
    finally:
        stream = reader = None
        source.stop()
        failed = sys.exc_info()[1]
        if failed is not None:  # a read that raised (a pinned file that changed) keeps ``source`` in its frames
            traceback.clear_frames(failed.__traceback__)
        deadline = time.monotonic() + READ_AHEAD_WAIT
        while sys.getrefcount(source) > alone and time.monotonic() < deadline:
            time.sleep(0.002)


class _Stoppable(io.RawIOBase):
    """A reader that reads as ``raw`` does until :meth:`stop`, and then is at its end."""

    def __init__(self, raw):
        super().__init__()
        self._raw, self._stopped = raw, False

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:  # pyarrow reads by read(): one buffer, not a copy of one
        return b"" if self._stopped else self._raw.read(size)

    def readinto(self, buffer) -> int:
        return 0 if self._stopped else self._raw.readinto(buffer)

    def stop(self) -> None:
        self._stopped = True


def open_text(path, errors: str = "strict"):
    """A CSV file as text for the standard library (a ``.gz`` file decompressed, as Arrow reads it)."""
    if isinstance(path, PinnedFile):
        binary = gzip.GzipFile(fileobj=path.reader()) if is_gzip(path) else path.reader()
        return io.TextIOWrapper(binary, encoding="utf-8-sig", newline="", errors=errors)
    if is_gzip(path):
        return gzip.open(path, "rt", newline="", encoding="utf-8-sig", errors=errors)
    return open(path, newline="", encoding="utf-8-sig", errors=errors)


def csv_header(path) -> list[str]:
    """The header of a CSV file: its first line that is not blank (as Arrow reads it), parsed by
    Arrow, the parser of every record, with every name kept as text."""
    pa = pyarrow_module()
    import pyarrow.csv as pcsv

    try:
        with open_text(path) as fh:
            line = next((text for text in fh if text.strip()), None)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None
    except (OSError, EOFError):  # a damaged .gz file
        raise InputError(f"{path} is not a readable gzip file") from None
    if line is None:
        raise InputError(f"{path} is empty")
    if line.startswith("\ufeff"):  # Arrow would drop this one too, from the header only: its names and the records' would differ
        raise InputError(f"{path} starts with more than one byte order mark (U+FEFF); save it as UTF-8 with at most one")
    data = pa.py_buffer(line.rstrip("\r\n").encode("utf-8") + b"\n")
    names = pcsv.ReadOptions(autogenerate_column_names=True)
    parse = pcsv.ParseOptions(delimiter=delimiter(path))
    try:
        width = pcsv.read_csv(data, read_options=names, parse_options=parse).num_columns
        row = pcsv.read_csv(data, read_options=names, parse_options=parse, convert_options=pcsv.ConvertOptions(
            column_types={f"f{k}": pa.string() for k in range(width)}, strings_can_be_null=False))
    except pa.ArrowInvalid:
        raise InputError(f"{path}: the first line could not be parsed as a CSV header") from None
    return [row.column(k)[0].as_py() for k in range(width)]


def is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def is_count(text) -> bool:
    try:
        return int(text) >= 0
    except (TypeError, ValueError):
        return False
