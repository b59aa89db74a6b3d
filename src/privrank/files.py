"""The one output layer: every file privrank writes goes through :class:`Output`.

* **Regular files** are written atomically: the text goes to a temporary file beside the
  target (named ``.NAME.PID.*.tmp``), is flushed to disk, and is renamed over the target; the
  file gets the permissions the process's umask gives a new file. Temporaries left by a killed
  process are removed the next time the same target is written.
* **Devices, FIFOs and ``-``** (standard output) are written through: nothing is renamed or
  unlinked, and a symbolic link is followed to its target, which is written the same way.
* **Reserve before you spend.** :meth:`Output.reserve` proves, before a release is charged,
  everything that can be proved without writing the output: the target is not a directory, a
  plot has a known format, the target does not exist unless ``force``, and the writes the
  output will need do succeed. For a regular file, a temporary file is created in its directory
  and one block written to it and removed (a missing, read-only, full or pseudo file system such
  as ``/proc`` is refused), an existing target is opened for writing without truncating it (it
  stays whole if the release later fails), and a new target is created exclusively (``O_EXCL``)
  as an empty placeholder, so that two releases to one path cannot both pass the check and both
  be charged. A placeholder has a marker beside it (``.NAME.privrank-reserved``, holding the
  process id) that its process keeps locked (``flock``) until the output is written or abandoned.
  A process killed in between (SIGKILL) leaves both; the kernel drops its lock, and the next
  release to that path takes the reservation over (the killed run's spend, if it was charged,
  stays in the ledger: it over-counts, the safe side). Only an empty file with an unlocked marker
  is taken over: a file with data is a release (or a file of someone else), an empty file without
  a marker is not privrank's, and a locked marker is a release still running; each is refused,
  saying which it is. A device or FIFO is opened for writing at once and kept open until it is written:
  one that cannot be opened is refused, and a FIFO waits here, before anything is charged, for
  its reader. (A device can still fail the write itself, as ``/dev/full`` does: that cannot be
  foreseen without writing.) :meth:`Output.abandon` removes a placeholder that was never
  written, and closes a device or FIFO (a release that failed).
* **Failed writes** (a full disk, an unwritable device) raise :class:`InputError` ("could not write
  the output ..."), never a bare ``OSError``; a reader that closed its pipe raises ``BrokenPipeError``,
  which the command line ends quietly.
"""
from __future__ import annotations

import fcntl
import io
import os
import stat
import sys
import tempfile
from pathlib import Path

from .errors import InputError

STDOUT = "-"
#: plot formats by file suffix (matplotlib's names)
PLOT_FORMATS = {".png": "png", ".pdf": "pdf", ".svg": "svg", ".svgz": "svgz", ".jpg": "jpg", ".jpeg": "jpeg",
                ".eps": "eps", ".ps": "ps", ".tif": "tif", ".tiff": "tiff", ".webp": "webp"}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class Output:
    """A destination for one output: a regular file, a device or FIFO, or standard output (``-``)."""

    def __init__(self, path, *, force: bool = False, plot: bool = False):
        self.stdout = str(path) == STDOUT
        self.path = None if self.stdout else Path(path)
        self.force = force
        self.plot = plot
        self._placeholder = False
        self._marker = None  # the locked marker of the placeholder (a file descriptor)
        self._stream = None  # a device or FIFO opened by reserve()
        if plot:
            self.format()

    def __str__(self) -> str:
        return "<stdout>" if self.stdout else str(self.path)

    def format(self) -> str:
        """The plot format named by the file's suffix."""
        suffix = "" if self.stdout else self.path.suffix.lower()
        if suffix not in PLOT_FORMATS:
            raise InputError(f"the plot file needs a suffix naming its format: {', '.join(sorted(PLOT_FORMATS))}")
        return PLOT_FORMATS[suffix]

    def _target(self) -> Path:
        return self.path.resolve() if self.path.is_symlink() else self.path

    def _special(self) -> bool:
        """True for a device, FIFO or socket: written through, never renamed over."""
        try:
            mode = os.stat(self.path).st_mode
        except FileNotFoundError:
            return False
        except OSError as exc:
            raise InputError(f"cannot use {self.path} for output ({exc.strerror})") from None
        return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)

    def reserve(self) -> None:
        """Check that the output can be written, and claim a new regular file; see the module docstring."""
        if self.stdout:
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
        if target.exists() and not self.force and not _empty_file(target):
            raise InputError(f"{self.path} exists; pass force=True (CLI: --force) to overwrite it")
        _probe_directory(directory, target.name)
        if target.exists() and self.force:
            try:  # without O_TRUNC: the file stays whole until the release replaces it
                os.close(os.open(target, os.O_WRONLY))
            except OSError as exc:
                raise InputError(f"{self.path} is not writable ({exc.strerror})") from None
            return
        marker, found = _lock_marker(target, self.path)
        try:
            if target.exists() and not (found and _empty_file(target)):  # else an abandoned placeholder: taken over
                raise InputError(f"{self.path} exists" + (" (an empty file that no privrank release reserved)" if
                                                          _empty_file(target) else "")
                                 + "; pass force=True (CLI: --force) to overwrite it")
            if not target.exists():
                try:
                    os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
                except FileExistsError:
                    raise InputError(f"{self.path} exists; pass force=True (CLI: --force) to overwrite it") from None
                except OSError as exc:
                    raise InputError(f"cannot create {self.path} ({exc.strerror})") from None
        except BaseException:
            _unlock_marker(target, marker)
            raise
        self._marker = marker
        self._placeholder = True

    def abandon(self) -> None:
        """Remove the placeholder of :meth:`reserve` when nothing was written to it (close a device or FIFO)."""
        if self._stream is not None:
            stream, self._stream = self._stream, None
            try:
                stream.close()
            except OSError:
                pass
        if self._placeholder:
            self._placeholder = False
            target = self._target()
            try:
                if target.is_file() and target.stat().st_size == 0:
                    target.unlink()
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
        """Write ``data``: through for stdout, devices and FIFOs; atomically for a regular file."""
        if self.stdout:
            write_stdout(data)
            return
        target = self._target()
        if self._special():
            stream, self._stream = self._stream, None
            try:
                with stream or open(target, "wb") as fh:
                    fh.write(data)
            except BrokenPipeError:
                raise  # the reader has gone: the command ends quietly
            except OSError as exc:
                raise self._write_error(exc) from None
            return
        if target.exists() and not (self.force or self._placeholder):
            raise InputError(f"{self.path} exists; pass force=True (CLI: --force) to overwrite it")
        _remove_stale_temporaries(target)
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp")
        except OSError as exc:
            raise self._write_error(exc) from None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, target)
        except BaseException as exc:
            if os.path.exists(tmp):
                os.unlink(tmp)
            if isinstance(exc, OSError):
                raise self._write_error(exc) from None
            raise
        self._placeholder = False
        self._release_marker()

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


#: bytes the directory probe of :meth:`Output.reserve` writes (one block of most file systems)
_PROBE_BYTES = 4096


def _probe_directory(directory: Path, name: str) -> None:
    """Prove that a file can be created and written in ``directory``: a temporary file named like
    the output's own temporaries gets one block, and is removed."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{name}.{os.getpid()}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(bytes(_PROBE_BYTES))
    except OSError as exc:
        raise InputError(f"directory {directory} is not writable: cannot create a file there "
                         f"({exc.strerror})") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _empty_file(path: Path) -> bool:
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _marker_path(target: Path) -> Path:
    return target.with_name(f".{target.name}.privrank-reserved")


def _lock_marker(target: Path, shown) -> tuple[int, bool]:
    """Lock the reservation marker of ``target`` (created if missing, with this process's id): returns
    its file descriptor and whether it was there before (left by a process that no longer holds it).
    A marker that another process holds locked is refused: its release is still running."""
    path = _marker_path(target)
    for _ in range(10):  # a marker removed or replaced between the open and the lock: look again
        try:
            fd, found = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666), False
        except FileExistsError:
            try:
                fd, found = os.open(path, os.O_RDWR), True
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise InputError(f"cannot reserve {shown} ({exc.strerror} on {path})") from None
        except OSError as exc:
            raise InputError(f"cannot create {shown} ({exc.strerror})") from None
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
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            return fd, found
        os.close(fd)
    raise InputError(f"cannot reserve {shown}: other processes keep reserving it; try again")


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


def write_text_atomic(path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` (see :class:`Output`); refuse to overwrite unless ``force``."""
    out = Output(path, force=force)
    out.reserve()
    try:
        out.write_text(text)
    except BaseException:
        out.abandon()
        raise
