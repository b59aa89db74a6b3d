"""The survey database's health while serving: what makes a write impossible for now, and how it is said.

"Acknowledged means stored": a report answered 201 is in the database the server was started on. Two
faults would break that without a word from SQLite, and two others would end in a 500:

* **The database file removed or replaced under the server.** SQLite keeps writing to the file it
  opened, unlinked or not: every report would be acknowledged and lost at the next start.
  :class:`FileIdentity` compares the path's ``(st_dev, st_ino)`` with the file's at open, before
  and after every commit and on the store's periodic checkpoint; from the first difference on, every
  read and write is refused (:class:`StoreUnavailable`, ``"database-gone"``) until the file is
  restored and the server restarted, and the log says so once.
* **A full disk** (SQLite's ``SQLITE_FULL``, or ``ENOSPC``): nothing of the write is stored; it is
  refused with 503 and ``Retry-After`` (``"disk-full"``), and the log names the directory of the
  database at most once a minute (:class:`FullDisk`), however many requests fail.
* **A damaged database** (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, a failed integrity check, one of
  the store's tables missing): :func:`damaged` says to restore it from a backup, never to start
  afresh, since its reports are not lost yet (``"damaged"``).

A PostgreSQL store has no file to watch (a dropped database or schema fails its statements, which
the server answers as an error, never as stored), and its disk is its server's administrator's.
"""
from __future__ import annotations

import errno
import logging
import os
import threading
import time
from pathlib import Path

from ..errors import InputError

log = logging.getLogger("privrank.serve")


class StoreUnavailable(InputError):
    """A write (or a read) the store cannot do now; nothing was stored. ``reason``: ``"busy"`` (another
    process holds the database's lock), ``"unavailable"`` (it cannot be reached), ``"disk-full"``,
    ``"database-gone"`` (its file was removed or replaced while serving) or ``"damaged"``;
    ``retry_after``: seconds after which a retry may succeed (HTTP ``Retry-After``)."""

    def __init__(self, message: str, reason: str, retry_after: int = 2):
        super().__init__(message)
        self.reason, self.retry_after = reason, retry_after


class FileIdentity:
    """Whether ``path`` still names the file it named when this was made (the file the store opened).

    :meth:`check` stats the path (a microsecond or two: cheap beside a commit's sync) and raises
    :class:`StoreUnavailable` once the path is gone or names another file; the verdict is final,
    since the server's connections stay on the file it replaced."""

    #: seconds a client is told to wait: nothing changes before an operator restores the file and restarts
    RETRY_AFTER = 60

    def __init__(self, path: Path):
        self.path = path
        stat = os.stat(path)
        self._identity = (stat.st_dev, stat.st_ino)
        self._gone = False
        self._lock = threading.Lock()

    def check(self, *, written: bool = False) -> None:
        """Raise once the file is gone; ``written``: just after a commit in write-ahead-log mode, when the
        log (``<path>-wal``) must be at its path too -- a log removed under the server takes every
        write after it to an unlinked file, which the next start never reads."""
        if not self._gone:
            try:
                stat = os.stat(self.path)
                same = (stat.st_dev, stat.st_ino) == self._identity
                same = same and (not written or os.path.exists(f"{self.path}-wal"))
            except FileNotFoundError:
                same = False
            except OSError:  # cannot tell (a directory made unreadable): no verdict, the write goes on
                same = True
            if not same:
                with self._lock:
                    first, self._gone = not self._gone, True
                if first:
                    log.error("the survey database %s (or its write-ahead log, %s-wal) was removed or replaced "
                              "while the server ran: reports are refused from now on (503); restore the file from a "
                              "backup or from where it was moved, then restart privrank serve", self.path, self.path)
        if self._gone:
            raise StoreUnavailable("the survey's database file was removed or replaced while the server ran: no "
                                   "report can be stored until it is restored and the server restarted",
                                   "database-gone", self.RETRY_AFTER)


class FullDisk:
    """The disk holding a SQLite database: whether an error means it is full (:meth:`explains`), and the
    refusal that says so, logged at most once every :attr:`LOG_EVERY` seconds."""

    LOG_EVERY = 60.0
    #: free bytes below which an I/O error of SQLite is taken for a full disk (creating the -shm file on a
    #: full disk is an I/O error, not SQLITE_FULL)
    LOW = 1 << 20
    #: seconds a client is told to wait (space is freed by an operator, not in a moment)
    RETRY_AFTER = 30

    def __init__(self, path: Path, clock=time.monotonic):
        self.directory = Path(os.path.abspath(path)).parent
        self._clock = clock
        self._logged: float | None = None
        self._lock = threading.Lock()

    def explains(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the disk is full: SQLite's ``SQLITE_FULL``, an ``OSError`` ``ENOSPC``, or
        an I/O error of SQLite while the disk has less than :attr:`LOW` bytes free."""
        if isinstance(exc, OSError):
            return exc.errno == errno.ENOSPC
        name = getattr(exc, "sqlite_errorname", "")
        if name == "SQLITE_FULL":
            return True
        if not name.startswith("SQLITE_IOERR"):
            return False
        try:
            disk = os.statvfs(self.directory)
        except OSError:
            return False
        return disk.f_bavail * disk.f_frsize < self.LOW

    def refusal(self) -> StoreUnavailable:
        with self._lock:
            now = self._clock()
            due = self._logged is None or now - self._logged >= self.LOG_EVERY
            if due:
                self._logged = now
        if due:
            log.error("the disk holding the survey database (%s) is full: reports are refused (503) until space is "
                      "freed there (said at most once a minute)", self.directory)
        return StoreUnavailable("the disk holding the survey's database is full: nothing was stored; try again "
                                "later", "disk-full", self.RETRY_AFTER)

    def at_start(self) -> InputError:
        """The refusal of a server that meets a full disk before it serves."""
        return InputError(f"the disk holding the survey database ({self.directory}) is full: free space there, "
                          "then start again")


def damaged(path, detail: str) -> InputError:
    """The refusal of a damaged database: its reports are not lost yet, so it says to restore it, never to
    start a new one."""
    return InputError(f"{path}: the database is damaged ({detail}): restore it from a backup, then start again (do "
                      "not start this survey on a new --db: it would hold none of the reports acknowledged so far)")
