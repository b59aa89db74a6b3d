"""``--engine``, ``--scheduler`` and ``--batch-size`` of ``rank``, ``top-k`` and ``aggregate``, and the progress bar.

``local`` reads the whole file into memory and supports every mechanism, method and budget.
``stream`` and ``dask`` compute the statistic batch by batch or partition by partition
(:mod:`privrank.engines`) and give output identical to ``local`` byte for byte:

* ``rank`` and ``top-k``: the mechanisms whose release is a function of integer counts --
  ``none``, the local ``debiased-rr`` and ``rr`` (per comparison ``--epsilon``, with or without
  ``--max-answers``, or a budget per user ``--user-epsilon``; or a file of randomized reports
  without a user column, ``--epsilon`` then declaring their epsilons) and the central
  ``objective-perturbation``, ``noisy-copeland`` and ``central-auto`` (``--epsilon``, with or
  without ``--max-answers``, or ``--user-epsilon`` with ``--max-answers``). A per-user bound or
  budget keeps one counter per user in the engine (:mod:`privrank.engines.users`), never
  printed;
* ``aggregate``: the methods whose input is a statistic of complete rankings
  (``ENGINE_AGGREGATION``): the pairwise counts (the matrix w of the Kemeny methods) or the
  position counts (footrule); for ``ldp-matrix`` and ``ldp-footrule`` every voter's report is
  drawn in the engine, keyed by the voter's index in the file.
"""
from __future__ import annotations

import argparse
from dataclasses import replace

from ..errors import InputError
from .arguments import answers_epsilon

#: --engine's choices (privrank.engines.ENGINES) and --batch-size's default (privrank.engines.DEFAULT_BATCH_SIZE)
ENGINES = ("local", "stream", "dask")
DEFAULT_BATCH_SIZE = 1 << 20
COUNTING_MECHANISMS = ("none", "debiased-rr", "rr")
#: the central mechanisms the engines run from the counts of the raw comparisons (cli.rank.CENTRAL_MECHANISMS + auto)
ENGINE_CENTRAL = ("objective-perturbation", "noisy-copeland", "central-auto")
#: aggregate methods the stream and dask engines run, and the statistic of the rankings each reads
ENGINE_AGGREGATION = {
    **dict.fromkeys(("exact", "kwiksort", "borda", "copeland", "noisy-borda", "noisy-matrix", "dp-kwiksort",
                     "exponential", "hay-quicksort", "ldp-matrix"), "pairwise"),
    **dict.fromkeys(("footrule", "dp-footrule", "ldp-footrule"), "positions"),
}
#: methods whose voters randomize their own rankings (in the engine)
LOCAL_AGGREGATION = ("ldp-matrix", "ldp-footrule")


def add_engine_options(parser) -> None:
    """The "engine" group of ``parser``: ``--engine``, ``--scheduler`` and ``--batch-size``."""
    group = parser.add_argument_group("engine")
    group.add_argument("--engine", choices=ENGINES, default="local",
                       help="where the statistic is computed: local (in memory, every method), "
                            "stream (batches, bounded memory) or dask (a Dask cluster); default local")
    group.add_argument("--scheduler", metavar="ADDRESS",
                       help="Dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 "
                            "(default: Dask's local threads)")
    group.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, metavar="N",
                       help=f"records per batch of --engine stream (default {DEFAULT_BATCH_SIZE})")


def _check_scheduler(args) -> None:
    if args.engine != "dask" and args.scheduler is not None:
        raise InputError("--scheduler is used only with --engine dask")


def _statistics(args, **kwargs):
    """``sufficient_statistics`` of ``args.file`` on ``--engine``, with a progress bar on a terminal."""
    from ..engines import sufficient_statistics
    from ..progress import RecordsBar

    bar = RecordsBar() if args.engine == "stream" else None
    try:
        return sufficient_statistics(args.file, engine=args.engine, batch_size=args.batch_size,
                                     scheduler=args.scheduler, progress=bar,
                                     fingerprint=getattr(args, "fingerprint", None), **kwargs)
    finally:
        if bar:
            bar.close()


def engine_release(args, items=None):
    """``(release, tally)``: the release of ``args.file`` for ``--mechanism`` computed by ``--engine
    stream`` or ``dask`` (the same release, float for float, as the local engine's) and the tally
    it was computed from; ``items`` is the item list."""
    from ..data.io import ComparisonFile
    from ..pairwise.local import budget_guarantee
    from ..pairwise.release import TIE_NOTE, non_private_release, release_from_reports

    _check_scheduler(args)
    if args.mechanism not in COUNTING_MECHANISMS:
        raise InputError(f"--engine {args.engine} supports --mechanism {', '.join(COUNTING_MECHANISMS + ENGINE_CENTRAL)}; "
                         "use --engine local for this mechanism")
    source = ComparisonFile(args.file)
    reports = source.is_randomized
    if source.columns.max_answers is not None:
        raise InputError("the file declares a quota of reports per respondent (a max_answers column); checking "
                         "each respondent against it needs --engine local")
    if args.epsilon is not None and args.mechanism == "none":
        raise InputError("--mechanism none is not private: drop --epsilon")
    if reports and (args.user_epsilon is not None or args.max_answers is not None):
        raise InputError(f"the file holds randomized reports: --engine {args.engine} debiases them as they are "
                         "(--user-epsilon and --max-answers need --engine local)")
    if args.mechanism != "none" and not reports and args.epsilon is None and args.user_epsilon is None:
        raise InputError(f"--mechanism {args.mechanism} needs --epsilon or --user-epsilon "
                         "(or use --mechanism none for the non-private fit)")
    budget = {} if reports else {"epsilon": answers_epsilon(args), "user_epsilon": args.user_epsilon,
                                 "max_answers": args.max_answers}
    tally = _statistics(args, items=items, rng=args.seed, **budget)
    if args.mechanism == "none":
        return non_private_release(tally), tally
    if args.epsilon is not None and reports:
        tally = tally.with_declared_epsilons(args.epsilon)
    debiased = args.mechanism == "debiased-rr"
    mechanism = "debiased randomized response" if debiased else "classic randomized response"
    drawn = None if reports else budget_guarantee(mechanism, TIE_NOTE, **budget)  # as in memory
    per_user = args.user_epsilon is not None or args.max_answers is not None
    release = release_from_reports(tally, weights=args.weights if debiased else "uniform", debiased=debiased,
                                   guarantee=None if per_user else drawn)
    if per_user and drawn is not None:  # drawn here, under the bound or split the engine applied: the tally keeps no user to check it by
        release = replace(release, guarantee=replace(drawn, seeded=True) if tally.seeded else drawn)
    return release, tally


def engine_counts(args, items=None):
    """The tally of the raw comparisons of ``args.file`` a central release reads, computed by
    ``--engine stream`` or ``dask``: with ``--max-answers K``, of each respondent's first ``K``
    (the tally declares the bound and the comparisons given, as the central mechanisms need)."""
    from ..data.io import ComparisonFile

    _check_scheduler(args)
    if ComparisonFile(args.file).is_randomized:
        raise InputError("these are randomized reports; central mechanisms take the raw comparisons held by a "
                         "trusted curator")
    return _statistics(args, items=items, max_answers=args.max_answers)


def engine_rankings(args, methods, choose=None):
    """``(tally, method)`` for ``aggregate --engine stream`` or ``dask``: the statistic of the
    rankings ``--method`` reads, and the method run on it, giving the local engine's output.

    Every method gets a Generator seeded with ``--seed`` in place of the seed. The voters'
    randomization key comes from the source the in-memory method takes it from: ``ldp-matrix``
    draws it from its Generator (and then solves with it), ``ldp-footrule`` derives it from the
    seed. Non-private outputs and ``--non-private-diagnostics`` report the Kemeny and footrule
    costs, so they read both exact statistics. ``--method auto`` reads both too, then calls
    ``choose(items, rankings)``, which sets ``args.method`` from those public numbers.
    """
    from .._rng import as_generator

    _check_scheduler(args)
    if args.method not in ENGINE_AGGREGATION and args.method != "auto":
        raise InputError(f"--method {args.method} needs the whole profile in memory (ldp-kwiksort asks voters "
                         "adaptively chosen questions; dp-ptas reads every ranking's bucket pattern): use "
                         f"--engine local. --engine {args.engine} runs {', '.join(ENGINE_AGGREGATION)}")
    if args.partial != "error":
        raise InputError(f"--engine {args.engine} reads complete strict rankings; --partial {args.partial} "
                         "needs --engine local")
    local = args.method in LOCAL_AGGREGATION
    if local and (args.epsilon is None or args.delta or args.non_private_diagnostics):
        raise InputError(f"--method {args.method} is epsilon-local DP: it needs --epsilon, no --delta, and "
                         "--non-private-diagnostics only with --engine local")
    both = not local and (args.epsilon is None or args.non_private_diagnostics or args.method == "auto")
    gen = as_generator(args.seed)
    tally = _statistics(args, kind="rankings", statistic=None if both else ENGINE_AGGREGATION[args.method],
                        epsilon=args.epsilon if local else None,
                        kappa=args.kappa if args.method == "ldp-footrule" else None,
                        rng=gen if args.method == "ldp-matrix" else args.seed)
    if args.method == "auto":
        choose(len(tally.items), tally.n_voters)
    method = methods[args.method]
    return tally, lambda R, a: method(R, argparse.Namespace(**{**vars(a), "seed": gen}))


