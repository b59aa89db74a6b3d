"""``privrank rank`` and ``privrank randomize``: ranking from pairwise comparisons."""
from __future__ import annotations

from ..data.io import comparisons_to_csv, read_comparisons, write_text_atomic
from ..errors import InputError
from ..pairwise.btl import fit_btl
from ..pairwise.local import (classic_randomized_response, debiased_randomized_response, local_laplace,
                                randomized_response)
from ..pairwise.release import WEIGHTS, non_private_release
from .engine_options import add_engine_options, comparisons_release
from .output import add_output_options, emit, render

LOCAL_MECHANISMS = {
    "debiased-rr": debiased_randomized_response,
    "rr": classic_randomized_response,
    "laplace": local_laplace,
}


def add_budget_options(parser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--epsilon", type=float, help="privacy parameter per comparison")
    group.add_argument("--user-epsilon", type=float,
                       help="privacy budget per user, split evenly over that user's comparisons")
    parser.add_argument("--seed", type=int, help="seed for reproducible research runs (not for real releases)")


def register(sub) -> None:
    p = sub.add_parser("rank", help="rank items from pairwise comparisons",
                       description="Rank items from a CSV of pairwise comparisons "
                                   "(user,item_a,item_b,outcome or winner,loser).")
    p.add_argument("file", help="CSV file of comparisons (an epsilon column marks randomized reports)")
    p.add_argument("--mechanism", default="debiased-rr", help="privacy mechanism (default debiased-rr)",
                   choices=sorted(LOCAL_MECHANISMS) + ["none"])
    add_budget_options(p)
    p.add_argument("--lambda", dest="lam", default="default",
                   help="ridge strength: a number, 'default' (G(eps)) or 'paper'")
    p.add_argument("--weights", choices=WEIGHTS, default="uniform",
                   help="weighting of debiased reports with different epsilons")
    add_engine_options(p)
    add_output_options(p)
    p.set_defaults(func=run_rank)

    r = sub.add_parser("randomize", help="play the respondents' side: randomized response on a file",
                       description="Randomize every answer of FILE with randomized response and write the "
                                   "reports with their epsilon column.")
    r.add_argument("file")
    add_budget_options(r)
    r.add_argument("--output", "-o", required=True, metavar="OUT")
    r.add_argument("--force", action="store_true", help="overwrite an existing output file")
    r.set_defaults(func=run_randomize)


def _lam(text):
    if text in ("default", "paper"):
        return text
    try:
        return float(text)
    except ValueError:
        raise InputError("--lambda must be a number, 'default' or 'paper'") from None


def private_release(comps, args):
    """The release for ``--mechanism`` (shared by ``rank`` and ``top-k``)."""
    if args.mechanism == "none":
        if args.epsilon is not None or args.user_epsilon is not None:
            raise InputError("--mechanism none is not private: drop --epsilon / --user-epsilon")
        return non_private_release(comps)
    mech = LOCAL_MECHANISMS[args.mechanism]
    if comps.is_randomized:
        if args.epsilon is not None or args.user_epsilon is not None:
            raise InputError("the file holds randomized reports with their own epsilon column; "
                             "they are debiased as they are, so drop --epsilon / --user-epsilon")
        if args.mechanism == "laplace":
            raise InputError("the file holds randomized-response reports; use --mechanism debiased-rr or rr")
        if args.mechanism == "debiased-rr":
            return mech(comps, weights=args.weights)
        return mech(comps)
    if args.epsilon is None and args.user_epsilon is None:
        raise InputError(f"--mechanism {args.mechanism} needs --epsilon or --user-epsilon "
                         "(or use --mechanism none for the non-private fit)")
    kwargs = {"weights": args.weights} if args.mechanism == "debiased-rr" else {}
    return mech(comps, args.epsilon, user_epsilon=args.user_epsilon, rng=args.seed, **kwargs)


def run_rank(args) -> int:
    fit = fit_btl(comparisons_release(args, private_release), lam=_lam(args.lam))
    extra = {"lambda": fit.lam, "converged": fit.converged, "gradient_norm": fit.grad_norm}
    emit(render(fit.table(), fit.guarantee, args.format, extra if args.format == "json" else None), args)
    return 0


def run_randomize(args) -> int:
    comps = read_comparisons(args.file)
    if args.epsilon is None and args.user_epsilon is None:
        raise InputError("randomize needs --epsilon or --user-epsilon")
    reports = randomized_response(comps, args.epsilon, user_epsilon=args.user_epsilon, rng=args.seed)
    write_text_atomic(args.output, comparisons_to_csv(reports), force=args.force)
    return 0
