"""``privrank plan``: the error to expect at an epsilon, or the smallest epsilon that meets a target."""
from __future__ import annotations

import argparse
import math
from contextlib import nullcontext
from dataclasses import replace

from ..errors import InputError, check_epsilon
from .arguments import STDIN_HELP, add_quiet_option, examples, seed, summary
from ..exports import dumps

#: the mechanisms of each trust model (privrank.plan.MECHANISMS)
MECHANISMS = {"local": ("debiased-rr",), "central": ("objective-perturbation", "noisy-copeland")}
TARGET_METRICS = {"kendall": "kendall", "topk": "topk_hamming", "topk_hamming": "topk_hamming", "linf": "linf"}


def register(sub) -> None:
    p = sub.add_parser("plan", help=summary("plan"),
                       description="Predict the ranking error of a planned study at --epsilon, or find the smallest "
                                   "epsilon that meets --target, by simulating the private pipeline.",
                       epilog=examples("privrank plan --items 20 --users 500 --epsilon 1",
                                       "privrank plan --items 20 --users 500 --target kendall=0.1",
                                       "privrank plan --like $LLMFAO --user-epsilon 4",
                                       "privrank plan --items 10 --rankings 1000 --epsilon 1"))
    study = p.add_argument_group("study")
    study.add_argument("--items", type=int, metavar="M",
                       help="number of items (the simulation grows with M^2: see PRIVRANK_MAX_PLAN_CELLS in "
                            "privrank.limits); with --like, the file's")
    study.add_argument("--users", type=_count, metavar="L",
                       help="number of users (an integer; 1e6 is read as 1000000); with --like, default the file's")
    study.add_argument("--rankings", type=_count, metavar="N",
                       help="plan the aggregation of N full rankings of --items items (privrank aggregate) instead of "
                            "comparisons: every private method's expected distance to the truth at --epsilon, read "
                            "off the utility frontier (docs/frontier.md), and the one --method auto would run")
    study.add_argument("--like", metavar="FILE",
                       help="a comparisons file like the planned study's (pilot or public data): its non-private BTL "
                            "fit gives the true scores simulated, and its users and comparisons per user the "
                            "defaults (the plan shows facts of this file: do not use the data you will release); "
                            + STDIN_HELP)
    study.add_argument("--comparisons-per-user", type=int, metavar="K",
                       help="comparisons each user answers (default: every pair once)")
    privacy = p.add_argument_group("privacy")
    privacy.add_argument("--model", choices=sorted(MECHANISMS), default="local", help="trust model (default local)")
    privacy.add_argument("--mechanism", choices=sorted({m for ms in MECHANISMS.values() for m in ms}),
                         help="local: debiased-rr; central: objective-perturbation (default) or noisy-copeland")
    goal = privacy.add_mutually_exclusive_group(required=True)
    goal.add_argument("--epsilon", type=float, help="predict the error at this epsilon per comparison")
    goal.add_argument("--user-epsilon", type=float,
                      help="predict the error at this budget per user, split evenly over each user's comparisons")
    goal.add_argument("--target", metavar="METRIC=VALUE",
                      help="find the smallest epsilon with kendall=..., topk=... or linf=... at most VALUE")
    simulation = p.add_argument_group("simulation")
    simulation.add_argument("--k", type=int, help="size of the top-k set (default items/4)")
    simulation.add_argument("--spread", type=float, default=4.0,
                            help="range of the assumed true scores (evenly spaced; default 4, i.e. [-2, 2])")
    simulation.add_argument("--seed", type=seed, default=0, help="seed of the simulation (default 0)")
    output = p.add_argument_group("output")
    output.add_argument("--format", choices=("table", "json"), default="table")
    output.add_argument("--plot", metavar="PATH", help="plot the predicted errors against epsilon (needs matplotlib)")
    output.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    add_quiet_option(p)
    p.set_defaults(func=run_plan)


def _count(text: str) -> int:
    """A whole number, also written like ``1e6``."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r}") from None
    if not (math.isfinite(value) and value.is_integer()):
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (a whole number)")
    return int(value)


def _target(text: str) -> tuple[str, float]:
    metric, _, value = text.partition("=")
    if metric not in TARGET_METRICS:
        raise InputError("--target must be kendall=VALUE, topk=VALUE or linf=VALUE")
    try:
        return TARGET_METRICS[metric], float(value)
    except ValueError:
        raise InputError("--target needs a number after '=' (e.g. kendall=0.05)") from None


def run_plan(args) -> int:
    from ..plan import BISECTIONS, EPSILON_GRID, Design, check_size, design_like, plot_curve, predict, smallest_epsilon

    if args.rankings is not None:
        return _plan_aggregation(args)
    if args.mechanism and args.mechanism not in MECHANISMS[args.model]:
        raise InputError(f"--mechanism {args.mechanism} belongs to the "
                         f"{'central' if args.model == 'local' else 'local'} model: add --model")
    options = {"model": args.model, "mechanism": args.mechanism, "k": args.k}
    if args.like:
        if args.items is not None or args.spread != 4.0:
            raise InputError("--like takes the items and their scores from the file: drop --items and --spread")
        from ..data.io import read_comparisons
        from ..data.pinned import PinnedFile

        with PinnedFile.standard_input() if args.like == "-" else nullcontext(args.like) as like:
            comps = read_comparisons(like)
        design = design_like(comps, users=args.users, comparisons_per_user=args.comparisons_per_user, **options)
    else:
        if args.items is None or args.users is None:
            raise InputError("give --items and --users (or --like FILE)")
        design = Design(args.items, args.users, args.comparisons_per_user, spread=args.spread, **options)
    if args.user_epsilon is not None:  # the budget per user, split evenly over the comparisons
        args.epsilon = check_epsilon(args.user_epsilon, name="--user-epsilon") / design.per_user
    target = None
    if args.target:
        check_size(design, len(EPSILON_GRID) + BISECTIONS)
    else:
        check_size(design, 1 + (len(EPSILON_GRID) if args.plot else 0))
    if args.target:
        target = _target(args.target)
        best, curve = smallest_epsilon(design, *target, rng=args.seed)
    else:
        best = predict(design, args.epsilon, rng=args.seed)
        curve = [predict(design, e, rng=args.seed) for e in EPSILON_GRID] if args.plot else None
    if args.plot:
        plot_curve(curve, args.plot, chosen=best, force=args.force)
    doc = best.to_dict()
    doc["target"] = None if target is None else {"metric": target[0], "value": target[1]}
    if target is None and args.mechanism is None and len(MECHANISMS[design.model]) > 1:
        others = [best] + [predict(replace(design, mechanism=m), best.epsilon, rng=args.seed)
                           for m in MECHANISMS[design.model] if m != design.method]
        doc["methods"] = {p.design.method: {"kendall": p.predicted["kendall"],
                                            "standard_error": p.standard_error["kendall"]} for p in others}
    if args.format == "json":
        print(dumps(doc))
        return 0
    print(f"plan: {design.model} model, {design.method}; {design.items} items, {design.users} users, "
          f"{design.per_user} comparisons per user")
    print(f"assumptions: {doc['assumptions']}")
    if target:
        print(f"smallest epsilon with {target[0]} <= {target[1]:g}: {best.epsilon:.3g} per comparison")
    else:
        print(f"epsilon: {best.epsilon:g} per comparison")
    print(f"guarantee: {doc['guarantee']}")
    print(f"predicted (mean over {best.replications} simulated studies +- Monte-Carlo standard error):")
    for metric, value in best.predicted.items():
        shown = "n/a (counts do not estimate scores)" if value is None else \
            f"{value:.3g} +- {best.standard_error[metric]:.2g}"
        print(f"  {metric:<13} {shown}")
    if "methods" in doc:
        print(f"every {design.model} mechanism (kendall; --mechanism central-auto runs the smallest):")
        for name, p in sorted(doc["methods"].items(), key=lambda kv: kv[1]["kendall"]):
            print(f"  {name:<24} {p['kendall']:.3g} +- {p['standard_error']:.2g}")
    return 0


def _plan_aggregation(args) -> int:
    """``--rankings N``: every aggregation method's expected Kendall distance, from the utility frontier."""
    from ..plan import AGGREGATION_METHODS, choose_aggregation, predict_aggregation

    if args.items is None or args.epsilon is None:
        raise InputError("--rankings plans at one --epsilon for --items items")
    for option in ("like", "users", "comparisons_per_user", "mechanism", "target", "plot", "k"):
        if getattr(args, option) not in (None, False):
            raise InputError(f"--{option.replace('_', '-')} belongs to a plan of comparisons, not of --rankings")
    choice = choose_aggregation(args.items, args.rankings, args.epsilon)
    predictions = {"central": list(choice.predictions),  # every central method: the choice's candidates
                   **{trust: predict_aggregation(args.items, args.rankings, args.epsilon, trust=trust)
                      for trust in AGGREGATION_METHODS if trust != "central"}}
    doc = {"items": args.items, "rankings": args.rankings, "epsilon": args.epsilon, "auto": choice.method,
           "reason": choice.reason, "metric": "kendall: the expected fraction of pairs misordered against the truth",
           "methods": {trust: [p.to_dict() for p in ps] for trust, ps in predictions.items()}}
    if args.format == "json":
        print(dumps(doc))
        return 0
    print(f"plan: aggregating {args.rankings} full rankings of {args.items} items at epsilon {args.epsilon:g} "
          "(one ranking protected)")
    print("predicted Kendall distance to the truth (fraction of pairs misordered, +- standard error), "
          "read off the utility frontier:")
    for trust, ps in predictions.items():
        print(f"  {trust}:")
        for p in ps:
            mark = "  <- --method auto" if p.method == choice.method else ""
            print(f"    {p.method:<24} {p.kendall:.3g} +- {p.standard_error:.2g}{mark}")
    print(f"auto: {choice.reason}")
    return 0
