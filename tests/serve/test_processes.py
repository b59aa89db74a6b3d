"""More than one server process on one database: the registration limit is one token bucket in the store,
shared by every process (two stores on one SQLite file or PostgreSQL database stand for two processes),
and ``privrank serve --workers N`` serves from N processes on one port."""
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from serve_helpers import answering, fingerprint, free_port, key

from privrank.serve import open_store
from privrank.serve.ratelimit import RegistrationsLimited
from privrank.serve.store import credential_hash
from privrank.serve.workers import SETTLE_SECONDS

httpx = pytest.importorskip("httpx")

PER_MINUTE = 6  # one token every 10 s: none comes back during a test


def test_two_processes_share_one_registration_limit(target):
    """Two stores on one database take their registrations from one bucket of 6: 6 in all are stored, the
    rest refused with the wait until the next token, storing nothing and taking no token."""
    with open_store(target) as first, open_store(target) as second:
        first.claim(fingerprint("limit"))
        outcomes = []
        for k in range(10):
            try:
                outcomes.append((first, second)[k % 2].new_respondent(per_minute=PER_MINUTE) and "201")
            except RegistrationsLimited as exc:
                assert 0 < exc.retry_after <= 60 / PER_MINUTE
                outcomes.append("429")
        assert outcomes == ["201"] * 6 + ["429"] * 4
        assert first.counts() == second.counts() == (6, 0)
        with open_store(target) as third:  # a process started later finds the bucket as the others left it
            with pytest.raises(RegistrationsLimited):
                third.new_respondent(per_minute=PER_MINUTE)
            third.new_respondent()  # without a limit (the store's own use): not counted against it
        assert first.counts() == (7, 0)


def test_the_time_of_the_last_registration_is_forgotten_once_the_bucket_is_full(target):
    """The bucket's time (when the survey last registered someone, finer than a day) is kept only until
    the bucket is full again, a minute later; then the row holds no time and reads as a full bucket. A
    store that drew from the bucket runs the forgetting in a thread of its own, ended with the store."""
    def row(store):
        return store._query("limit")[0]

    with open_store(target) as store:
        store.claim(fingerprint("forget"))
        assert store._forgetting is None  # no thread before a draw: a server forks its workers first
        for _ in range(PER_MINUTE):
            store.new_respondent(per_minute=PER_MINUTE)
        tokens, at = row(store)
        assert tokens == pytest.approx(0.0, abs=0.01) and abs(at - time.time()) < 60
        assert store._forgetting is not None and store._forgetting.is_alive()
        store.forget_full_bucket(PER_MINUTE, now=at + 59)  # not full yet: kept, and still refusing
        assert row(store) == (tokens, at)
        with pytest.raises(RegistrationsLimited):
            store.new_respondent(per_minute=PER_MINUTE)
        store.forget_full_bucket(PER_MINUTE, now=at + 60)
        assert row(store) == (None, None)
        for _ in range(PER_MINUTE):  # a forgotten bucket is a full one
            store.new_respondent(per_minute=PER_MINUTE)
        thread = store._forgetting
    assert not thread.is_alive()


def test_racing_registrations_of_two_processes_never_exceed_the_bucket(target):
    """Sixteen threads over two stores register at once: exactly a bucket's worth gets through."""
    with open_store(target) as first, open_store(target) as second:
        first.claim(fingerprint("race"))
        start, results, lock = threading.Barrier(16), [], threading.Lock()

        def register(store):
            start.wait(timeout=30)
            for _ in range(4):
                try:
                    store.new_respondent(per_minute=PER_MINUTE)
                    outcome = "201"
                except RegistrationsLimited:
                    outcome = "429"
                with lock:
                    results.append(outcome)
        threads = [threading.Thread(target=register, args=((first, second)[k % 2],)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert results.count("201") == PER_MINUTE and len(results) == 64
        assert first.counts() == (PER_MINUTE, 0)


def test_an_invitation_only_store_takes_no_token(target):
    """Invitations are the limit of an invitation-only survey: a registration with a code leaves the
    bucket as it was, and so does a refused code."""
    with open_store(target) as store:
        codes = store.add_invitations(8)
        for code in codes:
            store.new_respondent(code, per_minute=1)
        assert store.counts() == (8, 0)


# ------------------------------------------------------------------------------ privrank serve --workers

ITEMS = ["apple", "banana", "cherry", "date"]
PAIRS = list(itertools.combinations(ITEMS, 2))
ADMIN = "workers-admin-token-0123456789"


def children(pid: int) -> set[int]:
    """The worker processes of ``privrank serve`` (its children but the multiprocessing resource tracker)."""
    found = set()
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        if b"resource_tracker" not in Path(f"/proc/{child}/cmdline").read_bytes():
            found.add(int(child))
    return found


class Served:
    """``privrank serve SURVEY --workers N`` as a subprocess in its own session, answering on a free port."""

    def __init__(self, folder: Path, db, *args):
        (folder / "survey.toml").write_text('title = "Fruit"\nquestion = "Which?"\nitems = [%s]\nepsilon = 1.0\n'
                                            'budget = 4.0\n' % ", ".join(f'"{x}"' for x in ITEMS))
        self.base = f"http://127.0.0.1:{free_port()}"
        argv = [sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())", "serve",
                "survey.toml", "--db", str(db), *(() if "://" in str(db) else ("--new-db",)),
                "--port", self.base.rsplit(":", 1)[1], *args]
        self.err = folder / "stderr.txt"
        with open(self.err, "w") as err:
            self.proc = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=err,
                                         env={**os.environ, "PRIVRANK_ADMIN_TOKEN": ADMIN, "PYTHONPATH": os.pathsep.join(sys.path)}, start_new_session=True)
        self.started = time.monotonic()
        if not answering(self.base, self.proc, 60):
            self.kill()
            pytest.fail(f"privrank serve --workers did not start: {self.err.read_text()}")

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


def stored_keys(target) -> set:
    """``(token hash, key)`` of every report stored at ``target``."""
    query = "SELECT token_hash, report_key FROM reports"
    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            return set(conn.execute(query).fetchall())
    import psycopg

    with psycopg.connect(target, connect_timeout=10) as conn:
        return set(conn.execute(query).fetchall())


def test_workers_share_the_budgets_and_the_registration_limit(target, tmp_path):
    """Two worker processes on one port and one database, every request on a new connection (so both
    take them): the registrations stop at one bucket's worth, the reports of each respondent, sent all
    at once, stop at its budget of 4 of the 6 pairs, and every acknowledged report is stored."""
    served = Served(tmp_path, target, "--workers", "2", "--registrations-per-minute", "8")
    try:
        workers = children(served.proc.pid)
        assert len(workers) == 2
        registrations = [httpx.post(f"{served.base}/api/respondents", timeout=30) for _ in range(14)]
        tokens = [r.json()["token"] for r in registrations if r.status_code == 201]
        assert 8 <= len(tokens) <= 9  # one bucket of 8 for both workers (one more may come back meanwhile)
        assert {r.status_code for r in registrations} == {201, 429}
        acked, statuses, lock = [], [], threading.Lock()

        def report(token, pair):
            k = key()
            r = httpx.post(f"{served.base}/api/reports", json={"token": token, "key": k, "item_a": pair[0],
                                                             "item_b": pair[1], "report": 1, "epsilon": 1.0}, timeout=30)
            with lock:
                statuses.append(r.status_code)
                if r.status_code == 201:
                    acked.append((token, k))
        threads = [threading.Thread(target=report, args=(t, p)) for t in tokens for p in PAIRS]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert statuses.count(201) == 4 * len(tokens) and statuses.count(409) == 2 * len(tokens)
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(timeout=60) == 143
        assert not any(Path(f"/proc/{pid}").exists() for pid in workers)  # no worker outlives the command
    finally:
        served.kill()
    with open_store(target) as store:
        assert store.counts() == (len(tokens), 4 * len(tokens))
    assert stored_keys(target) == {(credential_hash(t), k) for t, k in acked}
    assert "Traceback" not in served.err.read_text()


@pytest.mark.slow
def test_a_worker_that_dies_is_reported_and_started_anew(tmp_path):
    served = Served(tmp_path, tmp_path / "reports.sqlite", "--workers", "2", "--registrations-per-minute", "1e6")
    try:
        first, _ = sorted(children(served.proc.pid))
        time.sleep(SETTLE_SECONDS + 1)  # a worker that ends sooner stops the command
        os.kill(first, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while len(children(served.proc.pid) - {first}) < 2:
            assert time.monotonic() < deadline, "the worker was not started anew"
            time.sleep(0.1)
        assert "ended by signal SIGKILL: started anew" in served.err.read_text()
        token = httpx.post(f"{served.base}/api/respondents", timeout=30).json()["token"]
        assert len(token) == 32
        served.proc.send_signal(signal.SIGINT)
        assert served.proc.wait(timeout=60) == 130
    finally:
        served.kill()
    assert "privrank: interrupted" in served.err.read_text()



def test_a_sqlite_write_takes_the_lock_as_soon_as_another_process_lets_go(tmp_path):
    """Another process holds the write lock for a quarter of a second: the store's write waits, then
    takes the lock within milliseconds of its release (SQLite's own wait, sleeping up to 100 ms between
    tries, took it some 80 ms late here, and let one busy process starve another for seconds)."""
    path = tmp_path / "reports.sqlite"
    with open_store(path) as store:
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        released = []
        timer = threading.Timer(0.25, lambda: (holder.execute("ROLLBACK"), released.append(time.perf_counter())))
        timer.start()
        store.new_respondent()
        late = time.perf_counter() - released[0]
        timer.join()
        holder.close()
    assert late < 0.05
