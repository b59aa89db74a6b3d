"""``privrank ledger show|set-budget|export``, and the context every release command runs in.

A release command computes its output inside :func:`ledger_release`: the outputs are checked
first, then every private function called inside charges the persistent ledger
(:mod:`privrank.ledger`) *before it draws its noise* (:mod:`privrank.release`), or is refused
when it would exceed the data set's budget, in which case nothing is drawn or written. A
non-private output is recorded when the command reports it (:meth:`LedgerRelease.done`).
"""
from __future__ import annotations

import csv
import io
import math
import os
import sys
from contextlib import contextmanager

from ..data.io import ComparisonFile, holds_rankings
from ..data.pinned import FileChangedError, PinnedFile
from ..errors import BudgetExceededError, InputError
from ..files import STDOUT, Output
from ..ledger import BUDGET_UNITS, RELEASE_COLUMNS, Ledger, fingerprint
from ..release import charging
from ..exports import dumps
from .output import _fmt_cell, emit, output_format
from .arguments import add_ledger_option, summary


class LedgerRelease:
    """The release a command runs inside :func:`ledger_release`; :meth:`done` closes its record.

    ``output`` and ``plot`` are the command's reserved outputs (:class:`~privrank.files.Output`,
    None for standard output or no plot).
    """

    def __init__(self, ledger, payer, fp, args, output, plot):
        self._ledger, self._payer, self._fp = ledger, payer, fp
        self.output, self.plot = output, plot
        self._meta = {"dataset": str(args.file), "output": _names(output, plot), "command": args.command}

    def refuse_if_budgeted(self, why: str) -> None:
        """Refuse, before anything is charged, an output that will not be private (``why``) when
        the data set has a budget: the ledger would refuse it after the private part had spent."""
        budgets = self._ledger.budgets(self._fp)
        if budgets:
            raise BudgetExceededError(f"refused before anything was spent: {why}, and the data set has a privacy "
                                      f"budget (epsilon = {budgets[0]['epsilon']:g}); drop the option")

    def done(self, guarantee, *, reports: bool = False) -> None:
        """Record the output's guarantee unless a private function already charged it.

        A non-private output (a baseline, or private output with exact diagnostics) is
        recorded, and refused under a budget. ``reports``: the input was randomized reports,
        whose spend was charged when they were randomized (``privrank randomize``) or spent on
        the respondents' devices; debiasing them is post-processing and spends nothing. Any
        other private output that nothing charged is a bug.
        """
        if guarantee.private and (self._payer.charged or reports):
            return
        if guarantee.private:
            raise RuntimeError("a private output was computed without charging the ledger")
        self._ledger.record(self._fp, guarantee, **self._meta)


def _names(output, plot) -> str:
    return ", ".join(str(o) for o in (output, plot) if o is not None) or "<stdout>"


@contextmanager
def ledger_release(args, data):
    """Reserve the outputs, then charge every release computed inside to the ledger before it draws.

    ``data`` is what the ledger fingerprints: the comparisons or rankings in memory, or the
    file. Yields a :class:`LedgerRelease`: call its ``done(guarantee)`` with the output's
    guarantee, then write its ``output`` and ``plot`` inside the block. Every check an output can
    have is made before anything is charged (:meth:`~privrank.files.Output.reserve`); if the
    command fails inside the block, the outputs it reserved and did not write are removed.
    """
    path, plot = getattr(args, "output", None), getattr(args, "plot", None)
    if hasattr(args, "format"):
        args.format = output_format(args.format, path)
    for target in (path, plot):
        if target not in (None, STDOUT) and _same_file(target, args.file):
            raise InputError("the output would overwrite the input data: write it to another file (nothing was "
                             "released)")
    output = None if path in (None, STDOUT) else Output(path, force=args.force)
    plot = None if plot is None else Output(plot, force=args.force, plot=True)
    if output is None and not _stdout_open():
        raise InputError("standard output is closed: write the release to a file with --out FILE "
                         "(nothing was released)")
    if output is None and getattr(args, "format", None) == "parquet" and sys.stdout.isatty():
        raise InputError("Parquet is binary, not for a terminal: write it to a file with --out FILE (nothing was "
                         "released)")
    reserved = []
    try:
        for out in (output, plot):
            if out is not None:
                try:
                    out.reserve()
                except InputError as exc:
                    raise InputError(f"{exc} (nothing was released)") from None
                reserved.append(out)
        fp = args.fingerprint = fingerprint(data)  # the dask engine checks its workers' records against it
        with Ledger(args.ledger) as ledger:
            with charging(ledger, fingerprint=fp, dataset=str(args.file), output=_names(output, plot),
                          command=args.command) as payer:
                try:
                    yield LedgerRelease(ledger, payer, fp, args, output, plot)
                except FileChangedError:
                    raise FileChangedError(f"{args.file} changed while it was being released: nothing was released"
                                           + ("; the spend stays recorded in the ledger" if payer.charged else
                                              " and nothing was spent")) from None
    except BaseException:
        for out in reserved:
            out.abandon()
        raise


def _same_file(a, b) -> bool:
    try:
        return os.path.samestat(os.stat(a), b.stat() if isinstance(b, PinnedFile) else os.stat(b))
    except (OSError, TypeError, ValueError):  # either is missing or not a path: not the same file
        return False


def _stdout_open() -> bool:
    return sys.stdout is not None and not sys.stdout.closed


def register(sub) -> None:
    p = sub.add_parser("ledger", help=summary("ledger"),
                       description="Show, budget and export the persistent privacy ledger. Every release of "
                                   "`privrank rank`, `top-k` and `aggregate` is recorded before its output is "
                                   "written.")
    ledger_sub = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    show = ledger_sub.add_parser("show", help="budgets, spending and releases")
    show.add_argument("file", nargs="?", help="only this data set (a comparisons or rankings file)")
    show.add_argument("--format", choices=("table", "json"), default="table")
    budget = ledger_sub.add_parser("set-budget", help="promise a total budget for a data set")
    budget.add_argument("file", help="the data set (a comparisons or rankings file)")
    budget.add_argument("--epsilon", type=float, required=True, help="total epsilon for the data set")
    budget.add_argument("--delta", type=float, default=0.0,
                        help="total delta (default 0: a pure budget, which refuses approximate-DP releases)")
    budget.add_argument("--unit", choices=sorted(BUDGET_UNITS),
                        help="what the budget protects: comparisons data: one user's answers (default) or one "
                             "comparison; rankings data: one ranking (default, one voter's ballot)")
    export = ledger_sub.add_parser("export", help="every recorded release as CSV or JSON")
    export.add_argument("--format", choices=("csv", "json"), default="csv")
    export.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    export.add_argument("--force", action="store_true", help="overwrite an existing --output file")
    for q in (show, budget, export):
        add_ledger_option(q)
        q.set_defaults(func=run_ledger)


def run_ledger(args) -> int:
    with Ledger(args.ledger) as ledger:
        if args.action == "set-budget":
            ledger.set_budget(fingerprint(args.file), _budget_unit(args), args.epsilon, args.delta, dataset=args.file)
            budget = [b for b in ledger.budgets() if b["dataset"] == args.file][-1]
            print(_budget_line(budget))
            return 0
        if args.action == "export":
            emit(_export(ledger.releases(), args.format), args.output, force=args.force)
            return 0
        fp = fingerprint(args.file) if args.file else None
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
    guarantee)."""
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
    unit = next(k for k, v in BUDGET_UNITS.items() if v == b["unit"])
    spent = "inf" if math.isinf(b["spent_epsilon"]) else f"{b['spent_epsilon']:.4g}"
    return (f"{b['dataset']} [{b['fingerprint'][:12]}] per {unit}: epsilon {b['epsilon']:g} total, "
            f"{spent} spent, {b['remaining_epsilon']:.4g} left"
            + (f"; delta {b['delta']:g} total, {b['spent_delta']:.4g} spent" if b["delta"] else ""))


def _export(releases, fmt) -> str:
    if fmt == "json":
        return dumps(releases) + "\n"
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(RELEASE_COLUMNS)
    for r in releases:
        writer.writerow(["" if r[c] is None else r[c] for c in RELEASE_COLUMNS])
    return buf.getvalue()
