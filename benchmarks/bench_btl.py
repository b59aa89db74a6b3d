"""Penalised BTL MLE: privrank vs choix on identical (winner, loser) data.

Both minimise  sum_records -log sigmoid(theta_winner - theta_loser) + lam ||theta||^2
(choix 0.4's ``opt_pairwise(alpha)`` and ``ilsr_pairwise(alpha)`` penalise alpha ||theta||^2, so
alpha = lam: with it the two optima agree to 1e-11). privrank's time includes building the
per-pair statistic from the same (winner, loser) list. privrank solves to a gradient 2-norm
<= 1e-8; the objective values are compared as well as the times.

Prints one line per size and, last, ``speedup_vs_choix=<min ratio over m = 50 and 200 against
choix's fastest method>``. Also times privatise + fit for L = 1e5 users x m = 30 items.

Both libraries run with one BLAS thread (unless the environment says otherwise): on a busy
two-core machine a multithreaded BLAS makes timings of small dense solves swing by 50x.
"""
from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # read when numpy loads its BLAS

import time  # noqa: E402

import numpy as np  # noqa: E402

from privrank.data.comparisons import PairCounts  # noqa: E402
from privrank.guarantees import Guarantee  # noqa: E402
from privrank.pairwise.btl import btl_gradient, btl_objective, fit_btl, fit_pair_counts  # noqa: E402
from privrank.simulate import sample_debiased_release  # noqa: E402

LAM = 0.005


def make_data(m, n, rng):
    theta = rng.normal(0, 1, m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(theta[a] - theta[b])))
    win = rng.random(n) < p
    return np.where(win, a, b), np.where(win, b, a)


def privrank_fit(m, winners, losers):
    pc = PairCounts.from_records(m, winners, losers, np.ones(winners.size))
    return pc, fit_pair_counts(pc, LAM, Guarantee.non_private(), tol=1e-8)


def best_time(fn, repeat):
    best, out = np.inf, None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def main():
    import choix

    rng = np.random.default_rng(7)
    ratios = {}
    for m, n in ((50, 100_000), (200, 100_000), (1000, 300_000)):
        w, l = make_data(m, n, rng)
        data = list(zip(w.tolist(), l.tolist()))
        t_pr, (pc, fit) = best_time(lambda: privrank_fit(m, w, l), 3)
        theta = fit.scores
        results = {}
        t_opt, th_opt = best_time(lambda: choix.opt_pairwise(m, data, alpha=LAM), 1)
        results["opt_pairwise"] = (t_opt, th_opt)
        t_ilsr, th_ilsr = best_time(lambda: choix.ilsr_pairwise(m, data, alpha=LAM), 1)
        results["ilsr_pairwise"] = (t_ilsr, th_ilsr)
        fastest = min(results, key=lambda k: results[k][0])
        f_pr = btl_objective(theta, pc, LAM)
        gn = float(np.linalg.norm(btl_gradient(theta, pc, LAM)))
        for name, (t, th) in results.items():
            th = th - th.mean()
            print(f"m={m} n={n} {name}: choix {t:.3f}s privrank {t_pr:.3f}s ratio {t / t_pr:.1f} "
                  f"max|dtheta|={np.max(np.abs(th - theta)):.2e} "
                  f"objective choix-privrank={btl_objective(th, pc, LAM) - f_pr:.3e}")
        print(f"m={m}: privrank gradient norm {gn:.2e}, solver {fit.solver}, {fit.n_iter} Newton steps; "
              f"choix fastest = {fastest}")
        ratios[m] = results[fastest][0] / t_pr
    t = time.perf_counter()
    theta = np.linspace(-1, 1, 30)
    rel = sample_debiased_release(theta, 100_000, 1.0, rng=1)
    fit = fit_btl(rel)
    print(f"privatise + fit, L=1e5 users x m=30 (sufficient-statistic sampler): {time.perf_counter() - t:.3f}s, "
          f"converged={fit.converged}")
    print(f"speedup_vs_choix_m1000={ratios[1000]:.1f}")
    print(f"speedup_vs_choix={min(ratios[50], ratios[200]):.1f}")


if __name__ == "__main__":
    main()
