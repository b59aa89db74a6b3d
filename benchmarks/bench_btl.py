"""Bradley-Terry maximum-likelihood fit: privrank vs choix and evalica on identical data.

Every contender fits the same model to the same comparisons, configured as its own
documentation says: privrank ``fit_btl`` (the MLE by default on raw comparisons, Newton to a
gradient 2-norm <= 1e-8), choix 0.4 ``ilsr_pairwise`` (alpha = 0, the MLE; ``tol`` 1e-8) and
``opt_pairwise`` (its defaults: alpha = 1e-6, Newton-CG), evalica ``bradley_terry`` (its
defaults: tolerance 1e-6, 100 iterations). Data: ``n`` comparisons of random pairs of ``m``
items under a BTL model with N(0, 1) scores, no ties.

Two inputs, as users hold them:

* labels -- three lists (first item, second item, winner side or label), as read from a CSV:
  privrank ``PairwiseComparisons.from_labels``, evalica directly, choix after the user's own
  label -> index mapping (timed);
* indices -- integer arrays: privrank ``from_indices``, evalica on integers, choix on
  (winner, loser) pairs.

Each answer is compared with privrank's: ``max|dtheta|`` (scores centred, log-strengths) and its
gradient norm in the unpenalised likelihood. A contender more than 1e-4 away is reported as
DISAGREEING, and its ratio is not a speed-up. Times are the best of ``--repeat`` runs, every
library on one BLAS thread. choix is skipped at m = 10,000 (its ILSR builds m x m dense
matrices: 800 MB each) and ``opt_pairwise`` above m = 200 (17 s there already), and noted so. The last lines print the smallest ratio per input against
the fastest agreeing peer.

    python benchmarks/bench_btl.py              # m = 50, 200, 1000, 10000
    python benchmarks/bench_btl.py --quick      # m = 50, 200
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # read when numpy loads its BLAS

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import privrank as pr  # noqa: E402
from privrank.pairwise.btl import btl_gradient  # noqa: E402

SIZES = ((50, 100_000), (200, 100_000), (1000, 300_000), (10_000, 1_000_000))
AGREE = 1e-4


def make_data(m, n, rng):
    theta = rng.normal(0, 1, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    first_wins = rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    return a, b, first_wins


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def centred(theta):
    theta = np.asarray(theta, dtype=float)
    return theta - theta.mean()


def contenders(m, a, b, first_wins):
    """``{(name, input): callable returning theta in item-index order}``."""
    import choix
    import evalica

    names = [f"item{k:05d}" for k in range(m)]
    xs, ys = [names[k] for k in a], [names[k] for k in b]
    outcome = np.where(first_wins, 1, -1)
    side = [evalica.Winner.X if w else evalica.Winner.Y for w in first_wins]
    winners, losers = np.where(first_wins, a, b), np.where(first_wins, b, a)
    pairs = list(zip(winners.tolist(), losers.tolist()))
    winner_labels = [xs[k] if w else ys[k] for k, w in enumerate(first_wins)]

    def privrank_labels():
        fit = pr.fit_btl(pr.PairwiseComparisons.from_labels(xs, ys, outcome), tol=1e-8)
        return centred(fit.scores)  # labels sort as names do: item order is index order

    def privrank_indices():
        return centred(pr.fit_btl(pr.PairwiseComparisons.from_indices(tuple(range(m)), a, b, outcome),
                                  tol=1e-8).scores)

    def evalica_run(left, right):
        scores = evalica.bradley_terry(left, right, side).scores
        return centred(np.log(scores.reindex(names if isinstance(left[0], str) else range(m)).to_numpy()))

    def choix_from_labels(fit):
        index = {name: k for k, name in enumerate(names)}
        data = [(index[w], index[x if w == y else y]) for w, x, y in zip(winner_labels, xs, ys)]
        return centred(fit(m, data))

    out = {("privrank", "labels"): privrank_labels, ("privrank", "indices"): privrank_indices,
           ("evalica", "labels"): lambda: evalica_run(xs, ys),
           ("evalica", "indices"): lambda: evalica_run(a.tolist(), b.tolist())}
    if m <= 2000:
        ilsr = lambda n_items, data: choix.ilsr_pairwise(n_items, data, alpha=0.0, tol=1e-8)  # noqa: E731
        out[("choix ilsr", "labels")] = lambda: choix_from_labels(ilsr)
        out[("choix ilsr", "indices")] = lambda: centred(ilsr(m, pairs))
        if m <= 200:  # scipy's Newton-CG without a Hessian: 17 s at m = 200 already
            out[("choix opt", "indices")] = lambda: centred(choix.opt_pairwise(m, pairs))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="m = 50 and 200 only")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(7)
    worst = {"labels": np.inf, "indices": np.inf}
    for m, n in SIZES[:2] if args.quick else SIZES:
        a, b, first_wins = make_data(m, n, rng)
        runs = contenders(m, a, b, first_wins)
        results = {key: best(fn, 1 if key[0] == "choix opt" else args.repeat) for key, fn in runs.items()}
        comps = pr.PairwiseComparisons.from_indices(tuple(range(m)), a, b, np.where(first_wins, 1, -1))
        pc = comps.pair_counts()
        print(f"m = {m:,}, n = {n:,}" + ("" if m <= 2000 else " (choix skipped: dense m x m matrices)"))
        for data_input in ("labels", "indices"):
            mine_t, mine = results[("privrank", data_input)]
            fastest = np.inf
            for (name, kind), (t, theta) in results.items():
                if kind != data_input:
                    continue
                gap = float(np.max(np.abs(theta - mine)))
                grad = float(np.linalg.norm(btl_gradient(theta, pc, 0.0)))
                agrees = gap <= AGREE
                note = "" if agrees else "  DISAGREES: not the same estimate"
                if name != "privrank":
                    ratio = t / mine_t
                    print(f"  {data_input:7s} {name:11s} {t:8.3f} s  privrank {mine_t:.3f} s  ratio {ratio:6.1f}x  "
                          f"max|dtheta| {gap:.1e}  gradient {grad:.1e}{note}")
                    if agrees:
                        fastest = min(fastest, t)
                else:
                    print(f"  {data_input:7s} {name:11s} {t:8.3f} s  gradient {grad:.1e}")
            worst[data_input] = min(worst[data_input], fastest / mine_t)
    for data_input, ratio in worst.items():
        print(f"speedup_vs_fastest_agreeing_peer_{data_input}={ratio:.2f}")


if __name__ == "__main__":
    main()
