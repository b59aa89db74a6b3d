"""``privrank serve`` under load on loopback: start-up time, sustained reports per second, latency.

Each round starts the real command in a subprocess on a free port of 127.0.0.1 and measures, in
turn (so that a change in the machine's load touches every measurement alike):

* start-up: ``privrank serve`` of a survey file, and ``privrank serve --demo`` (which reads the
  shipped LLMFAO data for its items), each on a new SQLite file, from the start of the process to
  its first answered request;
* SQLite, and with ``--postgres URL`` PostgreSQL: a survey of 8 items with a budget of 10,000
  answers per respondent, ``--clients`` concurrent respondents (one connection each, asyncio)
  posting randomized reports for ``--seconds`` -- a respondent reports each pair once, so a client
  registers a new respondent after every 28 reports -- while the dashboard is polled every 5 s
  (``--dashboard-every``; 0 leaves it out, to see the intake alone). By default each client sends
  its next report on the reply to the last (the most the server takes); ``--rate R`` offers R
  reports/s in all on a schedule instead (the latency at that load, counted from when each report
  was due).
  Every report is committed before its reply; reports/s counts the acknowledged ones (201), and
  the latencies are theirs. ``--workers 1 2`` serves each store with one, then two server
  processes (``privrank serve --workers N``) in every round, and prints the ratio of their rates
  round by round.

Prints every round, then the median and min-max over the rounds of each number, and the load
average of the machine before and after (the benchmark's own clients use about a tenth of a core).
``--postgres`` is the URL of a server whose user may create databases: each round creates a
database of its own and drops it at the end.

    python benchmarks/bench_serve.py
    python benchmarks/bench_serve.py --postgres postgresql://postgres@127.0.0.1:5432 --rounds 5
    python benchmarks/bench_serve.py --dashboard-every 0
    python benchmarks/bench_serve.py --rate 1000
    python benchmarks/bench_serve.py --postgres postgresql://postgres@127.0.0.1:5432 --workers 1 2
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import httpx
import numpy as np

from spread import load as machine_load
from spread import command, readme_section, spread

ITEMS = [f"item{k}" for k in range(8)]
ADMIN = "bench-serve-admin-token-0123456789"


def start(args, directory):
    """``privrank serve ARGS`` on a free port; returns (process, base URL, seconds to the first answer)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())",
                             "serve", *args, "--port", str(port), "--registrations-per-minute", "1000000"],
                            env={**os.environ, "PRIVRANK_ADMIN_TOKEN": ADMIN}, cwd=directory, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    with httpx.Client(timeout=1) as client:
        while True:
            try:
                if client.get(f"{base}/api/survey").status_code == 200:
                    return proc, base, time.perf_counter() - t
            except httpx.TransportError:
                if proc.poll() is not None or time.perf_counter() - t > 60:
                    raise SystemExit("privrank serve did not start")
                time.sleep(0.01)


def stop(proc):
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=30)


class Connection:
    """One keep-alive HTTP/1.1 connection to the server, a request at a time: a minimal client over
    asyncio streams, since a full client (httpx) spends more CPU per request than the server does
    and would measure itself on a machine of two cores."""

    def __init__(self, reader, writer, host):
        self.reader, self.writer, self.host = reader, writer, host

    @classmethod
    async def open(cls, base):
        host, port = base.removeprefix("http://").split(":")
        return cls(*await asyncio.open_connection(host, int(port)), f"{host}:{port}")

    async def request(self, method, path, body: bytes = b"") -> tuple[int, bytes]:
        """The status and body of the answer to ``method path`` with a JSON ``body``."""
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        if method == "POST":
            head += f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + body)
        header = await self.reader.readuntil(b"\r\n\r\n")
        lines = header.decode("latin-1").split("\r\n")
        fields = dict(line.split(":", 1) for line in lines[1:] if ":" in line)
        length = next((int(v) for k, v in fields.items() if k.lower() == "content-length"), 0)
        return int(lines[0].split()[1]), await self.reader.readexactly(length)

    def close(self):
        self.writer.close()


async def load(base, clients: int, seconds: float, dashboard_every: float, rate: float = 0.0,
               warm_up: float = 0.0) -> dict:
    """Reports acknowledged per second, their latencies, other statuses and the dashboard's latencies,
    over ``seconds`` after a warm-up of ``warm_up`` seconds under the same load (the dashboard is
    first opened at the start of it), whose reports are not counted.

    ``rate`` > 0 offers that many reports per second in all, each client on a schedule of its own
    (open loop): a report's latency runs from the moment it was due, so a server that falls behind
    is charged for the wait of the reports queued behind the late one."""
    latencies, dashboards, others = [], [], {}
    done = asyncio.Event()
    pairs = list(itertools.combinations(ITEMS, 2))
    interval = clients / rate if rate > 0 else 0.0
    begin = time.perf_counter()
    measured = begin + warm_up

    async def respondent(seed):
        rng = np.random.default_rng(seed)
        http = await Connection.open(base)
        sent = len(pairs)
        due = begin + interval * seed / clients  # the clients' schedules interleave
        while not done.is_set():
            if sent == len(pairs):
                status, answer = await http.request("POST", "/api/respondents", b"{}")
                token, order, sent = json.loads(answer)["token"], rng.permutation(len(pairs)), 0
            a, b = pairs[order[sent]]
            sent += 1
            body = json.dumps({"token": token, "key": secrets.token_urlsafe(16), "item_a": a, "item_b": b,
                               "report": int(rng.choice([1, -1])), "epsilon": 1.0}).encode()
            if interval:
                await asyncio.sleep(max(0.0, due - time.perf_counter()))
                t, due = due, due + interval
            else:
                t = time.perf_counter()
            status, _ = await http.request("POST", "/api/reports", body)
            if t < measured:
                continue
            if status == 201:
                latencies.append(time.perf_counter() - t)
            else:
                others[status] = others.get(status, 0) + 1
        http.close()

    async def dashboard():
        while not done.is_set():
            t = time.perf_counter()
            http = await Connection.open(base)  # a new connection each time: the server closes an idle one in 5 s
            status, _ = await http.request("GET", f"/dashboard?token={ADMIN}")
            http.close()
            if status != 200:
                others[f"dashboard {status}"] = others.get(f"dashboard {status}", 0) + 1
            dashboards.append(time.perf_counter() - t)
            try:
                await asyncio.wait_for(done.wait(), dashboard_every)
            except TimeoutError:
                pass

    tasks = [asyncio.create_task(respondent(k)) for k in range(clients)]
    tasks += [asyncio.create_task(dashboard())] if dashboard_every > 0 else []
    await asyncio.sleep(max(0.0, measured - time.perf_counter()))
    t = time.perf_counter()
    await asyncio.sleep(seconds)
    done.set()
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - t
    p50, p99 = np.quantile(latencies, [0.5, 0.99]) if latencies else (np.nan, np.nan)
    return {"rate": len(latencies) / elapsed, "p50": 1000 * p50, "p99": 1000 * p99,
            "dashboard": 1000 * max(dashboards, default=np.nan), "others": others}


def postgres_database(server: str, action: str, name: str) -> None:
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"{action} DATABASE {name}" + (" WITH (FORCE)" if action == "DROP" else ""))


def measure(survey, db, tmp, args, workers: int) -> dict:
    proc, base, _ = start([survey, "--db", db, *(() if "://" in db else ("--new-db",)), "--workers", str(workers)],
                          tmp)
    try:
        return asyncio.run(load(base, args.clients, args.seconds, args.dashboard_every, args.rate, args.warm_up))
    finally:
        stop(proc)


def label(store: str, workers: int) -> str:
    """A row's name: the store, and the server processes if more than one."""
    return store if workers == 1 else f"{store}, {workers} workers"


def summary(values) -> str:
    return spread(values, "{:,.1f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=64, help="concurrent respondents (default 64)")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of each load run (default 10)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--dashboard-every", type=float, default=5.0, metavar="SECONDS",
                        help="poll the dashboard this often during intake (default 5; 0: never)")
    parser.add_argument("--warm-up", type=float, default=3.0, metavar="SECONDS",
                        help="load before the measurement, not counted; the dashboard is first opened in it (default 3)")
    parser.add_argument("--rate", type=float, default=0.0, metavar="R",
                        help="offer R reports/s in all, on a schedule (open loop; latency from the due time); "
                             "default 0: each client sends its next report on the reply to the last")
    parser.add_argument("--workers", type=int, nargs="+", default=[1], metavar="N",
                        help="server processes (privrank serve --workers N); several: each in every round (default 1)")
    parser.add_argument("--postgres", metavar="URL", help="also measure PostgreSQL on this server (no database name)")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md's serve section")
    args = parser.parse_args(argv)
    print(f"before: {machine_load()}")
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        survey = os.path.join(tmp, "survey.toml")
        with open(survey, "w") as fh:
            fh.write('title = "Load"\nquestion = "Which is better?"\nitems = [%s]\nepsilon = 1.0\nbudget = 10000.0\n'
                     % ", ".join(f'"{x}"' for x in ITEMS))
        for r in range(args.rounds):
            for k, (name, what) in enumerate((("survey file", survey), ("--demo", "--demo"))):
                new = ["--new-db"] if what == survey else []  # --demo makes its database itself
                proc, _, startup = start([what, "--db", os.path.join(tmp, f"start{r}-{k}.sqlite"), *new], tmp)
                stop(proc)
                results.setdefault(name, []).append(startup)
                print(f"round {r + 1}: start-up of privrank serve {name} {startup:.2f} s", flush=True)
            stores = [(label("SQLite", n), os.path.join(tmp, f"load{r}-{n}.sqlite"), n) for n in args.workers]
            if args.postgres:
                stores += [(label("PostgreSQL", n), f"bench_{uuid.uuid4().hex}", n) for n in args.workers]
            for name, db, workers in stores:
                if name.startswith("PostgreSQL"):
                    postgres_database(args.postgres, "CREATE", db)
                    try:
                        result = measure(survey, f"{args.postgres}/{db}", tmp, args, workers)
                    finally:
                        postgres_database(args.postgres, "DROP", db)
                else:
                    result = measure(survey, db, tmp, args, workers)
                results.setdefault(name, []).append(result)
                dashboard = f"slowest dashboard {result['dashboard']:.0f} ms, " if args.dashboard_every > 0 else ""
                print(f"round {r + 1}: {name} {result['rate']:,.0f} reports/s, p50 {result['p50']:.1f} ms, "
                      f"p99 {result['p99']:.1f} ms, {dashboard}other answers {result['others'] or 'none'}", flush=True)
    offered = f"offering {args.rate:,.0f} reports/s, " if args.rate > 0 else "each as fast as replies come, "
    print(f"\nover {args.rounds} rounds, median (min-max); {args.clients} concurrent respondents {offered}"
          f"{args.seconds:g} s each after {args.warm_up:g} s of warm-up, " + (f"the dashboard polled every {args.dashboard_every:g} s:"
                                            if args.dashboard_every > 0 else "the dashboard not polled:"))
    for name in ("survey file", "--demo"):
        print(f"  start-up of privrank serve {name} to its first answer: {summary(results[name])} s")
    for store in ("SQLite", "PostgreSQL"):
        for name in (label(store, n) for n in args.workers):
            if name in results:
                rows = results[name]
                dashboard = (f"; slowest dashboard {summary([x['dashboard'] for x in rows])} ms"
                             if args.dashboard_every > 0 else "")
                print(f"  {name}: {summary([x['rate'] for x in rows])} reports/s; latency p50 "
                      f"{summary([x['p50'] for x in rows])} ms, p99 {summary([x['p99'] for x in rows])} ms{dashboard}")
        if len(args.workers) > 1 and label(store, args.workers[0]) in results:
            first = results[label(store, args.workers[0])]
            for n in args.workers[1:]:
                ratios = [x["rate"] / y["rate"] for x, y in zip(results[label(store, n)], first)]
                print(f"  {store}: {n} workers / {args.workers[0]}, round by round: "
                      f"{spread(ratios, '{:.2f}')}x")
    print(f"after: {machine_load()}")
    if args.readme:
        rows = ["| | reports/s | latency p50 | latency p99 |", "|---|---|---|---|"]
        for name, text in (("SQLite", "SQLite (synced to disk, group commit)"),
                           ("PostgreSQL", "PostgreSQL, same machine")):
            if name in results:
                rows.append(f"| {text} | {summary([x['rate'] for x in results[name]])} | "
                            f"{summary([x['p50'] for x in results[name]])} ms | "
                            f"{summary([x['p99'] for x in results[name]])} ms |")
        rows.append(f"| start-up to the first answer, survey file / `--demo` | {summary(results['survey file'])} s / "
                    f"{summary(results['--demo'])} s | | |")
        readme_section("serve", "\n".join(rows), command())


if __name__ == "__main__":
    main()
