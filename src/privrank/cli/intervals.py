"""``--ci`` and ``--plot`` of the ranking commands: interval columns and the interval plot."""
from __future__ import annotations

from ..errors import InputError
from ..inference import METHODS, confidence_intervals


def add_interval_options(parser) -> None:
    parser.add_argument("--ci", action="store_true",
                        help="add score_lower, score_upper, rank_lower, rank_upper: intervals that include the "
                             "privacy noise (post-processing, no extra privacy cost)")
    parser.add_argument("--ci-level", type=float, default=0.95, help="confidence level (default 0.95)")
    parser.add_argument("--ci-method", choices=METHODS, default="sandwich",
                        help="sandwich covariance (default) or parametric bootstrap through the mechanism")
    parser.add_argument("--bias-corrected", action="store_true",
                        help="centre the intervals on the ridge-free estimate (adds score_corrected)")
    parser.add_argument("--plot", metavar="PATH",
                        help="write a plot of the score and rank intervals to PATH (implies --ci; needs matplotlib)")


def interval_rows(res, rows: list[dict], args):
    """``rows`` with the interval columns of ``--ci`` added, and the intervals (None without ``--ci``)."""
    if not (args.ci or args.plot):
        if args.ci_level != 0.95 or args.ci_method != "sandwich" or args.bias_corrected:
            raise InputError("--ci-level, --ci-method and --bias-corrected apply with --ci")
        return rows, None
    ci = confidence_intervals(res, level=args.ci_level, method=args.ci_method, bias_corrected=args.bias_corrected,
                              rng=args.seed)
    index = {item: k for k, item in enumerate(res.items)}
    out = []
    for row in rows:
        k = index[row["item"]]
        extra = {"score_corrected": float(ci.estimate[k])} if args.bias_corrected else {}
        out.append({**row, **extra, **ci.entry(k)})
    return out, ci
