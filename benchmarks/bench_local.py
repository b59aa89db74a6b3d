"""The local-DP pipeline, in memory and streamed from Parquet, against its hardware floor.

``L`` users each compare every pair of ``m = 30`` items once (Xu, Sun, Cheng's complete design:
``L x 435`` comparisons; 1e5 users give 43.5 M), at epsilon 1. Stages of
``fit_btl(debiased_randomized_response(comps, 1.0))``:

* randomize -- the charged release: one uniform per record from the AES-counter CSPRNG, compared
  with the keep probability (``randomized_response``);
* tally -- the reports' exact per-pair counts (``ComparisonTally``);
* debias + fit -- the debiased statistic and the BTL fit on it.

The floor is what any implementation must do per comparison: draw one uniform (numpy's
PCG64, the fastest generator numpy has), compare it, and count the pair with one ``bincount``,
in chunks (the chunk size that was fastest in a first trial; the pair index of each record is
computed before the clock starts). Also timed: the same with personalised budgets (each user
chose a budget of 100, 200, 400 or 800 for all their answers, split evenly over them), and the
stream engine's statistic at epsilon 1 (``sufficient_statistics(path, engine="stream")``) from a
Parquet file of the same records with string labels and with integer labels. Every contender runs
once per round in rotated order (``spread.interleaved``); each row gives ``median (min-max)`` over
the rounds of its time and of its ratio to the floor of the same round. Memory is the most the
in-memory pipeline allocates at once (tracemalloc, its reports included) against the input's size.

    python benchmarks/bench_local.py             # L = 1e5 (43.5 M comparisons), 5 rounds
    python benchmarks/bench_local.py --users 2e4 --rounds 7
    python benchmarks/bench_local.py --readme    # also rewrite README.md's table
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402

import numpy as np  # noqa: E402
import spread  # noqa: E402

import privrank as pr  # noqa: E402
from privrank.pairwise.local import randomized_response  # noqa: E402
from privrank.pairwise.release import release_from_reports  # noqa: E402

M = 30
CHUNKS = (1 << 14, 1 << 16, 1 << 18, 1 << 22)  # the floor takes the fastest in a first trial
ROW_GROUP = 1 << 20


def complete_design(users: int, rng) -> pr.PairwiseComparisons:
    i, j = np.triu_indices(M, 1)
    theta = np.linspace(-1, 1, M)
    a, b = np.tile(i, users), np.tile(j, users)
    outcome = np.where(rng.random(a.size) < 1 / (1 + np.exp(theta[b] - theta[a])), 1, -1).astype(np.int8)
    return pr.PairwiseComparisons.from_indices(tuple(range(M)), a, b, outcome,
                                               user=np.repeat(np.arange(users), i.size), users=tuple(range(users)))


def floor(pair, outcome, chunk: int) -> None:
    """One uniform, one compare and one bincount per comparison, in chunks (numpy's fastest RNG)."""
    gen = np.random.default_rng(0)
    keep = 1 / (1 + np.exp(-1.0))
    counts = np.zeros(M * M * 2, dtype=np.int64)
    for s in range(0, pair.size, chunk):
        flip = gen.random(min(chunk, pair.size - s)) >= keep
        counts += np.bincount(pair[s:s + chunk] * 2 + (flip ^ (outcome[s:s + chunk] > 0)), minlength=counts.size)


def stages(comps, **budget) -> dict:
    """Seconds of each stage of the in-memory pipeline."""
    out = {}
    t = time.perf_counter()
    reports = randomized_response(comps, rng=3, **budget)
    out["randomize"] = time.perf_counter() - t
    t = time.perf_counter()
    tally = reports.tally()
    out["tally"] = time.perf_counter() - t
    t = time.perf_counter()
    fit = pr.fit_btl(release_from_reports(tally))
    out["debias + fit"] = time.perf_counter() - t
    assert fit.converged
    return out


def peak_memory(comps, **budget) -> float:
    """The most the in-memory pipeline allocates at once, in MB (numpy reports its buffers to tracemalloc)."""
    tracemalloc.start()
    stages(comps, **budget)
    peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
    tracemalloc.stop()
    return peak


def write_parquet(comps, folder: str) -> dict:
    """The records as Parquet files with string labels and with integer labels: ``{kind: path}``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    labels = pa.array([f"item{k:02d}" for k in range(M)])
    paths = {}
    for kind, (a, b) in {"string": (labels.take(comps.item_a), labels.take(comps.item_b)),
                         "integer": (comps.item_a, comps.item_b)}.items():
        paths[kind] = os.path.join(folder, f"comparisons_{kind}.parquet")
        pq.write_table(pa.table({"user": comps.user, "item_a": a, "item_b": b, "outcome": comps.outcome}),
                       paths[kind], row_group_size=ROW_GROUP)
    return paths


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=float, default=1e5)
    parser.add_argument("--rounds", type=int, default=spread.ROUNDS)
    parser.add_argument("--readme", action="store_true", help="rewrite README.md's table of this benchmark")
    args = parser.parse_args(argv)
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    print(spread.load())
    comps = complete_design(int(args.users), np.random.default_rng(1))
    size_mb = (comps.item_a.nbytes + comps.item_b.nbytes + comps.outcome.nbytes + comps.user.nbytes) / 2 ** 20
    print(f"{comps.n_records:,} comparisons of {M} items by {int(args.users):,} users; input {size_mb:,.0f} MB")
    stages(complete_design(10, np.random.default_rng(2)), epsilon=1.0)  # imports and first calls
    pair, outcome = comps.item_a * M + comps.item_b, comps.outcome
    trial = {}
    for chunk in CHUNKS:
        t = time.perf_counter()
        floor(pair, outcome, chunk)
        trial[chunk] = time.perf_counter() - t
    chunk = min(trial, key=trial.get)
    personal = {u: 100.0 * 2 ** (k % 4) for k, u in enumerate(comps.users)}
    budgets = {"epsilon 1 per comparison, in memory": {"epsilon": 1.0},
               "personalised budgets (each user's own epsilon), in memory": {"user_epsilon": personal}}
    with tempfile.TemporaryDirectory() as folder:
        paths = write_parquet(comps, folder)
        contenders = {"floor": lambda: floor(pair, outcome, chunk),
                      **{name: lambda b=budget: stages(comps, **b) for name, budget in budgets.items()},
                      **{f"stream engine from Parquet, {kind} labels, epsilon 1":
                         lambda p=path: pr.sufficient_statistics(p, engine="stream", epsilon=1.0, rng=3)
                         for kind, path in paths.items()}}
        for run in contenders.values():  # first calls (imports, the files into the page cache)
            run()
        times, outputs = spread.interleaved(contenders, rounds=args.rounds)
    print(spread.load())
    streamed = [outputs[name] for name in contenders if name.startswith("stream")]
    assert all(np.array_equal(getattr(streamed[0], k), getattr(t, k)) for t in streamed for k in ("i", "j", "n", "wins2"))
    print(f"floor (one uniform, compare, bincount per comparison; chunks of {chunk:,}): "
          f"{spread.spread(times['floor'], '{:.3f}')} s")
    rows = ["| pipeline | time | of the floor | memory |", "|---|---|---|---|"]
    for name in list(contenders)[1:]:
        ratio = spread.ratios(times[name], times["floor"])
        if name in budgets:
            memory = f"{peak_memory(comps, **budgets[name]) / size_mb:.2f}x the input"
            parts = ", ".join(f"{k} {v:.2f} s" for k, v in outputs[name].items())
            print(f"{name}: last round {parts}")
        else:
            memory = "bounded (two batches)"
        rows.append(f"| {name} | {spread.spread(times[name], '{:.2f}')} s | {spread.spread(ratio, '{:.1f}')}x | "
                    f"{memory} |")
    table = "\n".join(rows)
    print(table)
    if args.readme:
        spread.readme_section("local", table, spread.command())


if __name__ == "__main__":
    main()
