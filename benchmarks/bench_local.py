"""The local-DP pipeline in memory, stage by stage, against its hardware floor.

``L`` users each compare every pair of ``m = 30`` items once (Xu, Sun, Cheng's complete design:
``L x 435`` comparisons; 1e5 users give 43.5 M), at epsilon 1. Stages of
``fit_btl(debiased_randomized_response(comps, 1.0))``:

* randomize -- the charged release: one uniform per record from the AES-counter CSPRNG, compared
  with the keep probability (``randomized_response``);
* tally -- the reports' exact per-pair counts (``ComparisonTally``);
* debias + fit -- the debiased statistic and the BTL fit on it.

The floor is what any implementation must do per comparison: draw one uniform (numpy's
PCG64, the fastest generator numpy has), compare it, and count the pair with one ``bincount``,
in chunks (the best of several chunk sizes; the pair index of each record is computed before
the clock starts). Also printed: the same with personalised budgets (each user chose a budget of
100, 200, 400 or 800 for all their answers, split evenly over them), the most memory the pipeline
allocates at once (tracemalloc, its reports included) against the input's size, and the stream
engine on the same records from Parquet.

    python benchmarks/bench_local.py             # L = 1e5 (43.5 M comparisons)
    python benchmarks/bench_local.py --users 2e4
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

import privrank as pr  # noqa: E402
from privrank.pairwise.local import randomized_response  # noqa: E402
from privrank.pairwise.release import release_from_reports  # noqa: E402

M = 30
CHUNKS = (1 << 14, 1 << 16, 1 << 18, 1 << 22)  # the floor takes its best chunk size


def complete_design(users: int, rng) -> pr.PairwiseComparisons:
    i, j = np.triu_indices(M, 1)
    theta = np.linspace(-1, 1, M)
    a, b = np.tile(i, users), np.tile(j, users)
    outcome = np.where(rng.random(a.size) < 1 / (1 + np.exp(theta[b] - theta[a])), 1, -1).astype(np.int8)
    return pr.PairwiseComparisons.from_indices(tuple(range(M)), a, b, outcome,
                                               user=np.repeat(np.arange(users), i.size), users=tuple(range(users)))


def floor(comps, chunk: int) -> float:
    """One uniform, one compare and one bincount per comparison, in chunks (numpy's fastest RNG)."""
    gen = np.random.default_rng(0)
    keep = 1 / (1 + np.exp(-1.0))
    pair = comps.item_a * M + comps.item_b
    t = time.perf_counter()
    counts = np.zeros(M * M * 2, dtype=np.int64)
    for s in range(0, pair.size, chunk):
        flip = gen.random(min(chunk, pair.size - s)) >= keep
        counts += np.bincount(pair[s:s + chunk] * 2 + (flip ^ (comps.outcome[s:s + chunk] > 0)), minlength=counts.size)
    return time.perf_counter() - t


def stages(comps, **budget) -> dict:
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
    out["total"] = sum(out.values())
    assert fit.converged
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=float, default=1e5)
    args = parser.parse_args(argv)
    comps = complete_design(int(args.users), np.random.default_rng(1))
    size_mb = (comps.item_a.nbytes + comps.item_b.nbytes + comps.outcome.nbytes + comps.user.nbytes) / 2 ** 20
    print(f"{comps.n_records:,} comparisons of {M} items by {int(args.users):,} users; input {size_mb:,.0f} MB")
    stages(complete_design(10, np.random.default_rng(2)), epsilon=1.0)  # imports and first calls
    best_floor = min(floor(comps, chunk) for chunk in CHUNKS for _ in range(3))
    print(f"floor (one uniform, compare, bincount per comparison): {best_floor:.2f} s")
    for name, budget in (("epsilon 1 per comparison", {"epsilon": 1.0}),
                         ("personalised budgets (user_epsilon per user)", {"user_epsilon": {
                             u: 100.0 * 2 ** (k % 4) for k, u in enumerate(comps.users)}})):
        runs = [stages(comps, **budget) for _ in range(3)]
        best = {k: min(r[k] for r in runs) for k in runs[0]}
        parts = ", ".join(f"{k} {v:.2f} s" for k, v in best.items() if k != "total")
        print(f"{name}: {best['total']:.2f} s = {best['total'] / best_floor:.1f}x the floor ({parts})")
        tracemalloc.start()  # numpy reports its buffers to tracemalloc: the peak of what the pipeline allocates
        stages(comps, **budget)
        peak = tracemalloc.get_traced_memory()[1] / 2 ** 20
        tracemalloc.stop()
        print(f"  memory: at most {peak:,.0f} MB allocated at once by the pipeline, reports included "
              f"({peak / size_mb:.2f}x the input)")
    import pyarrow as pa
    import pyarrow.parquet as pq
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "comparisons.parquet")
        pq.write_table(pa.table({"user": comps.user, "item_a": comps.item_a, "item_b": comps.item_b,
                                 "outcome": comps.outcome}), path, row_group_size=1 << 20)
        stream = np.inf
        for _ in range(3):  # best of three, as the stages above
            t = time.perf_counter()
            pr.sufficient_statistics(path, engine="stream", epsilon=1.0, rng=3)
            stream = min(stream, time.perf_counter() - t)
        print(f"stream engine from Parquet, epsilon 1: {stream:.2f} s = {stream / best_floor:.1f}x the floor")


if __name__ == "__main__":
    main()
