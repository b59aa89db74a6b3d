"""Bradley-Terry maximum-likelihood fit: privrank vs choix and evalica on identical data.

Every contender fits the same model to the same comparisons, configured as its own
documentation says for speed (``CONFIG`` spells out each call; the script prints it beside the
figures and into README.md):

* privrank ``fit_btl`` (the MLE by default on raw comparisons, Newton to a gradient 2-norm
  <= 1e-8) of ``PairwiseComparisons.from_labels(..., items=names)`` or ``from_indices``;
* evalica 0.4 ``bradley_terry`` on numpy arrays with its ``index=`` argument (the item list as a
  ``pd.Index``, made once before the clock starts, as evalica's own benchmarks pass the index
  of ``evalica.indexing``) and the outcome as a uint8 array of its ``Winner`` values (the array type its
  Rust solver reads without a copy), its default solver and tolerance (1e-6, 100 iterations);
* choix 0.4 ``ilsr_pairwise_dense`` (alpha = 0, the MLE; ``tol`` 1e-8), which its docs name
  the efficient form for data with many comparisons per pair, on the win-count matrix the user
  builds with one ``bincount`` (timed), and ``opt_pairwise`` (its defaults: alpha = 1e-6,
  Newton-CG) on the list of (winner, loser) pairs its docs describe.

Data: first the NFL 2019 season shipped with privrank (32 teams; its rows of
``nfl_2010_2020.csv`` read with the csv module, the one tied game left out because choix takes
no ties), then ``n`` comparisons of random pairs of ``m`` items under a BTL model with N(0, 1)
scores, no ties.

Two inputs, as numpy arrays (what ``pandas.read_csv(...).to_numpy()`` gives), the item list
given to privrank and evalica alike (``items=`` / ``index=``):

* labels -- two object arrays of item names and the outcome: privrank ``from_labels``, evalica
  on the names, choix after the user's ``index.get_indexer`` (timed);
* indices -- two int64 arrays: privrank ``from_indices``, evalica with ``pd.RangeIndex(m)``,
  choix on the indices.

Only each library's call is timed; reading its answer as scores in item order (evalica's
sorted Series reindexed, logarithms taken) happens outside the clock. Each answer is compared
with privrank's: ``max|dtheta|`` (scores centred, log-strengths) and its
gradient norm in the unpenalised likelihood. A contender more than 1e-4 away is reported as
DISAGREEING, and its ratio is not a speed-up. Timing (``spread.py``): ``--rounds`` interleaved
rounds of CPU time (``time.process_time``; every library runs on one thread), each contender's
time the best of ``--repeat`` calls in the round, a small data set's call repeated to fill about
0.1 s; ratios (time of the peer / time of privrank on the same input) are taken round by round
and shown as median (min-max). choix is skipped at m = 10,000 (m x m dense matrices: 800 MB
each) and ``opt_pairwise`` above m = 200 (seconds a call), and noted so. The last lines print the
smallest median ratio per input against the fastest agreeing peer.

    python benchmarks/bench_btl.py              # NFL 2019, m = 50, 200, 1000, 10000
    python benchmarks/bench_btl.py --quick      # NFL 2019, m = 50, 200
    python benchmarks/bench_btl.py --readme     # and the table in README.md
    python benchmarks/bench_btl.py --without-opt   # without choix opt_pairwise (seconds a call)
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # read when numpy loads its BLAS

import argparse  # noqa: E402
import csv  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

import privrank as pr  # noqa: E402
import spread  # noqa: E402
from privrank.pairwise.btl import btl_gradient  # noqa: E402

NFL = Path(pr.__file__).parent / "datasets_shipped" / "nfl_2010_2020.csv"
SIZES = ((50, 100_000), (200, 100_000), (1000, 300_000), (10_000, 1_000_000))
AGREE = 1e-4
FILL = 0.1  # seconds: a call faster than this is repeated within one timing
COLUMNS = (("evalica", "labels"), ("evalica", "indices"), ("choix ilsr", "labels"), ("choix ilsr", "indices"),
           ("choix opt", "indices"))
HEADER = ("| m, comparisons | evalica, labels | evalica, indices | choix ILSR, labels | choix ILSR, indices "
          "| choix `opt_pairwise` |\n|---|---|---|---|---|---|")


def config() -> dict[str, str]:
    """Each contender's call, as timed (names, xs, ys: arrays of labels; a, b: int64 indices)."""
    import evalica

    from privrank import kernels
    from privrank.pairwise import btl

    kernel = (f"compiled kernels: pair counts, Newton steps up to {btl.KERNEL_MAX_ITEMS} items"
              if kernels.compiled is not None else "compiled kernels NOT BUILT (numpy alone)")
    return {
        "privrank": "fit_btl(PairwiseComparisons.from_labels(xs, ys, outcome, items=names), tol=1e-8); "
                    f"indices: from_indices(range(m), a, b, outcome); outcome an int array of 1 / -1; {kernel}",
        "evalica": f"bradley_terry(xs, ys, winners, index=index) on numpy arrays; index = pd.Index(names) "
                   f"(pd.RangeIndex(m) for a, b), made before the clock starts; winners a "
                   f"uint8 array of Winner.X / Winner.Y; solver {evalica.SOLVER!r}, tolerance 1e-6, limit 100 "
                   f"(defaults)",
        "choix ilsr": "ilsr_pairwise_dense(comp_mat, alpha=0.0, tol=1e-8); comp_mat = np.bincount(winner * m + "
                      "loser, minlength=m * m).reshape(m, m), timed; labels mapped by index.get_indexer, timed",
        "choix opt": "opt_pairwise(m, pairs) on a list of (winner, loser) tuples; defaults alpha=1e-6, "
                     "method='Newton-CG', tol=1e-5",
    }


def nfl_season(season=2019):
    """``(names, a, b, first_wins)`` of one season's untied games, read as a user reads the CSV."""
    with NFL.open(newline="") as f:
        games = [row for row in csv.DictReader(f) if row["season"] == str(season) and row["result1"] != "0.5"]
    names = sorted({row[team] for row in games for team in ("team1", "team2")})
    index = {name: k for k, name in enumerate(names)}
    a = np.array([index[row["team1"]] for row in games])
    b = np.array([index[row["team2"]] for row in games])
    return names, a, b, np.array([row["result1"] == "1" for row in games])


def make_data(m, n, rng):
    theta = rng.normal(0, 1, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    first_wins = rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    return [f"item{k:05d}" for k in range(m)], a, b, first_wins


def centred(theta):
    theta = np.asarray(theta, dtype=float)
    return theta - theta.mean()


def contenders(names, a, b, first_wins):
    """``{(name, input): (call, theta)}``: ``call()`` is what is timed, each library called as
    :func:`config` says, and ``theta(answer)`` reads its answer as centred log-strengths in
    item-index order (``names`` sorted: the index order is the label order, as privrank numbers
    items), outside the clock."""
    import choix
    import evalica
    import pandas as pd

    m = len(names)
    labels = np.array(names, dtype=object)
    xs, ys = labels[a], labels[b]
    outcome = np.where(first_wins, 1, -1)
    winners = np.where(first_wins, evalica.Winner.X, evalica.Winner.Y).astype(np.uint8)
    label_index = pd.Index(names)
    range_index = pd.RangeIndex(m)
    items = tuple(range(m))
    pairs = list(zip(np.where(first_wins, a, b).tolist(), np.where(first_wins, b, a).tolist()))

    def choix_ilsr(left, right):
        winner, loser = np.where(first_wins, left, right), np.where(first_wins, right, left)
        comp_mat = np.bincount(winner * m + loser, minlength=m * m).reshape(m, m).astype(float)
        return choix.ilsr_pairwise_dense(comp_mat, alpha=0.0, tol=1e-8)

    def evalica_theta(index):
        return lambda result: centred(np.log(result.scores.reindex(index).to_numpy()))

    def privrank_theta(fit):
        return centred(fit.scores)

    out = {("privrank", "labels"): (lambda: pr.fit_btl(pr.PairwiseComparisons.from_labels(
               xs, ys, outcome, items=names), tol=1e-8), privrank_theta),
           ("privrank", "indices"): (lambda: pr.fit_btl(pr.PairwiseComparisons.from_indices(
               items, a, b, outcome), tol=1e-8), privrank_theta),
           ("evalica", "labels"): (lambda: evalica.bradley_terry(xs, ys, winners, index=label_index),
                                   evalica_theta(label_index)),
           ("evalica", "indices"): (lambda: evalica.bradley_terry(a, b, winners, index=range_index),
                                    evalica_theta(range_index))}
    if m <= 2000:
        out[("choix ilsr", "labels")] = (lambda: choix_ilsr(label_index.get_indexer(xs),
                                                            label_index.get_indexer(ys)), centred)
        out[("choix ilsr", "indices")] = (lambda: choix_ilsr(a, b), centred)
        if m <= 200:  # scipy's Newton-CG over Python loops: seconds a call at m = 200 already
            out[("choix opt", "indices")] = (lambda: choix.opt_pairwise(m, pairs), centred)
    return out


def filled(fn):
    """``(run, calls)``: ``run`` calls ``fn`` ``calls`` times (about ``FILL`` seconds in all) and
    returns its last output."""
    start = time.perf_counter()
    fn()
    calls = max(1, int(FILL / max(time.perf_counter() - start, 1e-6)))

    def run():
        for _ in range(calls):
            out = fn()
        return out

    return run, calls


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="NFL 2019, m = 50 and 200 only")
    parser.add_argument("--rounds", type=int, default=spread.ROUNDS, help="interleaved rounds (>= 5)")
    parser.add_argument("--repeat", type=int, default=1, help="calls per contender and round (the best counts)")
    parser.add_argument("--without-opt", action="store_true", help="skip choix opt_pairwise (seconds a call)")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md")
    args = parser.parse_args(argv)
    if args.rounds < 5:
        parser.error("--rounds must be at least 5")
    print(spread.load())
    configured = config()
    for name, call in configured.items():
        print(f"{name}: {call}")
    rng = np.random.default_rng(7)
    data = [("NFL 2019", nfl_season())] + [(f"{m:,}, {n:.0e}".replace("e+0", "e"), make_data(m, n, rng))
                                          for m, n in (SIZES[:2] if args.quick else SIZES)]
    worst = {"labels": np.inf, "indices": np.inf}
    rows = []
    for label, (names, a, b, first_wins) in data:
        runs, calls, readers = {}, {}, {}
        for key, (fn, readers[key]) in contenders(names, a, b, first_wins).items():
            if not (args.without_opt and key[0] == "choix opt"):
                runs[key], calls[key] = filled(fn)
        times, answers = spread.interleaved(runs, rounds=args.rounds, repeat=args.repeat, clock=time.process_time)
        times = {key: [t / calls[key] for t in ts] for key, ts in times.items()}
        outputs = {key: readers[key](answer) for key, answer in answers.items()}
        comps = pr.PairwiseComparisons.from_indices(tuple(range(len(names))), a, b, np.where(first_wins, 1, -1))
        pc = comps.pair_counts()
        print(f"{label} ({len(names)} items, {a.size:,} comparisons)"
              + ("" if len(names) <= 2000 else " (choix skipped: dense m x m matrices)"))
        cells = {}
        for data_input in ("labels", "indices"):
            mine_t, mine = times[("privrank", data_input)], outputs[("privrank", data_input)]
            fastest = np.inf
            for (name, kind), theta in outputs.items():
                if kind != data_input:
                    continue
                gap = float(np.max(np.abs(theta - mine)))
                grad = float(np.linalg.norm(btl_gradient(theta, pc, 0.0)))
                t = times[(name, kind)]
                if name == "privrank":
                    print(f"  {data_input:7s} {name:11s} {spread.spread(t, '{:.2e}')} s  gradient {grad:.1e}")
                    continue
                agrees = gap <= AGREE
                ratio = spread.ratios(t, mine_t)
                cells[(name, kind)] = spread.spread(ratio, "{:.3g}") + ("" if agrees else " DISAGREES")
                print(f"  {data_input:7s} {name:11s} {spread.spread(t, '{:.2e}')} s  ratio {spread.spread(ratio)}  "
                      f"max|dtheta| {gap:.1e}  gradient {grad:.1e}"
                      + ("" if agrees else "  DISAGREES: not the same estimate"))
                if agrees:
                    fastest = min(fastest, float(np.median(ratio)))
            worst[data_input] = min(worst[data_input], fastest)
        rows.append(f"| {label} | " + " | ".join(cells.get(key, "not run") for key in COLUMNS) + " |")
    for data_input, ratio in worst.items():
        print(f"speedup_vs_fastest_agreeing_peer_{data_input}={ratio:.2f}")
    print(spread.load())
    if args.readme:
        caption = ["Each contender as timed:", ""] + [f"* {name}: {call}" for name, call in configured.items()]
        spread.readme_section("btl", "\n".join((*caption, "", HEADER, *rows)), spread.command(),
                              note="median (min-max) over interleaved rounds of the ratio of CPU times "
                                   "(peer / privrank).")


if __name__ == "__main__":
    main()
