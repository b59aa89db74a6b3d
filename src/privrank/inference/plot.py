"""Plots of score and rank intervals (matplotlib, an optional dependency)."""
from __future__ import annotations

import textwrap

import numpy as np

from ..errors import InputError
from ..files import Output
from .scores import BTL_TARGET, ConfidenceIntervals


def pyplot_for(path, force: bool):
    """matplotlib's pyplot (non-interactive) and the :class:`~privrank.files.Output` of the plot.

    ``path`` is a file name (checked and reserved here) or an Output already reserved.
    """
    out = path if isinstance(path, Output) else Output(path, force=force, plot=True)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("plots need matplotlib: pip install matplotlib") from None
    if not isinstance(path, Output):
        out.reserve()
    return plt, out


def plot_intervals(ci, path, *, force: bool = False, title: str | None = None) -> None:
    """Forest plot of the score intervals and, beside it, the rank intervals (best item on top).

    ``ci`` is :class:`ConfidenceIntervals`, or :class:`RankIntervals` (a consensus ranking has no
    scores: the rank intervals alone). Needs matplotlib (``pip install matplotlib``); the
    format follows the file suffix.
    """
    plt, out = pyplot_for(path, force)
    m = len(ci.items)
    scores = isinstance(ci, ConfidenceIntervals)
    order = np.lexsort((np.arange(m), -ci.estimate)) if scores else ci.order
    y = np.arange(m)
    labels = [str(ci.items[k]) for k in order]
    if scores:
        fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=(10, 1.5 + 0.28 * m), layout="constrained")
        est = ci.estimate[order]
        left.errorbar(est, y, xerr=[est - ci.lower[order], ci.upper[order] - est], fmt="o", ms=3, capsize=2)
        left.set_yticks(y, labels, fontsize=8)
        left.invert_yaxis()
        left.set_xlabel("score" if ci.target == BTL_TARGET else "win count")
        left.set_title(f"{100 * ci.level:g}% score intervals")
    else:
        fig, right = plt.subplots(figsize=(6, 1.5 + 0.28 * m), layout="constrained")
        right.set_yticks(y, labels, fontsize=8)
        right.invert_yaxis()
    right.hlines(y, ci.rank_lower[order], ci.rank_upper[order], lw=3, alpha=0.6)
    right.plot(np.arange(1, m + 1), y, "k|", ms=8)
    right.set_xlabel("rank")
    right.set_title(("" if scores else f"{100 * ci.level:g}% ") + "rank intervals (| = released rank)")
    if title:  # above the panels' own titles (constrained layout keeps them apart), wrapped to the width
        fig.suptitle(textwrap.fill(title, 100 if scores else 60), fontsize=10)
    try:
        out.save_figure(fig)
    finally:
        plt.close(fig)
