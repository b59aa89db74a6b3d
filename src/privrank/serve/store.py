"""Append-only storage of randomized reports: SQLite (a file) or PostgreSQL (a URL).

What is stored, and what is not
-------------------------------
``respondents(token_hash, created)``: the SHA-256 of each respondent's random token
(``secrets.token_urlsafe(24)``, their only credential, which the store never keeps) and the UTC
day it was issued (``YYYY-MM-DD``). ``reports(id, token_hash, report_key, item_a, item_b, report,
vector, epsilon, received)``: one row per randomized report as
the respondent's browser sent it -- a pair's report in {1, -1}, or a ranking ballot's randomized
vector (JSON) -- with its epsilon, the idempotency key the page drew for it and the UTC day it
arrived. ``invitations(code_hash, used)``: the SHA-256 of each one-time invitation code and
whether it was used, with no link to the token it produced. ``surveys(fingerprint)``,
``survey_terms(fingerprint)`` and ``survey_texts(id, field, text, first_served)``: which survey
the store holds and each text it was served with (:meth:`Store.claim`). Times are kept to the
day only: a finer time could be joined with a reverse proxy's log, which holds addresses. There is no
column that could hold a true answer, an IP address or a user agent: the server never receives
a true answer, and keeps nothing that identifies a respondent. A database that holds any other
table (a privacy ledger, another application's data; in PostgreSQL, in the current schema) is
refused before anything is created in it; a database of an earlier schema (times to the
microsecond, no keys, no invitations; or tokens in plain text) is migrated in place, in one
transaction, when opened.

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
PostgreSQL: the function ``privrank_add_report`` locks the respondent's row (``FOR UPDATE``)
before it reads, and a unique index on ``(token_hash, report_key)`` backs the key rule), and a report
acknowledged to the browser is on disk (SQLite: WAL mode with ``synchronous=FULL``, the reports
waiting at one moment committed together by one writer thread, each in a savepoint of its own,
see :class:`SqliteStore`; PostgreSQL: its default synchronous commit).

The two dialects share every statement but the migration and a report's write (one call of a
stored function on PostgreSQL, one round trip instead of five), and differ only in placeholders
and the type of the autoincrement key. A store may be used from many threads: SQLite's
writes go to its one writer thread and its reads to a pool of connections of its own; PostgreSQL's
connections come from a :class:`psycopg_pool.ConnectionPool` that replaces a broken one.

Faults
------
A database the store cannot write to (a read-only file or directory), or whose lock another
process holds for more than a few seconds, is refused when it is opened, before anything is
created. While serving, a write that cannot get SQLite's lock, or a working PostgreSQL connection
or lock, in a bounded time raises :class:`StoreUnavailable` (HTTP 503 with ``Retry-After``):
nothing of it was stored, or -- a connection broken at the very commit -- its resend under the
same key is answered as a duplicate, so a retried report is never lost nor stored twice. A SQLite
file removed or replaced while serving, a full disk and a damaged database are
:mod:`privrank.serve.health`'s: refused with 503 while serving, with a sentence at open.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import queue
import re
import secrets
import sqlite3
import threading
import time
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard

from ..errors import BudgetExceededError, InputError
from .health import FileIdentity, FullDisk, StoreUnavailable, damaged

#: bytes of randomness of a respondent's token, an invitation code and a report's key
TOKEN_BYTES, INVITATION_BYTES, KEY_BYTES = 24, 16, 16

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS survey_terms (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS survey_texts (id {id_type} PRIMARY KEY, field TEXT NOT NULL, text TEXT NOT NULL, "
    "first_served TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS respondents (token_hash TEXT PRIMARY KEY, created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reports (id {id_type} PRIMARY KEY, "
    "token_hash TEXT NOT NULL REFERENCES respondents (token_hash), report_key TEXT, item_a TEXT, item_b TEXT, "
    "report INTEGER CHECK (report IN (1, -1)), vector TEXT, epsilon {real} NOT NULL, received TEXT NOT NULL, "
    "CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX IF NOT EXISTS reports_by_token ON reports (token_hash)",
    "CREATE UNIQUE INDEX IF NOT EXISTS reports_by_key ON reports (token_hash, report_key)",
    "CREATE TABLE IF NOT EXISTS invitations (code_hash TEXT PRIMARY KEY, "
    "used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)))",
    "CREATE TABLE IF NOT EXISTS admin (token_hash TEXT NOT NULL)",
)
#: the store's tables and their columns: a database holding anything else belongs to another application
TABLES = {"surveys": {"fingerprint"}, "survey_terms": {"fingerprint"},
          "survey_texts": {"id", "field", "text", "first_served"}, "respondents": {"token_hash", "created"},
          "reports": {"id", "token_hash", "report_key", "item_a", "item_b", "report", "vector", "epsilon",
                      "received"},
          "invitations": {"code_hash", "used"}, "admin": {"token_hash"}}
#: the tables of every schema the store has had, oldest first, the current one last: a database of an
#: earlier one is migrated when opened (by the dialect's :attr:`Store.migrations` from its own on).
#: First: times in seconds since the epoch, no keys, no invitations; then: the respondents' tokens in plain text.
LAYOUTS = ({"surveys": {"fingerprint"}, "respondents": {"token", "created"},
            "reports": {"id", "token", "item_a", "item_b", "report", "vector", "epsilon", "received"}},
           {**TABLES, "respondents": {"token", "created"},
            "reports": {"id", "token", "report_key", "item_a", "item_b", "report", "vector", "epsilon", "received"}},
           TABLES)
SQL = {
    "surveys": "SELECT fingerprint FROM surveys",
    "admin": "SELECT token_hash FROM admin",
    "forget_admin": "DELETE FROM admin",
    "set_admin": "INSERT INTO admin (token_hash) VALUES (?)",
    "claim": "INSERT INTO surveys (fingerprint) VALUES (?)",
    "terms": "SELECT fingerprint FROM survey_terms",
    "claim_terms": "INSERT INTO survey_terms (fingerprint) VALUES (?)",
    "texts": "SELECT field, text, first_served FROM survey_texts ORDER BY id",
    "add_text": "INSERT INTO survey_texts (field, text, first_served) VALUES (?, ?, ?)",
    "new": "INSERT INTO respondents (token_hash, created) VALUES (?, ?)",
    "lock": "SELECT token_hash FROM respondents WHERE token_hash = ?",
    # a respondent's reports so far, those of the pair (either order), and the report stored under the key (if any)
    "state": "SELECT (SELECT count(*) FROM reports WHERE token_hash = ?), (SELECT count(*) FROM reports "
             "WHERE token_hash = ? AND ((item_a = ? AND item_b = ?) OR (item_a = ? AND item_b = ?))), k.id, k.item_a, "
             "k.item_b, k.report, k.vector "
             "FROM (SELECT 1) AS one LEFT JOIN reports AS k ON k.token_hash = ? AND k.report_key = ?",
    "insert": "INSERT INTO reports (token_hash, report_key, item_a, item_b, report, vector, epsilon, received) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "counts": "SELECT (SELECT count(*) FROM respondents), (SELECT count(*) FROM reports)",
    "days": "SELECT created, count(*) FROM respondents GROUP BY created ORDER BY created",
    "pairs": "SELECT token_hash, item_a, item_b, report, epsilon FROM reports WHERE report IS NOT NULL ORDER BY id",
    "vectors": "SELECT vector FROM reports WHERE vector IS NOT NULL ORDER BY id",
    "pairs_after": "SELECT id, item_a, item_b, report FROM reports WHERE report IS NOT NULL AND id > ? ORDER BY id",
    "vectors_after": "SELECT id, vector FROM reports WHERE vector IS NOT NULL AND id > ? ORDER BY id",
    "invitations": "SELECT count(*), coalesce(sum(used), 0) FROM invitations",
    "invite": "INSERT INTO invitations (code_hash) VALUES (?)",
    "use": "UPDATE invitations SET used = 1 WHERE code_hash = ? AND used = 0",
}


#: the survey's identity as :meth:`Store.claim` records it (a hex SHA-256)
FINGERPRINT = re.compile(r"[0-9a-f]{64}")


def is_urlsafe_token(text: object, nbytes: int) -> TypeGuard[str]:
    """Whether ``text`` has the exact shape of ``secrets.token_urlsafe(nbytes)``: ``ceil(4 nbytes / 3)``
    characters of the base64url alphabet, nothing else (no padding, no other character)."""
    return isinstance(text, str) and re.fullmatch(f"[A-Za-z0-9_-]{{{math.ceil(4 * nbytes / 3)}}}", text) is not None


def credential_hash(credential: str) -> str:
    """What the store keeps of a credential it issues, a respondent's token or an invitation code: the hex
    SHA-256 of its text. Unsalted, as a lookup by it needs: each is 192 or 128 random bits, which no
    dictionary holds and no search finds, so a salt would add nothing (it only defeats precomputed
    guesses of chosen secrets such as passwords)."""
    return hashlib.sha256(credential.encode("utf-8")).hexdigest()


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


def report_content(item_a, item_b, report, vector) -> tuple:
    """What a report stores beside its key, epsilon and day, as the store's columns hold it
    (``item_a, item_b, report, vector``; the vector as JSON text)."""
    if (report is None) == (vector is None):
        raise InputError("a report is either a pair's report or a ballot's vector")
    return item_a, item_b, report, None if vector is None else json.dumps(list(vector))


def report_receipt(outcome: str, answered: int, stored, content: tuple, max_answers: int) -> Receipt:
    """The answer to a report the store decided on, under the respondent's row lock: ``outcome`` is
    ``inserted`` (stored now), ``stored`` (a report under its key was there already: ``stored`` is its
    content), ``unknown`` (no such respondent), ``paired`` (the pair was reported before) or
    ``exhausted`` (the budget is used up); ``answered`` is the respondent's reports before this one.

    Raises
    ------
    UnknownRespondent, ReportConflict, AnswersExhausted
        As :meth:`Store.add_report` says.
    """
    if outcome == "inserted":
        return Receipt(max_answers - answered - 1)
    if outcome == "unknown":
        raise UnknownRespondent("unknown respondent token: ask for a new one (POST /api/respondents)")
    if outcome == "stored":
        if tuple(stored) != content:
            raise ReportConflict("this report's key was already used for another report: a new answer needs a new "
                                 "key", "key-reused")
        return Receipt(max(0, max_answers - answered), duplicate=True)
    if outcome == "paired":
        raise ReportConflict("this respondent already reported this pair: a pair is randomized once", "pair-answered")
    if outcome == "exhausted":
        raise AnswersExhausted("this respondent has used their whole privacy budget: no more answers are accepted")
    raise ValueError(f"unknown outcome of a report's write: {outcome!r}")


class Store:
    """The reports of one survey (module docstring); :func:`open_store` opens one."""

    placeholder = "?"
    id_type = "INTEGER"
    real = "REAL"
    begin = "BEGIN IMMEDIATE"
    #: statements run after the schema's at every open (the dialect's stored routines)
    routines: tuple = ()
    _name = "the database"
    #: (table, column) of every table and view but SQLite's own
    tables = ("SELECT m.name, p.name FROM sqlite_master AS m LEFT JOIN pragma_table_info(m.name) AS p "
              "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    #: what brings each schema of :data:`LAYOUTS` to the next: times coarsened to the UTC day and the key
    #: column added; then the tokens replaced by their :func:`credential_hash` (``privrank_credential_hash``,
    #: a function of each connection), the reports' after the respondents', so the foreign key between them
    #: is checked at the commit
    migrations: tuple[tuple[str, ...], ...] = (("UPDATE respondents SET created = strftime('%Y-%m-%d', created, 'unixepoch')",
                   "UPDATE reports SET received = strftime('%Y-%m-%d', received, 'unixepoch')",
                   "ALTER TABLE reports ADD COLUMN report_key TEXT"),
                  ("PRAGMA defer_foreign_keys = ON",
                   "ALTER TABLE respondents RENAME COLUMN token TO token_hash",
                   "ALTER TABLE reports RENAME COLUMN token TO token_hash",
                   "UPDATE respondents SET token_hash = privrank_credential_hash(token_hash)",
                   "UPDATE reports SET token_hash = privrank_credential_hash(token_hash)"))

    def __init__(self):
        types = {"id_type": self.id_type, "real": self.real}

        def work(cur):
            for step in self.migrations[self._check_own(cur):]:  # in the same transaction as the creation
                for statement in step:
                    cur.execute(statement)
            for statement in SCHEMA:
                cur.execute(statement.format(**types))
            for statement in self.routines:
                cur.execute(statement)
        with self._connection() as conn:
            self._run(conn, work)

    def _check_own(self, cur) -> int:
        """Refuse a database that holds tables other than the store's (another application's); else
        the index in :data:`LAYOUTS` of the schema it holds (the newest one whose tables it matches: the
        current one for an empty database), from which on :attr:`migrations` bring it to this one. A
        database of an earlier schema holds the two tables the migrations change. A store lacking one of
        the tables every schema had is damaged (refused: it would be served as a survey without them)."""
        found: dict = {}
        for table, column in cur.execute(self.tables).fetchall():
            found.setdefault(table, set()).add(column)
        ours = all(any(layout.get(table) == columns for layout in LAYOUTS) for table, columns in found.items())
        missing = sorted(set(LAYOUTS[0]) - found.keys())
        if ours and len(found) > 1 and missing:
            raise damaged(self._name, f"its table {missing[0]} is missing")
        for index in reversed(range(len(LAYOUTS))):
            whole = index == len(LAYOUTS) - 1 or {"respondents", "reports"} <= found.keys()
            if whole and all(LAYOUTS[index].get(table) == columns for table, columns in found.items()):
                return index
        raise InputError(f"{self._name} holds tables of another application (it is not a privrank survey "
                         "store): give the survey a database of its own (--db)")

    # -- dialect ---------------------------------------------------------------------------
    def _sql(self, name: str) -> str:
        return SQL[name].replace("?", self.placeholder)

    # -- connections and transactions --------------------------------------------------------
    def _connection(self):
        """A context manager lending a connection of the dialect's pool."""
        raise NotImplementedError

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

    # -- writes: one writer thread, group commit ----------------------------------------------
    #: most writes committed together
    GROUP = 256
    #: writer threads, each committing its own groups (SQLite has one writer at a time)
    WRITERS = 1
    _writers: list | None = None
    _stopping = False
    _guard: threading.Lock  # set by each dialect's __init__
    _closed: bool

    def _write(self, work):
        """``work(cursor)`` committed (by the writer thread) before this returns its result."""
        return self._submit(work).result()

    def _submit(self, work, locks: str = "") -> Future:
        """:meth:`_write` without waiting: the future of its result. ``locks``: the respondent whose
        row the write locks ("" for none)."""
        future: Future = Future()
        with self._guard:
            if self._closed or self._stopping:
                raise InputError("the store is closed")
            if self._writers is None:
                self._queue: queue.SimpleQueue = queue.SimpleQueue()
                self._writers = [threading.Thread(target=self._write_groups, name="privrank-store-writer", daemon=True)
                                 for _ in range(self.WRITERS)]
                for writer in self._writers:
                    writer.start()
            self._queue.put((locks, work, future))
        return future

    def _write_groups(self):
        """The writer thread: commit the waiting writes as one group, then answer their callers.

        Each write runs in a savepoint of its own (or, marked ``self_contained``, is one statement
        that undoes itself on error): one that fails, for whatever reason, is rolled back alone and
        its caller gets the error, while the others of the group are committed."""
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
            # a write whose caller gave up before it started (a client that went away) is not made; the others
            # take their respondents' row locks in one order, so that two writers' groups never deadlock
            group = sorted(((locks, body, future) for locks, body, future in group
                            if future.set_running_or_notify_cancel()), key=lambda write: write[0])
            group = [(body, future) for _, body, future in group]
            if not group:
                continue

            try:
                results = self._commit_group(lambda cur: [self._write_alone(cur, body) for body, _ in group])
            except BaseException as exc:  # the group was rolled back: every caller gets the error
                results = [exc] * len(group)
            for (_, future), result in zip(group, results):
                if isinstance(result, BaseException):
                    future.set_exception(result)
                else:
                    future.set_result(result)

    def _write_alone(self, cur, body):
        """One write of a group: its result, or -- undone alone, the others of the group standing --
        what its caller gets for the error it raised."""
        if getattr(body, "self_contained", False):  # one statement that undoes itself on error
            try:
                return body(cur)
            except Exception as failed:
                return self._refusal(failed)
        cur.execute("SAVEPOINT write")
        try:
            result = body(cur)
        except Exception as failed:
            cur.execute("ROLLBACK TO SAVEPOINT write")
            result = self._refusal(failed)
        cur.execute("RELEASE SAVEPOINT write")
        return result

    def _refusal(self, exc: Exception) -> Exception:
        """What the caller of a write that raised ``exc`` (and was rolled back alone) gets."""
        return exc

    def _commit_group(self, work):
        """``work(cursor)`` in one transaction on a connection of the pool: the results of a group."""
        with self._connection() as conn:
            return self._run(conn, work)

    def _stop_writers(self) -> None:
        """Stop taking writes, answer every one queued, and end the writer threads."""
        with self._guard:  # no write is queued after the writers' stop: every queued one is answered
            writers, self._stopping = self._writers or [], True
            for _ in writers:
                self._queue.put(None)  # one stop for each writer
        for writer in writers:
            writer.join(timeout=30)

    # -- the interface -----------------------------------------------------------------------
    def claim(self, fingerprint: str, *, earlier: str | None = None, texts: dict | None = None) -> str:
        """Bind the store to one survey, record its texts, and return the id its page keys by.

        ``fingerprint`` is the survey's identity, its terms
        (:meth:`privrank.serve.survey.Survey.fingerprint`): a store holds the reports of one survey
        and refuses one of other terms. The first claim fixes the page's id (``surveys``) and the
        terms (``survey_terms``). A store first claimed by an earlier version holds only an id, the
        fingerprint of the terms and the question (``earlier``,
        :meth:`~privrank.serve.survey.Survey.earlier_fingerprint`): it is accepted when that matches,
        its terms are recorded, and it keeps that id for good -- through any later correction of
        the question -- so a returning respondent's page finds its token and memo under the same
        key (a new key would register the browser anew, with a fresh budget).

        ``texts`` (``{field: text}``) are recorded in ``survey_texts`` with the UTC day, each time
        a field's text differs from its last recorded one (:meth:`text_history`).

        Raises
        ------
        InputError
            ``fingerprint`` is not a hex SHA-256; the store holds the reports of a survey of other terms
            (or, claimed by an earlier version, of another question too); or what it records of its
            survey is damaged (not one hex SHA-256 each).
        """
        if not isinstance(fingerprint, str) or FINGERPRINT.fullmatch(fingerprint) is None:
            raise InputError("a survey's fingerprint is a hex SHA-256 (Survey.fingerprint())")

        def work(cur):
            held = [row[0] for row in cur.execute(self._sql("surveys")).fetchall()]
            terms = [row[0] for row in cur.execute(self._sql("terms")).fetchall()]
            if not all(isinstance(f, str) and FINGERPRINT.fullmatch(f) for f in held + terms) or len(held) > 1 \
                    or len(terms) > 1:  # what claim writes is one hex SHA-256 in each
                raise damaged(self._name, "the survey it holds is not recorded as privrank records it")
            if not held:
                cur.execute(self._sql("claim"), (fingerprint,))
                held = [fingerprint]
            elif terms and terms != [fingerprint]:
                raise InputError("this database holds the reports of a different survey (other items or item order, "
                                 "design, epsilon, budget or mechanism): if it is this survey's database, put its "
                                 "terms back as they were (they cannot change once there are reports); else give "
                                 "each survey its own --db")
            elif not terms and held[0] not in (fingerprint, earlier):
                raise InputError("this database holds the reports of a different survey, or was started by an "
                                 "earlier privrank that counted the question as part of the survey: if only the "
                                 "question changed, start it once with the question as it was, then correct it")
            if not terms:
                cur.execute(self._sql("claim_terms"), (fingerprint,))
            last = {field: text for field, text, _ in cur.execute(self._sql("texts")).fetchall()}
            for field, text in (texts or {}).items():
                if last.get(field) != text:
                    cur.execute(self._sql("add_text"), (field, text, utc_day()))
            return held[0]
        return self._write(work)

    def text_history(self) -> list[tuple[str, str, str]]:
        """``(field, text, UTC day first served)`` of every text the survey was served with, oldest first:
        a field's first row is its original text ("" for a text the survey did not have), each later
        one a correction (e.g. the dashboard's "question edited on DAY"). Recorded by :meth:`claim`
        when a server starts."""
        return [(str(field), str(text), str(day)) for field, text, day in self._query("texts")]

    def new_respondent(self, invitation: str | None = None) -> str:
        """Issue a respondent's token (their only credential), its hash stored before it is returned.

        On an invitation-only store (one that holds invitations) ``invitation`` must be an unused
        code, which this marks used in the same transaction; nothing links the code to the token.
        On an open store the invitation is not looked at.

        Raises
        ------
        InvitationRefused
            The store is invitation-only and the code is missing, unknown or already used.
        """
        def work(cur):  # the token is drawn inside: a write run again after a broken connection draws anew
            if cur.execute(self._sql("invitations")).fetchone()[0]:
                if not is_urlsafe_token(invitation, INVITATION_BYTES) or \
                        cur.execute(self._sql("use"), (credential_hash(invitation),)).rowcount != 1:
                    raise InvitationRefused("this survey is by invitation only, and this invitation is unknown or "
                                            "already used: open the link of your own invitation")
            token = secrets.token_urlsafe(TOKEN_BYTES)
            cur.execute(self._sql("new"), (credential_hash(token), utc_day()))
            return token
        return self._write(work)

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
                cur.execute(self._sql("invite"), (credential_hash(code),))
        self._write(work)
        return codes

    def invitations(self) -> tuple[int, int]:
        """``(issued, used)`` invitations; a store with any issued is invitation-only."""
        issued, used = self._query("invitations")[0]
        return int(issued), int(used)

    def add_report(self, token: str, *, key: str, epsilon: float, max_answers: int, item_a: str | None = None,
                   item_b: str | None = None, report: int | None = None, vector=None) -> Receipt:
        """Append one randomized report, once; returns a :class:`Receipt` (the answers left, and whether
        this was a resend of a report already stored under ``key``). :meth:`submit_report` does the same
        without waiting.

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
        return self.submit_report(token, key=key, epsilon=epsilon, max_answers=max_answers, item_a=item_a,
                                  item_b=item_b, report=report, vector=vector).result()

    def submit_report(self, token: str, *, key: str, epsilon: float, max_answers: int, item_a: str | None = None,
                      item_b: str | None = None, report: int | None = None, vector=None) -> Future:
        """:meth:`add_report` without waiting: a :class:`concurrent.futures.Future` of its :class:`Receipt`,
        done once the report is committed (or refused). The server awaits it with
        :func:`asyncio.wrap_future`, so no thread of its own is held while a write waits for its commit.
        A future cancelled before its write starts writes nothing."""
        return self._submit(self._report_work(token, key, epsilon, max_answers, item_a, item_b, report, vector),
                            locks=token)

    def _report_work(self, token, key, epsilon, max_answers, item_a, item_b, report, vector):
        """The transaction body of :meth:`add_report`: refuses (raising) before it writes anything."""
        content = report_content(item_a, item_b, report, vector)

        def work(cur):
            held = credential_hash(token)
            # the respondent's row lock is taken first, so the read of the state after it sees every report committed
            state = cur.connection.cursor()
            cur.execute(self._sql("lock"), (held,))
            state.execute(self._sql("state"), (held, held, item_a, item_b, item_b, item_a, held, key))
            respondent, (answered, paired, stored_id, *stored) = cur.fetchone(), state.fetchone()
            outcome = ("unknown" if respondent is None else "stored" if stored_id is not None
                       else "paired" if report is not None and paired else "exhausted" if answered >= max_answers
                       else "inserted")
            if outcome == "inserted":
                cur.execute(self._sql("insert"), (held, key, *content, float(epsilon), utc_day()))
            return report_receipt(outcome, answered, stored, content, max_answers)
        return work

    def counts(self) -> tuple[int, int]:
        """``(respondents, reports)`` stored."""
        respondents, reports = self._query("counts")[0]
        return int(respondents), int(reports)

    def registrations_by_day(self) -> list[tuple[str, int]]:
        """``(UTC day, respondents registered that day)``, oldest first."""
        return [(str(day), int(n)) for day, n in self._query("days")]

    def pair_reports(self):
        """The pairs reports as a pyarrow Table ``user, item_a, item_b, outcome, epsilon`` (user = the
        :func:`credential_hash` of the respondent's token, never the token), in the order received: what
        :func:`privrank.read_comparisons` reads as randomized reports."""
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
        return self._query("pairs_after", (int(after),))  # both drivers give integer columns as int

    def vectors_after(self, after: int) -> list[tuple[int, list]]:
        """``(id, vector)`` of every ranking ballot whose row id is above ``after``, by id."""
        return [(int(i), json.loads(v)) for i, v in self._query("vectors_after", (int(after),))]

    def close(self) -> None:
        """Close the store's connections; a connection in use is closed when it is handed back."""
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def admin_token_hash(self) -> str | None:
        """The hash of the dashboard's admin token (:func:`privrank.serve.app.admin_token_hash`), or None
        before one is set: the token itself is never stored."""
        rows = self._query("admin")
        return rows[0][0] if rows else None

    def set_admin_token_hash(self, digest: str) -> None:
        """Keep ``digest`` as the admin token's hash, in place of any earlier one (one transaction)."""
        def work(cur):
            cur.execute(self._sql("forget_admin"))
            cur.execute(self._sql("set_admin"), (digest,))
        self._write(work)


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

    #: seconds a write waits for a lock another process holds
    LOCK_WAIT = 3.0
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
        self._watch.check()  # a write that may have gone to a removed file is not acknowledged
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


class PostgresStore(Store):
    """A store in a PostgreSQL database (psycopg 3); the respondent's row is locked per write.

    Connections come from a :class:`psycopg_pool.ConnectionPool` of at most :attr:`POOL_SIZE`. A
    write whose connection turns out broken (the server restarted since it was last used) has the
    pool check every idle connection, replacing the broken ones, and runs once more (a report whose
    commit went through just before the break is found by its key and answered as a resend).
    Checking on failure, not each connection as it is lent, saves a round trip per report. A write
    that still cannot get a working connection within :attr:`POOL_WAIT` seconds gets :class:`StoreUnavailable` (``"unavailable"``). A lock
    another session holds is waited for at most :attr:`LOCK_WAIT` seconds (``lock_timeout``), then
    the write gets :class:`StoreUnavailable` (``"busy"``) alone.

    Writes are committed in groups, as in :class:`SqliteStore`: one commit (one flush of
    PostgreSQL's log) for the writes waiting, each in a savepoint of its own (a report's write: one
    call of :attr:`routines`' function, which undoes itself on error), by :attr:`WRITERS` threads at
    once (the respondent's row lock orders two writes of one respondent).
    """

    placeholder = "%s"
    id_type = "BIGSERIAL"
    real = "DOUBLE PRECISION"  # PostgreSQL's REAL is single precision
    begin = "BEGIN"
    #: the tokens are hashed in one statement: the foreign key is checked at its end, when both tables hold
    #: the hashes; the report's function is dropped first, to be created anew with a renamed parameter
    migrations = (("ALTER TABLE respondents ALTER COLUMN created TYPE TEXT "
                   "USING to_char(to_timestamp(created) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
                   "ALTER TABLE reports ALTER COLUMN received TYPE TEXT "
                   "USING to_char(to_timestamp(received) AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
                   "ALTER TABLE reports ADD COLUMN report_key TEXT"),
                  ("DROP FUNCTION IF EXISTS privrank_add_report",
                   "ALTER TABLE respondents RENAME COLUMN token TO token_hash",
                   "ALTER TABLE reports RENAME COLUMN token TO token_hash",
                   "WITH respondent AS (UPDATE respondents SET token_hash = "
                   "encode(sha256(convert_to(token_hash, 'UTF8')), 'hex')) "
                   "UPDATE reports SET token_hash = encode(sha256(convert_to(token_hash, 'UTF8')), 'hex')"))
    #: (table, column) of every table and view in the schema the store writes to
    tables = ("SELECT t.table_name, c.column_name FROM information_schema.tables AS t "
              "LEFT JOIN information_schema.columns AS c "
              "ON c.table_schema = t.table_schema AND c.table_name = t.table_name "
              "WHERE t.table_schema = current_schema()")
    #: most connections open at once, and seconds a caller waits for one (or for the database to come back)
    POOL_SIZE, POOL_WAIT = 16, 5.0
    WRITERS = 4
    #: seconds a statement waits for a lock another session holds
    LOCK_WAIT = 3.0
    #: a report's write in one statement (one round trip, not five): the same rules as the generic
    #: write, in the same order, each statement of a VOLATILE function reading a new snapshot, so the
    #: reads after the row lock see every report committed before it. An error inside (a lock not got
    #: within ``lock_timeout``) undoes the function's work alone and comes back as ``error:SQLSTATE``.
    #: Its tables are those of the schema it was created in (``SET search_path FROM CURRENT``).
    routines = ("""
CREATE OR REPLACE FUNCTION privrank_add_report(p_token_hash TEXT, p_key TEXT, p_item_a TEXT, p_item_b TEXT,
    p_report INTEGER, p_vector TEXT, p_epsilon DOUBLE PRECISION, p_max_answers BIGINT, p_day TEXT)
RETURNS TABLE (outcome TEXT, answered BIGINT, stored_a TEXT, stored_b TEXT, stored_report INTEGER, stored_vector TEXT)
LANGUAGE plpgsql VOLATILE SET search_path FROM CURRENT AS $body$
DECLARE
    n BIGINT;
    k RECORD;
BEGIN
    PERFORM 1 FROM respondents WHERE token_hash = p_token_hash FOR UPDATE;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'unknown', 0::BIGINT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TEXT;
        RETURN;
    END IF;
    SELECT count(*) INTO n FROM reports WHERE token_hash = p_token_hash;
    SELECT r.item_a, r.item_b, r.report, r.vector INTO k FROM reports AS r
        WHERE r.token_hash = p_token_hash AND r.report_key = p_key;
    IF FOUND THEN
        RETURN QUERY SELECT 'stored', n, k.item_a, k.item_b, k.report, k.vector;
        RETURN;
    END IF;
    IF p_report IS NOT NULL AND EXISTS (SELECT 1 FROM reports WHERE token_hash = p_token_hash
            AND ((item_a = p_item_a AND item_b = p_item_b) OR (item_a = p_item_b AND item_b = p_item_a))) THEN
        RETURN QUERY SELECT 'paired', n, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TEXT;
        RETURN;
    END IF;
    IF n >= p_max_answers THEN
        RETURN QUERY SELECT 'exhausted', n, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TEXT;
        RETURN;
    END IF;
    INSERT INTO reports (token_hash, report_key, item_a, item_b, report, vector, epsilon, received)
        VALUES (p_token_hash, p_key, p_item_a, p_item_b, p_report, p_vector, p_epsilon, p_day);
    RETURN QUERY SELECT 'inserted', n, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TEXT;
EXCEPTION WHEN OTHERS THEN
    RETURN QUERY SELECT 'error:' || SQLSTATE, 0::BIGINT, NULL::TEXT, NULL::TEXT, NULL::INTEGER, NULL::TEXT;
END
$body$""",)

    def __init__(self, url: str):
        try:
            import psycopg
            from psycopg_pool import ConnectionPool, PoolClosed, PoolTimeout
        except ImportError:
            raise InputError("a PostgreSQL store needs: pip install 'privrank[postgres]'") from None
        self._pool_errors, self._closed_error = (PoolTimeout, psycopg.OperationalError), PoolClosed
        self._lock_error = psycopg.errors.LockNotAvailable
        self._sql_error = psycopg.errors.lookup
        options: dict[str, Any] = {"autocommit": True, "connect_timeout": 10}
        try:  # one connection first: a wrong URL or a server that is down is refused at once, with a clear message
            psycopg.connect(url, **options).close()
        except psycopg.OperationalError:
            raise InputError("cannot connect to the PostgreSQL database (check the URL, the server and the "
                             "credentials)") from None
        self._name = "the PostgreSQL database's current schema"  # never the URL: it may hold a password
        # reconnect_timeout: a reconnection that keeps failing gives up soon, and the next caller starts a new one
        # at once, so the store is back as soon as the server is (not after a backoff that doubled while it was down)
        self._pool = ConnectionPool(url, kwargs=options, min_size=1, max_size=self.POOL_SIZE, timeout=self.POOL_WAIT,
                                    reconnect_timeout=self.POOL_WAIT,
                                    configure=self._configure, name="privrank-store", open=False)
        self._pool.open()
        self._guard, self._closed = threading.Lock(), False
        try:
            super().__init__()
        except BaseException:
            self.close()
            raise

    def _configure(self, conn) -> None:
        """Each new connection's settings (not in the URL's options, which stay the user's)."""
        conn.execute(f"SET lock_timeout = {round(1000 * self.LOCK_WAIT)}")

    @contextmanager
    def _connection(self):
        try:
            with self._pool.connection() as conn:
                yield conn
        except self._closed_error:
            raise InputError("the store is closed") from None
        except self._lock_error:
            raise StoreUnavailable("the database is busy (another session holds a lock the write needs): try "
                                   "again in a moment", "busy") from None
        except self._pool_errors:
            raise StoreUnavailable("the database cannot be reached right now: try again in a moment",
                                   "unavailable") from None

    def _refusal(self, exc: Exception) -> Exception:
        if isinstance(exc, self._lock_error):
            return StoreUnavailable("the database is busy (another session holds a lock the write needs): try "
                                    "again in a moment", "busy")
        return exc

    def _report_work(self, token, key, epsilon, max_answers, item_a, item_b, report, vector):
        content = report_content(item_a, item_b, report, vector)

        def work(cur):
            cur.execute("SELECT * FROM privrank_add_report(%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (credential_hash(token), key, *content, float(epsilon), int(max_answers), utc_day()))
            outcome, answered, *stored = cur.fetchone()
            if outcome.startswith("error:"):  # undone inside: raised here as the error it was
                raise self._sql_error(outcome[len("error:"):])("a report's write failed in the database")
            return report_receipt(outcome, int(answered), stored, content, max_answers)
        work.self_contained = True  # type: ignore[attr-defined]  # a function attribute
        return work

    def _commit_group(self, work):
        try:
            return super()._commit_group(work)
        except StoreUnavailable as exc:
            if exc.reason != "unavailable":
                raise
            self._pool.check()  # a connection broke: replace every broken idle one, then once more
            return super()._commit_group(work)

    def close(self) -> None:
        self._stop_writers()
        self._pool.close()


def open_store(target) -> Store:
    """The store at ``target``: a ``postgresql://`` URL, or else the path of a SQLite file (created if absent)."""
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    if text == ":memory:" or text.startswith("file:"):
        raise InputError(f"--db {text}: a survey's reports must outlive the server (an in-memory or URI database "
                         "would lose every acknowledged report): give a file path or a postgresql:// URL")
    return SqliteStore(text)
