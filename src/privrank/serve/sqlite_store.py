"""The survey store in a SQLite file (:class:`SqliteStore`), the default of ``privrank serve --db``.

A write is made by one writer thread, in a savepoint of its own within a group committed at once
(``BEGIN IMMEDIATE``: the write lock first); a commit is on disk before the report is acknowledged
(WAL mode, ``synchronous=FULL``), and reads use connections of their own, which in WAL mode never
hold up the writer. A file that cannot be written to, or whose lock another process holds, is
refused at open; a file removed or replaced while serving, a full disk and a damaged database are
:mod:`privrank.serve.health`'s. The schema, the rules of a report's write and the group commit are
the shared store's (:mod:`privrank.serve.store`).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError
from .health import FileIdentity, FullDisk, StoreUnavailable, damaged
from .store import Store, credential_hash


class SqliteStore(Store):
    """A store in a SQLite file: WAL mode, ``synchronous=FULL``, ``BEGIN IMMEDIATE`` per write.

    Every write (a report, a registration, invitations) goes to one writer thread, which takes
    every write waiting, runs each in turn in a savepoint of its own in one transaction and
    commits once (group commit: one sync to disk for the group); each caller returns only after
    that commit. A refused write writes nothing, so it leaves the others of its group untouched,
    and the writers of one process never wait for each other's lock. Reads use connections of
    their own (a hand-made pool, one per concurrent reader): in WAL mode they never hold up the
    writer.

    Another process holding the database's write lock is waited for at most :attr:`LOCK_WAIT`
    seconds: at open the store is then refused (:class:`~privrank.errors.InputError`), while
    serving the writes of that moment get :class:`StoreUnavailable` (``"busy"``). A file or a
    directory the store cannot write to is refused at open. A new database is created with mode 0600
    (its -wal and -shm files take the same), whatever the umask: it holds every report.
    """

    #: seconds a write waits for a lock another process holds, and between two tries of it
    LOCK_WAIT, LOCK_POLL = 3.0, 0.001
    #: seconds between checkpoints (the WAL copied into the database file), made by a thread of their
    #: own: left to SQLite, a commit makes one every 1,000 pages, and the whole group waits for it
    CHECKPOINT_SECONDS = 1.0
    #: pages of WAL after which a commit checkpoints all the same (should the checkpoints fall behind)
    WAL_PAGES = 16_384
    _checkpointer: threading.Thread | None = None

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: its directory does not exist")
        if self.path.is_dir():
            raise InputError(f"{self.path} is a directory: give the path of a SQLite file (created if absent)")
        self._name = str(self.path)
        self._idle: list = []
        self._guard = threading.Lock()
        self._closed = self._serving = False
        self._full = FullDisk(self.path)
        if self.path.exists() and not os.access(self.path, os.W_OK):  # before SQLite makes its -wal and -shm files
            raise self._unwritable()
        try:  # readable by its owner only whatever the umask; SQLite gives its -wal and -shm files the same mode
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:  # an existing database keeps the mode its owner gave it
            pass
        except OSError as exc:
            raise (self._full.at_start() if self._full.explains(exc) else self._unwritable()) from None
        self._watch = FileIdentity(self.path)
        if self.path.is_file() and self.path.stat().st_size:  # look before WAL mode changes the file
            conn = None
            try:
                conn = sqlite3.connect(self.path, timeout=self.LOCK_WAIT, isolation_level=None)
                self._check_own(conn.cursor())
                (verdict,) = conn.execute("PRAGMA quick_check(1)").fetchone()
                if verdict != "ok":
                    detail = " ".join(verdict.replace("*** in database main ***", "").split())
                    raise damaged(self.path, f"its integrity check says: {detail}")
            except sqlite3.DatabaseError as exc:
                raise self._failure(exc) from None
            finally:
                if conn is not None:
                    conn.close()
        try:
            super().__init__()
            with self._connection() as conn:
                try:  # a write, rolled back: an unwritable file is refused now, not at every request once serving
                    conn.execute("BEGIN IMMEDIATE")
                    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
                    conn.execute(f"PRAGMA user_version = {version}")
                except sqlite3.DatabaseError as exc:
                    raise self._failure(exc) from None
                finally:
                    conn.rollback()
        except BaseException:
            self.close()
            raise
        self._serving = True
        self._stop_checkpoints = threading.Event()
        self._checkpointer = threading.Thread(target=self._checkpoints, name="privrank-store-checkpoints", daemon=True)
        self._checkpointer.start()

    def _checkpoints(self) -> None:
        """Every :attr:`CHECKPOINT_SECONDS` until the store closes: a passive checkpoint, which waits for
        no writer and no reader (what it cannot copy yet, the next one does)."""
        while not self._stop_checkpoints.wait(self.CHECKPOINT_SECONDS):
            try:
                with self._connection() as conn:
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            except (InputError, sqlite3.Error):  # closed, or a passing fault: the next one tries again
                continue

    def _failure(self, exc: sqlite3.DatabaseError) -> InputError:
        """The refusal a SQLite error stands for: a lock held by another process, a full disk, a damaged
        database (at open: refused; while serving: :class:`StoreUnavailable`), a read-only file or
        directory, or a file that is not a database."""
        name = getattr(exc, "sqlite_errorname", "")
        if self._full.explains(exc):
            return self._full.refusal() if self._serving else self._full.at_start()
        if name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")):
            if self._serving:
                return StoreUnavailable("the survey's database is damaged: nothing was stored (its operator must "
                                        "restore it from a backup)", "damaged", FileIdentity.RETRY_AFTER)
            if name.startswith("SQLITE_CORRUPT"):
                return damaged(self.path, str(exc))
            return InputError(f"{self.path}: not a usable SQLite database ({exc}): if it is the survey's database, "
                              "it is damaged: restore it from a backup")
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
            if self._serving:
                return StoreUnavailable("the database is busy (another process holds its lock): try again in a "
                                        "moment", "busy")
            return InputError(f"{self.path} is locked by another process (another privrank serve?): stop it, or "
                              "give this survey a --db of its own")
        if name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN")) or name == "SQLITE_PERM":
            return self._unwritable()
        return InputError(f"{self.path}: not a usable SQLite database ({exc})")

    def _unwritable(self) -> InputError:
        return InputError(f"{self.path}: cannot write to the database (read-only file or directory, or no "
                          "permission to create its -wal and -shm files beside it): the survey's reports could "
                          "not be stored")

    def _begin(self, cur, write: bool) -> None:
        """A write's ``BEGIN IMMEDIATE``, tried every :attr:`LOCK_POLL` seconds while another process holds
        the write lock, for at most :attr:`LOCK_WAIT` seconds: SQLite's own wait sleeps longer and longer
        between tries (up to 100 ms), so the processes of ``privrank serve --workers N`` would each wait
        several of the other's commits for its turn."""
        if not write:
            return super()._begin(cur, write)
        deadline = time.monotonic() + self.LOCK_WAIT
        cur.execute("PRAGMA busy_timeout = 0")
        try:
            while True:
                try:
                    return super()._begin(cur, write)
                except sqlite3.OperationalError as exc:
                    if not getattr(exc, "sqlite_errorname", "").startswith("SQLITE_BUSY") or \
                            time.monotonic() > deadline:
                        raise
                time.sleep(self.LOCK_POLL)
        finally:
            cur.execute(f"PRAGMA busy_timeout = {round(1000 * self.LOCK_WAIT)}")

    def _run(self, conn, work, *, write: bool = True):
        try:
            return super()._run(conn, work, write=write)
        except sqlite3.DatabaseError as exc:
            if type(exc) not in (sqlite3.OperationalError, sqlite3.DatabaseError):  # a constraint, a misuse
                raise
            failure = self._failure(exc)
            if isinstance(failure, StoreUnavailable) or not self._serving:
                conn.rollback()
                raise failure from None
            raise

    def _refusal(self, exc: Exception) -> Exception:
        if type(exc) in (sqlite3.OperationalError, sqlite3.DatabaseError):
            failure = self._failure(exc)  # type: ignore[arg-type]  # one of the two SQLite errors
            if isinstance(failure, StoreUnavailable):
                return failure
        return exc

    def _commit_group(self, work):
        results = super()._commit_group(work)  # its connection checked the file before it wrote
        self._watch.check(written=True)  # a write that may have gone to a removed file (or log) is not acknowledged
        return results

    @contextmanager
    def _connection(self):
        self._watch.check()  # never a read or a write on a file no longer at the path
        with self._guard:
            if self._closed:
                raise InputError("the store is closed")
            conn = self._idle.pop() if self._idle else None
        conn = conn or self._connect()
        reusable = False
        try:
            yield conn
            reusable = True
        except InputError:  # refused inside a transaction that was rolled back: the connection is clean
            reusable = True
            raise
        finally:  # any other error leaves the connection in an unknown state: never hand it out again
            with self._guard:
                if reusable and not self._closed:
                    self._idle.append(conn)
                else:
                    conn.close()

    def _connect(self):
        try:
            conn = sqlite3.connect(self.path, timeout=self.LOCK_WAIT, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute(f"PRAGMA wal_autocheckpoint={self.WAL_PAGES}")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.create_function("privrank_credential_hash", 1, credential_hash, deterministic=True)
        except sqlite3.DatabaseError as exc:
            raise self._failure(exc) from None
        return conn

    def close(self) -> None:
        self._stop_writers()
        if self._checkpointer is not None:  # None when the store was refused at open
            self._stop_checkpoints.set()
            self._checkpointer.join(timeout=30)
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()
