"""``privrank demo``: local-DP ranking on the data shipped with the package."""
from __future__ import annotations

import math

from .arguments import add_quiet_option, examples, seed, summary

EPSILONS = (0.5, 1.0, 2.0, math.inf)


def register(sub) -> None:
    p = sub.add_parser("demo", help=summary("demo"),
                       description="Debiased randomized response + BTL on the shipped LLMFAO and NFL data.",
                       epilog=examples("privrank demo", "privrank demo --top 10 --seed 1"))
    p.add_argument("--seed", type=seed, default=2024, help="seed of the demo's randomness (default 2024)")
    p.add_argument("--top", type=int, default=5, help="how many top items to show (default 5)")
    add_quiet_option(p)
    p.set_defaults(func=run_demo)


def _section(title, comps, seed, top, user_budget=None):
    from ..metrics import kendall_distance
    from ..pairwise.btl import fit_btl
    from ..pairwise.local import debiased_randomized_response

    exact = fit_btl(comps)
    print(f"\n== {title} ==")
    print(f"{comps.n_records} comparisons of {comps.n_items} items"
          + (f" by {comps.n_users} users" if comps.users else ""))
    print("non-private top %d: %s" % (top, ", ".join(map(str, exact.top_k(top)))))
    for k, eps in enumerate(EPSILONS):
        if math.isinf(eps):
            fit = exact
        elif user_budget:
            fit = fit_btl(debiased_randomized_response(comps, user_epsilon=eps * user_budget,
                                                       weights="inverse_variance", rng=seed + k))
        else:
            fit = fit_btl(debiased_randomized_response(comps, eps, rng=seed + k))
        label = f"eps={eps:g}" if not user_budget else f"user budget={eps * user_budget:g}"
        if math.isinf(eps):
            label = "no privacy"
        dist = kendall_distance(fit.scores, exact.scores)
        print(f"\n[{label}] Kendall distance to the non-private ranking: {dist:.3f}")
        print("  top %d: %s" % (top, ", ".join(map(str, fit.top_k(top)))))
        print("  guarantee: " + fit.guarantee.describe())
        print("  in plain words: " + fit.guarantee.plain())


def run_demo(args) -> int:
    from ..data.datasets import load_llmfao, load_nfl

    llm = load_llmfao()
    print("privrank demo: debiased randomized response (Xu, Sun, Cheng) + regularised BTL.")
    print("Each answer is randomized on the respondent's side; the ranking is post-processing.")
    _section("LLMFAO: 124 crowd workers judge 59 LLMs (CC BY 4.0, Ustalov 2023) — eps per comparison",
             llm, args.seed, args.top)
    _section("LLMFAO with a per-worker budget (eps x 10 per worker, split evenly over the worker's answers; inverse-variance weights)",
             llm, args.seed, args.top, user_budget=10)
    _section("NFL 2019 season, 32 teams (FiveThirtyEight, MIT) — eps per game result",
             load_nfl(2019), args.seed, args.top)
    return 0
