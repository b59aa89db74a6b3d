"""The survey store in a PostgreSQL database (:class:`PostgresStore`; ``pip install 'privrank[postgres]'``).

A report's write is one call of a stored function, ``privrank_add_report``, which locks the
respondent's row (``FOR UPDATE``) before it reads: one round trip instead of five. Connections come
from a :class:`psycopg_pool.ConnectionPool` that replaces a broken one; a write that cannot get a
working connection or a lock in a bounded time gets
:class:`~privrank.serve.health.StoreUnavailable`, and its resend under the same key is answered as
a duplicate if its commit went through. The schema, the rules of a report's write and the group
commit are the shared store's (:mod:`privrank.serve.store`).
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any

from ..errors import InputError
from .admins import OWNER
from .health import StoreUnavailable
from .schema import ADMINS_TABLE
from .store import Store, credential_hash, report_content, report_receipt, utc_day


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
    row_lock = " FOR UPDATE"
    #: the tokens are hashed in one statement: the foreign key is checked at its end, when both tables hold
    #: the hashes; the report's function is dropped first, to be created anew with a renamed parameter; then the
    #: one admin token made the owner's, as on SQLite
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
                   "UPDATE reports SET token_hash = encode(sha256(convert_to(token_hash, 'UTF8')), 'hex')"),
                  ("CREATE TABLE IF NOT EXISTS admin (token_hash TEXT NOT NULL)", ADMINS_TABLE,
                   f"INSERT INTO admins (name, token_hash, added) SELECT '{OWNER}', token_hash, "
                   "to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD') FROM admin LIMIT 1",
                   "DROP TABLE admin"))
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

    def _check_own(self, cur) -> int:
        # first in the transaction that creates the schema: stores opened at once (the workers of privrank serve
        # --workers) make it one after another, not racing on its function ("tuple concurrently updated")
        cur.execute("SELECT pg_advisory_xact_lock(hashtext('privrank store schema'))")
        return super()._check_own(cur)

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
