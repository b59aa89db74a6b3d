"""A data file opened once, whose every read is checked against the bytes first read there.

A command that reads its input more than once (a fingerprint pass for the privacy ledger, then
the release) must release the bytes it fingerprinted. :class:`PinnedFile` gives every reader of
the command the one open descriptor of the file, so a file renamed over the path later is never
read; and it checks, block by block, that a byte range read again holds what it held the first
time, so a file rewritten in place is refused (:class:`FileChangedError`) rather than released.
Standard input is spooled once to an anonymous temporary file and pinned the same way.
:func:`check_data_file` refuses, before anything is opened, a path that is not a readable regular
file.

Why blocks, not one digest per pass: Parquet and Arrow are read at random offsets (the footer
first), passes read different columns or batch sizes, and engine threads read concurrently, so
the order of reads is not the same from pass to pass; a SHA-256 per aligned block of
``BLOCK_BYTES`` recorded on its first read, and compared on every later read, does not depend
on that order and fails on the very read that sees other bytes -- before anything computed
from them can be written.
"""
from __future__ import annotations

import hashlib
import io
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

from ..errors import InputError

#: bytes per checked block (each block is read, hashed and compared as a whole)
BLOCK_BYTES = 1 << 20
#: the name of standard input in messages and in the ledger
STDIN_NAME = "<stdin>"
#: file types told apart by their first bytes when the data come on standard input
_MAGIC = ((b"PAR1", ".parquet"), (b"ARROW1", ".arrow"), (b"\xff\xff\xff\xff", ".arrows"), (b"\x1f\x8b", ".csv.gz"),
          (b"#", ".toi"))


class FileChangedError(InputError):
    """The bytes of a pinned file differ from those first read at the same place: it was changed
    while privrank was reading it, and nothing computed from it may be released."""


class PinnedFile:
    """A data file read through one descriptor, every block checked against its first read.

    Use :meth:`open` (a path) or :meth:`standard_input`; close it (or use it as a context
    manager) when the command ends. ``str()`` is the name messages and the ledger use (the path
    as given, or ``<stdin>``); ``type_name`` is the name whose suffix says the file type (for
    standard input, a suffix sniffed from the first bytes: Parquet, Arrow IPC file or stream, gzip'd CSV,
    PrefLib; else CSV). Readers from :meth:`reader` are independent (each has its own position)
    and may be used from several threads. Only the bytes present when the file was pinned are
    read.
    """

    def __init__(self, handle, name: str, type_name: str, path: str | None = None):
        self._handle = handle
        self._fd = handle.fileno()
        self.name, self.type_name, self.path = name, type_name, path
        self.size = os.fstat(self._fd).st_size
        self._digests: dict[int, bytes] = {}
        self._lock = threading.Lock()

    @classmethod
    def open(cls, path) -> PinnedFile:
        """Pin the data file at ``path`` (refused as :func:`check_data_file` refuses)."""
        check_data_file(path)
        try:
            handle = open(path, "rb")
        except OSError as exc:
            raise InputError(f"cannot read {path} ({exc.strerror})") from None
        return cls(handle, str(path), str(path), str(path))

    @classmethod
    def standard_input(cls, stream=None) -> PinnedFile:
        """Spool standard input (or the binary ``stream``) to an anonymous temporary file and pin it."""
        if stream is None:
            if sys.stdin is None or sys.stdin.closed or sys.stdin.isatty():
                raise InputError("'-' reads the data from standard input, which is a terminal (or closed): pipe "
                                 "or redirect the data into privrank, or give a file")
            stream = sys.stdin.buffer
        handle = tempfile.TemporaryFile()
        try:
            shutil.copyfileobj(stream, handle, BLOCK_BYTES)
            handle.flush()
            handle.seek(0)
            head = handle.read(8)
        except OSError as exc:
            handle.close()
            raise InputError(f"standard input could not be saved to a temporary file ({exc.strerror}): give a "
                             "file instead, or set TMPDIR to a disk with room") from None
        except BaseException:
            handle.close()
            raise
        if not head:
            handle.close()
            raise InputError("standard input is empty: pipe or redirect the data into privrank")
        suffix = next((s for magic, s in _MAGIC if head.startswith(magic)), ".csv")
        return cls(handle, STDIN_NAME, STDIN_NAME + suffix)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"PinnedFile({self.name!r})"

    def __enter__(self) -> PinnedFile:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._handle.close()

    def stat(self) -> os.stat_result:
        """The pinned file's status (its identity: device and inode)."""
        return os.fstat(self._fd)

    def reader(self) -> io.BufferedReader:
        """A new binary reader of the pinned bytes, from the start (see the class docstring)."""
        return io.BufferedReader(_Blocks(self), BLOCK_BYTES)

    def block(self, k: int) -> bytes:
        """Block ``k`` of the file; :class:`FileChangedError` when it differs from its first read."""
        start = k * BLOCK_BYTES
        want = min(BLOCK_BYTES, self.size - start)
        data = os.pread(self._fd, want, start)
        digest = hashlib.sha256(data).digest()
        with self._lock:
            first = self._digests.setdefault(k, digest)
        if len(data) != want or digest != first:
            raise FileChangedError(f"{self.name} changed while privrank was reading it (its bytes differ from "
                                   "those read before): nothing computed from it was written")
        return data


class _Blocks(io.RawIOBase):
    """A seekable raw reader over a :class:`PinnedFile`, loading one checked block at a time."""

    def __init__(self, pinned: PinnedFile):
        super().__init__()
        self._file, self._pos = pinned, 0
        self._index, self._block = -1, memoryview(b"")

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._file.size}[whence]
        if base + offset < 0:
            raise OSError("negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer) -> int:
        view = memoryview(buffer).cast("B")
        end = min(self._pos + len(view), self._file.size)
        done = 0
        while self._pos < end:
            k, offset = divmod(self._pos, BLOCK_BYTES)
            if k != self._index:
                self._block, self._index = memoryview(self._file.block(k)), k
            n = min(len(self._block) - offset, end - self._pos)
            view[done:done + n] = self._block[offset:offset + n]
            done += n
            self._pos += n
        return done


def check_data_file(path, *, remote: bool = False) -> None:
    """Refuse a path that is not a readable regular file, saying what it is instead (a
    :class:`PinnedFile` was checked when it was pinned); with ``remote``, a remote path
    (``scheme://...``) is taken as it is. Anything but a ``str`` or a path-like object is not a
    path, whatever its text (an array, a query), and is refused without printing it."""
    if isinstance(path, PinnedFile):
        return
    if not isinstance(path, (str, os.PathLike)):
        kind = type(path)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__.split('.')[0]}.{kind.__name__}"
        hint = ("pass a DataFrame, PairwiseComparisons.from_indices or Rankings.from_orders"
                if name.startswith("numpy.") else "pass a file path or a table (a DataFrame, an Arrow table)")
        raise InputError(f"a value of type {name} is not a file path; {hint}")
    if remote and "://" in str(path):
        return
    path = Path(path)
    try:
        os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except OSError as exc:  # a name too long for the file system, a loop of links: Path.exists() raises these
        raise InputError(f"cannot read {path} ({exc.strerror})") from None
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a data file")
    if not path.is_file():
        raise InputError(f"{path} is not a regular file (a pipe or device); save the data to a file first")
    if not os.access(path, os.R_OK):
        raise InputError(f"{path} is not readable")
