"""Plots of score and rank intervals (matplotlib, an optional dependency).

Every plot is a :class:`matplotlib.figure.Figure` built without pyplot: it never chooses a backend
or registers with pyplot's figure manager, so the user's own ``plt.show()`` is unaffected. It is an
:class:`~privrank.inline_figure.InlineFigure`, which a notebook shows inline when it is a cell's
value, in a fresh kernel too (no ``%matplotlib inline`` needed); with a path it is also saved.
"""
from __future__ import annotations

import os
import textwrap
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from ..errors import InputError
from ..files import Output

if TYPE_CHECKING:
    from ..inline_figure import InlineFigure


class Intervals(Protocol):
    """What :func:`plot_intervals` takes: :class:`~privrank.inference.scores.ConfidenceIntervals` (its
    score intervals too) or :class:`~privrank.inference.aggregates.RankIntervals` (not imported here:
    both modules import this one)."""

    @property
    def items(self) -> tuple: ...
    @property
    def level(self) -> float: ...
    @property
    def rank_lower(self) -> np.ndarray: ...
    @property
    def rank_upper(self) -> np.ndarray: ...


def new_figure(path=None, *, force: bool = False, **options):
    """A new matplotlib figure (an :class:`~privrank.inline_figure.InlineFigure` made with ``**options``, shown
    inline by a notebook) and the :class:`~privrank.files.Output` it is saved to.

    ``path`` is None (the Output is None), a file name (checked, and reserved once matplotlib is
    known to be installed) or an Output already reserved.
    """
    out = None if path is None or isinstance(path, Output) else Output(path, force=force, plot=True)
    try:
        from ..inline_figure import InlineFigure
    except ImportError:
        raise InputError("plots need matplotlib: pip install matplotlib") from None
    if out is not None:
        out.reserve()
    return InlineFigure(**options), (path if isinstance(path, Output) else out)


def plot_intervals(ci: Intervals, path: str | os.PathLike[str] | None = None, *,
                   force: bool = False, title: str | None = None) -> InlineFigure:
    """Forest plot of the score intervals and, beside it, the rank intervals (best item on top).

    ``ci`` is :class:`ConfidenceIntervals`, or :class:`RankIntervals` (a consensus ranking has no
    scores: the rank intervals alone). Needs matplotlib (``pip install matplotlib``).

    Parameters
    ----------
    path : str, Path or None
        Also save the figure there, in the format of the file suffix; an existing file is
        refused unless ``force``.
    title : str, optional
        A title above the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Not registered with pyplot (the backend is left as it is); a notebook shows it inline when it
        is a cell's value, with or without ``%matplotlib inline``
        (:class:`~privrank.inline_figure.InlineFigure`).

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> ci = pr.confidence_intervals(pr.fit_btl(pr.debiased_randomized_response(comps, epsilon=1.0, rng=1)))
    >>> fig = pr.plot_intervals(ci, title="BTL scores")
    >>> from matplotlib.figure import Figure
    >>> isinstance(fig, Figure), len(fig.axes), fig._repr_png_()[1:4]  # a notebook shows the PNG
    (True, 2, b'PNG')
    """
    m = len(ci.items)
    scores = hasattr(ci, "score_label")  # score intervals too (ConfidenceIntervals), else ranks only
    shown: Any = ci  # the attributes of either kind
    fig, out = new_figure(path, force=force, figsize=_figsize(m, scores), layout="constrained")
    order = np.lexsort((np.arange(m), -shown.estimate)) if scores else shown.order
    y = np.arange(m)
    labels = [str(ci.items[k]) for k in order]
    if scores:
        left, right = fig.subplots(1, 2, sharey=True)
        est = shown.estimate[order]
        left.errorbar(est, y, xerr=[est - shown.lower[order], shown.upper[order] - est], fmt="o", ms=3, capsize=2)
        left.set_yticks(y, labels, fontsize=8)
        left.invert_yaxis()
        left.set_xlabel(shown.score_label)
        left.set_title(f"{100 * ci.level:g}% score intervals")
    else:
        right = fig.subplots()
        right.set_yticks(y, labels, fontsize=8)
        right.invert_yaxis()
    right.hlines(y, ci.rank_lower[order], ci.rank_upper[order], lw=3, alpha=0.6)
    right.plot(np.arange(1, m + 1), y, "k|", ms=8)
    right.set_xlabel("rank")
    right.set_title(("" if scores else f"{100 * ci.level:g}% ") + "rank intervals (| = released rank)")
    if title:  # above the panels' own titles (constrained layout keeps them apart), wrapped to the width
        fig.suptitle(textwrap.fill(title, 100 if scores else 60), fontsize=10)
    if out is not None:
        out.save_figure(fig)
    return fig


def _figsize(m: int, scores: bool) -> tuple:
    """Inches of the plot of ``m`` items: two panels (scores, ranks) or the rank panel alone."""
    return (10 if scores else 6, 1.5 + 0.28 * m)


#: bytes of a plot file beside what its pixels and labels take
_PLOT_FIXED_BYTES = 1 << 20


def plot_bytes(m: int, longest: int) -> int:
    """A generous bound on the bytes of the file :func:`plot_intervals` saves for ``m`` items whose
    longest label has ``longest`` bytes, in any format: four bytes for each of its pixels at the dpi
    matplotlib saves with (an uncompressed TIFF) and 256 per byte of label per item (an SVG or
    PostScript file draws each glyph as a path: measured, under 90)."""
    from matplotlib import rcParams

    dpi = rcParams["savefig.dpi"]
    dpi = rcParams["figure.dpi"] if dpi == "figure" else dpi
    width, height = _figsize(m, True)
    return _PLOT_FIXED_BYTES + int(4 * width * height * dpi * dpi) + 256 * m * longest
