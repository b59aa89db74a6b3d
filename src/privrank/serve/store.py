"""Append-only storage of randomized reports: SQLite (a file) or PostgreSQL (a URL).

What is stored, and what is not
-------------------------------
``respondents(token, created)``: a random token per respondent (``secrets.token_urlsafe(24)``,
its only credential) and the UTC day it was issued (``YYYY-MM-DD``). ``reports(id, token,
report_key, item_a, item_b, report, vector, epsilon, received)``: one row per randomized report as
the respondent's browser sent it -- a pair's report in {1, -1}, or a ranking ballot's randomized
vector (JSON) -- with its epsilon, the idempotency key the page drew for it and the UTC day it
arrived. ``invitations(code_hash, used)``: the SHA-256 of each one-time invitation code and
whether it was used, with no link to the token it produced. Times are kept to the day only: a
finer time could be joined with a reverse proxy's log, which holds addresses. There is no
column that could hold a true answer, an IP address or a user agent: the server never receives
a true answer, and keeps nothing that identifies a respondent. A database that holds any other
table (a privacy ledger, another application's data; in PostgreSQL, in the current schema) is
refused before anything is created in it; a database of the previous schema (times to the
microsecond, no keys, no invitations) is migrated in place, in one transaction, when opened.

Budget, idempotency, one report per pair
----------------------------------------
:meth:`Store.add_report` checks in one transaction that the token exists; that a report under
the same key is not already stored (the same content: a resend after a lost reply, stored once
and answered as a duplicate; other content: refused); that the respondent has not reported this
pair before (either order of the two items: a pair is randomized once per respondent, so a
second report of it would be a second independent draw of the same answer); and that the
respondent has sent fewer than ``max_answers`` reports. Only then does it insert the report,
and it commits before it returns, so no respondent's reports ever exceed the declared bound,
however many requests race (SQLite: ``BEGIN IMMEDIATE`` takes the write lock first;
PostgreSQL: ``SELECT ... FOR UPDATE`` locks the respondent's row, and a unique index on
``(token, report_key)`` backs the key rule), and a report acknowledged to the browser is on disk
(SQLite: WAL mode with ``synchronous=FULL``, the reports waiting at one moment committed
together by one writer thread, each in a savepoint of its own, see :class:`SqliteStore`;
PostgreSQL: its default synchronous commit).

The two dialects share every statement but the migration and differ only in placeholders, the
type of the autoincrement key and the row lock. Connections are pooled, one per concurrent
caller, so a store may be used from many threads.
"""
from __future__ import annotations

import hashlib
import json
import math
import queue
import re
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from ..errors import BudgetExceededError, InputError

#: bytes of randomness of a respondent's token, an invitation code and a report's key
TOKEN_BYTES, INVITATION_BYTES, KEY_BYTES = 24, 16, 16

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS respondents (token TEXT PRIMARY KEY, created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reports (id {id_type} PRIMARY KEY, "
    "token TEXT NOT NULL REFERENCES respondents (token), report_key TEXT, item_a TEXT, item_b TEXT, "
    "report INTEGER CHECK (report IN (1, -1)), vector TEXT, epsilon {real} NOT NULL, received TEXT NOT NULL, "
    "CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX IF NOT EXISTS reports_by_token ON reports (token)",
    "CREATE UNIQUE INDEX IF NOT EXISTS reports_by_key ON reports (token, report_key)",
    "CREATE TABLE IF NOT EXISTS invitations (code_hash TEXT PRIMARY KEY, "
    "used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)))",
)
#: the store's tables and their columns: a database holding anything else belongs to another application
TABLES = {"surveys": {"fingerprint"}, "respondents": {"token", "created"},
          "reports": {"id", "token", "report_key", "item_a", "item_b", "report", "vector", "epsilon", "received"},
          "invitations": {"code_hash", "used"}}
#: the previous schema's tables (times in seconds since the epoch, no keys, no invitations): migrated when opened
PREVIOUS_TABLES = {"surveys": {"fingerprint"}, "respondents": {"token", "created"},
                   "reports": {"id", "token", "item_a", "item_b", "report", "vector", "epsilon", "received"}}
SQL = {
    "surveys": "SELECT fingerprint FROM surveys",
    "claim": "INSERT INTO surveys (fingerprint) VALUES (?)",
    "new": "INSERT INTO respondents (token, created) VALUES (?, ?)",
    "lock": "SELECT token FROM respondents WHERE token = ?{lock}",
    "answered": "SELECT count(*) FROM reports WHERE token = ?",
    "by_key": "SELECT item_a, item_b, report, vector FROM reports WHERE token = ? AND report_key = ?",
    "pair": "SELECT count(*) FROM reports WHERE token = ? "
            "AND ((item_a = ? AND item_b = ?) OR (item_a = ? AND item_b = ?))",
    "insert": "INSERT INTO reports (token, report_key, item_a, item_b, report, vector, epsilon, received) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "counts": "SELECT (SELECT count(*) FROM respondents), (SELECT count(*) FROM reports)",
    "days": "SELECT created, count(*) FROM respondents GROUP BY created ORDER BY created",
    "pairs": "SELECT token, item_a, item_b, report, epsilon FROM reports WHERE report IS NOT NULL ORDER BY id",
    "vectors": "SELECT vector FROM reports WHERE vector IS NOT NULL ORDER BY id",
    "pairs_after": "SELECT id, item_a, item_b, report FROM reports WHERE report IS NOT NULL AND id > ? ORDER BY id",
    "vectors_after": "SELECT id, vector FROM reports WHERE vector IS NOT NULL AND id > ? ORDER BY id",
    "invitations": "SELECT count(*), coalesce(sum(used), 0) FROM invitations",
    "invite": "INSERT INTO invitations (code_hash) VALUES (?)",
    "use": "UPDATE invitations SET used = 1 WHERE code_hash = ? AND used = 0",
}


def is_urlsafe_token(text, nbytes: int) -> bool:
    """Whether ``text`` has the exact shape of ``secrets.token_urlsafe(nbytes)``: ``ceil(4 nbytes / 3)``
    characters of the base64url alphabet, nothing else (no padding, no other character)."""
    return isinstance(text, str) and re.fullmatch(f"[A-Za-z0-9_-]{{{math.ceil(4 * nbytes / 3)}}}", text) is not None


def invitation_hash(code: str) -> str:
    """What the store keeps of an invitation code: the hex SHA-256 of its text."""
    return hashlib.sha256(code.encode("ascii")).hexdigest()


def utc_day() -> str:
    """Today in UTC as ``YYYY-MM-DD``: the finest time the store keeps."""
    return time.strftime("%Y-%m-%d", time.gmtime())


class Receipt(NamedTuple):
    """A stored report: the answers the respondent has left, and whether it was a resend already stored."""

    remaining: int
    duplicate: bool = False


class UnknownRespondent(InputError):
    """A report under a token the store never issued."""


class AnswersExhausted(BudgetExceededError):
    """A respondent has already sent the survey's ``max_answers`` reports."""

    reason = "exhausted"


class ReportConflict(InputError):
    """A report that would break "a pair is randomized once": the respondent already reported the pair
    (``reason = "pair-answered"``), or the key was used with other content (``"key-reused"``)."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


class InvitationRefused(InputError):
    """A registration on an invitation-only survey without a usable invitation (missing, unknown or
    used: one message for all, so codes cannot be probed)."""


class Store:
    """The reports of one survey (module docstring); :func:`open_store` opens one."""

    placeholder = "?"
    id_type = "INTEGER"
    real = "REAL"
    begin = "BEGIN IMMEDIATE"
    lock = ""
    _name = "the database"
    #: (table, column) of every table and view but SQLite's own
    tables = ("SELECT m.name, p.name FROM sqlite_master AS m LEFT JOIN pragma_table_info(m.name) AS p "
              "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    #: the previous schema to this one: times coarsened to the UTC day, the key column added
    migration = ("UPDATE respondents SET created = strftime('%Y-%m-%d', created, 'unixepoch')",
                 "UPDATE reports SET received = strftime('%Y-%m-%d', received, 'unixepoch')",
                 "ALTER TABLE reports ADD COLUMN report_key TEXT")

    def __init__(self):
        self._idle: list = []
        self._guard = threading.Lock()
        self._closed = False
        types = {"id_type": self.id_type, "real": self.real}

        def work(cur):
            if self._check_own(cur):  # in the same transaction as the creation
                for statement in self.migration:
                    cur.execute(statement)
            for statement in SCHEMA:
                cur.execute(statement.format(**types))
        with self._connection() as conn:
            self._run(conn, work)

    def _check_own(self, cur) -> bool:
        """Refuse a database that holds tables other than the store's (another application's);
        True when it holds the previous schema's tables (to migrate)."""
        found: dict = {}
        for table, column in cur.execute(self.tables).fetchall():
            found.setdefault(table, set()).add(column)
        previous = "reports" in found and all(PREVIOUS_TABLES.get(t) == c for t, c in found.items())
        if not previous and any(TABLES.get(table) != columns for table, columns in found.items()):
            raise InputError(f"{self._name} holds tables of another application (it is not a privrank survey "
                             "store): give the survey a database of its own (--db)")
        return previous

    # -- dialect ---------------------------------------------------------------------------
    def _connect(self):
        raise NotImplementedError

    def _sql(self, name: str) -> str:
        return SQL[name].format(lock=self.lock).replace("?", self.placeholder)

    # -- connections and transactions --------------------------------------------------------
    @contextmanager
    def _connection(self):
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

    def _run(self, conn, work, *, write: bool = True):
        """``work(cursor)`` in one transaction, committed before this returns (rolled back on error).

        A write transaction takes SQLite's write lock first (``BEGIN IMMEDIATE``); a read-only one
        does not, so in WAL mode a long read never holds up the writers."""
        cur = conn.cursor()
        cur.execute(self.begin if write else "BEGIN")
        try:
            result = work(cur)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")
        return result

    def _query(self, name: str, params=()):
        with self._connection() as conn:
            return self._run(conn, lambda cur: cur.execute(self._sql(name), params).fetchall(), write=False)

    # -- the interface -----------------------------------------------------------------------
    def claim(self, fingerprint: str) -> None:
        """Bind the store to one survey: refuse one that holds another survey's reports."""
        def work(cur):
            held = [row[0] for row in cur.execute(self._sql("surveys")).fetchall()]
            if not held:
                cur.execute(self._sql("claim"), (fingerprint,))
            elif held != [fingerprint]:
                raise InputError("this database holds the reports of a different survey (other items, question, "
                                 "epsilon or budget): give each survey its own --db")
        with self._connection() as conn:
            self._run(conn, work)

    def new_respondent(self, invitation: str | None = None) -> str:
        """Issue a respondent's token (their only credential), stored before it is returned.

        On an invitation-only store (one that holds invitations) ``invitation`` must be an unused
        code, which this marks used in the same transaction; nothing links the code to the token.
        On an open store the invitation is not looked at.

        Raises
        ------
        InvitationRefused
            The store is invitation-only and the code is missing, unknown or already used.
        """
        token = secrets.token_urlsafe(TOKEN_BYTES)

        def work(cur):
            if cur.execute(self._sql("invitations")).fetchone()[0]:
                usable = is_urlsafe_token(invitation, INVITATION_BYTES)
                if not usable or cur.execute(self._sql("use"), (invitation_hash(invitation),)).rowcount != 1:
                    raise InvitationRefused("this survey is by invitation only, and this invitation is unknown or "
                                            "already used: open the link of your own invitation")
            cur.execute(self._sql("new"), (token, utc_day()))
        with self._connection() as conn:
            self._run(conn, work)
        return token

    def add_invitations(self, n: int) -> list[str]:
        """Issue ``n`` one-time invitation codes (``secrets.token_urlsafe(16)``), of which the store keeps
        only the SHA-256; returns the codes. From then on the store is invitation-only.

        Raises
        ------
        InputError
            The store already registered respondents without an invitation: its guarantee could not
            be stated per invited respondent.
        """
        codes = [secrets.token_urlsafe(INVITATION_BYTES) for _ in range(n)]

        def work(cur):
            issued = cur.execute(self._sql("invitations")).fetchone()[0]
            if not issued and cur.execute(self._sql("counts")).fetchone()[0]:
                raise InputError("this survey already has respondents who registered without an invitation, so it "
                                 "cannot become invitation-only (its guarantee would say 'per invited respondent' "
                                 "of people who were not invited): start invitations with a new --db")
            for code in codes:
                cur.execute(self._sql("invite"), (invitation_hash(code),))
        with self._connection() as conn:
            self._run(conn, work)
        return codes

    def invitations(self) -> tuple[int, int]:
        """``(issued, used)`` invitations; a store with any issued is invitation-only."""
        issued, used = self._query("invitations")[0]
        return int(issued), int(used)

    def add_report(self, token: str, *, key: str, epsilon: float, max_answers: int, item_a: str | None = None,
                   item_b: str | None = None, report: int | None = None, vector=None) -> Receipt:
        """Append one randomized report, once; returns a :class:`Receipt` (the answers left, and whether
        this was a resend of a report already stored under ``key``).

        A pair's report is ``item_a, item_b, report`` (1: item_a preferred, -1: item_b); a ranking
        ballot's is ``vector`` (a list of floats). ``key`` is the report's idempotency key, drawn by the
        page when it randomized the answer. Validation of the values is the caller's
        (:mod:`privrank.serve.app`); this enforces, in one transaction, one report per key and per pair
        and the budget, and commits before it returns.

        Raises
        ------
        UnknownRespondent
            The token was never issued.
        ReportConflict
            The respondent already reported this pair under another key, or used the key for other
            content; nothing is stored.
        AnswersExhausted
            The respondent has already sent ``max_answers`` reports; nothing is stored.
        """
        with self._connection() as conn:
            return self._run(conn, self._report_work(token, key, epsilon, max_answers, item_a, item_b, report,
                                                     vector))

    def _report_work(self, token, key, epsilon, max_answers, item_a, item_b, report, vector):
        """The transaction body of :meth:`add_report`: refuses (raising) before it writes anything."""
        if (report is None) == (vector is None):
            raise InputError("a report is either a pair's report or a ballot's vector")
        content = (item_a, item_b, report, None if vector is None else json.dumps(list(vector)))

        def work(cur):
            if cur.execute(self._sql("lock"), (token,)).fetchone() is None:
                raise UnknownRespondent("unknown respondent token: ask for a new one (POST /api/respondents)")
            answered = cur.execute(self._sql("answered"), (token,)).fetchone()[0]
            stored = cur.execute(self._sql("by_key"), (token, key)).fetchone()
            if stored is not None:
                if tuple(stored) != content:
                    raise ReportConflict("this report's key was already used for another report: a new answer "
                                         "needs a new key", "key-reused")
                return Receipt(max(0, max_answers - answered), duplicate=True)
            pair = (token, item_a, item_b, item_b, item_a)
            if report is not None and cur.execute(self._sql("pair"), pair).fetchone()[0]:
                raise ReportConflict("this respondent already reported this pair: a pair is randomized once",
                                     "pair-answered")
            if answered >= max_answers:
                raise AnswersExhausted("this respondent has used their whole privacy budget: no more answers "
                                       "are accepted")
            cur.execute(self._sql("insert"), (token, key, *content, float(epsilon), utc_day()))
            return Receipt(max_answers - answered - 1)
        return work

    def counts(self) -> tuple[int, int]:
        """``(respondents, reports)`` stored."""
        respondents, reports = self._query("counts")[0]
        return int(respondents), int(reports)

    def registrations_by_day(self) -> list[tuple[str, int]]:
        """``(UTC day, respondents registered that day)``, oldest first."""
        return [(str(day), int(n)) for day, n in self._query("days")]

    def pair_reports(self):
        """The pairs reports as a pyarrow Table ``user, item_a, item_b, outcome, epsilon`` (user = token),
        in the order received: what :func:`privrank.read_comparisons` reads as randomized reports."""
        import pyarrow as pa

        rows = self._query("pairs")
        columns = list(zip(*rows)) if rows else [()] * 5
        types = (pa.string(), pa.string(), pa.string(), pa.int8(), pa.float64())
        names = ("user", "item_a", "item_b", "outcome", "epsilon")
        return pa.table({n: pa.array(c, type=t) for n, c, t in zip(names, columns, types)})

    def vectors(self):
        """The ranking ballots' randomized vectors, one row each, as a float array ``(n, M)``."""
        import numpy as np

        return np.array([json.loads(v) for (v,) in self._query("vectors")], dtype=float)

    def pair_reports_after(self, after: int) -> list[tuple[int, str, str, int]]:
        """``(id, item_a, item_b, report)`` of every pairs report whose row id is above ``after``, by id:
        what an incremental tally reads. Labels come back as the exact text stored."""
        return [(int(i), a, b, int(r)) for i, a, b, r in self._query("pairs_after", (int(after),))]

    def vectors_after(self, after: int) -> list[tuple[int, list]]:
        """``(id, vector)`` of every ranking ballot whose row id is above ``after``, by id."""
        return [(int(i), json.loads(v)) for i, v in self._query("vectors_after", (int(after),))]

    def close(self) -> None:
        """Close every pooled connection; a connection in use is closed when it is handed back."""
        with self._guard:
            self._closed = True
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class SqliteStore(Store):
    """A store in a SQLite file: WAL mode, ``synchronous=FULL``, ``BEGIN IMMEDIATE`` per write.

    Reports are written with group commit: one writer thread takes every report waiting, runs each
    one's budget check and insert in turn in one transaction and commits once (one sync to disk for
    the group); each caller returns only after that commit. A refused report writes nothing, so it
    leaves the others of its group untouched.
    """

    #: most reports committed together
    GROUP = 256

    def __init__(self, path):
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: its directory does not exist")
        self._name = str(self.path)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._writer = None
        if self.path.is_file() and self.path.stat().st_size:  # look before WAL mode changes the file
            conn = None
            try:
                conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
                self._check_own(conn.cursor())
            except sqlite3.DatabaseError as exc:
                raise InputError(f"{self.path}: not a usable SQLite database ({exc})") from None
            finally:
                if conn is not None:
                    conn.close()
        super().__init__()

    def add_report(self, token: str, *, key: str, epsilon: float, max_answers: int, item_a: str | None = None,
                   item_b: str | None = None, report: int | None = None, vector=None) -> Receipt:
        work = self._report_work(token, key, epsilon, max_answers, item_a, item_b, report, vector)
        done, outcome = threading.Event(), []
        with self._guard:
            if self._closed:
                raise InputError("the store is closed")
            if self._writer is None:
                self._writer = threading.Thread(target=self._write_groups, name="privrank-store-writer", daemon=True)
                self._writer.start()
            self._queue.put((work, done, outcome))
        done.wait()
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _write_groups(self):
        """The writer thread: commit the waiting reports as one group, then answer their callers.

        Each report runs in a savepoint of its own: one that fails, for whatever reason, is rolled
        back alone and its caller gets the error, while the others of the group are committed."""
        while True:
            first = self._queue.get()
            if first is None:
                return
            group = [first]
            while len(group) < self.GROUP:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                group.append(item)
            results = []

            def work(cur):
                for body, _, _ in group:
                    cur.execute("SAVEPOINT report")
                    try:
                        results.append(body(cur))
                    except Exception as failed:  # this report only: the others of the group stand
                        cur.execute("ROLLBACK TO report")
                        results.append(failed)
                    cur.execute("RELEASE report")
            try:
                with self._connection() as conn:
                    self._run(conn, work)
            except BaseException as exc:  # the group was rolled back: every caller gets the error
                results = [exc] * len(group)
            for (_, done, outcome), result in zip(group, results):
                outcome.append(result)
                done.set()

    def close(self) -> None:
        with self._guard:
            writer = self._writer
        if writer is not None:
            self._queue.put(None)
            writer.join(timeout=30)
        super().close()

    def _connect(self):
        try:
            conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
        except sqlite3.DatabaseError as exc:
            raise InputError(f"{self.path}: not a usable SQLite database ({exc})") from None
        return conn


class PostgresStore(Store):
    """A store in a PostgreSQL database (psycopg 3); the respondent's row is locked per write."""

    placeholder = "%s"
    id_type = "BIGSERIAL"
    real = "DOUBLE PRECISION"  # PostgreSQL's REAL is single precision
    begin = "BEGIN"
    lock = " FOR UPDATE"
    migration = ("ALTER TABLE respondents ALTER COLUMN created TYPE TEXT "
                 "USING to_char(to_timestamp(created) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
                 "ALTER TABLE reports ALTER COLUMN received TYPE TEXT "
                 "USING to_char(to_timestamp(received) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
                 "ALTER TABLE reports ADD COLUMN report_key TEXT")
    #: (table, column) of every table and view in the schema the store writes to
    tables = ("SELECT t.table_name, c.column_name FROM information_schema.tables AS t "
              "LEFT JOIN information_schema.columns AS c "
              "ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
              "WHERE t.table_schema = current_schema()")

    def __init__(self, url: str):
        try:
            import psycopg
        except ImportError:
            raise InputError("a PostgreSQL store needs: pip install 'privrank[postgres]'") from None
        self._psycopg = psycopg
        self.url = url
        self._name = "the PostgreSQL database's current schema"  # never the URL: it may hold a password
        super().__init__()

    def _connect(self):
        try:
            return self._psycopg.connect(self.url, autocommit=True, connect_timeout=10)
        except self._psycopg.OperationalError:
            raise InputError("cannot connect to the PostgreSQL database (check the URL, the server and the "
                             "credentials)") from None


def open_store(target) -> Store:
    """The store at ``target``: a ``postgresql://`` URL, or else the path of a SQLite file (created if absent)."""
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    if text == ":memory:" or text.startswith("file:"):
        raise InputError(f"--db {text}: a survey's reports must outlive the server (an in-memory or URI database "
                         "would lose every acknowledged report): give a file path or a postgresql:// URL")
    return SqliteStore(text)
