"""A data set stored as many files -- a directory, a Hive-partitioned directory or a glob pattern -- read as one input.

A data set that outgrew one machine is written as many files (``part-0.parquet``,
``day=2026-01-01/part-0.parquet``...). :func:`data_source` turns a path that names such a set into
:class:`DataParts`, which every reader of :mod:`privrank.data.io`, every engine and the ledger's
fingerprint take in place of one file:

* **What is a part.** A directory's files, at any depth, listed with ``pyarrow.dataset``'s rule
  for what is not data: a file or directory whose name starts with ``.`` or ``_``
  (``_SUCCESS``, ``_metadata``, ``_common_metadata``, ``_temporary/``, Hadoop's ``.NAME.crc``
  checksums) is skipped. A glob pattern (``*``, ``?``, ``[...]``; ``**`` matches any depth; quote
  it so the shell leaves it alone) matches files, and the files of the directories it matches, by
  the same rule. Every other file is a part, and must have a data file's suffix (``.parquet``,
  ``.csv``, ``.csv.gz``, ``.tsv``, ``.arrow``...): any other file is refused, naming it, rather
  than read as data or left out.
* **One format, one layout.** Every part has the same format (Parquet, Arrow IPC, or CSV with the
  same delimiter and compression) and the same columns, of the same types
  (:class:`~privrank.data.tabular.ColumnarFile` refuses a part that differs, naming it). PrefLib
  files are whole profiles, one per file, and are not parts.
* **Order.** The parts are read one after the other in the order of their paths, sorted as text
  (by code point), so records are numbered as in the one file that concatenates them in that
  order: the seeded counter-based randomization, the engines' results and the ledger's
  fingerprint are those of that file. (A writer that numbers its parts without leading zeros
  writes ``part-10`` before ``part-2`` in that order; the data set is still one and the same.)
* **Hive partition columns.** The ``key=value`` directories of a partitioned data set are not
  read: the records are the rows of the files, and a partition key is not a column of them. A key
  that names a column the layout reads (``user``, ``outcome``, ``count``, ``epsilon``...) while
  the files do not hold it is refused (:meth:`~privrank.data.tabular.ColumnarFile.refuse_partition_keys`):
  the column must be in the files.
* **Read once.** A file is one part however many ways a pattern matches it (``data/**`` matches a
  file, and the directory holding it).
* **Pinned.** :meth:`DataParts.pin` pins every part (:class:`~privrank.data.pinned.PinnedFile`),
  so that the ledger's fingerprint and the release read the same bytes of every part. The list of
  parts is fixed when the path is resolved: a part written later is not read.

The module also says what a file holds from its name (:func:`file_format`, :func:`is_text_table`,
:func:`delimiter`...), for single files and parts alike.
"""
from __future__ import annotations

import glob
import os
from pathlib import Path

from ..errors import InputError
from .pinned import PinnedFile

#: file and directory names that are not data (pyarrow.dataset's default ``ignore_prefixes``)
IGNORED_PREFIXES = (".", "_")
PARQUET_SUFFIXES = (".parquet", ".pq")
#: Arrow IPC files, or streams (``.arrows``, and any of these whose bytes are the stream format)
ARROW_SUFFIXES = (".arrow", ".feather", ".ipc", ".arrows")
CSV_SUFFIXES = (".csv",)
#: PrefLib's files of rankings (privrank.data.preflib): never read as a table
PREFLIB_SUFFIXES = (".soc", ".soi", ".toc", ".toi")
TSV_SUFFIXES = (".tsv", ".tab")


class DataParts:
    """The files of one data set, read in order as one input (see the module docstring).

    ``name`` is the path or pattern as given (messages and the ledger name the data set by it);
    ``parts`` the files in order, as paths or, once pinned (:meth:`pin`), as
    :class:`~privrank.data.pinned.PinnedFile`; ``paths`` their paths; ``type_name`` the name whose
    suffix says their format (the first part's); ``keys`` the Hive partition keys of the parts'
    directories (``key=value``, below the directory or the pattern's fixed start), in lower case.
    """

    def __init__(self, name: str, parts, keys=frozenset()):
        self.name, self.parts, self.keys = str(name), tuple(parts), frozenset(keys)
        self.paths = tuple(str(p) for p in self.parts)  # a pinned file's name is its path
        self.type_name = self.paths[0]

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"DataParts({self.name!r}, {len(self.parts)} parts)"

    def __enter__(self) -> DataParts:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for part in self.parts:
            if isinstance(part, PinnedFile):
                part.close()

    @property
    def pinned(self) -> bool:
        return isinstance(self.parts[0], PinnedFile)

    def pin(self) -> DataParts:
        """The same parts, each pinned (:class:`~privrank.data.pinned.PinnedFile`); close it when done."""
        pinned: list[PinnedFile] = []
        try:
            for path in self.paths:
                pinned.append(PinnedFile.open(path))
        except BaseException:
            for part in pinned:
                part.close()
            raise
        return DataParts(self.name, pinned, self.keys)

    def unpinned(self) -> DataParts:
        """The same parts by their paths (what processes that cannot share the descriptors read)."""
        return DataParts(self.name, self.paths, self.keys)


def type_name(path) -> str:
    """The name whose suffix says a file's type: the path, or a pinned file's (or data set's) ``type_name``."""
    return path.type_name if isinstance(path, (PinnedFile, DataParts)) else str(path)


def file_suffix(path) -> str:
    """The file name's last suffix, in lower case (``".csv"``)."""
    return Path(type_name(path)).suffix.lower()


def file_format(path) -> str:
    """``"parquet"``, ``"arrow"`` or ``"csv"``, from the file name's suffix (CSV by default)."""
    kind = file_suffix(path)
    return "parquet" if kind in PARQUET_SUFFIXES else "arrow" if kind in ARROW_SUFFIXES else "csv"


def is_text_table(path, suffixes=CSV_SUFFIXES + TSV_SUFFIXES) -> bool:
    """Whether the file's name ends in one of ``suffixes``, gzip'd (``.gz``) or not."""
    return type_name(path).lower().removesuffix(".gz").endswith(suffixes)


def is_gzip(path) -> bool:
    return type_name(path).lower().endswith(".gz")


def data_kind(path) -> tuple | None:
    """What every part of a data set must share, from the file's name: the format, and for a text
    table its delimiter and compression; None for a name without a data file's suffix."""
    if is_text_table(path):
        return "csv", delimiter(path), is_gzip(path)
    return (file_format(path),) if file_suffix(path) in PARQUET_SUFFIXES + ARROW_SUFFIXES else None


def delimiter(path) -> str:
    """The field separator of a text table: a tab for ``.tsv`` and ``.tab`` (also gzip'd), else a comma."""
    return "\t" if is_text_table(path, TSV_SUFFIXES) else ","


def is_data_set(path) -> bool:
    """Whether ``path`` names a data set of many files: a directory, or a glob pattern that is not
    itself the name of a file. Remote paths (``scheme://...``) and anything but a path are not."""
    if not isinstance(path, (str, os.PathLike)) or "://" in str(path):
        return False
    text = os.fspath(path)
    return os.path.isdir(text) or (glob.has_magic(text) and not os.path.lexists(text))


def data_source(path):
    """``path`` as the readers take it: :class:`DataParts` for a directory or a glob pattern
    (:func:`is_data_set`), else unchanged (a file, a pinned file, a table)."""
    if isinstance(path, DataParts) or not is_data_set(path):
        return path
    text = os.fspath(path)
    if os.path.isdir(text):
        root, files = text, _listing(text)
        if not files:
            raise InputError(f"{text} is a directory without data files (names starting with . or _ are "
                             "skipped): give the directory of the data set's parts, or a file")
    else:
        root, files = _fixed_prefix(text), _matches(text)
    files = sorted({os.path.normpath(f) for f in files})  # a file that ``**`` matches, and whose directory it matches, once
    _check_parts(text, files)
    keys = {part.split("=", 1)[0].strip().lower() for path in files
            for part in Path(os.path.relpath(path, root)).parent.parts if "=" in part}
    return DataParts(text, files, keys)


def pin_data(path):
    """The data at ``path`` pinned for a command: a :class:`~privrank.data.pinned.PinnedFile`, or
    :class:`DataParts` with every part pinned."""
    source = data_source(path)
    return source.pin() if isinstance(source, DataParts) else PinnedFile.open(path)


def _listing(root: str) -> list[str]:
    """The files under directory ``root`` that are not skipped, listed by pyarrow's file system
    layer as ``pyarrow.dataset``'s discovery lists them (which imports pandas: a second's start-up)."""
    from pyarrow import fs

    try:
        found = fs.LocalFileSystem().get_file_info(fs.FileSelector(root, recursive=True))
    except OSError as exc:
        raise InputError(f"cannot list the files of {root} ({exc})") from None
    return [f.path for f in found if f.type == fs.FileType.File and not _skipped(f.path, root)]


def _skipped(path: str, root: str) -> bool:
    """Whether a file is not data: a name on its path below ``root`` starts with ``.`` or ``_``
    (``pyarrow.dataset``'s default ``ignore_prefixes``)."""
    return any(part.startswith(IGNORED_PREFIXES) for part in Path(os.path.relpath(path, root)).parts)


def _matches(pattern: str) -> list[str]:
    """The files a glob pattern matches, the files of the directories it matches, skipped names left out."""
    base = _fixed_prefix(pattern)
    files = []
    for match in glob.glob(pattern, recursive=True):
        if not _skipped(match, base):
            files.extend(_listing(match) if os.path.isdir(match) else [match])
    if not files:
        raise InputError(f"no data file matches {pattern} (names starting with . or _ are skipped); quote a "
                         "pattern so that the shell does not expand it")
    return files


def _fixed_prefix(pattern: str) -> str:
    """The directory a glob pattern starts from: its components before the first with a wildcard."""
    fixed = []
    for part in Path(pattern).parts:
        if glob.has_magic(part):
            break
        fixed.append(part)
    return str(Path(*fixed)) if fixed else "."


def _check_parts(name: str, files: list[str]) -> None:
    """Refuse parts that are not data files (PrefLib files included), and parts of mixed formats."""
    kinds: dict[tuple, str] = {}
    for path in files:
        kind = data_kind(path)
        if kind is None:
            what = "a PrefLib file (one whole profile)" if file_suffix(path) in PREFLIB_SUFFIXES else \
                "not a data file (its name has no data suffix: .parquet, .csv, .tsv, .arrow ...)"
            raise InputError(f"{path}, in the data set {name}, is {what}: move it out of the data set, or give its "
                             "parts by a glob pattern that leaves it out")
        kinds.setdefault(kind, path)
    if len(kinds) > 1:
        first, other = list(kinds.values())[:2]
        raise InputError(f"{other} is not of the format of {first}: every part of the data set {name} must have "
                         "one format (Parquet, Arrow, or CSV with one delimiter and compression)")
