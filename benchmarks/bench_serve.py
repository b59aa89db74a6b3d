"""``privrank serve`` under load on loopback: start-up time, sustained reports per second, latency.

Starts the real command (``privrank serve --demo`` for the start-up time; a survey of 8 items with
a budget of 10,000 answers per respondent for the load) in a subprocess on a free port of
127.0.0.1, then ``--clients`` threads, each one respondent, POST randomized reports for
``--seconds`` (a respondent reports each pair once, so a client registers a new respondent after
every 28 reports); every report is committed before its reply. Prints the time until the demo
answers its first request, reports/s and the p50/p99 latency of the acknowledged reports, for
SQLite (a temporary file) and, with ``--postgres URL``, for PostgreSQL.

    python benchmarks/bench_serve.py
    python benchmarks/bench_serve.py --postgres postgresql://user@127.0.0.1:5432/db
"""
from __future__ import annotations

import argparse
import itertools
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import numpy as np

ITEMS = [f"item{k}" for k in range(8)]
ADMIN = "bench-serve-admin-token-0123456789"


def start(args, directory):
    """``privrank serve ARGS`` on a free port; returns (process, base URL, seconds to the first answer)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())",
                             "serve", *args, "--port", str(port), "--registrations-per-minute", "1000000",
                             "--admin-token", ADMIN], cwd=directory, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    while True:
        try:
            if httpx.get(f"{base}/api/survey", timeout=1).status_code == 200:
                return proc, base, time.perf_counter() - t
        except httpx.TransportError:
            if proc.poll() is not None or time.perf_counter() - t > 60:
                raise SystemExit("privrank serve did not start")
            time.sleep(0.02)


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


def load(base, clients: int, seconds: float) -> tuple[int, np.ndarray, float]:
    """Reports acknowledged, their latencies and the elapsed time."""
    latencies, lock, done = [], threading.Lock(), threading.Event()

    def client(seed):
        rng = np.random.default_rng(seed)
        pairs = list(itertools.combinations(ITEMS, 2))
        with httpx.Client(base_url=base, timeout=10) as http:
            sent = len(pairs)
            while not done.is_set():
                if sent == len(pairs):
                    token, order, sent = http.post("/api/respondents").json()["token"], rng.permutation(len(pairs)), 0
                a, b = pairs[order[sent]]
                sent += 1
                t = time.perf_counter()
                reply = http.post("/api/reports", json={"token": token, "key": secrets.token_urlsafe(16), "item_a": a,
                                                        "item_b": b, "report": int(rng.choice([1, -1])),
                                                        "epsilon": 1.0})
                if reply.status_code == 201:
                    with lock:
                        latencies.append(time.perf_counter() - t)
    threads = [threading.Thread(target=client, args=(k,), daemon=True) for k in range(clients)]
    t = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    done.set()
    for thread in threads:
        thread.join(timeout=30)
    return len(latencies), np.array(latencies), time.perf_counter() - t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--postgres", metavar="URL", help="also measure a PostgreSQL store at this URL")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        proc, _, startup = start(["--demo", "--db", os.path.join(tmp, "demo.sqlite")], tmp)
        stop(proc)
        print(f"privrank serve --demo answers its first request {startup:.2f} s after it is started")
        survey = os.path.join(tmp, "survey.toml")
        with open(survey, "w") as fh:
            fh.write('title = "Load"\nquestion = "Which is better?"\nitems = [%s]\nepsilon = 1.0\nbudget = 10000.0\n'
                     % ", ".join(f'"{x}"' for x in ITEMS))
        stores = [("SQLite", os.path.join(tmp, "load.sqlite"))] + ([("PostgreSQL", args.postgres)] if args.postgres else [])
        for name, db in stores:
            proc, base, _ = start([survey, "--db", db], tmp)
            try:
                n, latencies, elapsed = load(base, args.clients, args.seconds)
            finally:
                stop(proc)
            p50, p99 = np.quantile(latencies, [0.5, 0.99])
            print(f"{name}: {n / elapsed:,.0f} reports/s over {elapsed:.1f} s with {args.clients} clients; "
                  f"latency p50 {1000 * p50:.1f} ms, p99 {1000 * p99:.1f} ms")


if __name__ == "__main__":
    main()
