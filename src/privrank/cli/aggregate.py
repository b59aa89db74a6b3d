"""``privrank aggregate``: one consensus ranking from complete rankings.

One command serves Kemeny aggregation (Alabi et al.; :mod:`privrank.aggregation.kemeny` and
:mod:`privrank.aggregation.private_kemeny`) and footrule aggregation with the improved private
Kemeny algorithms (Hillebrand et al.; :mod:`privrank.aggregation.footrule` and
:mod:`privrank.aggregation.private_footrule`). ``METHODS`` maps a ``--method`` name to
``(rankings, args) -> (order, guarantee, extra, result)``; ``result`` is the private method's
result object (None for non-private methods), whose release ``--ci`` and ``--plot`` bootstrap
(:func:`privrank.inference.aggregate_intervals`). Every release is charged to the privacy ledger
before its noise is drawn (:func:`privrank.cli.releasing.ledger_release`). With ``--engine
stream`` or ``dask`` the methods that read only a statistic of the rankings run on it
(:func:`privrank.cli.engine_options.engine_rankings`).

Non-private methods report ``kemeny_cost`` and ``footrule_cost``: the mean Kendall tau and
Spearman footrule distances from the output to the input rankings (unnormalised, per voter). A
private method reports nothing computed exactly from the rankings, only public parameters and
facts about its own noisy run; ``--non-private-diagnostics`` adds both costs and marks the whole
output as not private (in the guarantee and with a warning on stderr).
"""
from __future__ import annotations

import importlib
import sys

from ..errors import InputError
from .arguments import STDIN_HELP, add_ledger_option, add_quiet_option, examples, seed, summary
from .engine_options import add_engine_options
from .intervals import add_interval_options
from .output import add_output_options

#: --solver's choices (privrank.aggregation.kemeny.SOLVERS), --partial's (privrank.data.io.PARTIAL_POLICIES)
#: and --variant's (privrank.aggregation.private_footrule.PTAS_VARIANTS)
SOLVERS = ("auto", "exact", "kwiksort", "local-search", "borda", "copeland")
PARTIAL_POLICIES = ("error", "drop", "randomize")
PTAS_VARIANTS = ("auto", "one-release", "lopsided", "buckets")
SOLVER_METHODS = ("noisy-matrix", "dp-kwiksort", "ldp-kwiksort", "ldp-matrix", "dp-ptas")
#: the methods that take no delta (privrank.plan.PURE_ONLY)
PURE_ONLY = ("exponential", "ldp-kwiksort", "ldp-matrix", "ldp-footrule")


def _function(name: str):
    """The function ``module:function`` of privrank, imported when a method runs."""
    module, _, function = name.partition(":")
    return getattr(importlib.import_module(f"..{module}", __package__), function)


def _non_private(name, order_fn):
    def method(R, args):
        from ..guarantees import Guarantee

        if args.epsilon is not None or args.delta:
            raise InputError(f"--method {name} is not private: drop --epsilon and --delta (or use a private method)")
        return order_fn(R, args), Guarantee.non_private(name), {}, None
    return method


def _matrix_order(function: str):
    """A non-private method: ``function`` (``module:function`` of privrank.aggregation) on the pairwise matrix."""
    return lambda R, args: _function(f"aggregation.{function}")(R.pairwise_matrix())


def _kwiksort(R, args):
    from ..aggregation.kemeny_heuristics import kwiksort, kwiksort_matrix

    if args.best_of == 1:  # query access: w is never built
        return kwiksort(R.n_items, lambda a, b: R.preference(a, b) > 0.5, args.seed).order
    return kwiksort_matrix(R.pairwise_matrix(), args.seed, best_of=args.best_of)


def _footrule(R, args):
    from ..aggregation.footrule import footrule_optimal_order

    return footrule_optimal_order(R)


def _private(name, function, **options):
    def method(R, args):
        if args.epsilon is None:
            raise InputError(f"--method {name} needs --epsilon")
        kwargs = {key: getattr(args, attr) for key, attr in options.items()
                  if getattr(args, attr) is not None}  # None: the function's default
        if name in PURE_ONLY:
            if args.delta:
                raise InputError(f"--method {name} is pure epsilon-DP: drop --delta")
        else:
            kwargs["delta"] = args.delta
        res = _function(function)(R, epsilon=args.epsilon, rng=args.seed, **kwargs)
        extra = dict(res.details)
        if "unresolved" in extra:
            extra["unresolved"] = [R.labels_of(g) for g in extra["unresolved"]]
        return res.order, res.guarantee, extra, res
    method.private = True  # type: ignore[attr-defined]  # a function attribute
    return method


KEMENY, FOOTRULE, BORDA = "aggregation.private_kemeny", "aggregation.private_footrule", "aggregation.private_borda"
METHODS = {
    "exact": _non_private("exact Kemeny", _matrix_order("kemeny_exact:exact_kemeny")),
    "kwiksort": _non_private("KwikSort", _kwiksort),
    "borda": _non_private("Borda", _matrix_order("kemeny_heuristics:borda")),
    "copeland": _non_private("Copeland", _matrix_order("kemeny_heuristics:copeland")),
    "noisy-borda": _private("noisy-borda", f"{BORDA}:noisy_borda"),
    "noisy-matrix": _private("noisy-matrix", f"{KEMENY}:private_kemeny", solver="solver", best_of="best_of"),
    "dp-kwiksort": _private("dp-kwiksort", f"{KEMENY}:dp_kwiksort", fallback_solver="solver"),
    "exponential": _private("exponential", f"{KEMENY}:exponential_kemeny"),
    "hay-quicksort": _private("hay-quicksort", f"{KEMENY}:hay_quicksort"),
    "ldp-kwiksort": _private("ldp-kwiksort", f"{KEMENY}:ldp_kwiksort", fallback_solver="solver"),
    "ldp-matrix": _private("ldp-matrix", f"{KEMENY}:ldp_matrix", solver="solver", best_of="best_of"),
    "footrule": _non_private("footrule optimum (min-cost assignment)", _footrule),
    "dp-footrule": _private("dp-footrule", f"{FOOTRULE}:dp_footrule", kappa="kappa"),
    "ldp-footrule": _private("ldp-footrule", f"{FOOTRULE}:ldp_footrule", kappa="kappa"),
    "dp-ptas": _private("dp-ptas", f"{FOOTRULE}:dp_ptas", solver="solver", variant="variant", buckets="buckets"),
}
INTERVAL_METHODS = ("noisy-matrix", "ldp-matrix", "dp-footrule", "ldp-footrule")  # releases a statistic
PRIVATE_METHODS = tuple(name for name, method in METHODS.items() if getattr(method, "private", False))


def register(sub) -> None:
    p = sub.add_parser(
        "aggregate", help=summary("aggregate"),
        description="Aggregate complete rankings (PrefLib .soc/.soi/.toc or CSV, one ranking per "
                    "row) into one ranking, exactly or with differential privacy protecting each "
                    "ranking.",
        epilog=examples("printf 'A,B,C\\n1,2,3\\n2,1,3\\n1,3,2\\n2,3,1\\n' > ballots.csv",
                        "privrank aggregate ballots.csv",
                        "privrank aggregate ballots.csv --epsilon 1 --seed 1",
                        "privrank aggregate ballots.csv --method noisy-matrix --epsilon 1 --ci"))
    p.add_argument("file", help="rankings file: PrefLib .soc/.soi/.toc, or CSV (rank1,rank2,... "
                                "columns of item labels, or one rank column per item); " + STDIN_HELP)
    inputs = p.add_argument_group("input")
    method = p.add_argument_group("method")
    budget = p.add_argument_group("privacy")
    method.add_argument("--method", choices=list(METHODS) + ["auto"],
                        help="aggregation method (default: auto with --epsilon, exact Kemeny without). auto chooses "
                             "the central private method with the smallest expected distance to the truth for the "
                             "public parameters (items, rankings, epsilon, delta), read off the utility frontier "
                             "(docs/frontier.md), and says which and why; it never reads the rankings to choose")
    budget.add_argument("--epsilon", type=float, help="privacy parameter (private methods)")
    budget.add_argument("--delta", type=float, default=0.0,
                        help="delta > 0 selects Gaussian noise, (epsilon, delta)-DP (central methods)")
    method.add_argument("--solver", choices=SOLVERS,
                        help="Kemeny solver of a noisy matrix (default auto: exact up to 20 items, "
                             "else local search; dp-ptas: exact). exact solves the cycles of the majority "
                             "graph; when one has more than PRIVRANK_MAX_EXACT_ITEMS items (default 25) or "
                             "takes more than PRIVRANK_MAX_EXACT_SECONDS (default 60), it returns the local-"
                             "search order with a warning that it is not proven optimal (--method exact "
                             "refuses); raise those variables to insist")
    method.add_argument("--best-of", type=int, default=1, metavar="K",
                        help="KwikSort runs whose cheapest is kept (default 1)")
    inputs.add_argument("--partial", choices=PARTIAL_POLICIES, default="error",
                        help="ballots with ties or unranked items: refuse (default), drop them, or "
                             "complete each at random")
    inputs.add_argument("--items", metavar="PATH",
                        help="file with the item labels, one per line: the public item list (required by the "
                             "private methods on a CSV that names items only in its ballots, rank1,rank2,...); '-' "
                             "reads it from standard input")
    method.add_argument("--variant", choices=PTAS_VARIANTS, help="dp-ptas variant (default auto)")
    method.add_argument("--buckets", type=int, help="dp-ptas bucket count (variant buckets)")
    method.add_argument("--kappa", type=float,
                        help="binary-tree weight growth of dp-footrule / ldp-footrule, in [1, 2) "
                        "(default 1.25 with Laplace noise, sqrt(2) with Gaussian or local noise)")
    budget.add_argument("--seed", type=seed, help="seed for reproducible research runs (not for real releases)")
    method.add_argument("--non-private-diagnostics", action="store_true",
                        help="also report the exact Kemeny and footrule costs; marks the output as NOT "
                             "private")
    add_interval_options(p, scores=False)
    add_engine_options(p)
    add_output_options(p)
    add_ledger_option(p, new_data=True)
    add_quiet_option(p)
    p.set_defaults(func=run_aggregate)


def run_aggregate(args) -> int:
    import numpy as np

    from .. import limits
    from ..aggregation.kemeny_exact import DP_MAX_ITEMS
    from ..data.io import read_item_list, read_rankings
    from ..metrics import footrule_cost, kemeny_cost
    from .engine_options import engine_rankings
    from .intervals import check_interval_size, check_level, interval_rows
    from .releasing import ledger_release
    from .output import emit, render, shown_guarantee

    if args.method is None:
        args.method = "auto" if args.epsilon is not None else "exact"
    if args.method == "auto":
        if args.epsilon is None:
            raise InputError("--method auto chooses among the private methods: it needs --epsilon")
        named = [o for o in ("solver", "variant", "buckets", "kappa") if getattr(args, o) is not None]
        if named or args.best_of != 1:
            raise InputError(f"--{(named or ['best-of'])[0]} sets an option of one method, and --method auto "
                             "runs the method it chooses with its defaults: name the method")
    check_level(args)
    if args.best_of < 1:
        raise InputError("--best-of must be >= 1")
    limits.check("BEST_OF", args.best_of, "--best-of", "use --solver local-search to polish one run instead")
    if args.solver is not None and args.method not in SOLVER_METHODS:
        raise InputError(f"--solver applies to {', '.join(SOLVER_METHODS)} only")
    for option, methods in (("variant", ("dp-ptas",)), ("buckets", ("dp-ptas",)),
                            ("kappa", ("dp-footrule", "ldp-footrule"))):
        if getattr(args, option) is not None and args.method not in methods:
            raise InputError(f"--{option} applies to {', '.join(methods)} only")
    partial_rng = None if args.seed is None else np.random.default_rng([args.seed, 1])
    items = read_item_list(args.items) if args.items else None
    private = args.method in PRIVATE_METHODS + ("auto",)
    if private and args.partial == "drop":
        raise InputError("--partial drop keeps a number of ballots that depends on the data, and the private "
                         "methods calibrate to the number of ballots: use --partial randomize (every ballot is "
                         "kept, each completed at random) or complete the ballots before releasing")
    if not private and (args.ci or args.plot):
        raise InputError(f"--ci and --plot show the privacy noise of a private release; --method {args.method} "
                         "adds none")
    if (args.ci or args.plot) and args.method not in INTERVAL_METHODS + ("auto",):  # refused before any charge
        raise InputError(f"--ci and --plot re-draw the noise of the released statistic; --method {args.method} "
                         f"releases only an order: use {', '.join(INTERVAL_METHODS)}")
    with ledger_release(args, args.file) as release:
        if args.non_private_diagnostics and private:
            release.refuse_if_budgeted("--non-private-diagnostics makes this output not private")
        if args.engine == "local" and args.scheduler is None:
            R = read_rankings(args.file, partial=args.partial, rng=partial_rng, items=items)
            release.expect(R.items)
            chosen = _choose(args, len(R.items), R.n_voters) if args.method == "auto" else {}
            method = METHODS[args.method]
        else:  # the engine draws the voters' reports of the local methods: inside the release
            chosen = {}
            R, method = engine_rankings(args, METHODS, lambda m, n: chosen.update(_choose(args, m, n)))
        if args.solver is None and args.method != "dp-ptas":
            args.solver = "auto"
        check_interval_size(args, len(R.items),
                            cubic=len(R.items) > DP_MAX_ITEMS and args.solver in ("auto", "exact", "local-search"))
        order, guarantee, extra, result = method(R, args)
        extra = {**chosen, **extra}
        if guarantee.private and args.non_private_diagnostics:
            guarantee = guarantee.without_privacy(
                "The output includes kemeny_cost and footrule_cost, computed exactly from the raw "
                "rankings (--non-private-diagnostics).")
            print("privrank: warning: --non-private-diagnostics: this output is NOT private",
                  file=sys.stderr)
        release.done(guarantee)
        if not guarantee.private:
            extra["kemeny_cost"] = kemeny_cost(order, R.pairwise_matrix())
            extra["footrule_cost"] = footrule_cost(order, R)
        rows = [{"rank": k + 1, "item": R.items[int(i)]} for k, i in enumerate(order)]
        rows, ci = interval_rows(result, rows, args, items=R.items,
                                 rng=None if args.seed is None else np.random.default_rng([args.seed, 2]))
        if ci is not None:
            extra["intervals"] = ci.describe()
        guarantee = shown_guarantee(guarantee, args)
        text = render(rows, guarantee, args.format, extra)
        if release.plot:
            from ..inference import plot_intervals

            plot_intervals(ci, release.plot, title=guarantee.describe().split(";")[0])
        emit(text, release.output)
    return 0


def _choose(args, items: int, rankings: int) -> dict:
    """``--method auto``: set ``args.method`` (and ``args.solver``) to the central method with the
    smallest expected error for the public parameters (:func:`privrank.plan.choose_aggregation`);
    with ``--ci`` or ``--plot`` a method that releases a statistic, on the stream and Dask engines
    one they run. Returns the output's fields naming the method and why."""
    from ..plan import AGGREGATION_METHODS, choose_aggregation
    from .engine_options import ENGINE_AGGREGATION

    candidates = [c for c in AGGREGATION_METHODS["central"]
                  if (not (args.ci or args.plot) or c.split("+")[0] in INTERVAL_METHODS)
                  and (args.engine == "local" and args.scheduler is None or c.split("+")[0] in ENGINE_AGGREGATION)]
    choice = choose_aggregation(items, rankings, args.epsilon, delta=args.delta, candidates=candidates)
    args.method, _, solver = choice.method.partition("+")
    args.solver = solver or None
    return {"method": choice.method, "chosen_because": choice.reason}
