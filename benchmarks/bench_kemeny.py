"""Kemeny solvers: exact time against m, against brute force, KwikSort at scale, certified gaps.

Every time is measured by :mod:`spread` (``ROUNDS`` interleaved rounds, order rotated; printed as
median (min-max)), with the machine's load printed before and after.

0. pref_voting's ``kemeny_young`` (a profile of the rankings and their counts, as its docs show;
   it enumerates the m! orders) against privrank's exact solver on the same Mallows profiles,
   m = 6 to 9: the winner agrees (checked), and the time of each with their round-by-round ratio.
1. Brute-force enumeration of all m! orders against subset dynamic programming and the integer
   program with lazy triangle constraints, at m = 8 and 9 on near-tie matrices (many cycles):
   same optimum, and the time of each.
2. KwikSort on n = 1e5 rankings of m = 200 items through query access (entries of w computed
   on demand from the positions; w is never built), against building w.
3. The integer program on private (Laplace, eps = 1) noisy matrices of Mallows profiles,
   whose majority tournaments have many cycles, against m (and subset DP up to m = 20).
4. Exact time against m on Mallows profiles (phi = 0.8, n = 1000): building w from the
   rankings plus the integer program, until a solve passes 60 s or m reaches ``--max-m``.
   At this dispersion and n the majority tournament is transitive, so the first integer
   solution is optimal and building w dominates.
5. Certified gaps at m = 50: ``private_kemeny`` (eps = 1, n = 1000 Mallows voters, phi = 0.8,
   draws seeded 0 .. ``--draws`` - 1, default 5; ``auto``: local search) with ``certify_seconds`` 10
   and 60. For each draw:
   the order's cost on the released matrix, the certified gap (cost minus the lower bound) in
   percent of the cost, the first budget whose gap is at most 1%, and whether the order was
   proved optimal. These runs are bounded by their budget, so they are timed once each.
6. The same at 10 s against epsilon (1, 1.5, 2, 4): the released matrix's Laplace noise has scale
   m (m - 1) / (2 n epsilon), 1.225 at epsilon 1 on entries in [0, 1], so the matrix is close to a
   random tournament there, whose triangle relaxation is weak; with less noise the same code proves
   optimality. Kendall's tau of the released order to the central ranking is printed beside.

Last line: ``exact_m_within_60s=<largest m solved exactly within 60 s on Mallows phi = 0.8,
n = 1000>``. ``--readme`` writes parts 1, 3, 5 and 6 into README.md between the kemeny markers.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import time

import numpy as np
import spread

import privrank as pr
from privrank.aggregation.kemeny_exact import exact_dp, exact_ilp
from privrank.aggregation.kemeny_heuristics import kwiksort
from privrank.errors import InputError
from privrank.mechanisms.pairwise_matrix import Budget, noisy_pairwise_matrix
from privrank.metrics import kemeny_cost
from privrank.simulate import sample_mallows

LIMIT = 60.0
BUDGETS = (10.0, 60.0)


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


def part_pref_voting(rng):
    try:
        from pref_voting.other_methods import kemeny_young
        from pref_voting.profiles import Profile
    except ImportError:
        print("# pref_voting is not installed (pip install pref_voting): its comparison is skipped")
        return
    from privrank.aggregation.kemeny_exact import exact_kemeny
    print("# exact Kemeny against pref_voting's kemeny_young (its default 'marginal' algorithm) on the same")
    print("# Mallows profiles (phi = 0.5, n = 1000); checked: privrank's winner is one of its Kemeny-Young winners")
    print(f"{'m':>3} {'pref_voting s':>22} {'privrank s':>26} {'ratio':>22}  agree")
    for m in (6, 7, 8, 9):
        R = sample_mallows(m, phi=0.5, n=1000, rng=rng)
        orders, counts = np.unique(R.orders, axis=0, return_counts=True)
        profile = Profile(orders.tolist(), counts.tolist())
        W = R.pairwise_counts().astype(float)
        times, out = spread.interleaved({"peer": lambda p=profile: kemeny_young(p), "ours": lambda W=W: exact_kemeny(W)})
        winners, order = out["peer"], out["ours"]
        agree = "yes" if int(order[0]) in winners else f"DISAGREE ({winners} vs {int(order[0])})"
        print(f"{m:>3} {spread.spread(times['peer']):>22} {spread.spread(times['ours']):>26} "
              f"{spread.spread(spread.ratios(times['peer'], times['ours']), '{:,.0f}'):>22}x  {agree}", flush=True)


def part_brute_force(rng):
    print("# exact solvers against brute force (near-tie matrices: w = 1/2 +- 0.05)")
    rows = ["| m | brute force s | subset DP s | integer program s | same optimum |", "|---|---|---|---|---|"]
    for m in (8, 9):
        upper = 0.5 + rng.uniform(-0.05, 0.05, m * (m - 1) // 2)
        W = np.zeros((m, m))
        W[np.triu_indices(m, 1)] = upper
        W += np.tril(1 - W.T, -1)
        times, out = spread.interleaved({"brute": lambda W=W: brute_force(W), "dp": lambda W=W: exact_dp(W),
                                         "ilp": lambda W=W: exact_ilp(W)})
        best = kemeny_cost(out["brute"], W)
        same = all(np.isclose(kemeny_cost(out[k], W), best) for k in ("dp", "ilp"))
        rows.append(f"| {m} | {spread.spread(times['brute'])} | {spread.spread(times['dp'])} | "
                    f"{spread.spread(times['ilp'])} | {same} |")
        print(rows[-1], flush=True)
    return rows


def part_exact_vs_m(rng, max_m):
    print("# exact Kemeny on Mallows(phi=0.8), n=1000: build w + integer program")
    print(f"{'m':>5} {'w s':>22} {'ilp s':>22}")
    largest = 0
    for m in (10, 20, 50, 100, 200, 400, 600, 800, 1000, 1500, 2000):
        if m > max_m:
            break
        R = sample_mallows(m, phi=0.8, n=1000, rng=rng)
        W = R.pairwise_matrix()
        times, _ = spread.interleaved({"w": R.pairwise_matrix, "ilp": lambda W=W: exact_ilp(W, time_limit=LIMIT)})
        print(f"{m:>5} {spread.spread(times['w']):>22} {spread.spread(times['ilp']):>22}", flush=True)
        if statistics.median(times["w"]) + statistics.median(times["ilp"]) > LIMIT:
            break
        largest = m
    return largest


def part_noisy(rng):
    print("# exact Kemeny of a private matrix (Laplace, eps=1) of Mallows(phi=0.8), n=1000:")
    print("# the noise breaks transitivity, so the lazy triangle constraints do real work")
    rows = ["| m | integer program s | subset DP s |", "|---|---|---|"]
    for m in (10, 15, 20, 30, 40):
        R = sample_mallows(m, phi=0.8, n=1000, rng=rng)
        Wt, _ = noisy_pairwise_matrix(R.pairwise_matrix(), R.n_voters, Budget(1.0, 0.0), rng=rng)
        contenders = {"ilp": lambda Wt=Wt: exact_ilp(Wt, time_limit=LIMIT)}
        if m <= 20:
            contenders["dp"] = lambda Wt=Wt: exact_dp(Wt)
        try:
            times, _ = spread.interleaved(contenders)
        except InputError:
            rows.append(f"| {m} | over {LIMIT:g} | - |")
            print(rows[-1], flush=True)
            break
        rows.append(f"| {m} | {spread.spread(times['ilp'])} | "
                    f"{spread.spread(times['dp']) if 'dp' in times else '-'} |")
        print(rows[-1], flush=True)
    return rows


def part_kwiksort(rng, n, m):
    print(f"# KwikSort on n={n} rankings of m={m} items (Mallows phi=0.8)")
    R = sample_mallows(m, phi=0.8, n=n, rng=rng)
    times, out = spread.interleaved({"query": lambda: kwiksort(m, lambda a, b: R.preference(a, b) > 0.5, rng),
                                     "w": R.pairwise_matrix})
    run, W = out["query"], out["w"]
    print(f"kwiksort with query access {spread.spread(times['query'])} s ({run.queries} entries of w "
          f"computed, of {m * (m - 1) // 2}); building all of w {spread.spread(times['w'])} s")
    print(f"kwiksort cost {kemeny_cost(run.order, W):.2f} vs lower bound "
          f"{np.minimum(W, W.T)[np.triu_indices(m, 1)].sum():.2f}")


def part_certificates(m=50, draws=5):
    print(f"# certified gaps of private_kemeny (eps = 1, n = 1000, Mallows phi = 0.8, m = {m}; auto: local search)")
    head = " | ".join(f"gap at {b:g} s" for b in BUDGETS)
    rows = [f"| draw | cost | {head} | gap <= 1% | proved optimal | seconds |",
            "|---" * (5 + len(BUDGETS)) + "|"]
    for seed in range(draws):
        R = sample_mallows(m, phi=0.8, n=1000, rng=seed)
        gaps, reached, proved, cost, took = [], "not within the budgets", False, None, []
        for budget in BUDGETS:
            start = time.perf_counter()
            d = pr.private_kemeny(R, epsilon=1.0, certify_seconds=budget, rng=seed).details
            took.append(time.perf_counter() - start)
            cost = d["noisy_cost"]
            gaps.append(f"{100 * d['optimality_gap'] / cost:.2f}%")
            if d["optimality_gap"] <= 0.01 * cost and reached.startswith("not"):
                reached = f"within {budget:g} s"
            proved = proved or d["proved_optimal"]
        rows.append(f"| {seed} | {cost:.1f} | {' | '.join(gaps)} | {reached} | {'yes' if proved else 'no'} | "
                    f"{' / '.join(f'{t:.0f}' for t in took)} |")
        print(rows[-1], flush=True)
    return rows


def part_gap_against_epsilon(m=50, draws=5, budget=10.0):
    print(f"# certified gap of private_kemeny at {budget:g} s against epsilon (n = 1000, Mallows phi = 0.8, m = {m})")
    rows = ["| epsilon | noise scale | gap, median (min-max) | proved optimal | tau to the central ranking |",
            "|---|---|---|---|---|"]
    for epsilon in (1.0, 1.5, 2.0, 4.0):
        gaps, taus, proved, scale = [], [], 0, None
        for seed in range(draws):
            R = sample_mallows(m, phi=0.8, n=1000, rng=seed)
            result = pr.private_kemeny(R, epsilon=epsilon, certify_seconds=budget, rng=seed)
            d = result.details
            gaps.append(100 * d["optimality_gap"] / d["noisy_cost"])
            proved += bool(d["proved_optimal"])
            scale = d["noise_scale"]
            scores = np.empty(m)
            scores[np.asarray(result.order, dtype=np.int64)] = -np.arange(m)  # best first
            taus.append(1.0 - 2.0 * pr.kendall_distance(scores, -np.arange(m, dtype=float)))
        rows.append(f"| {epsilon:g} | {scale:.3g} | {statistics.median(gaps):.2f}% ({min(gaps):.2f}-{max(gaps):.2f}%) "
                    f"| {proved} of {draws} | {statistics.median(taus):.2f} ({min(taus):.2f}-{max(taus):.2f}) |")
        print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-m", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=5, help="draws (seeds 0 .. N-1) of parts 5 and 6")
    parser.add_argument("--readme", action="store_true", help="write the tables into README.md")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(f"# before: {spread.load()}")
    part_pref_voting(rng)
    brute = part_brute_force(rng)
    part_kwiksort(rng, 100_000, 200)
    noisy = part_noisy(rng)
    largest = part_exact_vs_m(rng, args.max_m)
    certificates = part_certificates(draws=args.draws)
    against_epsilon = part_gap_against_epsilon(draws=args.draws)
    print(f"# after: {spread.load()}")
    if args.readme:
        table = "\n".join(["Exact solvers against brute force (near-tie matrices), seconds:", "", *brute, "",
                           "Exact solve of a private (Laplace, eps = 1) matrix of Mallows(0.8), n = 1000, seconds:",
                           "", *noisy, "",
                           (f"Certified optimality gap of `private_kemeny` at m = 50 (eps = 1, n = 1000, seeds 0-{args.draws - 1}) "
                            "on the released matrix, by `certify_seconds`:"), "", *certificates, "",
                           (f"The same at 10 s against epsilon (seeds 0-{args.draws - 1}; the central ranking of the Mallows "
                            "profiles is the items' order):"), "", *against_epsilon])
        spread.readme_section("kemeny", table, spread.command())
    print(f"exact_m_within_60s={largest}")


if __name__ == "__main__":
    main()
