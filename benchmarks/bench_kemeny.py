"""Kemeny solvers: exact time against m, against brute force, and KwikSort at scale.

1. Brute-force enumeration of all m! orders against subset dynamic programming and the integer
   program with lazy triangle constraints, at m = 8 and 9 on near-tie matrices (many cycles):
   same optimum, and the time of each.
0. pref_voting's ``kemeny_young`` (a profile of the rankings and their counts, as its docs show;
   it enumerates the m! orders) against privrank's exact solver on the same Mallows profiles,
   m = 6 to 9: the winner agrees (checked), and the time of each.
2. KwikSort on n = 1e5 rankings of m = 200 items through query access (entries of w computed
   on demand from the positions; w is never built), against building w.
3. The integer program on private (Laplace, eps = 1) noisy matrices of Mallows profiles,
   whose majority tournaments have many cycles, against m (and subset DP up to m = 20).
4. Exact time against m on Mallows profiles (phi = 0.8, n = 1000): building w from the
   rankings plus the integer program, until a solve passes 60 s or m reaches ``--max-m``.
   At this dispersion and n the majority tournament is transitive, so the first integer
   solution is optimal and building w dominates.

Last line: ``exact_m_within_60s=<largest m solved exactly within 60 s on Mallows phi = 0.8,
n = 1000>``. Times are wall-clock and include the machine's other load.
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np

from privrank.aggregation.kemeny import exact_dp, exact_ilp, kwiksort
from privrank.errors import InputError
from privrank.mechanisms.pairwise_matrix import Budget, noisy_pairwise_matrix
from privrank.metrics import kemeny_cost
from privrank.simulate import sample_mallows

LIMIT = 60.0


def brute_force(W):
    m = W.shape[0]
    s, t = np.triu_indices(m, 1)
    best, arg = np.inf, None
    perms = np.array(list(itertools.permutations(range(m))), dtype=np.int8)
    for chunk in np.array_split(perms, max(1, len(perms) // 50_000)):
        c = W[chunk[:, t], chunk[:, s]].sum(axis=1)
        k = int(np.argmin(c))
        if c[k] < best:
            best, arg = float(c[k]), chunk[k].astype(np.int64)
    return arg


def timed(fn, *args, **kw):
    t0 = time.perf_counter()
    out = fn(*args, **kw)
    return out, time.perf_counter() - t0


def part_pref_voting(rng):
    try:
        from pref_voting.other_methods import kemeny_young
        from pref_voting.profiles import Profile
    except ImportError:
        print("# pref_voting is not installed (pip install pref_voting): its comparison is skipped")
        return
    from privrank.aggregation.kemeny import exact_kemeny
    print("# exact Kemeny against pref_voting's kemeny_young (its default 'marginal' algorithm) on the same")
    print("# Mallows profiles (phi = 0.5, n = 1000); checked: privrank's winner is one of its Kemeny-Young winners")
    print(f"{'m':>3} {'pref_voting s':>14} {'privrank s':>11} {'ratio':>9}  agree")
    for m in (6, 7, 8, 9):
        R = sample_mallows(m, phi=0.5, n=1000, rng=rng)
        orders, counts = np.unique(R.orders, axis=0, return_counts=True)
        profile = Profile(orders.tolist(), counts.tolist())
        winners, t_peer = timed(kemeny_young, profile)
        order, t_ours = timed(exact_kemeny, R.pairwise_counts().astype(float))
        agree = "yes" if int(order[0]) in winners else f"DISAGREE ({winners} vs {int(order[0])})"
        print(f"{m:>3} {t_peer:>14.3f} {t_ours:>11.5f} {t_peer / t_ours:>8,.0f}x  {agree}", flush=True)


def part_brute_force(rng):
    print("# exact solvers against brute force (near-tie matrices: w = 1/2 +- 0.05)")
    print(f"{'m':>3} {'brute s':>9} {'dp s':>8} {'ilp s':>8}  same optimum")
    for m in (8, 9):
        upper = 0.5 + rng.uniform(-0.05, 0.05, m * (m - 1) // 2)
        W = np.zeros((m, m))
        W[np.triu_indices(m, 1)] = upper
        W += np.tril(1 - W.T, -1)
        b, tb = timed(brute_force, W)
        d, td = timed(exact_dp, W)
        i, ti = timed(exact_ilp, W)
        same = np.isclose(kemeny_cost(b, W), kemeny_cost(d, W)) and np.isclose(kemeny_cost(b, W), kemeny_cost(i, W))
        print(f"{m:>3} {tb:>9.3f} {td:>8.4f} {ti:>8.4f}  {same}")


def part_exact_vs_m(rng, max_m):
    print("# exact Kemeny on Mallows(phi=0.8), n=1000: build w + integer program")
    print(f"{'m':>5} {'w s':>8} {'ilp s':>8} {'total s':>8}")
    largest = 0
    for m in (10, 20, 50, 100, 200, 400, 600, 800, 1000, 1500, 2000):
        if m > max_m:
            break
        R = sample_mallows(m, phi=0.8, n=1000, rng=rng)
        W, tw = timed(R.pairwise_matrix)
        try:
            _, ts = timed(exact_ilp, W, time_limit=LIMIT)
        except InputError:
            ts = np.inf
        print(f"{m:>5} {tw:>8.3f} {ts:>8.3f} {tw + ts:>8.3f}", flush=True)
        if tw + ts > LIMIT:
            break
        largest = m
    return largest


def part_noisy(rng):
    print("# exact Kemeny of a private matrix (Laplace, eps=1) of Mallows(phi=0.8), n=1000:")
    print("# the noise breaks transitivity, so the lazy triangle constraints do real work")
    print(f"{'m':>5} {'ilp s':>8} {'dp s':>8}")
    for m in (10, 15, 20, 30, 40, 50, 60):
        R = sample_mallows(m, phi=0.8, n=1000, rng=rng)
        Wt, _ = noisy_pairwise_matrix(R.pairwise_matrix(), R.n_voters, Budget(1.0, 0.0), rng=rng)
        try:
            _, ts = timed(exact_ilp, Wt, time_limit=LIMIT)
        except InputError:
            ts = np.inf
        dp = f"{timed(exact_dp, Wt)[1]:8.3f}" if m <= 20 else "-"
        print(f"{m:>5} {ts:>8.3f} {dp:>8}", flush=True)
        if ts > LIMIT:
            break


def part_kwiksort(rng, n, m):
    print(f"# KwikSort on n={n} rankings of m={m} items (Mallows phi=0.8)")
    R, tg = timed(sample_mallows, m, phi=0.8, n=n, rng=rng)
    run, tq = timed(kwiksort, m, lambda a, b: R.preference(a, b) > 0.5, rng)
    W, tw = timed(R.pairwise_matrix)
    print(f"generate {tg:.2f} s; kwiksort with query access {tq:.2f} s ({run.queries} entries of w "
          f"computed, of {m * (m - 1) // 2}); building all of w {tw:.2f} s")
    print(f"kwiksort cost {kemeny_cost(run.order, W):.2f} vs lower bound "
          f"{np.minimum(W, W.T)[np.triu_indices(m, 1)].sum():.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-m", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    part_pref_voting(rng)
    part_brute_force(rng)
    part_kwiksort(rng, 100_000, 200)
    part_noisy(rng)
    largest = part_exact_vs_m(rng, args.max_m)
    print(f"exact_m_within_60s={largest}")


if __name__ == "__main__":
    main()
