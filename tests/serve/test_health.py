"""Acknowledged means stored: a SQLite database removed or replaced under the server, a full disk and a
damaged database are each refused with a status and a JSON reason (503 while serving, a sentence at
start-up), never acknowledged into a lost file, never a 500, never taken for another survey's."""
import gc
import logging
import os
import secrets
import shutil
import sqlite3
import subprocess
import sys
import time

import pytest
from serve_helpers import free_port, key

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.health import FullDisk
from privrank.serve.sqlite_store import SqliteStore
from privrank.serve.survey import Survey

starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "admin-token-for-the-tests-0123456789"
SURVEY = Survey(title="Health", question="Which is better?", items=("alpha", "beta", "gamma", "delta"),
                epsilon=1.0, budget=6.0)
PAIRS = [("alpha", "beta"), ("alpha", "gamma"), ("alpha", "delta"), ("beta", "gamma"), ("beta", "delta"),
         ("gamma", "delta")]
SURVEY_FILE = ('title = "Health"\nquestion = "Which is better?"\nitems = ["alpha", "beta", "gamma", "delta"]\n'
               'epsilon = 1.0\nbudget = 6.0\n')
COMMAND = [sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())", "serve"]


def client_of(store):
    app = create_app(SURVEY, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6, dashboard_refresh=0)
    return starlette_testclient.TestClient(app, raise_server_exceptions=False)


def report(token, pair=("alpha", "beta"), k=None):
    return {"token": token, "key": k or key(), "item_a": pair[0], "item_b": pair[1], "report": 1, "epsilon": 1.0}


def assert_refused(r, reason):
    assert r.status_code == 503, r.text
    assert r.headers["content-type"] == "application/json" and r.json()["reason"] == reason
    assert int(r.headers["retry-after"]) >= 1


def run_serve(tmp_path, *args):
    """``privrank serve SURVEY ARGS`` that must end on its own (a refusal at start-up): its completed process."""
    survey = tmp_path / "survey.toml"
    survey.write_text(SURVEY_FILE)
    argv = [*COMMAND, str(survey), "--port", str(free_port()), "--admin-token-file", str(admin_file(tmp_path)),
            *map(str, args)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, env=env)
    except subprocess.TimeoutExpired:
        pytest.fail("privrank serve started serving")


def admin_file(tmp_path):
    path = tmp_path / "admin-token"
    path.write_text(ADMIN)
    return path


# ------------------------------------------------------------------- the database file removed or replaced

@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_database_removed_or_replaced_while_serving_refuses_writes_and_reads(tmp_path, how, caplog):
    """Reports used to get 201 while they went to the unlinked file (6,300 in one run), lost at the next start."""
    db = tmp_path / "survey.sqlite"
    with open_store(db) as store, client_of(store) as c:
        token = c.post("/api/respondents", json={}).json()["token"]
        assert c.post("/api/reports", json=report(token, PAIRS[0])).status_code == 201
        if how == "removed":
            db.unlink()
        else:  # a copy moved over it: another file at the path
            shutil.copy(db, tmp_path / "copy.sqlite")
            os.replace(tmp_path / "copy.sqlite", db)
        with caplog.at_level(logging.ERROR, logger="privrank.serve"):
            for pair in PAIRS[1:4]:
                assert_refused(c.post("/api/reports", json=report(token, pair)), "database-gone")
            assert_refused(c.post("/api/respondents", json={}), "database-gone")
            for path in ("/dashboard", "/export.csv"):  # a ranking or an export of a file no longer there would mislead
                assert_refused(c.get(path, headers={"authorization": f"Bearer {ADMIN}"}), "database-gone")
        said = [r.getMessage() for r in caplog.records if "removed or replaced" in r.getMessage()]
        assert len(said) == 1 and str(db) in said[0] and "restore" in said[0]
        assert "restore" in c.post("/api/reports", json=report(token, PAIRS[4])).json()["error"]


def test_a_write_ahead_log_removed_while_serving_refuses_writes(tmp_path, caplog):
    """Removing survey.sqlite-wal and -shm under the server gave 500s, and reports still got 201 while
    they went to the unlinked log, lost at the next start after a kill."""
    db = tmp_path / "survey.sqlite"
    with open_store(db) as store, client_of(store) as c:
        token = c.post("/api/respondents", json={}).json()["token"]
        assert c.post("/api/reports", json=report(token, PAIRS[0])).status_code == 201
        for suffix in ("-wal", "-shm"):
            (tmp_path / f"survey.sqlite{suffix}").unlink()
        with caplog.at_level(logging.ERROR, logger="privrank.serve"):
            for pair in PAIRS[1:4]:
                assert_refused(c.post("/api/reports", json=report(token, pair)), "database-gone")
            assert_refused(c.get("/export.csv", headers={"authorization": f"Bearer {ADMIN}"}), "database-gone")
        assert any("write-ahead log" in r.getMessage() for r in caplog.records)


def test_the_background_check_notices_a_removed_database_without_a_request(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(SqliteStore, "CHECKPOINT_SECONDS", 0.05)
    db = tmp_path / "survey.sqlite"
    with caplog.at_level(logging.ERROR, logger="privrank.serve"), open_store(db) as store:
        db.unlink()
        deadline = time.monotonic() + 10
        while not any("removed or replaced" in r.getMessage() for r in caplog.records):
            assert time.monotonic() < deadline, "the periodic check did not notice the removed database"
            time.sleep(0.02)
        with pytest.raises(InputError, match="removed or replaced"):
            store.counts()


def test_a_survey_database_is_created_only_when_asked(tmp_path):
    """A restart after the database was removed used to create an empty one without a word: the export then
    held none of the acknowledged reports."""
    db = tmp_path / "survey.sqlite"
    done = run_serve(tmp_path, "--db", db)
    assert done.returncode == 2 and "privrank: error:" in done.stderr and "Traceback" not in done.stderr
    assert "no such database" in done.stderr and "--new-db" in done.stderr and "restore" in done.stderr
    assert not db.exists()
    with open_store(db) as store:
        store.claim(SURVEY.fingerprint())
    done = run_serve(tmp_path, "--db", db, "--new-db")
    assert done.returncode == 2 and f"--new-db: {db} exists" in done.stderr


# ----------------------------------------------------------------------------------------- a full disk

@pytest.fixture
def tiny_disk(tmp_path):
    """A 256 KB tmpfs at ``tmp_path / "disk"`` (Linux, as root), unmounted at the end."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if sys.platform != "linux" or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a tiny tmpfs needs Linux and root")
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(disk)], capture_output=True,
                          timeout=30, check=False)
    if made.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield disk
    finally:
        gc.collect()  # the store's last connections
        if subprocess.run(["umount", str(disk)], capture_output=True, timeout=30, check=False).returncode:
            subprocess.run(["umount", "-l", str(disk)], capture_output=True, timeout=30, check=False)


def fill(disk):
    """Fill ``disk`` to the last byte; returns the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == 28  # ENOSPC
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_gives_503_with_retry_after_and_one_log_line_naming_the_directory(tiny_disk, caplog):
    """It used to be 500 "internal error" without Retry-After, and one log line per request (21,500 in 26 s),
    none naming the disk."""
    with open_store(tiny_disk / "survey.sqlite") as store, client_of(store) as c:
        tokens = [c.post("/api/respondents", json={}).json()["token"] for _ in range(3)]
        filler = fill(tiny_disk)
        with caplog.at_level(logging.INFO):
            for k in range(12):
                assert_refused(c.post("/api/reports", json=report(tokens[k % 3], PAIRS[k // 3])), "disk-full")
            assert_refused(c.post("/api/respondents", json={}), "disk-full")
        lines = [r.getMessage() for r in caplog.records if r.name.startswith("privrank")]
        assert len(lines) == 1 and "is full" in lines[0] and str(tiny_disk) in lines[0], lines
        assert store.counts() == (3, 0)  # nothing of a refused report is stored
        filler.unlink()  # space freed: the reports go on
        assert c.post("/api/reports", json=report(tokens[0])).status_code == 201
        assert store.counts() == (3, 1)


def test_the_full_disk_log_is_said_once_a_minute():
    now = [0.0]
    full = FullDisk("/data/survey.sqlite", clock=lambda: now[0])
    said = []
    handler = logging.Handler()
    handler.emit = said.append
    logger = logging.getLogger("privrank.serve")
    logger.addHandler(handler)
    try:
        for t in (0.0, 1.0, 59.0, 60.0, 61.0, 125.0):
            now[0] = t
            assert full.refusal().reason == "disk-full"
    finally:
        logger.removeHandler(handler)
    assert len(said) == 3 and "/data" in said[0].getMessage()


def test_privrank_serve_on_a_full_disk_exits_2_with_a_sentence(tiny_disk, tmp_path):
    """It used to end in a traceback, exit 1."""
    db = tiny_disk / "survey.sqlite"
    with open_store(db) as store:
        store.claim(SURVEY.fingerprint())
    for leftover in tiny_disk.glob("survey.sqlite-*"):  # as after a clean stop: the next start makes them anew
        leftover.unlink()
    fill(tiny_disk)
    done = run_serve(tmp_path, "--db", db)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "privrank: error:" in done.stderr and "is full" in done.stderr and str(tiny_disk) in done.stderr


# ------------------------------------------------------------------------------------ a damaged database

def damaged_copy(tmp_path, how):
    db = tmp_path / f"{how}.sqlite"
    with open_store(db) as store:
        store.claim(SURVEY.fingerprint())
        for k in range(200):
            token = store.new_respondent()
            store.add_report(token, key=key(), epsilon=1.0, max_answers=6, item_a="alpha", item_b="beta", report=1)
    if how == "terms":  # a byte of the recorded survey changed
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE survey_terms SET fingerprint = 'x' || substr(fingerprint, 2)")
    elif how == "page":  # a page of the reports overwritten
        with open(db, "r+b") as f:
            f.seek(-8 * 4096, os.SEEK_END)
            f.write(secrets.token_bytes(4096))
    elif how == "table":
        with sqlite3.connect(db) as conn:
            conn.execute("DROP TABLE reports")
    return db


@pytest.mark.parametrize("how", ["terms", "page", "table"])
def test_a_damaged_database_says_restore_it_never_another_survey(tmp_path, how):
    """A damaged database used to be called one "of a different survey ... give each survey its own --db" (or,
    with its reports table gone, served as an empty survey), which leads an operator to abandon its reports."""
    db = damaged_copy(tmp_path, how)
    with pytest.raises(InputError) as refused:
        with open_store(db) as store:
            store.claim(SURVEY.fingerprint())
    message = str(refused.value)
    assert "damaged" in message and "restore it from a backup" in message and "different survey" not in message


def test_a_database_of_another_survey_is_still_told_apart(tmp_path):
    db = tmp_path / "other.sqlite"
    with open_store(db) as store:
        store.claim(Survey(title="Other", question="Which?", items=("a", "b"), epsilon=1.0, budget=1.0).fingerprint())
    with open_store(db) as store, pytest.raises(InputError, match="different survey") as refused:
        store.claim(SURVEY.fingerprint())
    assert "damaged" not in str(refused.value)


def test_privrank_serve_on_a_damaged_database_exits_2_saying_restore(tmp_path):
    db = damaged_copy(tmp_path, "page")
    done = run_serve(tmp_path, "--db", db)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "damaged" in done.stderr and "restore it from a backup" in done.stderr
