"""``--ci`` and ``--plot`` of the ranking commands: interval columns and the interval plot."""
from __future__ import annotations

import warnings

from ..errors import InputError, UtilityWarning

#: --ci-method's choices (privrank.inference.METHODS)
CI_METHODS = ("sandwich", "bootstrap")


def add_interval_options(parser, *, scores: bool = True) -> None:
    """The "intervals" group of ``parser``; ``scores=False`` (rank aggregation) leaves out the
    score-interval options."""
    group = parser.add_argument_group("intervals")
    what = "score_lower, score_upper, rank_lower, rank_upper" if scores else "rank_lower, rank_upper"
    group.add_argument("--ci", action="store_true",
                       help=f"add {what}: intervals that include the privacy noise (post-processing, no extra "
                            "privacy cost)")
    group.add_argument("--ci-level", type=float, default=0.95, help="confidence level (default 0.95)")
    if scores:
        group.add_argument("--ci-method", choices=CI_METHODS, default="sandwich",
                           help="sandwich covariance (default) or parametric bootstrap through the mechanism")
        group.add_argument("--bias-corrected", action="store_true",
                           help="centre the intervals on the ridge-free estimate (adds score_corrected)")
    group.add_argument("--plot", metavar="PATH",
                       help=f"write a plot of the {'score and ' if scores else ''}rank intervals to PATH (implies "
                            "--ci; needs matplotlib)")


def check_level(args) -> None:
    """Refuse a ``--ci-level`` that is not strictly between 0 and 1, before the release is charged (found only when
    the intervals were computed, it came after the charge: a spend recorded without its output)."""
    import math

    scores = hasattr(args, "ci_method")
    if not (args.ci or args.plot):
        if args.ci_level != 0.95 or (scores and (args.ci_method != "sandwich" or args.bias_corrected)):
            raise InputError("--ci-level, --ci-method and --bias-corrected apply with --ci" if scores else
                             "--ci-level applies with --ci")
        return
    level = args.ci_level
    if not (isinstance(level, float) and math.isfinite(level) and 0.0 < level < 1.0):
        raise InputError("--ci-level must lie strictly between 0 and 1 (e.g. 0.95)")


def check_interval_size(args, items: int, *, cubic: bool) -> None:
    """Refuse ``--ci``/``--plot`` whose cost exceeds :mod:`privrank.limits`, before the release is charged.

    ``items`` is the number of items ranked; ``cubic`` says that each bootstrap replicate re-solves an
    ``items x items`` problem (module docstring of :mod:`privrank.inference`).
    """
    if args.ci or args.plot:
        from ..inference import check_interval_cost

        bootstrap = getattr(args, "ci_method", "bootstrap") == "bootstrap"
        check_interval_cost(items, n_bootstrap=1000 if bootstrap else None, cubic=cubic,
                            advice="leave out --ci, or rank fewer items")


def interval_rows(res, rows: list[dict], args, *, items=None, rng=None):
    """``rows`` with the interval columns of ``--ci`` added, and the intervals (None without ``--ci``).

    ``res`` is a pairwise result (score and rank intervals, :func:`~privrank.inference.confidence_intervals`)
    or, for a parser with ``scores=False``, a rank-aggregation result with its item labels ``items`` (rank
    intervals, :func:`~privrank.inference.aggregate_intervals`, bootstrap randomness ``rng``).
    """
    scores = hasattr(args, "ci_method")
    if not (args.ci or args.plot):
        if args.ci_level != 0.95 or (scores and (args.ci_method != "sandwich" or args.bias_corrected)):
            raise InputError("--ci-level, --ci-method and --bias-corrected apply with --ci" if scores else
                             "--ci-level applies with --ci")
        return rows, None
    from ..inference import ConfidenceIntervals, RankIntervals, aggregate_intervals, confidence_intervals

    ci: ConfidenceIntervals | RankIntervals
    if scores:
        ci = confidence_intervals(res, level=args.ci_level, method=args.ci_method, bias_corrected=args.bias_corrected,
                                  rng=args.seed)
        suggest_epsilon(res, ci)
    else:
        ci = aggregate_intervals(res, items=items, level=args.ci_level, rng=rng)
    index = {item: k for k, item in enumerate(ci.items)}
    out = []
    for row in rows:
        k = index[row["item"]]
        extra = {"score_corrected": float(ci.estimate[k])} \
            if isinstance(ci, ConfidenceIntervals) and args.bias_corrected else {}
        out.append({**row, **extra, **ci.entry(k)})
    return out, ci


#: the accuracy the suggestion of :func:`suggest_epsilon` aims at (mean Kendall distance)
SUGGESTION_TARGET = 0.1


def suggest_epsilon(res, ci) -> None:
    """When a local release cannot tell its items apart (every rank interval is [1, m]), warn with
    the epsilon the planner suggests for a Kendall distance of about ``SUGGESTION_TARGET`` on the
    same number of items and of reports. Both are public in the local model (every randomized
    report is seen), so the suggestion is post-processing; nothing is printed for central releases,
    whose record count need not be public."""
    from ..inference import indistinguishable

    release = getattr(res, "release", None)
    m = len(ci.items)
    if release is None or release.guarantee.model != "local" or not indistinguishable(ci.rank_lower, ci.rank_upper):
        return
    from ..plan import Design, smallest_epsilon

    try:
        best, _ = smallest_epsilon(Design(m, int(round(float(release.counts.totals.sum()))), 1), "kendall",
                                   SUGGESTION_TARGET)
    except InputError as refused:  # too large to simulate, or no epsilon meets it
        warnings.warn(f"the planner has no epsilon to suggest for this design ({refused})", UtilityWarning,
                      stacklevel=2)
        return
    warnings.warn(f"for a mean Kendall distance of about {SUGGESTION_TARGET:g} with this many items and reports, "
                  f"the planner suggests epsilon {best.epsilon:.2g} per comparison if the true scores spread evenly "
                  "over [-2, 2] (privrank plan --like PILOT.csv calibrates it on data like yours; it predicts the "
                  "error of a design before collecting data)", UtilityWarning, stacklevel=2)
