"""The store under faults: a database it cannot write to, or that another process holds locked, is
refused at start-up with a clear message; a lock met while serving, or a PostgreSQL server that is
down or restarts, gives 503 with ``Retry-After`` and a JSON reason, never a 500, and loses or
doubles no report; hostile text (NUL, lone surrogates) never reaches either database as a 500."""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from urllib.parse import quote

import pytest
from serve_helpers import free_port, key

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.postgres_store import PostgresStore
from privrank.serve.sqlite_store import SqliteStore
from privrank.serve.store import credential_hash
from privrank.serve.survey import Survey

starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "admin-token-for-the-tests-0123456789"
ITEMS = ("alpha", "beta", "gamma", "delta")
SURVEY = Survey(title="Faults", question="Which is better?", items=ITEMS, epsilon=1.0, budget=6.0)
PAIRS = [(a, b) for i, a in enumerate(ITEMS) for b in ITEMS[i + 1:]]


def client_of(store):
    app = create_app(SURVEY, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6)
    return starlette_testclient.TestClient(app, raise_server_exceptions=False)


def report(token, pair=("alpha", "beta"), k=None):
    return {"token": token, "key": k or key(), "item_a": pair[0], "item_b": pair[1], "report": 1, "epsilon": 1.0}


def post(client, path, doc):
    """``doc`` as JSON with every non-ASCII character escaped (a lone surrogate cannot be sent as UTF-8)."""
    return client.post(path, content=json.dumps(doc).encode(), headers={"content-type": "application/json"})


def assert_unavailable(r, reason):
    assert r.status_code == 503, r.text
    assert r.json()["reason"] == reason and isinstance(r.json()["error"], str)
    assert int(r.headers["retry-after"]) >= 1


# ------------------------------------------------------------------------------ an unwritable file

def unprivileged(argv: list) -> list:
    """``argv`` run so that file modes apply: as root, without the capabilities that override them."""
    if sys.platform != "linux":
        pytest.skip("file modes are made to apply to root with Linux capabilities")
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("as root, an unwritable file needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
    return ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
            "--bounding-set=-dac_override,-dac_read_search", *argv]


def serve(tmp_path, db):
    """``privrank serve`` on ``db``, unprivileged; its completed process (it must exit on its own)."""
    survey = tmp_path / "survey.toml"
    survey.write_text('title = "Faults"\nquestion = "Which?"\nitems = ["a", "b", "c"]\nepsilon = 1.0\nbudget = 2.0\n')
    survey.chmod(0o444)
    argv = [sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())", "serve",
            str(survey), "--db", str(db), "--port", str(free_port()), "--admin-token", ADMIN]
    try:
        return subprocess.run(unprivileged(argv), capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("privrank serve started serving a database it cannot write to")


@pytest.mark.parametrize("what", ["file", "directory"])
def test_an_unwritable_database_is_refused_before_serving(tmp_path, what):
    """A store file of mode 0444, or in a directory of mode 0555 (no -wal or -shm file can be made beside it),
    used to start a server whose every registration and report then failed with 500."""
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "reports.sqlite"
    with open_store(db) as s:
        s.claim(Survey(title="Faults", question="Which?", items=("a", "b", "c"), epsilon=1.0,
                       budget=2.0).fingerprint())
    for leftover in folder.glob("reports.sqlite-*"):
        leftover.unlink()
    (db if what == "file" else folder).chmod(0o444 if what == "file" else 0o555)
    before = sorted(p.name for p in folder.iterdir())
    try:
        done = serve(tmp_path, db)
    finally:
        folder.chmod(0o755)
        db.chmod(0o644)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"{db}: cannot write to the database (read-only" in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == before  # nothing created


# ------------------------------------------------------------------ a lock held by another process

@pytest.fixture
def short_lock_wait(monkeypatch):
    monkeypatch.setattr(SqliteStore, "LOCK_WAIT", 0.5)


def hold_lock(path, begin="BEGIN IMMEDIATE"):
    """Another process's connection holding ``path``'s write lock (SQLite locks a file, not a process)."""
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute(begin)
    return other


@pytest.mark.parametrize("begin", ["BEGIN IMMEDIATE", "BEGIN EXCLUSIVE"])
def test_a_locked_store_is_refused_at_open_after_a_short_wait(tmp_path, begin):
    """Used to wait 30 s, then end in a sqlite3.OperationalError traceback."""
    db = tmp_path / "reports.sqlite"
    open_store(db).close()
    other = hold_lock(db, begin)
    try:
        t = time.monotonic()
        with pytest.raises(InputError, match=r"is locked by another process \(another privrank serve\?\)") as refused:
            open_store(db)
        assert time.monotonic() - t < SqliteStore.LOCK_WAIT + 5
        assert str(db) in str(refused.value)
    finally:
        other.close()


def test_a_new_file_locked_in_rollback_mode_is_refused(tmp_path, short_lock_wait):
    """Another process that made the file and holds it exclusively, before WAL mode: even reading waits."""
    db = tmp_path / "reports.sqlite"
    other = hold_lock(db, "BEGIN EXCLUSIVE")
    try:
        other.execute("CREATE TABLE mine (x)")
        with pytest.raises(InputError, match="is locked by another process"):
            open_store(db)
    finally:
        other.close()


def test_a_lock_met_while_serving_gives_503_busy_and_the_writes_go_on_after_it(tmp_path, short_lock_wait):
    """Reports and registrations that cannot get the lock in time get 503 ``busy`` with Retry-After (they
    used to wait 30 s, then get 500); nothing of theirs is stored, the writer goes on, and their resends
    after the lock is released are stored once."""
    db = tmp_path / "reports.sqlite"
    with open_store(db) as store, client_of(store) as client:
        tokens = [client.post("/api/respondents").json()["token"] for _ in range(6)]
        assert client.post("/api/reports", json=report(tokens[0])).status_code == 201
        other = hold_lock(db)
        try:
            pending = [report(t) for t in tokens]
            answers = [None] * len(pending)

            def send(k):
                answers[k] = client.post("/api/reports", json=pending[k])
            t = time.monotonic()
            pool = [threading.Thread(target=send, args=(k,)) for k in range(len(pending))]
            for thread in pool:
                thread.start()
            for thread in pool:
                thread.join(timeout=30)
            assert time.monotonic() - t < 10 * SqliteStore.LOCK_WAIT + 5
            for r in answers:
                assert_unavailable(r, "busy")
            assert_unavailable(client.post("/api/respondents"), "busy")
            assert store.counts() == (6, 1)  # reads go on: WAL readers never wait for a writer
        finally:
            other.close()
        resent = Counter(client.post("/api/reports", json=body).status_code for body in pending)
        assert resent == Counter({201: 5, 409: 1})  # tokens[0] already reported this pair
        assert client.post("/api/respondents").status_code == 201
        assert store.counts() == (7, 6)


# ------------------------------------------------------------------------------------- PostgreSQL

def test_reports_go_on_across_a_postgresql_restart(postgres_cluster, monkeypatch):
    """Writers stream reports through the real app while the server restarts (pg_ctl restart -m fast): a
    report in flight may get 503 (and is resent with its key), none gets 500, every one is stored once; the
    30 requests sent after the restart all succeed at once (most of them used to fail with 500 on stale
    pooled connections)."""
    monkeypatch.setattr(PostgresStore, "POOL_WAIT", 10.0)
    with open_store(f"{postgres_cluster.url}/postgres") as store, client_of(store) as client:
        statuses, lock, stop = Counter(), threading.Lock(), threading.Event()
        acknowledged = []

        def send(body):
            for _ in range(50):
                r = client.post("/api/reports", json=body)
                with lock:
                    statuses[r.status_code] += 1
                if r.status_code != 503:
                    return r
                time.sleep(0.2)
            pytest.fail("a report was refused with 503 for 10 s")

        def writer():
            while not stop.is_set():
                token = client.post("/api/respondents").json()["token"]
                for pair in PAIRS:
                    body = report(token, pair)
                    r = send(body)
                    assert r.status_code in (200, 201), r.text
                    with lock:
                        acknowledged.append((token, *pair))
        pool = [threading.Thread(target=writer) for _ in range(4)]
        for thread in pool:
            thread.start()
        time.sleep(1.0)
        postgres_cluster.restart()
        time.sleep(1.0)
        stop.set()
        for thread in pool:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in pool)
        assert set(statuses) <= {200, 201, 503} and statuses[201] > 0
        token = client.post("/api/respondents").json()["token"]
        after = [client.post("/api/reports", json=report(token, PAIRS[k % 6])).status_code for k in range(6)]
        others = [client.post("/api/respondents").status_code for _ in range(24)]
        assert after == [201] * 6 and others == [201] * 24
        rows = store.pair_reports().select(["user", "item_a", "item_b"]).to_pylist()
        stored = Counter((row["user"], row["item_a"], row["item_b"]) for row in rows)
        sent = acknowledged + [(token, *PAIRS[k]) for k in range(6)]
        assert stored == Counter((credential_hash(user), *pair) for user, *pair in sent)


def test_a_postgresql_server_that_stays_down_gives_503_then_recovers(postgres_cluster, monkeypatch):
    """Used to end in 500; the store is back within seconds of the server."""
    monkeypatch.setattr(PostgresStore, "POOL_WAIT", 1.0)
    with open_store(f"{postgres_cluster.url}/postgres") as store, client_of(store) as client:
        token = client.post("/api/respondents").json()["token"]
        postgres_cluster.stop()
        try:
            body = report(token)
            t = time.monotonic()
            assert_unavailable(client.post("/api/reports", json=body), "unavailable")
            assert_unavailable(client.post("/api/respondents"), "unavailable")
            assert_unavailable(client.get("/dashboard", params={"token": ADMIN}), "unavailable")
            assert time.monotonic() - t < 30
        finally:
            postgres_cluster.start()
        deadline = time.monotonic() + 3 * PostgresStore.POOL_WAIT + 5
        while (r := client.post("/api/reports", json=body)).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert r.status_code == 201
        assert store.counts() == (1, 1)


@pytest.mark.parametrize("target", ["postgresql"], indirect=True)
def test_a_postgresql_lock_held_by_another_session_gives_503_busy(target, monkeypatch):
    """A session holding the respondents' table (an administrator's LOCK TABLE, a long migration) used to
    hold every report's thread for as long as it lasted; a report now waits LOCK_WAIT seconds, then gets
    503 ``busy``, and its resend is stored once the lock is gone."""
    import psycopg

    monkeypatch.setattr(PostgresStore, "LOCK_WAIT", 0.5)
    with open_store(target) as store, client_of(store) as client:
        token = client.post("/api/respondents").json()["token"]
        body = report(token)
        with psycopg.connect(target, connect_timeout=10) as other:
            other.execute("LOCK TABLE respondents IN ACCESS EXCLUSIVE MODE")
            t = time.monotonic()
            assert_unavailable(client.post("/api/reports", json=body), "busy")
            assert time.monotonic() - t < PostgresStore.LOCK_WAIT + 5
        assert client.post("/api/reports", json=body).status_code == 201
        assert store.counts() == (1, 1)


# --------------------------------------------------------------------------------- hostile text

HOSTILE_TEXT = ["\x00", "\ud800", "a\x00b", "\udfff" * 3]


def test_nul_and_lone_surrogates_get_400_or_404_never_500(target):
    """On SQLite and PostgreSQL (which refuses NUL in text): a token, key or item holding a NUL or a lone
    surrogate is refused with 400 JSON before the store is asked, a well-shaped unknown token gets 404, an
    invitation of that text gets 403 like any unknown code, a 400-digit epsilon gets 400."""
    with open_store(target) as store, client_of(store) as client:
        (code,) = store.add_invitations(1)
        for text in HOSTILE_TEXT:
            r = post(client, "/api/respondents", {"invitation": text})
            assert r.status_code == 403 and r.json()["reason"] == "invitation"
            r = post(client, "/api/respondents", {"invitation": code[:-1] + text})
            assert r.status_code == 403 and r.json()["reason"] == "invitation"
        token = client.post("/api/respondents", json={"invitation": code}).json()["token"]
        for text in HOSTILE_TEXT:
            for field, value in (("token", text), ("token", token[:-1] + text), ("key", text),
                                 ("key", key()[:-1] + text), ("item_a", text), ("item_b", "beta" + text)):
                r = post(client, "/api/reports", {**report(token), field: value})
                assert r.status_code == 400 and set(r.json()) == {"error"}, (field, r.text)
            r = client.get("/dashboard?token=" + quote(text, errors="surrogatepass"))
            assert r.status_code == 403 and set(r.json()) == {"error"}
        r = client.post("/api/reports", json=report("A" * 32))
        assert r.status_code == 404 and set(r.json()) == {"error"}
        raw = (f'{{"token": "{token}", "key": "{key()}", "item_a": "alpha", "item_b": "beta", "report": 1, '
               f'"epsilon": 1{"0" * 400}}}')
        r = client.post("/api/reports", content=raw.encode(), headers={"content-type": "application/json"})
        assert r.status_code == 400 and "epsilon" in r.json()["error"]
        assert client.post("/api/reports", json=report(token)).status_code == 201
        assert store.counts() == (1, 1)
