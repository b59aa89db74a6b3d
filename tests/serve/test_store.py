"""The report store: SQLite and a real PostgreSQL server behave the same, budgets hold under races,
and the schema has no place for a true answer."""
import os
import shutil
import sqlite3
import stat
import threading
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from serve_helpers import fingerprint, free_port, key

import privrank as pr
from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.sqlite_store import SqliteStore
from privrank.serve.store import AnswersExhausted, UnknownRespondent, credential_hash

#: every column the store has; none could hold a true answer, an address or a user agent
COLUMNS = {"respondents": {"token_hash", "created"},
           "reports": {"id", "token_hash", "report_key", "item_a", "item_b", "report", "vector", "epsilon", "received"},
           "surveys": {"fingerprint"}, "survey_terms": {"fingerprint"},
           "survey_texts": {"id", "field", "text", "first_served"}, "invitations": {"code_hash", "used"},
           "admins": {"name", "token_hash", "added"}, "closed": {"at"}, "registration_limit": {"id", "tokens", "at"}}


def columns(target) -> dict:
    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            return {t: {row[1] for row in conn.execute(f"PRAGMA table_info({t})")} for t in COLUMNS}
    import psycopg

    with psycopg.connect(target, connect_timeout=10) as conn:
        rows = conn.execute("SELECT table_name, column_name FROM information_schema.columns "
                            "WHERE table_schema = 'public'").fetchall()
    found = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    return found


def test_the_schema_has_no_place_for_a_true_answer(store, target):
    assert columns(target) == COLUMNS


def test_tokens_are_random_and_reports_count_down(store):
    tokens = {store.new_respondent() for _ in range(20)}
    assert len(tokens) == 20 and all(len(t) == 32 for t in tokens)
    token = sorted(tokens)[0]
    left = [store.add_report(token, key=key(), item_a=a, item_b=b, report=r, epsilon=1.0, max_answers=3)
            for a, b, r in (("A", "B", 1), ("A", "C", -1), ("C", "B", 1))]
    assert left == [(2, False), (1, False), (0, False)]
    with pytest.raises(AnswersExhausted):
        store.add_report(token, key=key(), item_a="C", item_b="D", report=1, epsilon=1.0, max_answers=3)
    with pytest.raises(UnknownRespondent):
        store.add_report("not-a-token", key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=3)
    assert store.counts() == (20, 3)  # refusals stored nothing


def test_refusals_leave_the_store_usable(store):
    """A refused report rolls back its transaction; the pooled connection serves the next report."""
    token = store.new_respondent()
    for _ in range(5):
        with pytest.raises(UnknownRespondent):
            store.add_report("nobody", key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=1)
    assert store.add_report(token, key=key(), item_a="A", item_b="B", report=-1, epsilon=1.0,
                            max_answers=1).remaining == 0
    with pytest.raises(InputError, match="either"):
        store.add_report(token, key=key(), item_a="A", item_b="B", report=1, vector=[0.5], epsilon=1.0, max_answers=9)


def test_pair_reports_are_randomized_comparisons(store):
    users = [store.new_respondent() for _ in range(3)]
    sent = [(users[k % 3], "ABC"[k // 3], "BCD"[k // 3], 1 if k % 2 else -1, 0.3) for k in range(9)]
    for user, a, b, report, eps in sent:
        store.add_report(user, key=key(), item_a=a, item_b=b, report=report, epsilon=eps, max_answers=5)
    table = store.pair_reports()
    assert table.column_names == ["user", "item_a", "item_b", "outcome", "epsilon"]
    held = [(credential_hash(user), *rest) for user, *rest in sent]  # the user is the token's hash
    assert list(zip(*(table[c].to_pylist() for c in table.column_names))) == held  # in order, epsilon exact
    comps = pr.read_comparisons(table)
    assert comps.is_randomized and comps.n_records == 9 and comps.items == ("A", "B", "C", "D")


def test_an_empty_store_reads_as_empty(store):
    assert store.counts() == (0, 0)
    assert store.pair_reports().num_rows == 0
    assert store.vectors().size == 0


def test_vectors_round_trip_exactly(store):
    token = store.new_respondent()
    v = np.random.default_rng(3).standard_normal(6) / 3
    assert store.add_report(token, key=key(), vector=v.tolist(), epsilon=2.0, max_answers=1).remaining == 0
    np.testing.assert_array_equal(store.vectors(), v[None, :])
    assert store.pair_reports().num_rows == 0


def test_a_store_keeps_its_reports_and_its_survey(target):
    with open_store(target) as s:
        s.claim(fingerprint("survey-1"))
        token = s.new_respondent()
        s.add_report(token, key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=2)
    with open_store(target) as s:
        s.claim(fingerprint("survey-1"))
        assert s.counts() == (1, 1)
        assert s.add_report(token, key=key(), item_a="B", item_b="C", report=1, epsilon=1.0,
                            max_answers=2).remaining == 0
        with pytest.raises(InputError, match="different survey"):
            s.claim(fingerprint("survey-2"))


def test_budget_holds_under_concurrent_writers(store):
    """16 threads race to add reports for the same 4 respondents: each gets exactly max_answers."""
    tokens = [store.new_respondent() for _ in range(4)]
    max_answers, threads = 5, 16
    accepted, refused, errors = Counter(), Counter(), []
    lock = threading.Lock()
    start = threading.Barrier(threads)

    def writer(k):
        start.wait(timeout=30)
        for n in range(12):
            token = tokens[(k + n) % len(tokens)]
            try:
                store.add_report(token, key=key(), item_a=f"t{k}", item_b=f"n{n}", report=1, epsilon=1.0,
                                 max_answers=max_answers)
                with lock:
                    accepted[token] += 1
            except AnswersExhausted:
                with lock:
                    refused[token] += 1
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(repr(exc))
    pool = [threading.Thread(target=writer, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in pool) and errors == []
    assert accepted == Counter({t: max_answers for t in tokens})
    assert sum(refused.values()) == threads * 12 - len(tokens) * max_answers
    assert Counter(store.pair_reports()["user"].to_pylist()) == {credential_hash(t): n for t, n in accepted.items()}


def test_sqlite_is_durable_and_write_ahead(tmp_path):
    path = tmp_path / "reports.sqlite"
    with open_store(path) as s:
        assert isinstance(s, SqliteStore)
        with s._connection() as conn:
            assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
            assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_a_new_sqlite_database_is_readable_by_its_owner_only(tmp_path):
    """Under the usual umask 022, SQLite alone would create the database, its -wal and its -shm readable by
    everyone (0644): the store creates the file 0600 and SQLite gives the other two the same mode."""
    path = tmp_path / "reports.sqlite"
    umask = os.umask(0o022)
    try:
        with open_store(path) as s:
            s.add_report(s.new_respondent(), key=key(), item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=1)
            files = [path.with_name(path.name + end) for end in ("", "-wal", "-shm")]
            modes = {f.name: stat.S_IMODE(f.stat().st_mode) for f in files}
    finally:
        os.umask(umask)
    assert modes == {f.name: 0o600 for f in files}


def test_sqlite_checkpoints_in_a_thread_of_its_own_not_in_a_commit(tmp_path, monkeypatch):
    """The WAL is copied into the database by the store's checkpoint thread within a second or so, long
    before SQLite's own checkpoint at 1,000 pages would come inside a commit that a whole group waits for."""
    monkeypatch.setattr(SqliteStore, "CHECKPOINT_SECONDS", 0.1)
    path = tmp_path / "reports.sqlite"
    with open_store(path) as s:
        token = s.new_respondent()
        for k in range(20):
            s.add_report(token, key=key(), epsilon=1.0, max_answers=100, item_a=f"a{k}", item_b="b", report=1)
        with s._connection() as conn:
            assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == SqliteStore.WAL_PAGES
        deadline = time.monotonic() + 30
        while True:  # the database file alone (a copy, without its WAL) holds the reports once checkpointed
            shutil.copyfile(path, tmp_path / "main.sqlite")
            with sqlite3.connect(tmp_path / "main.sqlite") as conn:
                tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master")}
                copied = conn.execute("SELECT count(*) FROM reports").fetchone()[0] if "reports" in tables else 0
            if copied == 20:
                break
            assert time.monotonic() < deadline, copied
            time.sleep(0.05)
        checkpointer = s._checkpointer
        assert checkpointer.is_alive()
    assert not checkpointer.is_alive()  # ended with the store


def test_bad_targets_are_refused(tmp_path):
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(InputError, match="not a usable SQLite"):
        open_store(junk)
    with pytest.raises(InputError, match="does not exist"):
        open_store(tmp_path / "missing" / "reports.sqlite")
    with pytest.raises(InputError, match="cannot connect"):
        open_store(f"postgresql://nobody@127.0.0.1:{free_port()}/none")


def test_a_closed_store_refuses(tmp_path):
    s = open_store(tmp_path / "r.sqlite")
    s.close()
    with pytest.raises(InputError, match="closed"):
        s.new_respondent()
