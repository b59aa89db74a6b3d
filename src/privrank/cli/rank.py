"""``privrank rank``, ``privrank top-k`` and ``privrank randomize``: ranking from pairwise comparisons.

``rank`` prints the whole ranking, ``top-k`` its first ``k`` items; both take the same
mechanisms (local: Xu, Sun, Cheng; central: Cai, Chakraborty, Wang; non-private baselines) and
print the same columns and guarantee.
"""
from __future__ import annotations

import math
import sys

from ..errors import InputError
from .arguments import (STDIN_HELP, add_ledger_option, add_quiet_option, answers_epsilon, epsilons, examples, seed,
                        summary)
from .engine_options import add_engine_options
from .intervals import add_interval_options
from .output import add_output_options

#: --max-pairs' default (privrank.data.ratings.DEFAULT_MAX_PAIRS), --link's choices (privrank.pairwise.links.LINKS)
#: and --weights' (privrank.pairwise.release.WEIGHTS)
DEFAULT_MAX_PAIRS = 10
LINKS = ("logistic", "probit")
WEIGHTS = ("uniform", "inverse_variance")
#: the local mechanisms and the functions of privrank.pairwise.local that release them
LOCAL_MECHANISMS = {
    "debiased-rr": "debiased_randomized_response",
    "rr": "classic_randomized_response",
    "laplace": "local_laplace",
}
CENTRAL_MECHANISMS = ("objective-perturbation", "noisy-copeland")
#: the central mechanism with the smaller expected error for the public parameters (privrank.plan.choose_mechanism)
CENTRAL_AUTO = "central-auto"
BASELINES = ("penalised-mle", "copeland", "rank-centrality")
MECHANISMS = sorted(LOCAL_MECHANISMS) + list(CENTRAL_MECHANISMS) + [CENTRAL_AUTO, "none"] + list(BASELINES)
MLE_MECHANISMS = ("objective-perturbation", "penalised-mle")
MARGINS = ("top", "pairs")
#: the smallest positive --lambda: below it a ridge is lost in the Newton system's round-off
RIDGE_FLOOR = 1e-12


def add_budget_options(parser, reports: bool = False):
    """The "privacy" group of ``parser``, which it returns: ``--epsilon`` (with ``reports``: also the
    declared epsilons of a file of randomized reports), ``--user-epsilon``, ``--seed`` and ``--max-pairs``."""
    budget = parser.add_argument_group("privacy")
    group = budget.add_mutually_exclusive_group()
    group.add_argument("--epsilon", type=epsilons if reports else float,
                       help="privacy parameter per comparison" + (
                           "; for a file of randomized reports it declares the epsilon the respondents were asked "
                           "to use (several: 0.5,1), and a report at any other epsilon is refused (default: the "
                           "one epsilon all the reports carry; reports at several need it)" if reports else ""))
    group.add_argument("--user-epsilon", type=float,
                       help="privacy budget per user (local mechanisms: split evenly over that user's "
                            "comparisons; central mechanisms: with --max-answers)")
    budget.add_argument("--seed", type=seed, help="seed for reproducible research runs (not for real releases)")
    budget.add_argument("--max-pairs", type=int, default=None,
                        help=f"ratings files (user,item,rating): most pairs of rated items taken from one user "
                             f"(default {DEFAULT_MAX_PAIRS}), the declared bound of the per-user guarantee")
    return budget


def add_ranking_options(parser, default_mechanism: str) -> None:
    """The file and the options of ``rank`` and ``top-k``, in groups."""
    parser.add_argument("file", help="CSV, Parquet or Arrow file of comparisons (user,item_a,item_b,outcome; "
                                     "winner,loser; left,right,winner; model_a,model_b,winner; an epsilon "
                                     "column marks randomized reports, at most one per respondent and pair), "
                                     "of ratings (user,item,rating) or of per-pair counts (item_a,item_b,wins_a,"
                                     "wins_b,ties: central mechanisms and baselines); "
                                     + STDIN_HELP)
    inputs = parser.add_argument_group("input")
    method = parser.add_argument_group("mechanism")
    method.add_argument("--mechanism", default=default_mechanism, choices=MECHANISMS,
                        help=f"privacy mechanism or non-private baseline (default {default_mechanism}); "
                             f"{CENTRAL_AUTO}: the central mechanism (objective-perturbation or noisy-copeland) with "
                             "the smaller error the planner predicts for the public parameters (items, comparisons "
                             "or --respondents, epsilon), named in the output with the reason")
    budget = add_budget_options(parser, reports=True)
    method.add_argument("--lambda", dest="lam", default="default",
                        help="local mechanisms and none: ridge strength, a number, 'default' (G(eps)) or 'paper'")
    method.add_argument("--weights", choices=WEIGHTS, default="uniform",
                        help="local mechanisms: weighting of debiased reports with different epsilons")
    method.add_argument("--link", choices=LINKS,
                        help="objective-perturbation and penalised-mle: link function (default logistic)")
    method.add_argument("--gamma",
                        help="objective-perturbation and penalised-mle: ridge, a number or 'theory' (default)")
    budget.add_argument("--max-answers", type=int,
                        help="public bound on answers per respondent (each respondent's first N answers are "
                             "used): required by central mechanisms with --user-epsilon; with --epsilon it "
                             "states the per-respondent epsilon N x epsilon; for a file of randomized reports "
                             "it declares the survey's quota (a respondent with more reports is refused, and a "
                             "max_answers column must agree) and states N x epsilon per respondent; for per-pair "
                             "counts it declares the bound the query that computed them applied")
    method.add_argument("--margin", choices=MARGINS, default="top",
                        help="rankings of randomized reports: the manipulation margin printed beside the ranking, "
                             "how many fake respondents (each sending up to --max-answers unrandomized reports on "
                             "distinct pairs; without it, fake reports) can change the top item (top, the "
                             "default), or also, per row, lift each item above the one ranked just above it "
                             "(pairs): the fewest an attack found, and a proven number below which none can. Only "
                             "rankings of reports (local model) state it: debiasing weighs an unrandomized fake "
                             "report (e^eps+1)/(e^eps-1) times an honest answer and local DP cannot stop it; "
                             "central releases and raw comparisons count a fake answer as one answer, like an "
                             "honest one")
    budget.add_argument("--respondents", type=int,
                        help="objective-perturbation with --user-epsilon and the default --gamma: the public "
                             "number of respondents the ridge is set from")
    inputs.add_argument("--items", metavar="PATH",
                        help="file with the item labels, one per line: the public item list (required by the "
                             "central mechanisms; default for the others: the labels that occur in the data); '-' reads it from "
                             "standard input")
    method.add_argument("--non-private-diagnostics", action="store_true",
                        help="objective-perturbation: print solver diagnostics computed from the raw data "
                             "(the output is then marked NOT PRIVATE)")
    add_interval_options(parser)
    add_engine_options(parser)
    add_output_options(parser)
    add_ledger_option(parser, new_data=True)
    add_quiet_option(parser)


def register(sub) -> None:
    p = sub.add_parser("rank", help=summary("rank"),
                       description="Rank items from a CSV of pairwise comparisons "
                                   "(user,item_a,item_b,outcome or winner,loser).",
                       epilog=examples("privrank rank $LLMFAO --epsilon 1",
                                       "privrank rank $LLMFAO --user-epsilon 4 --weights inverse_variance --ci",
                                       "privrank rank $LLMFAO --mechanism none --output ranking.csv",
                                       "privrank rank $LLMFAO --epsilon 1 --format json --ledger ledger.sqlite"))
    add_ranking_options(p, "debiased-rr")
    p.set_defaults(func=run_ranking, k=None)

    t = sub.add_parser("top-k", help=summary("top-k"),
                       description="The k best items from a CSV of pairwise comparisons; by default with "
                                   "noisy Copeland counts (central DP, Cai, Chakraborty, Wang Algorithm 2), which "
                                   "needs the public item list (--items).",
                       epilog=examples("privrank top-k $LLMFAO --k 5 --mechanism debiased-rr --epsilon 1",
                                       "privrank top-k $LLMFAO --k 5 --mechanism debiased-rr --user-epsilon 10",
                                       "privrank top-k $LLMFAO --k 3 --mechanism copeland"))
    add_ranking_options(t, "noisy-copeland")
    t.add_argument("--k", type=int, required=True, help="how many items to report")
    t.set_defaults(func=run_ranking)

    r = sub.add_parser("randomize", help=summary("randomize"),
                       description="Randomize every answer of FILE with randomized response and write the "
                                   "reports with their epsilon column.",
                       epilog=examples("privrank randomize $LLMFAO --epsilon 1 --output reports.csv",
                                       "privrank randomize $LLMFAO --user-epsilon 4 --output per-user.csv"))
    r.add_argument("file", help="CSV, Parquet or Arrow file of comparisons or ratings; " + STDIN_HELP)
    add_budget_options(r)
    output = r.add_argument_group("output")
    output.add_argument("--output", "-o", required=True, metavar="OUT", help="the CSV file of the reports")
    output.add_argument("--force", action="store_true", help="overwrite an existing output file")
    add_ledger_option(r, new_data=True)
    add_quiet_option(r)
    r.set_defaults(func=run_randomize)


def _lam(text):
    if text in ("default", "paper"):
        return text
    try:
        lam = float(text)
    except ValueError:
        lam = math.nan
    if not (math.isfinite(lam) and lam >= 0):  # checked with the options, before any release is charged
        raise InputError("--lambda must be a finite number >= 0 (0: the maximum-likelihood estimate), 'default' or "
                         "'paper'")
    if 0 < lam < RIDGE_FLOOR:
        raise InputError(f"--lambda must be 0 (the maximum-likelihood estimate) or at least {RIDGE_FLOOR:g}: a smaller "
                         "ridge vanishes in floating point beside the fit's curvature and leaves it singular")
    return lam


def _gamma(text):
    if text is None or text == "theory":
        return "theory"
    try:
        return float(text)
    except ValueError:
        raise InputError("--gamma must be a number or 'theory'") from None


def local_release(comps, args):
    """The local release for ``--mechanism`` (a local mechanism or ``none``)."""
    from ..pairwise import local
    from ..pairwise.release import non_private_release

    if args.mechanism == "none":
        if args.epsilon is not None or args.user_epsilon is not None:
            raise InputError("--mechanism none is not private: drop --epsilon / --user-epsilon")
        return non_private_release(comps)
    mech = getattr(local, LOCAL_MECHANISMS[args.mechanism])
    if comps.is_randomized:
        if args.user_epsilon is not None:
            raise InputError("the file holds randomized reports with their own epsilon column; they are debiased "
                             "as they are, so drop --user-epsilon (--epsilon declares the epsilons the respondents "
                             "were asked to use)")
        if args.mechanism == "laplace":
            raise InputError("the file holds randomized-response reports; use --mechanism debiased-rr or rr")
        if args.mechanism == "debiased-rr":
            return mech(comps, weights=args.weights)
        return mech(comps)
    if args.epsilon is None and args.user_epsilon is None:
        raise InputError(f"--mechanism {args.mechanism} needs --epsilon or --user-epsilon "
                         "(or use --mechanism none for the non-private fit)")
    kwargs = {"weights": args.weights} if args.mechanism == "debiased-rr" else {}
    return mech(comps, answers_epsilon(args), user_epsilon=args.user_epsilon, max_answers=args.max_answers,
                rng=args.seed, **kwargs)


def _check_options(args) -> None:
    """Refuse options that do not apply to ``--mechanism`` rather than ignore them."""
    from .intervals import check_level

    local = args.mechanism in LOCAL_MECHANISMS or args.mechanism == "none"
    _lam(args.lam)
    check_level(args)
    if not local and (args.lam != "default" or args.weights != "uniform"):
        raise InputError("--lambda and --weights apply to the local mechanisms and none; "
                         "objective-perturbation and penalised-mle take --gamma")
    if args.mechanism not in MLE_MECHANISMS and (args.link is not None or args.gamma is not None):
        raise InputError("--link and --gamma apply to objective-perturbation and penalised-mle"
                         + (f" (name it: {CENTRAL_AUTO} runs the mechanism it chooses with its defaults)"
                            if args.mechanism == CENTRAL_AUTO else ""))
    if args.mechanism == CENTRAL_AUTO and args.user_epsilon is not None and args.respondents is None:
        raise InputError(f"--mechanism {CENTRAL_AUTO} with --user-epsilon chooses by the public number of "
                         "respondents: give --respondents N (or name the mechanism)")
    if args.max_answers is not None and args.mechanism in ("none",) + BASELINES:
        raise InputError("--max-answers applies to the private mechanisms")
    if args.max_answers is not None and args.user_epsilon is not None and args.mechanism in LOCAL_MECHANISMS:
        raise InputError("--max-answers goes with --epsilon for local mechanisms (--user-epsilon already "
                         "bounds each respondent)")
    central = args.mechanism in CENTRAL_MECHANISMS + (CENTRAL_AUTO,)
    if args.respondents is not None and not (central and args.user_epsilon is not None):
        raise InputError("--respondents applies to central mechanisms with --user-epsilon")
    if args.non_private_diagnostics and args.mechanism != "objective-perturbation":
        raise InputError("--non-private-diagnostics applies to objective-perturbation")
    if args.mechanism in BASELINES and (args.epsilon is not None or args.user_epsilon is not None):
        raise InputError(f"--mechanism {args.mechanism} is not private: drop --epsilon / --user-epsilon")
    if central and args.epsilon is None and args.user_epsilon is None:
        raise InputError(f"--mechanism {args.mechanism} needs --epsilon (per comparison) or --user-epsilon "
                         "with --max-answers (per respondent)")
    if getattr(args, "k", None) is not None and args.k < 1:
        raise InputError("--k must be at least 1")
    if (getattr(args, "ci", False) or getattr(args, "plot", None)) and central \
            and args.user_epsilon is not None and args.respondents is None:
        raise InputError("intervals of a per-respondent central release need the public number of respondents "
                         "(--respondents N)")


def _check_data(args, comps) -> None:
    """Refuse, before anything is charged, what the release would refuse after its draw."""
    import numpy as np

    from ..pairwise.btl import refuse_uncompared

    m = comps.n_items
    if getattr(args, "k", None) is not None and args.k > m:
        raise InputError(f"--k must be between 1 and the number of items ({m})")
    if args.mechanism not in CENTRAL_MECHANISMS + (CENTRAL_AUTO,) + BASELINES:  # a BTL fit needs every item compared
        refuse_uncompared(np.bincount(np.concatenate((comps.item_a, comps.item_b)), minlength=m))


def _items(args):
    if not args.items:
        return None
    from ..data.ranking_files import read_item_list

    return read_item_list(args.items)


def _read(args):
    """The comparisons in memory; None when ``--engine`` computes the statistic from the file."""
    if args.engine != "local" or args.scheduler is not None:
        return None
    return read_data(args, _items(args))


def read_data(args, items=None):
    """The comparisons of ``args.file``, saying on stderr which layout was read when it is not one of
    privrank's own; a ratings table gives each user's pairs, at most ``--max-pairs``, and a per-user
    ``--epsilon`` release then declares that bound (``--max-answers``)."""
    from ..data.comparison_files import ComparisonColumns, read_comparisons
    from ..data.pair_count_files import holds_pair_counts
    from ..data.ratings import comparisons_from_ratings, holds_ratings
    from ..data.tabular import ColumnarFile

    header = ColumnarFile(args.file).header
    if holds_pair_counts(header):
        return _pair_counts(args, items)
    args.ratings = holds_ratings(header)
    if not args.ratings:
        layout = ComparisonColumns.from_header(header, args.file)
        if args.max_pairs is not None:
            raise InputError("--max-pairs applies to ratings files (user,item,rating)")
        if layout.winner_column:
            print(f"privrank: read the {layout.layout} layout (the winner column names the side, a tie or the "
                  "winning item)", file=sys.stderr)
        return read_comparisons(args.file, items=items)
    pairs = DEFAULT_MAX_PAIRS if args.max_pairs is None else args.max_pairs
    print(f"privrank: read ratings (user,item,rating): each user's pairs of rated items, at most {pairs} per user "
          "(--max-pairs), the higher rating winning", file=sys.stderr)
    comps = comparisons_from_ratings(args.file, max_pairs=pairs, items=items, rng=args.seed)
    ranking = hasattr(args, "max_answers")  # rank and top-k; randomize has no per-user statement to make
    private = ranking and args.mechanism not in ("none",) + BASELINES
    if private and args.max_answers is None and args.epsilon is not None:
        args.max_answers = pairs
    return comps


def _pair_counts(args, items):
    """A table of per-pair counts (item_a,item_b,wins_a,wins_b,ties): the statistic central releases
    take, with the per-respondent bound ``--max-answers`` declared for it."""
    from ..data.pair_count_files import PAIR_COUNTS_LAYOUT, read_pair_counts

    if getattr(args, "mechanism", None) not in CENTRAL_MECHANISMS + (CENTRAL_AUTO,) + BASELINES:
        raise InputError(f"{args.file} holds per-pair counts ({PAIR_COUNTS_LAYOUT}), already summed over everyone: a "
                         "local mechanism randomizes each comparison at the person, so use a central mechanism "
                         f"(--mechanism {', '.join(CENTRAL_MECHANISMS + (CENTRAL_AUTO,))}) with --items")
    print(f"privrank: read per-pair counts ({PAIR_COUNTS_LAYOUT})"
          + (f"; --max-answers {args.max_answers} is declared as the bound the query that computed them applied, "
             "which privrank cannot check" if args.max_answers is not None else ""), file=sys.stderr)
    return read_pair_counts(args.file, items=items, max_answers=args.max_answers)


def _counted(comps) -> bool:
    """Whether the data in memory are per-pair counts (:func:`_pair_counts`), not comparisons."""
    from ..data.pair_counts import PairCounts

    return isinstance(comps, PairCounts)


def _randomized(comps) -> bool:
    """Whether the data in memory are randomized reports (counts never are)."""
    return not _counted(comps) and comps.is_randomized


def _identity(args, comps):
    """What the ledger knows the data set by: the comparisons, or the file when it is streamed, holds
    ratings (the pairs drawn from ratings change from run to run; the ratings do not) or counts (the
    comparisons they stand for)."""
    return args.file if comps is None or _counted(comps) or getattr(args, "ratings", False) else comps


def fitted_ranking(args, comps=None):
    """The ranking for ``--mechanism`` and the extra fields its output may show (shared by rank and top-k).

    Extras of private outputs are the public calibration only; solver diagnostics computed from
    raw data appear for local fits (post-processing of a private release), for non-private
    baselines, and behind ``--non-private-diagnostics`` (which marks the output not private).
    """
    from ..data.comparison_files import ComparisonFile
    from ..pairwise.central import copeland, noisy_copeland, penalised_mle, perturbed_mle
    from ..pairwise.spectral import rank_centrality
    from .engine_options import engine_counts, engine_release

    _check_options(args)
    comps = _read(args) if comps is None else comps
    if comps is None and args.mechanism in CENTRAL_MECHANISMS + (CENTRAL_AUTO,):
        comps = engine_counts(args, _items(args))  # the tally of the raw comparisons: the central path below
    elif comps is None:
        reports = _margin_applies(args, ComparisonFile(args.file).is_randomized)
        release, tally = engine_release(args, _items(args))
        return _local_fit(release, args, tally if reports else None)
    _check_data(args, comps)
    margin = _margin_applies(args, _randomized(comps))
    if _randomized(comps) and args.max_answers is not None:
        comps = comps.with_quota(args.max_answers)
    if _randomized(comps) and args.epsilon is not None:
        comps = comps.with_declared_epsilons(args.epsilon)
    link = args.link or "logistic"
    chosen = _choose_central(args, comps) if args.mechanism == CENTRAL_AUTO else {}
    if args.mechanism in CENTRAL_MECHANISMS:
        budget = {"epsilon": answers_epsilon(args), "user_epsilon": args.user_epsilon, "max_answers": args.max_answers,
                  "respondents": args.respondents}
        if args.mechanism == "objective-perturbation":
            res = perturbed_mle(comps, **budget, link=link, gamma=_gamma(args.gamma),
                                diagnostics=args.non_private_diagnostics, rng=args.seed)
        else:
            res = noisy_copeland(comps, **budget, rng=args.seed)
        return res, {**chosen, **res.params, **(res.diagnostics or {})}
    if args.mechanism in BASELINES:
        if args.mechanism == "penalised-mle":
            res = penalised_mle(comps, link=link, gamma=_gamma(args.gamma))
        elif args.mechanism == "copeland":
            res = copeland(comps, rng=args.seed)
        else:
            res = rank_centrality(comps)
        return res, {**res.params, **(res.diagnostics or {})}
    return _local_fit(local_release(comps, args), args, comps if margin else None)


def _choose_central(args, comps) -> dict:
    """``--mechanism central-auto``: set ``args.mechanism`` to the central mechanism with the
    smaller predicted error (:func:`privrank.plan.choose_mechanism`) for the public parameters --
    the items, and the comparisons (per-comparison epsilon: their number is public there, the
    theory ridge reads it) or the declared respondents times ``--max-answers`` at the per-answer
    share of ``--user-epsilon``. Returns the output's fields naming the mechanism and why."""
    from ..plan import choose_mechanism

    if args.user_epsilon is not None:
        answers = args.max_answers or comps.n_items * (comps.n_items - 1) // 2
        n, eps = args.respondents * answers, args.user_epsilon / answers
    else:
        n, eps = int(comps.totals.sum()) if _counted(comps) else getattr(comps, "n_given", comps.n_records), \
            answers_epsilon(args)
    choice = choose_mechanism(comps.n_items, n, eps, rng=0)
    args.mechanism = choice.method
    return {"mechanism": choice.method, "chosen_because": choice.reason}


def _margin_applies(args, file_holds_reports: bool) -> bool:
    """Whether the ranking states a manipulation margin: a ranking of the randomized reports of the
    file (``--margin pairs`` is refused, before any charge, where none is stated)."""
    applies = file_holds_reports and args.mechanism in ("debiased-rr", "rr")
    if args.margin != "top" and not applies:
        raise InputError("--margin applies to rankings of a file of randomized reports (--mechanism debiased-rr "
                         "or rr)")
    return applies


def _local_fit(release, args, reports=None):
    """The BTL fit of a local release; with ``reports`` (the file's randomized reports or their
    tally) the extras carry the manipulation margin of the fit (``margin``)."""
    from ..pairwise.btl import fit_btl

    fit = fit_btl(release, lam=_lam(args.lam))
    extra: dict[str, object] = {"lambda": fit.lam, "converged": fit.converged, "gradient_norm": fit.grad_norm}
    if reports is not None:
        from ..inference.manipulation import manipulation_margin

        debiased = args.mechanism == "debiased-rr"
        extra["margin"] = manipulation_margin(reports, _lam(args.lam), weights=args.weights if debiased else "uniform",
                                              debiased=debiased, max_answers=args.max_answers,
                                              pairs=args.margin == "pairs" and (args.k or True))
    return fit, extra


def _with_margin(rows, margin, notes, fmt) -> None:
    """The manipulation margin beside the ranking: a note (json: its fields) and, with pairs, per row
    the fakes that lift the item above the one ranked just above it: a ``margin`` column in a table
    (``N``, or ``L..N``: proven at least L, N found), ``margin_at_least`` and ``margin_fakes`` numbers
    in csv and json (no number for ``margin_fakes`` when no attack up to the cap did it)."""
    notes["manipulation_margin" if fmt == "json" else "manipulation margin"] = (
        margin.to_dict() if fmt == "json" else margin.describe())
    if margin.pairs is None:
        return
    for row in rows:
        pair = margin.pairs[row["rank"] - 2] if row["rank"] > 1 else None
        if fmt == "table":
            row["margin"] = "" if pair is None else pair.shown
        else:
            empty = None if fmt == "json" else ""
            row["margin_at_least"] = empty if pair is None else pair.at_least
            row["margin_fakes"] = empty if pair is None or pair.more_than else pair.fakes


def run_ranking(args) -> int:
    """Charge (inside the mechanism, before its noise), then intervals, render and write."""
    from ..data.comparison_files import ComparisonFile
    from .intervals import check_interval_size, interval_rows
    from .releasing import ledger_release
    from .output import emit, render, shown_guarantee

    comps = _read(args)
    if comps is not None:
        check_interval_size(args, comps.n_items, cubic=args.mechanism != "noisy-copeland")
    with ledger_release(args, _identity(args, comps)) as release:
        res, extra = fitted_ranking(args, comps)
        reports = ComparisonFile(args.file).is_randomized if comps is None else _randomized(comps)
        release.done(res.guarantee, reports=reports)
        rows, ci = interval_rows(res, res.table(args.k), args)
        margin = extra.pop("margin", None)
        notes = extra if args.format == "json" else {k: extra[k] for k in ("mechanism", "chosen_because") if k in extra}
        if ci is not None:
            notes["intervals"] = ci.describe()
        if margin is not None:
            _with_margin(rows, margin, notes, args.format)
        guarantee = shown_guarantee(res.guarantee, args)
        text = render(rows, guarantee, args.format, notes)
        if release.plot:
            from ..inference import plot_intervals

            plot_intervals(ci, release.plot, title=guarantee.describe().split(";")[0])
        emit(text, release.output)
    return 0


def run_randomize(args) -> int:
    """Randomize a file of answers: charged to the ledger (per comparison) before any answer is flipped."""
    from ..data.comparison_files import comparisons_to_csv
    from ..pairwise.local import randomized_response
    from .releasing import ledger_release
    from .output import emit, records_bytes

    if args.epsilon is None and args.user_epsilon is None:
        raise InputError("randomize needs --epsilon or --user-epsilon")
    comps = read_data(args)
    with ledger_release(args, _identity(args, comps)) as release:
        release.reserve(records_bytes(comps))
        reports = randomized_response(comps, args.epsilon, user_epsilon=args.user_epsilon, rng=args.seed)
        emit(comparisons_to_csv(reports), release.output)
    return 0
