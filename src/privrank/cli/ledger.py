"""``privrank ledger show|set-budget|export``: the persistent privacy ledger (:mod:`privrank.ledger`).

The parser imports nothing heavy (``privrank ledger --help`` starts fast); the command imports the
ledger when it runs. Release commands record their spends through :mod:`privrank.cli.releasing`.
"""
from __future__ import annotations

import csv
import io
import math

from ..errors import InputError
from .arguments import add_ledger_option, examples, summary

#: the units a budget protects, as ``--unit`` names them (privrank.ledger.BUDGET_UNITS; a test checks)
BUDGET_UNIT_CHOICES = ("comparison", "ranking", "user")


def register(sub) -> None:
    p = sub.add_parser("ledger", help=summary("ledger"),
                       description="Show, budget and export the persistent privacy ledger. Every release of "
                                   "`privrank rank`, `top-k` and `aggregate` is recorded before its output is "
                                   "written.",
                       epilog=examples("privrank ledger set-budget $LLMFAO --epsilon 8",
                                       "privrank rank $LLMFAO --user-epsilon 2",
                                       "privrank ledger show $LLMFAO",
                                       "privrank ledger export --output releases.csv"))
    ledger_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = ledger_sub.add_parser("show", help="budgets, spending and releases",
                                 description="The budgets, what each data set spent, and every release.",
                                 epilog=examples("privrank ledger show", "privrank ledger show $LLMFAO --format json"))
    show.add_argument("file", nargs="?", help="only this data set (a comparisons or rankings file)")
    show.add_argument("--format", choices=("table", "json"), default="table", help="table (default) or json")
    budget = ledger_sub.add_parser("set-budget", help="promise a total budget for a data set",
                                   description="Promise a total budget for a data set: a release that would "
                                               "spend past it is refused before its noise is drawn.",
                                   epilog=examples("privrank ledger set-budget $LLMFAO --epsilon 8",
                                                   "privrank ledger set-budget $LLMFAO --epsilon 20 --unit comparison"))
    budget.add_argument("file", help="the data set (a comparisons or rankings file)")
    total = budget.add_argument_group("budget")
    total.add_argument("--epsilon", type=float, required=True, help="total epsilon for the data set")
    total.add_argument("--delta", type=float, default=0.0,
                       help="total delta (default 0: a pure budget, which refuses approximate-DP releases)")
    total.add_argument("--unit", choices=BUDGET_UNIT_CHOICES,
                       help="what the budget protects: comparisons data: one user's answers (default) or one "
                            "comparison; rankings data: one ranking (default, one voter's ballot)")
    export = ledger_sub.add_parser("export", help="every recorded release as CSV or JSON",
                                   description="Every recorded release, one row (CSV) or object (JSON) each.",
                                   epilog=examples("privrank ledger export",
                                                   "privrank ledger export --format json --output releases.json"))
    output = export.add_argument_group("output")
    output.add_argument("--format", choices=("csv", "json"), default="csv", help="csv (default) or json")
    output.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    output.add_argument("--force", action="store_true", help="overwrite an existing --output file")
    for q in (show, budget, export):
        add_ledger_option(q, new_data=q is budget)
        q.set_defaults(func=run_ledger)


def run_ledger(args) -> int:
    from ..exports import dumps
    from ..ledger import Ledger, identify
    from .output import _fmt_cell, emit
    from .releasing import refuse_overwriting

    refuse_overwriting(args, getattr(args, "output", None))
    with Ledger(args.ledger) as ledger:
        if args.action == "set-budget":
            unit = _budget_unit(args)
            ledger.set_budget(identify(args.file), unit, args.epsilon, args.delta, dataset=args.file,
                              new_data=args.new_data)
            budget = [b for b in ledger.budgets() if b["dataset"] == args.file][-1]
            print(_budget_line(budget))
            return 0
        if args.action == "export":
            emit(_export(ledger.releases(), args.format), args.output, force=args.force)
            return 0
        fp = (ledger.find(identify(args.file)) or "-") if args.file else None  # "-": a data set it does not know
        budgets, releases = ledger.budgets(fp), ledger.releases(fp)
    if args.format == "json":
        print(dumps({"ledger": str(ledger.path), "budgets": budgets, "releases": releases}))
        return 0
    print(f"ledger: {ledger.path}")
    print("budgets:" if budgets else "budgets: none set")
    for b in budgets:
        print("  " + _budget_line(b))
    print(f"releases: {len(releases)}")
    for r in releases:
        eps = "NOT PRIVATE" if not r["private"] else f"epsilon {_fmt_cell(r['epsilon'])}" + (
            f" (per user {_fmt_cell(r['epsilon_per_user'])})" if r["epsilon_per_user"] is not None else "")
        print(f"  #{r['id']} {r['time'][:19]}Z {r['dataset']} [{r['fingerprint'][:12]}] {r['mechanism']}, "
              f"{r['model']}, {eps}, protecting {r['unit']} -> {r['output']}")
    return 0


def _budget_unit(args) -> str:
    """The unit of ``set-budget``: one ranking for rankings data; for comparisons one user (the default when
    the file has user ids) or one comparison (the default without them: no release could state a per-user
    guarantee); per-pair counts default to one user, which their releases state with a declared bound."""
    from ..data.io import ComparisonFile, holds_rankings
    from ..data.pair_count_files import holds_pair_count_table

    if holds_pair_count_table(args.file):  # no user column, but a declared bound per user (--max-answers)
        if args.unit == "ranking":
            raise InputError(f"{args.file} holds per-pair counts of comparisons: use --unit user or --unit comparison")
        return args.unit or "user"
    rankings = holds_rankings(args.file)
    if args.unit is None:
        return "ranking" if rankings else "user" if ComparisonFile(args.file).has_users else "comparison"
    if args.unit == "user" and not rankings and not ComparisonFile(args.file).has_users:
        raise InputError(f"{args.file} has no user column: no release can state a per-user guarantee on it; "
                         "use --unit comparison")
    if rankings != (args.unit == "ranking"):
        raise InputError(f"{args.file} holds {'rankings' if rankings else 'comparisons'}: use --unit "
                         + ("ranking (each voter casts one ranking)" if rankings else "user or --unit comparison"))
    return args.unit


def _budget_line(b) -> str:
    from ..ledger import BUDGET_UNITS

    unit = next(k for k, v in BUDGET_UNITS.items() if v == b["unit"])
    spent = "inf" if math.isinf(b["spent_epsilon"]) else f"{b['spent_epsilon']:.4g}"
    return (f"{b['dataset']} [{b['fingerprint'][:12]}] per {unit}: epsilon {b['epsilon']:g} total, "
            f"{spent} spent, {b['remaining_epsilon']:.4g} left"
            + (f"; delta {b['delta']:g} total, {b['spent_delta']:.4g} spent" if b["delta"] else ""))


def _export(releases, fmt) -> str:
    from ..exports import dumps
    from ..ledger import RELEASE_COLUMNS

    if fmt == "json":
        return dumps(releases) + "\n"
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(RELEASE_COLUMNS)
    for r in releases:
        writer.writerow(["" if r[c] is None else r[c] for c in RELEASE_COLUMNS])
    return buf.getvalue()
