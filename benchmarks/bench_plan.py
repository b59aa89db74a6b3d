"""The planner against a direct simulation of every user's answers.

``privrank plan`` draws the privatised sufficient statistic directly; the direct simulation here
builds each user's comparisons record by record (users answering K distinct random pairs, or all
pairs), privatises them with the library's mechanisms and fits them with the library's
estimators, exactly as a real study would. For each setting it prints both mean errors, their
Monte-Carlo standard errors and the ratio planner / direct (the planner's target: within 20%).
"""
from __future__ import annotations

import time

import numpy as np

import privrank as pr
from spread import load
from privrank.data.comparisons import PairwiseComparisons
from privrank.metrics import kendall_distance, linf_error, top_k_hamming
from privrank.plan import Design, predict

SETTINGS = [
    (Design(10, 100), 0.5),
    (Design(20, 200, 20), 1.0),
    (Design(30, 300, 20, model="central"), 1.0),
    (Design(30, 100, 10, model="central", mechanism="noisy-copeland"), 0.5),
]
REPS = 300


def users_answers(design: Design, gen) -> PairwiseComparisons:
    """Every user answers ``K`` distinct pairs drawn at random (all pairs on the complete design)."""
    m, L, K = design.items, design.users, design.per_user
    i, j = np.triu_indices(m, 1)
    picks = np.argsort(gen.random((L, i.size)), axis=1)[:, :K]  # K distinct pairs per user
    a, b = i[picks].ravel(), j[picks].ravel()
    theta = design.scores
    wins = gen.random(a.size) < 1 / (1 + np.exp(-(theta[a] - theta[b])))
    return PairwiseComparisons.from_indices(tuple(range(m)), a, b, np.where(wins, 1, -1),
                                            user=np.repeat(np.arange(L), K))


def direct(design: Design, eps: float, reps: int, seed: int) -> dict:
    gen = np.random.default_rng(seed)
    theta = design.scores
    rows = []
    for _ in range(reps):
        comps = users_answers(design, gen)
        if design.model == "local":
            est = pr.fit_btl(pr.debiased_randomized_response(comps, eps, rng=gen)).scores
        elif design.method == "objective-perturbation":
            est = pr.perturbed_mle(comps, eps, rng=gen).scores
        else:
            est = pr.noisy_copeland(comps, eps, rng=gen).scores
        rows.append([kendall_distance(est, theta), top_k_hamming(est, theta, design.top),
                     np.nan if design.method == "noisy-copeland" else linf_error(est, theta)])
    rows = np.array(rows)
    return {k: (rows[:, c].mean(), rows[:, c].std(ddof=1) / np.sqrt(reps))
            for c, k in enumerate(("kendall", "topk_hamming", "linf"))}


def main():
    for design, eps in SETTINGS:
        t = time.perf_counter()
        plan = predict(design, eps, reps=REPS, rng=1)
        t_plan = time.perf_counter() - t
        t = time.perf_counter()
        ref = direct(design, eps, REPS, seed=2)
        t_direct = time.perf_counter() - t
        print(f"{design.model} {design.method}: m={design.items} L={design.users} K={design.per_user} eps={eps:g} "
              f"(planner {t_plan:.2f}s, direct {t_direct:.1f}s, {REPS} replications each)")
        for metric, (mean, se) in ref.items():
            p, p_se = plan.predicted[metric], plan.standard_error[metric]
            if p is None:
                continue
            print(f"  {metric:<13} planner {p:.4f} +- {p_se:.4f}  direct {mean:.4f} +- {se:.4f}  "
                  f"ratio {p / mean:.3f}")


if __name__ == "__main__":
    print(f"before: {load()}")
    main()
    print(f"after: {load()}")
