"""Append-only storage of randomized reports: SQLite (a file) or PostgreSQL (a URL).

What is stored, and what is not
-------------------------------
``respondents(token, created)``: a random token per respondent (``secrets.token_urlsafe(24)``,
its only credential) and when it was issued. ``reports(id, token, item_a, item_b, report,
vector, epsilon, received)``: one row per randomized report as the respondent's browser sent it
-- a pair's report in {1, -1}, or a ranking ballot's randomized vector (JSON) -- with its
epsilon. There is no column that could hold a true answer, an IP address or a user agent: the
server never receives a true answer, and keeps nothing that identifies a respondent. A database
that holds any other table (a privacy ledger, another application's data; in PostgreSQL, in the
current schema) is refused before anything is created in it.

Budget
------
:meth:`Store.add_report` checks in one transaction that the token exists and has sent fewer
than ``max_answers`` reports, inserts the report and commits before it returns, so no
respondent's reports ever exceed the declared bound, however many requests race (SQLite:
``BEGIN IMMEDIATE`` takes the write lock first; PostgreSQL: ``SELECT ... FOR UPDATE`` locks the
respondent's row), and a report acknowledged to the browser is on disk (SQLite: WAL mode with
``synchronous=FULL``, the reports waiting at one moment committed together by one writer thread,
see :class:`SqliteStore`; PostgreSQL: its default synchronous commit).

The two dialects share every statement and differ only in placeholders, the type of the
autoincrement key and the row lock. Connections are pooled, one per concurrent caller, so a
store may be used from many threads.
"""
from __future__ import annotations

import json
import queue
import secrets
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from ..errors import BudgetExceededError, InputError

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS respondents (token TEXT PRIMARY KEY, created {real} NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reports (id {id_type} PRIMARY KEY, "
    "token TEXT NOT NULL REFERENCES respondents (token), item_a TEXT, item_b TEXT, "
    "report INTEGER CHECK (report IN (1, -1)), vector TEXT, epsilon {real} NOT NULL, received {real} NOT NULL, "
    "CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX IF NOT EXISTS reports_by_token ON reports (token)",
)
#: the store's tables and their columns: a database holding anything else belongs to another application
TABLES = {"surveys": {"fingerprint"}, "respondents": {"token", "created"},
          "reports": {"id", "token", "item_a", "item_b", "report", "vector", "epsilon", "received"}}
SQL = {
    "surveys": "SELECT fingerprint FROM surveys",
    "claim": "INSERT INTO surveys (fingerprint) VALUES (?)",
    "new": "INSERT INTO respondents (token, created) VALUES (?, ?)",
    "lock": "SELECT token FROM respondents WHERE token = ?{lock}",
    "answered": "SELECT count(*) FROM reports WHERE token = ?",
    "insert": "INSERT INTO reports (token, item_a, item_b, report, vector, epsilon, received) "
              "VALUES (?, ?, ?, ?, ?, ?, ?)",
    "counts": "SELECT (SELECT count(*) FROM respondents), (SELECT count(*) FROM reports)",
    "pairs": "SELECT token, item_a, item_b, report, epsilon FROM reports WHERE report IS NOT NULL ORDER BY id",
    "vectors": "SELECT vector FROM reports WHERE vector IS NOT NULL ORDER BY id",
}


class UnknownRespondent(InputError):
    """A report under a token the store never issued."""


class AnswersExhausted(BudgetExceededError):
    """A respondent has already sent the survey's ``max_answers`` reports."""


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

    def __init__(self):
        self._idle: list = []
        self._guard = threading.Lock()
        self._closed = False
        types = {"id_type": self.id_type, "real": self.real}

        def work(cur):
            self._check_own(cur)  # in the same transaction as the creation
            for statement in SCHEMA:
                cur.execute(statement.format(**types))
        with self._connection() as conn:
            self._run(conn, work)

    def _check_own(self, cur) -> None:
        """Refuse a database that holds tables other than the store's (another application's)."""
        found: dict = {}
        for table, column in cur.execute(self.tables).fetchall():
            found.setdefault(table, set()).add(column)
        if any(TABLES.get(table) != columns for table, columns in found.items()):
            raise InputError(f"{self._name} holds tables of another application (it is not a privrank survey "
                             "store): give the survey a database of its own (--db)")

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

    def new_respondent(self) -> str:
        """Issue a respondent's token (their only credential), stored before it is returned."""
        token = secrets.token_urlsafe(24)
        with self._connection() as conn:
            self._run(conn, lambda cur: cur.execute(self._sql("new"), (token, time.time())))
        return token

    def add_report(self, token: str, *, epsilon: float, max_answers: int, item_a: str | None = None,
                   item_b: str | None = None, report: int | None = None, vector=None) -> int:
        """Append one randomized report; returns how many answers the respondent has left.

        A pair's report is ``item_a, item_b, report`` (1: item_a preferred, -1: item_b); a ranking
        ballot's is ``vector`` (a list of floats). Validation of the values is the caller's
        (:mod:`privrank.serve.app`); this enforces the budget, in one transaction, and commits
        before it returns.

        Raises
        ------
        UnknownRespondent
            The token was never issued.
        AnswersExhausted
            The respondent has already sent ``max_answers`` reports; nothing is stored.
        """
        with self._connection() as conn:
            return self._run(conn, self._report_work(token, epsilon, max_answers, item_a, item_b, report, vector))

    def _report_work(self, token, epsilon, max_answers, item_a, item_b, report, vector):
        """The transaction body of :meth:`add_report`: refuses (raising) before it writes anything."""
        if (report is None) == (vector is None):
            raise InputError("a report is either a pair's report or a ballot's vector")
        row = (token, item_a, item_b, report, None if vector is None else json.dumps(list(vector)),
               float(epsilon))

        def work(cur):
            if cur.execute(self._sql("lock"), (token,)).fetchone() is None:
                raise UnknownRespondent("unknown respondent token: ask for a new one (POST /api/respondents)")
            answered = cur.execute(self._sql("answered"), (token,)).fetchone()[0]
            if answered >= max_answers:
                raise AnswersExhausted("this respondent has used their whole privacy budget: no more answers "
                                       "are accepted")
            cur.execute(self._sql("insert"), (*row, time.time()))
            return max_answers - answered - 1
        return work

    def counts(self) -> tuple[int, int]:
        """``(respondents, reports)`` stored."""
        respondents, reports = self._query("counts")[0]
        return int(respondents), int(reports)

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

    def add_report(self, token: str, *, epsilon: float, max_answers: int, item_a: str | None = None,
                   item_b: str | None = None, report: int | None = None, vector=None) -> int:
        work = self._report_work(token, epsilon, max_answers, item_a, item_b, report, vector)
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
        """The writer thread: commit the waiting reports as one group, then answer their callers."""
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
                    try:
                        results.append(body(cur))
                    except (UnknownRespondent, AnswersExhausted) as refused:  # nothing written
                        results.append(refused)
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
    return SqliteStore(text)
