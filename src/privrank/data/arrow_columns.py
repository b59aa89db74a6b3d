"""Arrow conversions shared by the file readers and the engines (no file is opened here).

A table in memory becomes a pyarrow Table (:func:`arrow_table`: pandas, polars, DuckDB and any
object that speaks the Arrow PyCapsule stream protocol, without importing their libraries);
what a file or a library hands over is validated (:func:`validate_full`); text of every Arrow
type is made plain and nulls are found, a dictionary's counting too; and a label column is coded
as indices -- sorted (:func:`sorted_codes`), by value for a small integer range
(:func:`integer_range_codes`), or into a given item list (:func:`label_indices`); columns of a
table are digested (:func:`columns_digest`). pyarrow is imported on first use
(:func:`pyarrow_module`), and ``pyarrow.compute`` not at all (:mod:`privrank.data.arrow_compute`).
"""
from __future__ import annotations

import hashlib
from itertools import compress

import numpy as np

from ..errors import InputError
from . import arrow_compute as pc


def pyarrow_module():
    try:
        import pyarrow
    except ImportError:
        raise InputError("reading Parquet or Arrow files, and the stream and dask engines, need pyarrow: "
                         "pip install pyarrow") from None
    return pyarrow


def read_errors(pa) -> tuple:
    """What the file-format layer raises on a damaged, truncated or unreadable file: Arrow's
    errors, the operating system's, and the Python errors pyarrow's readers let through."""
    return (pa.ArrowException, OSError, EOFError, ValueError, TypeError, LookupError, NotImplementedError,
            ArithmeticError)


def is_text_type(t) -> bool:
    """Whether an Arrow type is text: ``string``, ``large_string`` or ``string_view``."""
    pa = pyarrow_module()
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def plain_text(col):
    """``col`` with text of Arrow's view type (``string_view``, polars' text; also as a
    dictionary's values) as ``large_string``, the text type every compute kernel takes."""
    pa = pyarrow_module()
    t = col.type
    if pa.types.is_dictionary(t) and pa.types.is_string_view(t.value_type):
        return pc.cast(col, pa.dictionary(t.index_type, pa.large_string()))
    return pc.cast(col, pa.large_string()) if pa.types.is_string_view(t) else col


def fixed_width(t) -> int:
    """Bits per value of an Arrow type of fixed width (a dictionary's: its indices'), else a large number."""
    try:
        return t.bit_width
    except ValueError:
        return 1 << 30


def first_null(col) -> int | None:
    """Position of the first null of a pyarrow array, a null entry of a dictionary array's
    dictionary counting as one (a missing label), or None."""
    pa = pyarrow_module()
    dictionary = pa.types.is_dictionary(col.type)
    if not (col.null_count or dictionary and col.dictionary.null_count):  # known without a pass
        return None
    missing = pc.is_null(col).to_numpy(zero_copy_only=False) if col.null_count else np.zeros(len(col), dtype=bool)
    if dictionary and col.dictionary.null_count:
        missing |= np.isin(col.indices.to_numpy(zero_copy_only=False),
                           np.flatnonzero(pc.is_null(col.dictionary).to_numpy(zero_copy_only=False)))
    return int(np.argmax(missing)) if missing.any() else None


def validate_full(table) -> None:
    """Arrow's full validation of a table or record batch read from a file (offsets, UTF-8,
    dictionary indices), raising ``pyarrow.ArrowInvalid``; a dictionary column's indices are
    checked against its dictionary by one ``min_max`` (Arrow's own check takes 20x as long)."""
    pa = pyarrow_module()
    table.validate()
    for col in table.columns:
        for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else [col]:
            if not pa.types.is_dictionary(chunk.type):
                chunk.validate(full=True)
                continue
            chunk.indices.validate(full=True)
            chunk.dictionary.validate(full=True)
            low, high = pc.min_max(chunk.indices).values()
            if low.is_valid and not 0 <= low.as_py() <= high.as_py() < len(chunk.dictionary):
                raise pa.ArrowInvalid("a dictionary index is out of bounds")


def _is_lazy_frame(obj) -> bool:
    """A polars LazyFrame (a query, collected into a DataFrame to be read), told without importing polars."""
    kind = type(obj)
    return kind.__module__.startswith("polars") and kind.__name__ == "LazyFrame"


def _is_record_array(obj) -> bool:
    """A one-dimensional numpy structured array: named columns, read as a table of those columns."""
    return isinstance(obj, np.ndarray) and obj.dtype.names is not None and obj.ndim == 1


def is_table(obj) -> bool:
    """True for a table in memory: a pyarrow Table or RecordBatch, a pandas DataFrame, any object
    that speaks the Arrow PyCapsule stream protocol (polars, DuckDB results, ...), a polars
    LazyFrame (collected) or a numpy structured array (its fields are the columns)."""
    kind = type(obj)
    return (hasattr(obj, "__arrow_c_stream__") or _is_lazy_frame(obj) or _is_record_array(obj)
            or kind.__module__.startswith(("pyarrow", "pandas")) and kind.__name__ in ("Table", "RecordBatch",
                                                                                       "DataFrame"))


def arrow_table(obj):
    """A table in memory (:func:`is_table`) as a pyarrow Table, without importing pandas or polars
    (a pandas DataFrame loses its index; its columns are what count)."""
    pa = pyarrow_module()
    if isinstance(obj, pa.Table):
        return obj
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    try:
        if type(obj).__module__.startswith("pandas"):
            return pa.Table.from_pandas(obj, preserve_index=False)
        if _is_record_array(obj):
            obj = {name: obj[name] for name in obj.dtype.names}
        elif _is_lazy_frame(obj):
            obj = obj.collect()
        table = pa.table(obj)  # the Arrow PyCapsule stream protocol: polars, DuckDB, ...
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, TypeError, ValueError):
        raise InputError("the table could not be read as columns of one type each (is a column a mix of "
                         "text and numbers?)") from None
    try:  # what another library hands over is checked before any kernel reads it
        table.validate(full=True)
    except pa.ArrowInvalid:
        raise InputError("the table's Arrow data are not valid (its library exported damaged columns)") from None
    return table


def _small_integer_range(labels, known=()):
    """``(values, lo, hi)`` when ``labels`` are integers without nulls whose range, with the integer
    labels ``known``, is small enough for a table indexed by value (at most a few entries per
    label); else None. Item ids 0..m-1, as simulations and exports write them, qualify."""
    pa = pyarrow_module()
    kind = labels.type
    if not (pa.types.is_signed_integer(kind) or kind in (pa.uint8(), pa.uint16(), pa.uint32())) \
            or labels.null_count or not len(labels) or not all(type(k) is int for k in known):
        return None
    values, bounds = labels.to_numpy(), pc.min_max(labels)  # one pass for both bounds
    lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
    if known:
        lo, hi = min(lo, min(known)), max(hi, max(known))
    return (values, lo, hi) if hi - lo < max(4 * values.size, 1 << 16) else None


def integer_range_codes(*columns):
    """``(labels, codes)`` for integer label columns of one small range (:func:`_small_integer_range`):
    every integer of the range, in increasing order, and each column as indices into it (the
    values themselves when the range starts at 0); else None. Integers of the range that no record
    names are labels too, as the unused entries of a dictionary are: the engines drop them at the end."""
    ranges = [_small_integer_range(c) for c in columns]
    if not ranges or any(r is None for r in ranges):
        return None
    lo, hi = min(r[1] for r in ranges), max(r[2] for r in ranges)
    if hi - lo >= max(4 * sum(r[0].size for r in ranges), 1 << 16):
        return None
    codes = [values - lo if lo else values.astype(np.int64, copy=False) for values, _, _ in ranges]
    return tuple(range(lo, hi + 1)), codes


def present_labels(labels, used_only: bool = True) -> list:
    """Distinct values of a label array (for a dictionary array: the entries actually used, or
    with ``used_only=False`` the whole dictionary)."""
    pa = pyarrow_module()
    if pa.types.is_dictionary(labels.type):
        if not used_only:
            return labels.dictionary.to_pylist()
        used = np.bincount(labels.indices.to_numpy(zero_copy_only=False), minlength=len(labels.dictionary)) > 0
        return pc.filter(labels.dictionary, pa.array(used)).to_pylist()
    small = _small_integer_range(labels)
    if small is not None:  # counted by value: 2x faster than hashing
        values, lo, hi = small
        return (np.flatnonzero(np.bincount(values - lo, minlength=hi - lo + 1)) + lo).tolist()
    return pc.unique(labels).to_pylist()


def dictionary_encoded(col):
    """A pyarrow array as a dictionary array: a dictionary array as it is, anything else encoded."""
    pa = pyarrow_module()
    return col if pa.types.is_dictionary(col.type) else pc.dictionary_encode(col)


def columns_digest(table, names) -> bytes:
    """SHA-256 of the columns ``names`` of a pyarrow table: of their Arrow IPC stream (types,
    lengths, nulls and values; a dictionary column's dictionaries and indices), the same however
    the arrays are sliced in their buffers, without the table's metadata."""
    pa = pyarrow_module()
    part = table.select(names).replace_schema_metadata()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as writer:
        writer.write_table(part)
    return hashlib.sha256(sink.getvalue()).digest()


def sorted_codes(arrays) -> tuple[tuple, np.ndarray]:
    """``(labels, codes)``: the distinct labels of pyarrow arrays of one type, in sorted order (text
    by code point, as Python sorts it), and each record's index into them, as one int64 array.

    The arrays are dictionary-encoded (a dictionary array as it is), their dictionaries unified and
    the one dictionary sorted: every label is hashed once and only the distinct labels are sorted
    and turned into Python objects (a million user ids of ten million records in a second)."""
    pa = pyarrow_module()
    unified = pa.chunked_array([dictionary_encoded(a) for a in arrays]).unify_dictionaries()
    dictionary = unified.chunk(0).dictionary
    codes = np.concatenate([c.indices.to_numpy(zero_copy_only=False) for c in unified.chunks])
    used = np.bincount(codes, minlength=len(dictionary)).astype(bool)
    sort = pc.array_sort_indices(dictionary)
    order = sort.to_numpy()
    kept = used[order]
    order = order[kept]
    rank = np.empty(len(dictionary), dtype=np.int64)
    rank[order] = np.arange(order.size)
    labels = pc.take(dictionary, sort).to_pylist()  # by Arrow's indices: a numpy array handed to Arrow imports numpy.ma
    return tuple(labels if kept.all() else compress(labels, kept.tolist())), rank[codes]


def known_indices(values, known: tuple) -> np.ndarray:
    """Index of every value of a pyarrow array in the tuple ``known``, -1 for a value not in it (hashed)."""
    pa = pyarrow_module()
    try:
        idx = pc.index_in(values, value_set=pa.array(known, type=values.type))
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
        raise InputError("the given item list does not match the type of the file's item labels") from None
    return pc.fill_null(idx, -1).to_numpy().astype(np.int64)


def label_indices(labels, known: tuple) -> np.ndarray:
    """Index of every label of a pyarrow array in the tuple ``known`` (a dictionary array is
    mapped through its dictionary)."""
    pa = pyarrow_module()
    small = _small_integer_range(labels, known)
    if small is not None:  # a table indexed by value: 3x faster than hashing
        values, lo, hi = small
        table = np.full(hi - lo + 1, -1, dtype=np.int64)
        table[np.array(known, dtype=np.int64) - lo] = np.arange(len(known))
        idx = table[values - lo]
        if idx.min() < 0:
            raise InputError("a comparison names an item that is not in the given item list")
        return idx
    dictionary = pa.types.is_dictionary(labels.type)
    idx = known_indices(labels.dictionary if dictionary else labels, known)
    unknown = idx.size and idx.min() < 0
    if dictionary:
        idx = idx[labels.indices.to_numpy(zero_copy_only=False)]
        unknown = unknown and idx.min() < 0  # an unknown dictionary entry matters only if used
    if unknown:
        raise InputError("a comparison names an item that is not in the given item list")
    return idx
