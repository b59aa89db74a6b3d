"""The context every release command (``privrank rank``, ``top-k``, ``aggregate``) runs in.

A release command computes its output inside :func:`ledger_release`: the outputs are checked
first, then every private function called inside charges the persistent ledger
(:mod:`privrank.ledger`) *before it draws its noise* (:mod:`privrank.release`), or is refused
when it would exceed the data set's budget, in which case nothing is drawn or written. A
non-private output is recorded when the command reports it (:meth:`LedgerRelease.done`).

No charge without an output: everything that can be foreseen is refused before the charge (an
output that cannot be written or has no room, a file without records), and from the moment a
spend is recorded until the output is in place (renamed over its target, or written to standard
output) SIGINT and SIGTERM are held (:class:`HeldSignals`), then honoured: the command exits with
130 or 143 with its output complete.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager

from ..data.parts import DataParts
from ..data.pinned import FileChangedError, PinnedFile
from ..errors import BudgetExceededError, InputError
from ..files import STDOUT, Output
from ..journal import journal_dir
from ..ledger import Ledger, identify, ledger_files
from ..release import charging
from .output import longest_label, output_format, ranking_bytes


class HeldSignals:
    """SIGINT and SIGTERM held from :meth:`hold` until the block ends, then raised again, to the
    handlers they had (the command line's end the command with 130 or 143).

    Only the main thread receives signals; elsewhere, and for a signal that is ignored, nothing is held.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self._previous = {}
        self.received = []

    def __enter__(self):
        return self

    def hold(self) -> None:
        if self._previous or threading.current_thread() is not threading.main_thread():
            return
        for signum in self.SIGNALS:
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                self._previous[signum] = signal.signal(signum, self._receive)

    def _receive(self, signum, frame) -> None:
        if not self.received:
            try:  # a plain write: the signal may have come in the middle of another write to stderr
                os.write(sys.stderr.fileno(), b"privrank: the release is charged: its output is written before "
                                              b"privrank stops\n")
            except (AttributeError, OSError, ValueError):
                pass
        self.received.append(signum)

    def __exit__(self, *exc) -> None:
        previous, self._previous = self._previous, {}
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if self.received:
            signal.raise_signal(self.received[0])


class LedgerRelease:
    """The release a command runs inside :func:`ledger_release`; :meth:`done` closes its record.

    ``output`` and ``plot`` are the command's reserved outputs (:class:`~privrank.files.Output`,
    None for standard output or no plot).
    """

    def __init__(self, ledger, payer, key, identity, args, output, plot):
        self._ledger, self._payer, self._fp, self._identity = ledger, payer, key, identity
        self.output, self.plot = output, plot
        self._meta = {"dataset": str(args.file), "output": _names(output, plot), "command": args.command,
                      "new_data": getattr(args, "new_data", None)}

    def expect(self, labels) -> None:
        """Give the outputs room for a ranking of ``labels`` and its plot (:meth:`reserve`)."""
        plot = 0
        if self.plot is not None:
            try:
                from ..inference.plot import plot_bytes
                plot = plot_bytes(len(labels), longest_label(labels))
            except ImportError:
                raise InputError("plots need matplotlib: pip install matplotlib (nothing was released)") from None
        self.reserve(ranking_bytes(labels), plot)

    def reserve(self, output: int, plot: int = 0) -> None:
        """Give the output room for ``output`` bytes and the plot for ``plot`` (a bound computed from
        public parameters): a file system without the room is refused here. Only before the charge."""
        if self._payer.charged:
            raise RuntimeError("an output's room is reserved before the release is charged")
        for out, size in ((self.output, output), (self.plot, plot)):
            if out is not None:
                try:
                    out.reserve(size)
                except InputError as exc:
                    raise InputError(f"{exc} (nothing was released)") from None

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
        the respondents' devices; debiasing them is post-processing and spends nothing. Reports
        whose records have a budget are refused: a budget is set on raw answers, and raw answers
        given an epsilon column would be released as they are. The records are known as the
        ledger knows any data set (:meth:`~privrank.ledger.Ledger.key`): labels normalised,
        items and users renamed, and a near-duplicate of budgeted data refused before this.
        Any other private output that nothing charged is a bug.
        """
        if guarantee.private and reports and not self._payer.charged and self._ledger.budgets(self._fp):
            raise BudgetExceededError("refused: these records have a privacy budget, so they are raw answers, not "
                                      "randomized reports (randomized reports need no budget): debiased as reports "
                                      "by their epsilon column, they would be released without noise. Drop the "
                                      "epsilon column, then rank them with --epsilon or randomize them (privrank "
                                      "randomize)")
        if guarantee.private and (self._payer.charged or reports):
            return
        if guarantee.private:
            raise RuntimeError("a private output was computed without charging the ledger")
        self._payer.before()
        self._ledger.record(self._identity, guarantee, **self._meta)


def _names(output, plot) -> str:
    return ", ".join(str(o) for o in (output, plot) if o is not None) or "<stdout>"


@contextmanager
def ledger_release(args, data):
    """Reserve the outputs, then charge every release computed inside to the ledger before it draws.

    ``data`` is what the ledger fingerprints: the comparisons or rankings in memory, or the
    file. Yields a :class:`LedgerRelease`: call its ``done(guarantee)`` with the output's
    guarantee, then write its ``output`` and ``plot`` inside the block. Every check an output can
    have is made before anything is charged (:meth:`~privrank.files.Output.reserve`); if the
    command fails inside the block, the outputs it reserved and did not write are removed. From the
    charge to the end of the block, SIGINT and SIGTERM are held (:class:`HeldSignals`).
    """
    path, plot = getattr(args, "output", None), getattr(args, "plot", None)
    if hasattr(args, "format"):
        args.format = output_format(args.format, path)
    refuse_overwriting(args, path, plot)
    output = None if path in (None, STDOUT) else Output(path, force=args.force)
    plot = None if plot is None else Output(plot, force=args.force, plot=True)
    if output is None and not _stdout_open():
        raise InputError("standard output is closed: write the release to a file with --out FILE "
                         "(nothing was released)")
    if output is None and getattr(args, "format", None) == "parquet" and (
            getattr(sys.stdout, "buffer", None) is None or sys.stdout.isatty()):
        raise InputError("Parquet is binary, not for a terminal or a text-only stream: write it to a file with "
                         "--out FILE (nothing was released)")
    reserved = []
    try:
        for out in (output, plot):
            if out is not None:
                try:
                    out.reserve()
                except InputError as exc:
                    raise InputError(f"{exc} (nothing was released)") from None
                reserved.append(out)
        identity = identify(data)  # one pass over the records
        args.fingerprint = identity.labels  # the dask engine checks its workers' records against it
        new_data = getattr(args, "new_data", None)
        with HeldSignals() as held, Ledger(args.ledger) as ledger:
            key = ledger.key(identity, new_data=new_data)  # a near-duplicate is refused here, before anything
            with charging(ledger, fingerprint=identity, dataset=str(args.file), output=_names(output, plot),
                          command=args.command, new_data=new_data, before=held.hold) as payer:
                release = LedgerRelease(ledger, payer, key, identity, args, output, plot)
                labels = _labels(args, data)
                if labels is not None:
                    release.expect(labels)
                try:
                    yield release
                except FileChangedError:
                    raise FileChangedError(f"{args.file} changed while it was being released: nothing was released"
                                           + ("; the spend stays recorded in the ledger" if payer.charged else
                                              " and nothing was spent")) from None
    except BaseException:
        for out in reserved:
            out.abandon()
        raise


def _labels(args, data):
    """The item labels of the release when they are known before it is charged: those of the data
    in memory, or the declared item list (``--items``); else None."""
    labels = getattr(data, "items", None)
    if labels is None and getattr(args, "items", None) is not None:
        from ..data.io import read_item_list

        labels = read_item_list(args.items)
    return labels


def refuse_overwriting(args, *targets) -> None:
    """Refuse, before anything is charged, output ``targets`` (paths; None or ``-`` for none or standard
    output) that would overwrite a file the command reads or keeps: the input data, the item list
    (``--items``), the privacy ledger with SQLite's files beside it and its journal, or one another."""
    paths = [t for t in targets if t not in (None, STDOUT)]
    kept = [(getattr(args, "file", None), "the input data"), (getattr(args, "items", None), "the item list (--items)")]
    kept += [(f, "the privacy ledger") for f in ledger_files(getattr(args, "ledger", None))]
    journal = os.path.join(os.path.realpath(journal_dir()), "")
    for k, target in enumerate(paths):
        what = next((what for f, what in kept if f is not None and _same_file(target, f)), None)
        if what is None and os.path.realpath(target).startswith(journal):
            what = "the privacy ledger's journal"
        if what:
            raise InputError(f"the output would overwrite {what}: write it to another file (nothing was released)")
        if any(_same_file(target, other) for other in paths[:k]):
            raise InputError(f"the output and the plot are the same file ({target}): give each its own (nothing was "
                             "released)")


def _same_file(a, b) -> bool:
    """Whether the path ``a`` and the path (or pinned file) ``b`` name one file: the same file now, or
    the same path once symbolic links are resolved."""
    if isinstance(b, DataParts):  # a data set of many files: any of them
        return any(_same_file(a, part) for part in b.parts)
    try:
        return os.path.samestat(os.stat(a), b.stat() if isinstance(b, PinnedFile) else os.stat(b))
    except (OSError, TypeError, ValueError):  # either is missing or not a path
        pass
    return not isinstance(b, PinnedFile) and os.path.realpath(a) == os.path.realpath(b)


def _stdout_open() -> bool:
    return sys.stdout is not None and not sys.stdout.closed
