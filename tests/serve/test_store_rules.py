"""The store against an adversary: a report is stored once (idempotency key), a pair once per
respondent, one failing report never fails another's, times are kept to the day, invitations are
one-time and hashed, tokens are kept hashed, and a store of an earlier schema is migrated in place."""
import hashlib
import re
import sqlite3
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from serve_helpers import execute, fingerprint, key

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import pseudonym
from privrank.serve.postgres_store import PostgresStore
from privrank.serve.sqlite_store import SqliteStore
from privrank.serve.store import AnswersExhausted, InvitationRefused, ReportConflict, UnknownRespondent, credential_hash


def rows(target, query: str) -> list:
    """``query`` run on the database directly, as someone holding the file or the server would."""
    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            return conn.execute(query).fetchall()
    import psycopg

    with psycopg.connect(target, connect_timeout=10) as conn:
        return conn.execute(query).fetchall()


def race(n, work):
    """``work(k)`` in ``n`` threads started together; returns their results (or exceptions) by k."""
    results = [None] * n
    start = threading.Barrier(n)

    def run(k):
        start.wait(timeout=30)
        try:
            results[k] = work(k)
        except Exception as exc:
            results[k] = exc
    pool = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in pool)
    return results


# ------------------------------------------------------------------------------- once, and once per pair

def test_a_resent_report_is_stored_once(store):
    token, k = store.new_respondent(), key()
    first = store.add_report(token, key=k, item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3)
    again = store.add_report(token, key=k, item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3)
    assert (first, again) == ((2, False), (2, True))
    assert store.counts() == (1, 1)
    for other in ({"item_a": "A", "item_b": "B", "report": -1}, {"item_a": "B", "item_b": "A", "report": 1},
                  {"item_a": "A", "item_b": "C", "report": 1}):
        with pytest.raises(ReportConflict) as refused:
            store.add_report(token, key=k, **other, epsilon=1.0, max_answers=3)
        assert refused.value.reason == "key-reused"
    assert store.counts() == (1, 1)


def test_a_pair_is_reported_once_per_respondent_in_either_order(store):
    token = store.new_respondent()
    store.add_report(token, key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=9)
    for a, b, r in (("A", "B", 1), ("A", "B", -1), ("B", "A", 1)):
        with pytest.raises(ReportConflict) as refused:
            store.add_report(token, key=key(), item_a=a, item_b=b, report=r, epsilon=1.0, max_answers=9)
        assert refused.value.reason == "pair-answered"
    other = store.new_respondent()  # another respondent may report the same pair
    assert store.add_report(other, key=key(), item_a="B", item_b="A", report=-1, epsilon=1.0,
                            max_answers=9) == (8, False)
    assert store.counts() == (2, 2)


def test_a_resend_of_the_last_answer_is_a_duplicate_not_exhausted(store):
    token, k = store.new_respondent(), key()
    assert store.add_report(token, key=k, vector=[0.25, -0.5], epsilon=1.0, max_answers=1) == (0, False)
    assert store.add_report(token, key=k, vector=[0.25, -0.5], epsilon=1.0, max_answers=1) == (0, True)
    with pytest.raises(ReportConflict, match="another report"):
        store.add_report(token, key=k, vector=[0.25, 0.5], epsilon=1.0, max_answers=1)
    with pytest.raises(AnswersExhausted):
        store.add_report(token, key=key(), vector=[0.25, -0.5], epsilon=1.0, max_answers=1)
    assert store.vectors().shape == (1, 2)


def test_racing_reports_of_one_pair_store_one(store):
    """24 threads send the same pair for one respondent, each with its own key (a page that randomized it
    24 times), and 24 more resend one report under one key: one of each is stored."""
    token, k = store.new_respondent(), key()

    def fresh(n):
        return store.add_report(token, key=key(), item_a="A", item_b="B", report=1 - 2 * (n % 2), epsilon=1.0,
                                max_answers=50)

    def resend(n):
        return store.add_report(token, key=k, item_a="C", item_b="D", report=1, epsilon=1.0, max_answers=50)
    results = race(24, fresh)
    assert sum(not isinstance(r, Exception) for r in results) == 1
    assert all(r.reason == "pair-answered" for r in results if isinstance(r, Exception))
    results = race(24, resend)
    assert not any(isinstance(r, Exception) for r in results)
    assert Counter(r.duplicate for r in results) == Counter({True: 23, False: 1})
    assert store.counts() == (1, 2)


def test_a_failing_report_never_fails_another(tmp_path):
    """160 honest reports race with 40 that fail inside the group commit (a lone surrogate in the token
    cannot be encoded): every honest report is stored and acknowledged (one savepoint per report; the
    whole group used to be rolled back). Without the savepoints, this fails."""
    with SqliteStore(tmp_path / "r.sqlite") as s:
        tokens = [s.new_respondent() for _ in range(160)]

        def send(n):
            token = tokens[n] if n < 160 else "\ud800" + tokens[0][1:]
            return s.add_report(token, key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=1)
        results = race(200, send)
        assert all(r == (0, False) for r in results[:160]), Counter(type(r).__name__ for r in results[:160])
        assert all(isinstance(r, UnicodeEncodeError) for r in results[160:])
        assert s.counts() == (160, 160)


# ------------------------------------------------------------------------------------------------ times

def test_times_are_kept_to_the_utc_day(store, target):
    token = store.new_respondent()
    store.add_report(token, key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=1)
    today = {time.strftime("%Y-%m-%d", time.gmtime(time.time() + d)) for d in (-5, 0)}  # around midnight
    (created,), = rows(target, "SELECT created FROM respondents")
    (received,), = rows(target, "SELECT received FROM reports")
    assert created in today and received in today
    assert store.registrations_by_day() == [(created, 1)]


PREVIOUS_SCHEMA = (
    "CREATE TABLE surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE respondents (token TEXT PRIMARY KEY, created {real} NOT NULL)",
    "CREATE TABLE reports (id {id} PRIMARY KEY, token TEXT NOT NULL REFERENCES respondents (token), item_a TEXT, "
    "item_b TEXT, report INTEGER CHECK (report IN (1, -1)), vector TEXT, epsilon {real} NOT NULL, "
    "received {real} NOT NULL, CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX reports_by_token ON reports (token)",
    f"INSERT INTO surveys VALUES ('{fingerprint('survey')}')",
    "INSERT INTO respondents VALUES ('tok-one', 1714608000.123456), ('tok-two', 1714700000.654321)",
    "INSERT INTO reports (token, item_a, item_b, report, epsilon, received) VALUES "
    "('tok-one', 'A', 'B', 1, 1.0, 1714608001.5), ('tok-one', 'A', 'B', -1, 1.0, 1714608002.25), "
    "('tok-two', 'B', 'C', 1, 1.0, 1714700001.75)",
)


def test_a_store_of_the_previous_schema_is_migrated_in_place(target):
    """A database written before the change (microsecond times, no keys, no invitations; one respondent
    reported a pair twice) opens: its times are coarsened to the UTC day, the new columns and tables
    exist, every report is kept in order, and the pair rule holds against the old reports too."""
    types = {"real": "REAL", "id": "INTEGER"} if isinstance(target, Path) else \
        {"real": "DOUBLE PRECISION", "id": "BIGSERIAL"}
    execute(target, *(s.format(**types) for s in PREVIOUS_SCHEMA))
    with open_store(target) as s:
        s.claim(fingerprint("survey"))
        assert s.counts() == (2, 3)
        assert s.pair_reports()["outcome"].to_pylist() == [1, -1, 1]
        assert s.registrations_by_day() == [("2024-05-02", 1), ("2024-05-03", 1)]
        with pytest.raises(ReportConflict, match="already reported this pair"):
            s.add_report("tok-two", key=key(), item_a="C", item_b="B", report=1, epsilon=1.0, max_answers=5)
        assert s.add_report("tok-two", key=key(), item_a="A", item_b="C", report=1, epsilon=1.0, max_answers=5) == \
            (3, False)
        assert s.invitations() == (0, 0)
    assert sorted(rows(target, "SELECT created FROM respondents")) == [("2024-05-02",), ("2024-05-03",)]
    received = [r[0] for r in rows(target, "SELECT received FROM reports ORDER BY id")]
    assert received[:3] == ["2024-05-02", "2024-05-02", "2024-05-03"] and re.fullmatch(r"\d{4}-\d\d-\d\d", received[3])
    with open_store(target) as s:  # opened again: nothing left to migrate
        assert s.counts() == (2, 4)


# ------------------------------------------------------------------------------------------------ tokens

def test_tokens_are_kept_hashed(store, target):
    """The store keeps a token's SHA-256, never the token: a copy of the database cannot report in a
    respondent's name. Every lookup hashes the token presented (a report, its resend, the pair rule)."""
    token = store.new_respondent()
    k = key()
    assert store.add_report(token, key=k, item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3) == (2, False)
    assert store.add_report(token, key=k, item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3) == (2, True)
    with pytest.raises(ReportConflict, match="already reported this pair"):
        store.add_report(token, key=key(), item_a="B", item_b="A", report=1, epsilon=1.0, max_answers=3)
    held = credential_hash(token)
    assert held == hashlib.sha256(token.encode()).hexdigest()
    assert rows(target, "SELECT token_hash FROM respondents") == [(held,)]
    assert rows(target, "SELECT token_hash FROM reports") == [(held,)]
    with pytest.raises(UnknownRespondent):  # the hash is no credential: it is hashed in turn
        store.add_report(held, key=key(), item_a="A", item_b="C", report=1, epsilon=1.0, max_answers=3)
    if isinstance(target, Path):
        store.close()  # every byte of the file and its WAL
        files = [target] + [target.with_name(target.name + end) for end in ("-wal", "-shm")]
        assert not any(token.encode() in f.read_bytes() for f in files if f.exists())


#: the schema before tokens were hashed (its tables, and PostgreSQL's report function of the time)
PLAIN_TOKEN_SCHEMA = (
    "CREATE TABLE surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE survey_terms (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE survey_texts (id {id} PRIMARY KEY, field TEXT NOT NULL, text TEXT NOT NULL, "
    "first_served TEXT NOT NULL)",
    "CREATE TABLE respondents (token TEXT PRIMARY KEY, created TEXT NOT NULL)",
    "CREATE TABLE reports (id {id} PRIMARY KEY, token TEXT NOT NULL REFERENCES respondents (token), "
    "report_key TEXT, item_a TEXT, item_b TEXT, report INTEGER CHECK (report IN (1, -1)), vector TEXT, "
    "epsilon {real} NOT NULL, received TEXT NOT NULL, CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX reports_by_token ON reports (token)",
    "CREATE UNIQUE INDEX reports_by_key ON reports (token, report_key)",
    "CREATE TABLE invitations (code_hash TEXT PRIMARY KEY, used INTEGER NOT NULL DEFAULT 0 "
    "CHECK (used IN (0, 1)))",
    "CREATE TABLE admin (token_hash TEXT NOT NULL)",
)
#: two respondents of that schema: the first reported two pairs (under keys), the second one
OLD_TOKENS, OLD_KEYS = ("A" * 32, "b-" * 16), ("k" * 22, "K" * 22, "q" * 22)


def plain_token_store(target) -> None:
    """Write a store of the schema before tokens were hashed at ``target``, with two respondents."""
    types = {"real": "REAL", "id": "INTEGER"} if isinstance(target, Path) else \
        {"real": "DOUBLE PRECISION", "id": "BIGSERIAL"}
    one, two = OLD_TOKENS
    data = (f"INSERT INTO surveys VALUES ('{fingerprint('survey')}')",
            f"INSERT INTO survey_terms VALUES ('{fingerprint('survey')}')",
            f"INSERT INTO respondents VALUES ('{one}', '2025-01-02'), ('{two}', '2025-01-03')",
            "INSERT INTO reports (token, report_key, item_a, item_b, report, epsilon, received) VALUES "
            f"('{one}', '{OLD_KEYS[0]}', 'A', 'B', 1, 1.0, '2025-01-02'), "
            f"('{one}', '{OLD_KEYS[1]}', 'B', 'C', -1, 1.0, '2025-01-02'), "
            f"('{two}', '{OLD_KEYS[2]}', 'A', 'C', 1, 1.0, '2025-01-03')")
    # the report function of the time, as PostgreSQL kept it: its parameter and columns named token
    routines = () if isinstance(target, Path) else \
        tuple(r.replace("token_hash", "token") for r in PostgresStore.routines)
    execute(target, *(statement.format(**types) for statement in PLAIN_TOKEN_SCHEMA), *data, *routines)


def test_a_store_with_plain_tokens_is_migrated_in_place(target):
    """A database whose tokens are in plain text opens with each token replaced by its hash, in place:
    its respondents continue with the tokens their browsers hold (a resend under an old key is
    still a duplicate, an old pair still answered), the export names them as before, and no token
    is left in the database."""
    plain_token_store(target)
    one, two = OLD_TOKENS
    with open_store(target) as s:
        s.claim(fingerprint("survey"))
        assert s.counts() == (2, 3)
        assert s.add_report(one, key=OLD_KEYS[1], item_a="B", item_b="C", report=-1, epsilon=1.0,
                            max_answers=3) == (1, True)
        with pytest.raises(ReportConflict, match="already reported this pair"):
            s.add_report(two, key=key(), item_a="C", item_b="A", report=1, epsilon=1.0, max_answers=3)
        assert s.add_report(one, key=key(), item_a="C", item_b="D", report=1, epsilon=1.0, max_answers=3) == \
            (0, False)
        assert s.add_report(two, key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3) == \
            (1, False)
        users = s.pair_reports()["user"].to_pylist()
    assert users == [credential_hash(t) for t in (one, one, two, one, two)]
    held = sorted(rows(target, "SELECT token_hash FROM respondents"))
    assert held == sorted((credential_hash(t),) for t in OLD_TOKENS)
    assert all(pseudonym(credential_hash(t)) == "r" + hashlib.sha256(t.encode()).hexdigest()[:16] for t in OLD_TOKENS)
    with open_store(target) as s:  # opened again: nothing left to migrate
        assert s.counts() == (2, 5)
    if isinstance(target, Path):
        assert not any(t.encode() in target.read_bytes() for t in OLD_TOKENS)


def test_a_migration_that_fails_leaves_the_store_as_it_was(target, monkeypatch):
    """The migration is one transaction with the schema's creation: a failure at its last statement leaves
    every token, table and column as it was, and the next open migrates."""
    plain_token_store(target)
    store_type = SqliteStore if isinstance(target, Path) else PostgresStore
    first, hashing, *later = store_type.migrations
    monkeypatch.setattr(store_type, "migrations", (first, (*hashing, "SELECT privrank_no_such_function()"), *later))
    with pytest.raises(Exception, match="privrank_no_such_function"):
        open_store(target)
    assert sorted(rows(target, "SELECT token FROM respondents")) == sorted((t,) for t in OLD_TOKENS)
    assert sorted(rows(target, "SELECT token FROM reports")) == sorted((t,) for t in (*OLD_TOKENS, OLD_TOKENS[0]))
    monkeypatch.undo()
    with open_store(target) as s:
        assert s.add_report(OLD_TOKENS[1], key=key(), item_a="C", item_b="D", report=1, epsilon=1.0,
                            max_answers=3) == (1, False)


# ------------------------------------------------------------------------------------------ invitations

def test_invitations_are_one_time_and_kept_hashed(store, target):
    codes = store.add_invitations(3)
    assert len(set(codes)) == 3 and all(re.fullmatch(r"[A-Za-z0-9_-]{22}", c) for c in codes)
    stored = {r[0] for r in rows(target, "SELECT code_hash FROM invitations")}
    assert stored == {hashlib.sha256(c.encode()).hexdigest() for c in codes} == {credential_hash(c) for c in codes}
    for refused in (None, "", "x" * 22, codes[0] + "A", codes[0][:-1] + "\x00", "\ud800" * 22):
        with pytest.raises(InvitationRefused, match="unknown or already used"):
            store.new_respondent(refused)
    token = store.new_respondent(codes[0])
    assert re.fullmatch(r"[A-Za-z0-9_-]{32}", token)
    assert store.register(codes[0]) == (token, False)  # used: the same respondent again (another device)
    assert store.invitations() == (3, 1) and store.counts() == (1, 0)
    assert set(rows(target, "SELECT * FROM respondents")[0]) & set(codes) == set()  # no link to the code


def test_a_store_with_invitations_stays_invitation_only(target):
    with open_store(target) as s:
        first = s.add_invitations(1)
    with open_store(target) as s:  # a restart without new invitations
        with pytest.raises(InvitationRefused):
            s.new_respondent()
        more = s.add_invitations(2)  # adding more later is allowed
        assert s.invitations() == (3, 0)
        assert len({s.new_respondent(c) for c in first + more}) == 3


def test_an_open_store_with_respondents_cannot_switch_to_invitations(store):
    store.new_respondent()
    with pytest.raises(InputError, match="without an invitation"):
        store.add_invitations(5)
    assert store.invitations() == (0, 0)
    store.new_respondent()  # still open


def test_racing_uses_of_one_invitation_register_one_respondent(store):
    code, = store.add_invitations(1)
    results = race(16, lambda n: store.register(code))
    assert sorted(new for _, new in results) == [False] * 15 + [True]  # one registration, 15 resumptions of it
    assert len({token for token, _ in results}) == 1 and store.counts() == (1, 0)
