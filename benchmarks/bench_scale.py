"""Scale: sufficient statistics of a Parquet file larger than memory, streamed and on Dask.

Generates (once, outside git) a Parquet file of ``--n`` comparisons (default 2e8) of m = 1000
items under a BTL model: columns ``user`` (int64, 200 comparisons per user, stored user by user
as survey exports are), ``item_a`` and ``item_b`` (string labels, dictionary-encoded),
``outcome`` (int8, 5% ties). Then, each in a fresh subprocess so that its peak resident memory
(``ru_maxrss``) and CPU time are its own, in interleaved rounds (``spread.interleaved``: every job
once per round, the order rotated), each job's time, CPU time and ratios to pyarrow alone in the
same round given as ``median (min-max)`` over the rounds (``--rounds``, default 5; the biggest
jobs -- the dask engine and the whole commands -- run ``--big-rounds``, default 3), with the
machine's load before and after:

* ``pyarrow``: reading the same columns with pyarrow alone, batch by batch (the physical limit);
* ``stream``: the stream engine without privacy and with randomized response at epsilon = 1
  (the statistic of ``privrank rank FILE --engine stream --epsilon 1``);
* ``dask``: the dask engine on a LocalCluster of 1 and of 2 worker processes (one thread each);
  peak memory is the client's plus the workers' peaks;
* ``rank``: the whole command ``privrank rank FILE --engine stream --epsilon 1`` (run through
  ``privrank.cli.main`` in the subprocess, with a ledger of its own), which also streams the file
  once more to fingerprint it for the privacy ledger;

and the time from the statistic to the ranking (debiasing and the BTL fit).

Rankings: a second Parquet file of ``--rankings`` (default 5e6) complete rankings of
``RANK_M = 20`` items (Plackett-Luce, order layout ``rank1 .. rank20``, dictionary-encoded string
labels), and the same measurements for ``kind="rankings"``: pyarrow alone; the stream engine
computing both exact statistics (pairwise and position counts) and the voters' ``ldp-matrix``
reports at epsilon = 1; the dask engine (exact statistics) on 1 and 2 workers; the whole
command ``privrank aggregate FILE --engine stream --method dp-footrule --epsilon 1``; and the
time from the statistics to a private ranking (noisy matrix with the exact Kemeny solver;
footrule assignment).

The last line is ``stream_comparisons_per_s=<x>`` for the private stream run of comparisons.

``--arena``: a private arena release instead (issue 40). A Parquet file of ``--n`` battles
(default 1e8; ``--quick``: 1e6) of ``M`` models (short text labels) by ``ARENA_USERS`` = 1e6 users
drawn at random (each user's battles spread over the whole file), generated in row groups; then
``privrank rank FILE --mechanism objective-perturbation --items MODELS --epsilon 1
--max-answers ARENA_BOUND --ci`` (95% intervals) on ``--engine stream``, in interleaved rounds
with pyarrow alone reading the same columns, and -- up to ``--local-max`` battles (default 1e7; not with ``--quick``)
-- the same command on ``--engine local``: wall, CPU and peak RSS of each.

    python benchmarks/bench_scale.py                  # 2e8 comparisons, 5e6 rankings, files under /tmp
    python benchmarks/bench_scale.py --n 2e7 --rankings 1e6 --skip-dask
    python benchmarks/bench_scale.py --arena --quick     # 1e6 battles, under a minute
    python benchmarks/bench_scale.py --arena --n 3e7 --big-rounds 3
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import spread

M = 1000
PER_USER = 200
ROW_GROUP = 1 << 20
TIE_RATE = 0.05
RANK_M = 20
RANK_ROW_GROUP = 1 << 18
ARENA_USERS = 1_000_000
ARENA_BOUND = 100  # --max-answers: the declared battles per user



def battles(rng, theta, size: int):
    """``(a, b, tie, first_wins)`` of ``size`` comparisons of random pairs under BTL scores ``theta``,
    a tie with probability ``TIE_RATE``."""
    a = rng.integers(0, theta.size, size)
    b = (a + rng.integers(1, theta.size, size)) % theta.size
    p = 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    return a, b, rng.random(size) < TIE_RATE, rng.random(size) < p

def generate(path: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` BTL comparisons of ``M`` items to ``path`` in row groups of ``ROW_GROUP``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, M)
    labels = pa.array([f"item{k:04d}" for k in range(M)])
    schema = pa.schema([("user", pa.int64()), ("item_a", pa.dictionary(pa.int32(), pa.string())),
                        ("item_b", pa.dictionary(pa.int32(), pa.string())), ("outcome", pa.int8())])
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for start in range(0, n, ROW_GROUP):
            size = min(ROW_GROUP, n - start)
            a, b, tie, first_wins = battles(rng, theta, size)
            outcome = np.where(tie, 0, np.where(first_wins, 1, -1)).astype(np.int8)
            writer.write_table(pa.table({
                "user": np.arange(start, start + size) // PER_USER,
                "item_a": pa.DictionaryArray.from_arrays(pa.array(a.astype(np.int32)), labels),
                "item_b": pa.DictionaryArray.from_arrays(pa.array(b.astype(np.int32)), labels),
                "outcome": outcome}, schema=schema), row_group_size=ROW_GROUP)
    tmp.rename(path)


def generate_rankings(path: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` Plackett-Luce rankings of ``RANK_M`` items to ``path``, order layout."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, RANK_M)
    labels = pa.array([f"item{k:02d}" for k in range(RANK_M)])
    schema = pa.schema([(f"rank{k + 1}", pa.dictionary(pa.int32(), pa.string())) for k in range(RANK_M)])
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for start in range(0, n, RANK_ROW_GROUP):
            size = min(RANK_ROW_GROUP, n - start)
            orders = np.argsort(-(theta + rng.gumbel(size=(size, RANK_M))), axis=1).astype(np.int32)
            writer.write_table(pa.table({f"rank{k + 1}": pa.DictionaryArray.from_arrays(pa.array(orders[:, k]), labels)
                                         for k in range(RANK_M)}, schema=schema), row_group_size=RANK_ROW_GROUP)
    tmp.rename(path)


def generate_arena(path: Path, n: int, seed: int = 0) -> None:
    """Write ``n`` battles of ``M`` models (``model_a,model_b,winner`` with a ``judge`` user column of
    ``ARENA_USERS`` users drawn at random) to ``path``, one row group of ``ROW_GROUP`` at a time,
    and the model list beside it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, M)
    names = [f"m{k:04d}" for k in range(M)]
    labels, words = pa.array(names), pa.array(["model_a", "model_b", "tie"])
    path.with_suffix(".models").write_text("\n".join(names) + "\n")
    text = pa.dictionary(pa.int32(), pa.string())
    schema = pa.schema([("judge", pa.int64()), ("model_a", text), ("model_b", text), ("winner", text)])
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        for start in range(0, n, ROW_GROUP):
            size = min(ROW_GROUP, n - start)
            a, b, tie, first_wins = battles(rng, theta, size)
            winner = np.where(tie, 2, np.where(first_wins, 0, 1))
            writer.write_table(pa.table({
                "judge": rng.integers(0, ARENA_USERS, size),
                "model_a": pa.DictionaryArray.from_arrays(pa.array(a.astype(np.int32)), labels),
                "model_b": pa.DictionaryArray.from_arrays(pa.array(b.astype(np.int32)), labels),
                "winner": pa.DictionaryArray.from_arrays(pa.array(winner.astype(np.int32)), words)}, schema=schema))
    tmp.rename(path)


# Each job runs in its own interpreter and prints one JSON line with its numbers. SETUP (imports,
# starting a cluster) is not timed; RUN is.
ARENA_RANK = """
main(["rank", PATH, "--engine", "{engine}", "--mechanism", "objective-perturbation", "--items",
      PATH.rsplit(".", 1)[0] + ".models", "--epsilon", "1", "--max-answers", "%d", "--ci", "--seed", "1",
      "--batch-size", str(BATCH), "--format", "csv", "--output", OUT, "--force", "--quiet"])
RESULT = {{}}
""" % ARENA_BOUND
JOBS = {
    "pyarrow": ("import pyarrow.parquet as pq", """
f = pq.ParquetFile(PATH, read_dictionary=["item_a", "item_b"])
rows = 0
for batch in f.iter_batches(batch_size=BATCH, columns=["user", "item_a", "item_b", "outcome"]):
    rows += batch.num_rows
RESULT = {"records": rows}
"""),
    "stream": ("from privrank.engines import sufficient_statistics", """
tally = sufficient_statistics(PATH, engine="stream", batch_size=BATCH)
RESULT = {"records": tally.n_records}
"""),
    "stream_private": ("""
from privrank.engines import sufficient_statistics
from privrank.pairwise.btl import fit_btl
from privrank.pairwise.release import release_from_reports
""", """
tally = sufficient_statistics(PATH, engine="stream", epsilon=1.0, rng=1, batch_size=BATCH)
t = time.perf_counter()
fit = fit_btl(release_from_reports(tally))
RESULT = {"records": tally.n_records, "to_ranking_s": time.perf_counter() - t, "top3": fit.top_k(3),
          "guarantee": fit.guarantee.describe()}
"""),
    "dask": ("""
from distributed import LocalCluster
from privrank.engines import sufficient_statistics
cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None,
                       memory_limit=0)
client = cluster.get_client()
client.run(lambda: __import__("privrank.engines"))
""", """
tally = sufficient_statistics(PATH, engine="dask", epsilon=1.0, rng=1, scheduler=cluster.scheduler_address)
RESULT = {"records": tally.n_records,
          "worker_peak_mb": sum(client.run(lambda: __import__("resource").getrusage(
              __import__("resource").RUSAGE_SELF).ru_maxrss).values()) / 1024}
"""),
    "rankings_pyarrow": ("import pyarrow.parquet as pq", """
f = pq.ParquetFile(PATH, read_dictionary=[f"rank{k + 1}" for k in range(20)])
rows = 0
for batch in f.iter_batches(batch_size=BATCH, columns=[f"rank{k + 1}" for k in range(20)]):
    rows += batch.num_rows
RESULT = {"records": rows}
"""),
    "rankings_stream": ("""
from privrank.aggregation.footrule import footrule_optimal_order
from privrank.aggregation.private_kemeny import private_kemeny
from privrank.engines import sufficient_statistics
""", """
tally = sufficient_statistics(PATH, kind="rankings", engine="stream", batch_size=BATCH)
t = time.perf_counter()
kemeny = private_kemeny(tally, epsilon=1.0, solver="exact", rng=1)
t_kemeny = time.perf_counter() - t
t = time.perf_counter()
footrule = footrule_optimal_order(tally)
RESULT = {"records": tally.n_voters, "kemeny_s": t_kemeny, "footrule_s": time.perf_counter() - t}
"""),
    "rankings_ldp": ("from privrank.engines import sufficient_statistics", """
tally = sufficient_statistics(PATH, kind="rankings", engine="stream", statistic="pairwise", epsilon=1.0, rng=1,
                              batch_size=BATCH)
RESULT = {"records": tally.n_voters}
"""),
    "rankings_dask": ("""
from distributed import LocalCluster
from privrank.engines import sufficient_statistics
cluster = LocalCluster(n_workers=WORKERS, threads_per_worker=1, processes=True, dashboard_address=None,
                       memory_limit=0)
client = cluster.get_client()
client.run(lambda: __import__("privrank.engines"))
""", """
tally = sufficient_statistics(PATH, kind="rankings", engine="dask", scheduler=cluster.scheduler_address)
RESULT = {"records": tally.n_voters,
          "worker_peak_mb": sum(client.run(lambda: __import__("resource").getrusage(
              __import__("resource").RUSAGE_SELF).ru_maxrss).values()) / 1024}
"""),
    "aggregate": ("from privrank.cli import main", """
main(["aggregate", PATH, "--engine", "stream", "--method", "dp-footrule", "--epsilon", "1", "--seed", "1",
      "--batch-size", str(BATCH), "--format", "csv", "--output", OUT, "--force"])
RESULT = {}
"""),
    "arena_pyarrow": ("import pyarrow.parquet as pq", """
f = pq.ParquetFile(PATH, read_dictionary=["model_a", "model_b", "winner"])
rows = 0
for batch in f.iter_batches(batch_size=BATCH, columns=["judge", "model_a", "model_b", "winner"]):
    rows += batch.num_rows
RESULT = {"records": rows}
"""),
    "arena_stream": ("from privrank.cli import main", ARENA_RANK.format(engine="stream")),
    "arena_local": ("from privrank.cli import main", ARENA_RANK.format(engine="local")),
    "rank": ("from privrank.cli import main", """
main(["rank", PATH, "--engine", "stream", "--epsilon", "1", "--seed", "1", "--batch-size", str(BATCH),
      "--format", "csv", "--output", OUT, "--force", "--ledger", OUT + ".ledger"])
RESULT = {}
"""),
}

HARNESS = """
import json, resource, sys, time
PATH, BATCH, WORKERS, OUT = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
{setup}
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
START, CPU = time.perf_counter(), cpu()
{run}
RESULT.update(seconds=time.perf_counter() - START, cpu_seconds=cpu() - CPU,
              peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(RESULT))
"""


def run_job(name: str, path: Path, batch: int, workers: int = 0) -> dict:
    setup, run = JOBS[name]
    code = HARNESS.format(setup=setup, run=run)
    out = subprocess.run([sys.executable, "-c", code, str(path), str(batch), str(workers),
                          str(path.with_suffix(".ranking.csv"))], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=2e8, help="number of comparisons (default 2e8)")
    parser.add_argument("--dir", default="/tmp/privrank_bench_scale", help="where the Parquet file goes")
    parser.add_argument("--batch-size", type=int, default=1 << 20)
    parser.add_argument("--rankings", type=float, default=5e6, help="number of rankings (default 5e6; 0: none)")
    parser.add_argument("--rounds", type=int, default=spread.ROUNDS, help="rounds of the streamed jobs (>= 5)")
    parser.add_argument("--big-rounds", type=int, default=3, help="rounds of the dask and command jobs (>= 3)")
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--arena", action="store_true", help="the private arena release instead (module docstring)")
    parser.add_argument("--quick", action="store_true", help="with --arena: 1e6 battles, stream only (under a minute)")
    parser.add_argument("--local-max", type=float, default=1e7, help="with --arena: largest n run on --engine local")
    args = parser.parse_args(argv)
    if args.rounds < 5 or args.big_rounds < 3:
        parser.error("--rounds must be at least 5 and --big-rounds at least 3")
    n = int(1e6 if args.quick else args.n if args.n != 2e8 or not args.arena else 1e8)
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    if args.arena:
        return bench_arena(directory, n, args.batch_size, args.big_rounds, n <= args.local_max and not args.quick)
    path = generated(directory / f"comparisons_{n}.parquet", generate, n)
    size_mb = path.stat().st_size / 2 ** 20
    print(f"file: {n:,} comparisons, m = {M}, {size_mb:,.0f} MB on disk; "
          f"{n * 17 / 2 ** 20:,.0f} MB as flat arrays (8 B user + 2 x 4 B item index + 1 B outcome)")
    print(spread.load())

    results = against_pyarrow({name: (name, 0) for name in ("pyarrow", "stream", "stream_private")}, path,
                              args.batch_size, n, "comparisons", args.rounds)
    private = results["stream_private"][-1]
    print(f"statistic -> ranking (debias + BTL fit, m = {M}): {private['to_ranking_s']:.2f} s; "
          f"top 3 {private['top3']}")
    print(f"guarantee: {private['guarantee']}")
    big = {"pyarrow": ("pyarrow", 0), "rank": ("rank", 0)}
    if not args.skip_dask:
        big.update({f"dask {w} worker(s)": ("dask", w) for w in (1, 2)})
    big_results = against_pyarrow(big, path, args.batch_size, n, "comparisons", args.big_rounds)
    cli = max(big_results["rank"], key=lambda r: r["peak_mb"])
    print(f"privrank rank FILE --engine stream --epsilon 1 (after imports; it also streams the file once more to "
          f"fingerprint it): peak RSS {cli['peak_mb']:.0f} MB; file on disk / peak RSS = "
          f"{size_mb / cli['peak_mb']:.2f}, flat arrays / peak RSS = {n * 17 / 2 ** 20 / cli['peak_mb']:.1f}")
    if args.rankings:
        bench_rankings(directory, int(args.rankings), args.batch_size, args.skip_dask, args.rounds, args.big_rounds)
    print(spread.load())
    seconds = [r["seconds"] for r in results["stream_private"]]
    print(f"stream_comparisons_per_s={n / statistics.median(seconds):.0f}")


def bench_arena(directory: Path, n: int, batch: int, rounds: int, local: bool) -> None:
    """The private arena release (module docstring)."""
    path = generated(directory / f"arena_{n}.parquet", generate_arena, n)
    print(f"arena file: {n:,} battles of {M} models by {ARENA_USERS:,} users, "
          f"{path.stat().st_size / 2 ** 20:,.0f} MB on disk; privrank rank FILE --mechanism objective-perturbation "
          f"--epsilon 1 --max-answers {ARENA_BOUND} --ci --items MODELS")
    print(spread.load())
    jobs = {"arena_pyarrow": ("arena_pyarrow", 0), "arena_stream": ("arena_stream", 0)}
    if local:
        jobs["arena_local"] = ("arena_local", 0)
    against_pyarrow(jobs, path, batch, n, "battles", rounds)
    print(spread.load())


def generated(path: Path, write, n: int) -> Path:
    """``path``, written by ``write(path, n)`` unless it exists from an earlier run."""
    if not path.exists():
        t = time.perf_counter()
        write(path, n)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s")
    return path


def against_pyarrow(jobs: dict, path: Path, batch: int, n: int, unit: str, rounds: int) -> dict:
    """Run the jobs ``{name: (job, workers)}`` (the first reads the columns with pyarrow alone) in
    interleaved rounds, print each and its ratios to the first in the same round, and return
    every round's results of each."""
    results = {name: [] for name in jobs}

    def runner(name):
        job, workers = jobs[name]
        return lambda: results[name].append(run_job(job, path, batch, workers))
    spread.interleaved({name: runner(name) for name in jobs}, rounds=rounds)
    base = next(iter(jobs))
    for name, rs in results.items():
        wall, cpu = [r["seconds"] for r in rs], [r["cpu_seconds"] for r in rs]
        line = (f"{name:20s} {spread.spread(wall, '{:.1f}')} s  {n / statistics.median(wall):14,.0f} {unit}/s  "
                f"CPU {spread.spread(cpu, '{:.1f}')} s  peak RSS {max(r['peak_mb'] for r in rs):7.0f} MB")
        if "worker_peak_mb" in rs[0]:
            line += f" + workers {max(r['worker_peak_mb'] for r in rs):.0f} MB"
        if name != base:
            base_wall, base_cpu = [r["seconds"] for r in results[base]], [r["cpu_seconds"] for r in results[base]]
            line += (f"; / pyarrow alone: wall {spread.spread(spread.ratios(wall, base_wall), '{:.2f}')}x, "
                     f"CPU {spread.spread(spread.ratios(cpu, base_cpu), '{:.2f}')}x")
        print(line)
    return results


def bench_rankings(directory: Path, n: int, batch: int, skip_dask: bool, rounds: int, big_rounds: int) -> None:
    """The rankings measurements (module docstring)."""
    path = generated(directory / f"rankings_{n}.parquet", generate_rankings, n)
    size_mb = path.stat().st_size / 2 ** 20
    flat_mb = n * RANK_M * 8 / 2 ** 20
    print(f"rankings file: {n:,} rankings of m = {RANK_M} items, {size_mb:,.0f} MB on disk; "
          f"{flat_mb:,.0f} MB as int64 orders")
    results = against_pyarrow({name: (name, 0) for name in ("rankings_pyarrow", "rankings_stream", "rankings_ldp")},
                              path, batch, n, "rankings", rounds)
    exact = results["rankings_stream"][-1]
    print(f"statistics -> private ranking (m = {RANK_M}): noisy matrix + exact Kemeny {exact['kemeny_s']:.3f} s, "
          f"footrule assignment {exact['footrule_s']:.3f} s")
    big = {"rankings_pyarrow": ("rankings_pyarrow", 0), "aggregate": ("aggregate", 0)}
    if not skip_dask:
        big.update({f"rankings dask {w} worker(s)": ("rankings_dask", w) for w in (1, 2)})
    big_results = against_pyarrow(big, path, batch, n, "rankings", big_rounds)
    cli = max(big_results["aggregate"], key=lambda r: r["peak_mb"])
    print(f"privrank aggregate FILE --engine stream --method dp-footrule --epsilon 1 (after imports): peak RSS "
          f"{cli['peak_mb']:.0f} MB; int64 orders / peak RSS = {flat_mb / cli['peak_mb']:.1f}")


if __name__ == "__main__":
    main()
