"""Append-only storage of randomized reports: what the SQLite and PostgreSQL stores share.

:func:`privrank.serve.open_store` opens a store: a SQLite file
(:class:`~privrank.serve.sqlite_store.SqliteStore`) or a PostgreSQL database at a URL
(:class:`~privrank.serve.postgres_store.PostgresStore`). Their base, :class:`Store`, holds the
rules of a report's write and the group commit; what they store, and every statement, are
:mod:`privrank.serve.schema`'s.

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
acknowledged to the browser is on disk (SQLite: WAL mode with ``synchronous=FULL``; PostgreSQL:
its default synchronous commit). The reports waiting at one moment are committed together, each
in a savepoint of its own (group commit: SQLite by one writer thread, PostgreSQL by a few).

The two dialects share every statement but the migration and a report's write (one call of a
stored function on PostgreSQL, one round trip instead of five), and differ only in placeholders
and the type of the autoincrement key. A store may be used from many threads.

Faults
------
A database the store cannot write to, or whose lock another process holds for more than a few
seconds, is refused when it is opened, before anything is created. While serving, a write that
cannot get a lock or a working connection in a bounded time raises
:class:`~privrank.serve.health.StoreUnavailable` (HTTP 503 with ``Retry-After``): nothing of it
was stored, or -- a connection broken at the very commit -- its resend under the same key is
answered as a duplicate, so a retried report is never lost nor stored twice. Each dialect's
module says how it meets this.
"""
from __future__ import annotations

import hashlib
import json
import math
import queue
import re
import secrets
import threading
import time
from concurrent.futures import Future
from functools import cached_property
from typing import NamedTuple, TypeGuard

from ..errors import BudgetExceededError, InputError
from .admins import OWNER, AdminTable
from .health import damaged
from .invitations import invitation_token
from .ratelimit import draw, full_after
from .schema import ADMINS_TABLE, LAYOUTS, SCHEMA, SQL, utc_day

#: bytes of randomness of a respondent's token, an invitation code and a report's key
TOKEN_BYTES, INVITATION_BYTES, KEY_BYTES = 24, 16, 16

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
    used by an earlier privrank: one message for all, so codes cannot be probed)."""


REFUSED_INVITATION = ("this survey is by invitation only, and this invitation is unknown or already used (one first "
                      "used by an earlier privrank works in its first browser only): open the link of your own "
                      "invitation")


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


class Store(AdminTable):
    """The reports of one survey and its admins (module docstring); :func:`privrank.serve.open_store` opens one."""

    placeholder = "?"
    id_type = "INTEGER"
    real = "REAL"
    begin = "BEGIN IMMEDIATE"
    #: what locks the rows a SELECT reads until the commit (SQLite: nothing, ``BEGIN IMMEDIATE`` serializes the writers)
    row_lock = ""
    #: statements run after the schema's at every open (the dialect's stored routines)
    routines: tuple = ()
    _name = "the database"
    #: (table, column) of every table and view but SQLite's own
    tables = ("SELECT m.name, p.name FROM sqlite_master AS m LEFT JOIN pragma_table_info(m.name) AS p "
              "WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")
    #: what brings each schema of :data:`LAYOUTS` to the next: times coarsened to the UTC day and the key
    #: column added; then the tokens replaced by their :func:`credential_hash` (``privrank_credential_hash``,
    #: a function of each connection), the reports' after the respondents', so the foreign key between them
    #: is checked at the commit; then the one admin token made the :data:`~privrank.serve.admins.OWNER`'s,
    #: added on the day of the migration (a store that never had the ``admin`` table gets it first, empty)
    migrations: tuple[tuple[str, ...], ...] = (("UPDATE respondents SET created = strftime('%Y-%m-%d', created, 'unixepoch')",
                   "UPDATE reports SET received = strftime('%Y-%m-%d', received, 'unixepoch')",
                   "ALTER TABLE reports ADD COLUMN report_key TEXT"),
                  ("PRAGMA defer_foreign_keys = ON",
                   "ALTER TABLE respondents RENAME COLUMN token TO token_hash",
                   "ALTER TABLE reports RENAME COLUMN token TO token_hash",
                   "UPDATE respondents SET token_hash = privrank_credential_hash(token_hash)",
                   "UPDATE reports SET token_hash = privrank_credential_hash(token_hash)"),
                  ("CREATE TABLE IF NOT EXISTS admin (token_hash TEXT NOT NULL)", ADMINS_TABLE,
                   f"INSERT INTO admins (name, token_hash, added) SELECT '{OWNER}', token_hash, "
                   "strftime('%Y-%m-%d', 'now') FROM admin LIMIT 1",
                   "DROP TABLE admin"))

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
        self._begin(cur, write)
        try:
            result = work(cur)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")
        return result

    def _begin(self, cur, write: bool) -> None:
        """Start :meth:`_run`'s transaction (a write's takes the write lock: :attr:`begin`)."""
        cur.execute(self.begin if write else "BEGIN")

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
        """Stop taking writes, answer every one queued, and end the writer threads (and the bucket's forgetting)."""
        self._forgotten.set()
        with self._guard:  # no write is queued after the writers' stop: every queued one is answered
            writers, self._stopping = self._writers or [], True
            for _ in writers:
                self._queue.put(None)  # one stop for each writer
        for writer in writers:
            writer.join(timeout=30)
        if self._forgetting is not None:
            self._forgetting.join(timeout=30)

    # -- the registration limit's time, kept only while it matters ---------------------------
    _forgetting: threading.Thread | None = None

    @cached_property
    def _forgotten(self) -> threading.Event:  # set when the store stops: the forgetting thread ends
        return threading.Event()

    def _forget_later(self, per_minute: float) -> None:
        """Start (once) the thread that forgets the bucket's last draw once the bucket is full again
        (:mod:`privrank.serve.ratelimit`), every half of :func:`full_after` seconds until the store closes.
        Started by a draw, never at open: a server forks its workers with no thread running."""
        if self._forgetting is None:
            after = full_after(per_minute)

            def forget():
                while not self._forgotten.wait(after / 2):
                    try:
                        self.forget_full_bucket(per_minute)
                    except Exception:  # unavailable for now: tried again; closed: the wait above ends
                        continue
            with self._guard:
                if self._forgetting is None:
                    self._forgetting = threading.Thread(target=forget, name="privrank-store-limit", daemon=True)
                    self._forgetting.start()

    def forget_full_bucket(self, per_minute: float, now: float | None = None) -> None:
        """Forget the registration limit's last draw if the bucket is full again at ``now`` (default: the
        clock): the row then holds no time, and reads as a full bucket."""
        moment = time.time() if now is None else now
        self._write(lambda cur: cur.execute(self._sql("limit_forget"), (moment - full_after(per_minute),)))

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

    def new_respondent(self, invitation: str | None = None, per_minute: float | None = None) -> str:
        """A respondent's token (their only credential): :meth:`register`'s token."""
        return self.register(invitation, per_minute)[0]

    def register(self, invitation: str | None = None, per_minute: float | None = None) -> tuple[str, bool]:
        """Register a respondent: ``(token, new)``, the token's hash stored before it is returned.

        On an open store the token is random and the invitation is not looked at; with
        ``per_minute`` the registration takes a token of the store's registration limit in the same
        transaction (:mod:`privrank.serve.ratelimit`: one bucket for every process on the database). On an
        invitation-only store (one that holds invitations) the token is the code's
        :func:`~privrank.serve.invitations.invitation_token`: an unused code is marked used in the same
        transaction and its respondent registered (``new``); a used one whose token is registered
        gives that token again, not new (the same respondent on another device, with the same
        budget). The store keeps no link between the code and the token.

        Raises
        ------
        InvitationRefused
            The store is invitation-only and the code is missing, unknown, or used by an earlier
            privrank (which drew its token at random).
        RegistrationsLimited
            The store is open and its registration limit's bucket is empty; nothing is stored or taken.
        """
        def work(cur):  # an open store's token is drawn inside: a write run again after a broken connection draws anew
            if not cur.execute(self._sql("invitations")).fetchone()[0]:
                if per_minute is not None:  # the row locked first: the time is read after every earlier draw
                    tokens, at = cur.execute(self._sql("limit") + self.row_lock).fetchone()
                    cur.execute(self._sql("limit_draw"), draw(tokens, at, per_minute, time.time()))
                    self._forget_later(per_minute)
                token = secrets.token_urlsafe(TOKEN_BYTES)
            elif not is_urlsafe_token(invitation, INVITATION_BYTES):
                raise InvitationRefused(REFUSED_INVITATION)
            else:
                token = invitation_token(invitation)
                if cur.execute(self._sql("use"), (credential_hash(invitation),)).rowcount != 1:
                    if cur.execute(self._sql("lock"), (credential_hash(token),)).fetchone() is None:
                        raise InvitationRefused(REFUSED_INVITATION)
                    return token, False
            cur.execute(self._sql("new"), (credential_hash(token), utc_day()))
            return token, True
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

    def progress(self, token: str) -> list[tuple[str | None, str | None]] | None:
        """``(item_a, item_b)`` of each report of the respondent with ``token`` (``(None, None)`` for a
        ballot), or None for a token the store never issued."""
        rows = self._query("progress", (credential_hash(token),))
        return None if not rows else [(a, b) for a, b, report_id in rows if report_id is not None]

    def invitation_states(self) -> tuple[dict[str, bool], dict[str, int]]:
        """``({code hash: used}, {token hash: reports})``: every invitation, and every respondent's reports."""
        used = {code: bool(flag) for code, flag in self._query("invitation_states")}
        return used, {token: int(n) for token, n in self._query("respondent_reports")}

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

    def closed_at(self) -> str | None:
        """When the survey was closed (:meth:`close_survey`), as ISO 8601 text in UTC, or None."""
        return self._query("closed")[0][0]

    def close_survey(self, at: str) -> None:
        """Record that the survey closed at ``at`` (ISO 8601 text in UTC), unless it was closed before."""
        self._write(lambda cur: cur.execute(self._sql("close"), (at,)))
