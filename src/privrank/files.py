"""The one output layer: every file privrank writes goes through :class:`Output`.

* **Regular files** are written atomically: the bytes go to a temporary file beside the target
  (named ``.NAME.PID.*.tmp``), are flushed to disk, and the file is renamed into the target's
  place; it gets the permissions the process's umask gives a new file. The target itself is never
  created or opened for writing before that rename, so after any failure or kill (SIGKILL
  included) it is absent, unchanged, or the complete output -- never empty or partial.
  Temporaries left by a killed process are removed the next time the same target is reserved.
* **Devices, FIFOs and ``-``** (standard output) are written through: nothing is renamed or
  unlinked, and a symbolic link is followed to its target, which is written the same way.
* **Reserve before you spend.** :meth:`Output.reserve` proves, before a release is charged,
  everything that can be proved without writing the output: the target is not a directory, a
  plot has a known format, the target does not exist unless ``force``, and the output will fit.
  For a regular file the temporary file is created at once in the target's directory and given
  room for the output's bytes (``reserve(size)``, a bound the caller computes; at least one
  block) with ``posix_fallocate``, or, where the system has none, by writing zeros and syncing:
  a missing, read-only, full or pseudo file system (such as ``/proc``) is refused there. (A
  copy-on-write file system may still fail a write into allocated room: that cannot be foreseen.)
  An existing target is opened for writing without truncating it (it stays whole if the release
  later fails). Two releases to one path cannot both pass the check and both be charged: a
  marker beside the target (``.NAME.privrank-reserved``, holding the process id) is kept locked
  (``flock``) by the release that reserved it until its output is written or abandoned, and a
  release that finds it locked is refused (its release is still running). A process killed in
  between leaves the marker and its temporary; the kernel drops its lock, and the next release
  to that path takes the marker over and removes the temporary (the killed run's spend, if it
  was charged, stays in the ledger: it over-counts, the safe side). A new target is put in place
  by a hard link, which never replaces a file: a file that another program created there while
  the release ran is left as it is, and the write refused. A device or FIFO is opened for
  writing at once and kept open until it is written: one that cannot be opened is refused, and
  a FIFO waits here, before anything is charged, for its reader. (A device can still fail the
  write itself, as ``/dev/full`` does: that cannot be foreseen without writing.)
  :meth:`Output.abandon` removes the temporary file and the marker of an output never written,
  and closes a device or FIFO (a release that failed).
* **Failed writes** (a full disk, an unwritable device) raise :class:`InputError` ("could not write
  the output ..."), never a bare ``OSError``; a reader that closed its pipe raises ``BrokenPipeError``,
  which the command line ends quietly.
* **POSIX only.** The reservation marker's lock is ``flock`` (the kernel drops it when its process
  dies, which is what lets a killed release's marker be taken over), the writes are positioned
  (``pwrite``) and a stale temporary's process is probed with signal 0; privrank's data reader pins
  its file with ``pread`` too. Windows has none of these, so on a system without them
  :func:`require_posix` refuses with a clear :class:`InputError` (the command line calls it before
  any command runs, and :meth:`Output.reserve` before it would lock a marker) instead of failing on
  the first missing call. Importing the module works everywhere.
"""
from __future__ import annotations

import errno
import io
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import BinaryIO

from .errors import InputError

try:
    import fcntl
except ImportError:  # not a POSIX system (Windows): require_posix refuses before it is needed
    fcntl = None  # type: ignore[assignment]  # never used there: require_posix refuses first

STDOUT = "-"
#: plot formats by file suffix (matplotlib's names)
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg", ".svgz": "svgz", ".jpg": "jpg", ".jpeg": "jpeg",
                ".eps": "eps", ".ps": "ps", ".tif": "tif", ".tiff": "tiff", ".webp": "webp"}


def _posix_calls() -> dict[str, bool]:
    """The POSIX calls privrank's outputs and data reader rely on, and whether this system has each."""
    return {"fcntl.flock": fcntl is not None, "os.pread": hasattr(os, "pread"), "os.pwrite": hasattr(os, "pwrite")}


def require_posix() -> None:
    """Refuse, with an :class:`InputError` that says why, to run on a system without the POSIX calls
    the output layer and the data reader use (Windows); see the module docstring.

    Examples
    --------
    >>> require_posix()  # Linux and macOS have them: nothing happens
    """
    missing = [name for name, present in _posix_calls().items() if not present]
    if missing:
        raise InputError(f"privrank needs a POSIX system (Linux, macOS, or WSL on Windows): it locks its outputs "
                         f"against concurrent releases and reads its data files with POSIX calls that this system "
                         f"({sys.platform}) does not have ({', '.join(missing)})")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Output:
    """A destination for one output: a regular file, a device or FIFO, or standard output (``-``)."""

    def __init__(self, path, *, force: bool = False, plot: bool = False):
        self.stdout = str(path) == STDOUT
        if not self.stdout and str(path).endswith(("/", os.sep)):  # Path() drops the slash: out.csv/ became out.csv
            raise InputError(f"{path} ends with a slash, which names a directory: give the output file's name")
        self.path = None if self.stdout else Path(path)
        self.force = force
        self.plot = plot
        self._tmp: tuple[int, str] | None = None  # the temporary file beside a regular file (descriptor, path)
        self._room = 0  # bytes allocated to it
        self._marker: int | None = None  # the locked reservation marker (a file descriptor)
        self._stream: BinaryIO | None = None  # a device or FIFO opened by reserve()
        if plot:
            self.format()

    def __str__(self) -> str:
        return "<stdout>" if self.stdout else str(self.path)

    def format(self) -> str:
        """The plot format named by the file's suffix."""
        suffix = "" if self.path is None else self.path.suffix.lower()  # None: stdout
        if suffix not in PLOT_FORMATS:
            raise InputError(f"the plot file needs a suffix naming its format: {', '.join(sorted(PLOT_FORMATS))}")
        return PLOT_FORMATS[suffix]

    def _target(self) -> Path:
        assert self.path is not None  # a file, not stdout
        try:  # a name too long for the file system (or a path too long) fails here first
            return self.path.resolve() if self.path.is_symlink() else self.path
        except OSError as exc:
            raise InputError(f"cannot use {self.path} for output ({exc.strerror})") from None

    def _special(self) -> bool:
        """True for a device, FIFO or socket: written through, never renamed over."""
        assert self.path is not None  # a file, not stdout
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise InputError(f"cannot use {self.path} for output ({exc.strerror})") from None
        return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)

    def reserve(self, size: int = 0) -> None:
        """Check that the output can be written and claim it, with room for ``size`` bytes; see the
        module docstring. Called again (before the charge), it grows the room to ``size`` bytes."""
        if self.stdout or self._stream is not None:
            return
        if self._tmp is not None:
            self._allocate(size)
            return
        target = self._target()
        if target.is_dir():
            raise InputError(f"{self.path} is a directory; give a file name")
        if self._special():
            try:  # a FIFO waits for its reader here, before the release is charged
                self._stream = open(target, "wb")
            except OSError as exc:
                raise InputError(f"{self.path} is not writable ({exc.strerror})") from None
            return
        directory = target.parent if str(target.parent) else Path(".")
        if not directory.is_dir():
            raise InputError(f"directory {directory} does not exist")
        self._refuse_existing(target)
        self._marker = _lock_marker(target, self.path)
        try:
            self._refuse_existing(target)  # written by the release that held the marker before this one
            if target.exists():
                try:  # without O_TRUNC: the file stays whole until the release replaces it
                    os.close(os.open(target, os.O_WRONLY))
                except OSError as exc:
                    raise InputError(f"{self.path} is not writable ({exc.strerror})") from None
            _remove_stale_temporaries(target)
            try:
                self._tmp = tempfile.mkstemp(dir=directory, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
            except OSError as exc:
                raise _unwritable(target, exc) from None
            self._allocate(size)
        except BaseException:
            self.abandon()
            raise

    def _refuse_existing(self, target: Path) -> None:
        if target.exists() and not self.force:
            raise InputError(f"{self.path} exists; pass force=True (CLI: --force) to overwrite it")

    def _allocate(self, size: int) -> None:
        """Give the temporary file room for ``size`` bytes (at least one block); a full disk is refused."""
        size = max(int(size), _MIN_BYTES)
        if size <= self._room:
            return
        assert self._tmp is not None  # reserve() made it
        fd = self._tmp[0]
        try:
            _allocate(fd, size)
        except OSError as exc:
            raise InputError(f"directory {self._target().parent} is not writable: cannot reserve {size:,} bytes for "
                             f"the output there ({exc.strerror})") from None
        self._room = size

    def abandon(self) -> None:
        """Give up an output that was never written: remove its temporary file and marker (close a
        device or FIFO)."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            try:
                stream.close()
            except OSError:
                pass
        if self._tmp is not None:
            (fd, tmp), self._tmp, self._room = self._tmp, None, 0
            os.close(fd)
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self._release_marker()

    def _release_marker(self) -> None:
        if self._marker is not None:
            marker, self._marker = self._marker, None
            _unlock_marker(self._target(), marker)

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode("utf-8"))

    def write_bytes(self, data: bytes) -> None:
        """Write ``data``: through for stdout, devices and FIFOs; atomically for a regular file (into
        the temporary file :meth:`reserve` made, then renamed over the target)."""
        if self.stdout:
            write_stdout(data)
            return
        if self._stream is not None or self._special():
            stream, self._stream = self._stream, None
            try:
                with stream or open(self._target(), "wb") as fh:
                    fh.write(data)
            except BrokenPipeError:
                raise  # the reader has gone: the command ends quietly
            except OSError as exc:
                raise self._write_error(exc) from None
            return
        if self._tmp is None:
            self.reserve(len(data))
        assert self._tmp is not None  # reserve() made it
        fd, tmp = self._tmp
        try:
            view = memoryview(data)
            while view:
                view = view[os.pwrite(fd, view, len(data) - len(view)):]
            os.ftruncate(fd, len(data))
            os.fsync(fd)
            os.fchmod(fd, 0o666 & ~_umask())
            self._rename(tmp)
        except OSError as exc:
            self.abandon()
            raise self._write_error(exc) from None
        except BaseException:
            self.abandon()
            raise
        self._tmp, self._room = None, 0
        os.close(fd)
        self._release_marker()

    def _rename(self, tmp: str) -> None:
        """Put the temporary file ``tmp`` in the target's place: over it with ``force``, else only
        where no file has appeared since :meth:`reserve` (a hard link, which never replaces a file)."""
        target = self._target()
        if not self.force:
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise InputError(f"{self.path} was created by another program while the release ran; it was "
                                 "left as it is") from None
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
            else:
                try:
                    os.unlink(tmp)
                except OSError:  # left beside the target: removed as stale by a later release
                    pass
                return
            self._refuse_existing(target)  # a file system without hard links
        os.replace(tmp, target)

    def _write_error(self, exc: OSError) -> InputError:
        return InputError(f"could not write the output to {self.path} ({exc.strerror})")

    def save_figure(self, fig, **kwargs) -> None:
        """Save a matplotlib figure in the format of the file's suffix."""
        buf = io.BytesIO()
        fig.savefig(buf, format=self.format(), **kwargs)
        self.write_bytes(buf.getvalue())


def write_stdout(data: str | bytes) -> None:
    """Write text (through ``sys.stdout``, or whatever stands in for it) or bytes to standard output;
    a failed write (a full disk) is an :class:`InputError`, a closed pipe a ``BrokenPipeError``."""
    try:
        if isinstance(data, str):
            sys.stdout.write(data)
        elif getattr(sys.stdout, "buffer", None) is None:  # a stand-in for standard output that takes text only
            raise InputError("binary output needs a file here: standard output takes text only (CLI: --output FILE)")
        else:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # the reader has gone: the command ends quietly
    except OSError as exc:
        discard_stdout()
        raise InputError(f"could not write the output ({exc.strerror})") from None


def discard_stdout() -> None:
    """Point standard output at the null device after a failed write, so that the flush at exit, with
    the text still buffered, neither fails again nor prints "Exception ignored"."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # no file descriptor (captured in a test)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


#: bytes a reservation allocates at least (one block of most file systems)
_MIN_BYTES = 4096
#: errors of a file system that has no hard links
_NO_LINKS = (errno.EPERM, errno.EOPNOTSUPP, errno.EMLINK, errno.ENOSYS)


def _allocate(fd: int, size: int) -> None:
    """Allocate ``size`` bytes to the file ``fd``: ``posix_fallocate`` where the system has it, else
    zeros written past the file's data and synced; a full disk raises ``OSError`` here."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except AttributeError:  # no posix_fallocate (macOS)
        pass
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    start = os.fstat(fd).st_size
    zeros = bytes(min(max(size - start, 0), 1 << 20))
    while start < size:
        start += os.pwrite(fd, zeros[:size - start], start)
    os.fsync(fd)


def _marker_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.privrank-reserved")


def _lock_marker(target: Path, shown) -> int:
    """Lock the reservation marker of ``target`` (created if missing, or left by a process that no
    longer holds it) and write this process's id in it: returns its file descriptor. A marker that
    another process holds locked is refused: its release is still running."""
    require_posix()
    path = _marker_path(target)
    for _ in range(10):  # a marker removed or replaced between the open and the lock: look again
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            try:
                fd = os.open(path, os.O_RDWR)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise InputError(f"cannot reserve {shown} ({exc.strerror} on {path})") from None
        except OSError as exc:
            raise _unwritable(target, exc) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
            os.close(fd)
            raise InputError(f"{shown} is reserved by a privrank release that is still running"
                             + (f" (process {pid})" if pid.isdigit() else "")
                             + "; wait for it to end, or write to another file") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            try:
                os.ftruncate(fd, 0)
                os.pwrite(fd, str(os.getpid()).encode(), 0)
            except OSError as exc:  # a full file system
                _unlock_marker(target, fd)
                raise _unwritable(target, exc) from None
            return fd
        os.close(fd)
    raise InputError(f"cannot reserve {shown}: other processes keep reserving it; try again")


def _unwritable(target: Path, exc: OSError) -> InputError:
    return InputError(f"directory {target.parent} is not writable: cannot create a file there ({exc.strerror})")


def _unlock_marker(target: Path, fd: int) -> None:
    """Remove the reservation marker of ``target`` (locked by ``fd``), then unlock it."""
    try:
        _marker_path(target).unlink(missing_ok=True)
    except OSError:
        pass
    os.close(fd)


def _remove_stale_temporaries(target: Path) -> None:
    """Remove ``.NAME.PID.*.tmp`` beside ``target`` left by processes that no longer run."""
    for tmp in target.parent.glob(f".{target.name}.*.tmp"):
        pid = tmp.name[len(target.name) + 2:].split(".", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            try:
                tmp.unlink()
            except OSError:
                pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_text_atomic(path, text: str | bytes, *, force: bool = False) -> None:
    """Write ``text`` (UTF-8), or bytes as they are, to ``path`` (see :class:`Output`); refuse to overwrite
    unless ``force``."""
    out, data = Output(path, force=force), text.encode("utf-8") if isinstance(text, str) else text
    out.reserve(len(data))
    try:
        out.write_bytes(data)
    except BaseException:
        out.abandon()
        raise
