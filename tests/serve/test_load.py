"""``privrank serve`` under load, as a real process on 127.0.0.1: sustained throughput and latency, and
durability when the server is killed with SIGKILL mid-load. Every loop is bounded in time and count,
and the server is always killed at the end (no orphan processes)."""
import itertools
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter

import numpy as np
import pytest
from serve_helpers import answering, free_port, key

from privrank.serve.store import credential_hash

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.slow

ADMIN = "load-test-admin-token-0123456789"
ITEMS = [f"item{k}" for k in range(8)]
MAX_ANSWERS = 10
SURVEY = ("title = \"Load\"\nquestion = \"Which is better?\"\nitems = [%s]\nepsilon = 1.0\nbudget = %d.0\n"
          % (", ".join(f'"{x}"' for x in ITEMS), MAX_ANSWERS))


@pytest.fixture
def server(tmp_path):
    """Start ``privrank serve`` on a free loopback port with a SQLite file; yields (process, base URL, db path)."""
    survey = tmp_path / "survey.toml"
    survey.write_text(SURVEY)
    db = tmp_path / "reports.sqlite"
    port = free_port()
    argv = [sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())", "serve",
            str(survey), "--db", str(db), "--new-db", "--port", str(port), "--admin-token", ADMIN,
            "--registrations-per-minute", "1000000"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        if not answering(base, proc, 30):
            pytest.fail(f"the server did not start: {proc.stderr.read().decode(errors='replace')[-2000:]}")
        yield proc, base, db
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        proc.stderr.close()


def respondent_loop(base, stop, record, seed):
    """One client: new respondent, its MAX_ANSWERS reports, again, until ``stop``. ``record(None, body, 0)``
    is called before each report is sent and ``record(status, body, seconds)`` when its answer arrives.
    Returns on ``stop`` or when the server is gone."""
    rng = np.random.default_rng(seed)
    pairs = list(itertools.combinations(range(len(ITEMS)), 2))
    with httpx.Client(base_url=base, timeout=5) as client:
        while not stop.is_set():
            try:
                token = client.post("/api/respondents").json()["token"]
                for p in rng.permutation(len(pairs))[:MAX_ANSWERS + 1]:  # the last one is past the budget: refused
                    i, j = pairs[p]
                    body = {"token": token, "key": key(), "item_a": ITEMS[i], "item_b": ITEMS[j],
                            "report": int(rng.choice([1, -1])), "epsilon": 1.0}
                    record(None, body, 0.0)
                    start = time.perf_counter()
                    r = client.post("/api/reports", json=body)
                    record(r.status_code, body, time.perf_counter() - start)
                    if stop.is_set():
                        return
            except httpx.TransportError:
                return


def run_clients(base, n, record, stop):
    threads = [threading.Thread(target=respondent_loop, args=(base, stop, record, k), daemon=True) for k in range(n)]
    for t in threads:
        t.start()
    return threads


def test_sustained_reports_per_second_and_latency(server, capsys):
    proc, base, db = server
    lock = threading.Lock()
    latencies, statuses = [], Counter()

    def record(status, body, seconds):
        if status is None:
            return
        with lock:
            statuses[status] += 1
            if status == 201:
                latencies.append(seconds)
    stop = threading.Event()
    start = time.perf_counter()
    threads = run_clients(base, 8, record, stop)
    time.sleep(8.0)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    elapsed = time.perf_counter() - start
    assert not any(t.is_alive() for t in threads)
    rate = len(latencies) / elapsed
    p50, p99 = np.quantile(latencies, [0.5, 0.99])
    with capsys.disabled():
        print(f"\nprivrank serve load: {len(latencies)} reports in {elapsed:.1f} s = {rate:.0f} reports/s "
              f"(8 clients, SQLite synchronous=FULL); latency p50 {1000 * p50:.1f} ms, p99 {1000 * p99:.1f} ms")
    assert set(statuses) <= {201, 409}  # 409: each respondent's report past the budget
    assert rate > 50 and p99 < 2.0
    with sqlite3.connect(db) as conn:
        stored = conn.execute("SELECT count(*) FROM reports").fetchone()[0]
        most = conn.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM reports GROUP BY token_hash)").fetchone()[0]
    assert stored == len(latencies) and most <= MAX_ANSWERS
    assert proc.poll() is None  # still serving


def test_every_acknowledged_report_survives_sigkill(server, capsys):
    """Writers record each report acknowledged with 201 and each one refused; the server is killed with
    SIGKILL mid-load; the reopened SQLite file holds every acknowledged report, nothing refused, and no
    respondent past the budget. A report in flight at the kill may be stored or not (at most one per writer)."""
    proc, base, db = server
    lock = threading.Lock()
    acked, refused, sent = Counter(), Counter(), Counter()

    def record(status, body, seconds):
        row = (credential_hash(body["token"]), body["item_a"], body["item_b"], body["report"])  # as the store keeps it
        with lock:
            if status is None:
                sent[row] += 1
            else:
                (acked if status == 201 else refused)[row] += 1
    stop = threading.Event()
    writers = 4
    threads = run_clients(base, writers, record, stop)
    deadline = time.monotonic() + 20
    while sum(acked.values()) < 300 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # mid-load: the writers are still sending
    proc.wait(timeout=30)
    stop.set()
    for t in threads:
        t.join(timeout=15)
    assert not any(t.is_alive() for t in threads)
    assert sum(acked.values()) >= 300 and sum(refused.values()) > 0
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = Counter(conn.execute("SELECT token_hash, item_a, item_b, report FROM reports").fetchall())
        most = conn.execute("SELECT max(n) FROM (SELECT count(*) AS n FROM reports GROUP BY token_hash)").fetchone()[0]
    assert not acked - stored  # every acknowledged report is on disk
    unacknowledged, in_flight = stored - acked, sent - acked - refused
    with capsys.disabled():
        print(f"\nprivrank serve SIGKILL: {sum(acked.values())} reports acknowledged, all on disk; "
              f"{sum(refused.values())} refused, none stored; {sum(in_flight.values())} in flight at the kill, "
              f"{sum(unacknowledged.values())} of them stored")
    assert sum(in_flight.values()) <= writers and not unacknowledged - in_flight  # nothing refused is stored
    assert most <= MAX_ANSWERS
