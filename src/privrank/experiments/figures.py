"""Figures of a reproduction: panels of mean curves with 95% bands, drawn as PNG (runner docstring)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError
from .claims import Results, Sel, Z95, mean_se

MAX_TICK_LABELS = 7


@dataclass(frozen=True)
class Curve:
    """Mean of ``metric`` over the cells matching ``where``, against the panel's x setting."""

    label: str
    metric: str
    where: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One plot: its curves against the setting ``x`` on a log axis (``logy``: log-log)."""

    title: str
    curves: tuple
    x: str = "L"
    ylabel: str = ""
    logy: bool = False


@dataclass(frozen=True)
class Figure:
    """One PNG ``<id>.png`` of panels (three per row) drawn from one experiment."""

    id: str
    title: str
    experiment: str
    panels: tuple
    caption: str = ""


def plot_figure(fig: Figure, results: Results, path: Path) -> None:
    """Draw ``fig`` to ``path`` (PNG). Raises ImportError without matplotlib."""
    from matplotlib.figure import Figure as MplFigure

    cells = results.cells[fig.experiment]
    ncol = min(3, len(fig.panels))
    nrow = math.ceil(len(fig.panels) / ncol)
    height = 2.9 * nrow + 0.5
    mfig = MplFigure(figsize=(3.6 * ncol, height))
    mfig.subplots_adjust(left=0.07, right=0.98, bottom=0.62 / height, top=1 - 0.55 / height,
                         wspace=0.28, hspace=0.45)
    axes = mfig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, panel in zip(axes, fig.panels):
        for curve in panel.curves:
            sel = Sel(fig.experiment, curve.metric, **curve.where)
            pts = sorted((c.cell[panel.x], *mean_se(c.values[curve.metric])) for c in cells
                         if sel.match(c.cell) and curve.metric in c.values)
            if len({p[0] for p in pts}) != len(pts):
                raise InputError(f"figure {fig.id}: curve {curve.label!r} matches several cells per {panel.x}")
            x = np.array([p[0] for p in pts], dtype=float)
            y = np.array([p[1] for p in pts])
            half = Z95 * np.array([p[2] for p in pts])
            (line,) = ax.plot(x, y, marker="o", ms=3, lw=1.2, label=curve.label)
            ax.fill_between(x, y - half, y + half, color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xscale("log")
        if panel.logy:
            ax.set_yscale("log")
        ticks = sorted({c.cell[panel.x] for c in cells})
        step = math.ceil(len(ticks) / MAX_TICK_LABELS)  # a tick at every setting, a label at every step-th
        ax.set_xticks(ticks, [f"{t:g}" if k % step == 0 else "" for k, t in enumerate(ticks)])
        ax.set_xticks([], minor=True)
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(panel.x, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, frameon=False)
    for ax in axes[len(fig.panels):]:
        ax.set_visible(False)
    mfig.suptitle(fig.title, fontsize=10)
    mfig.savefig(path, dpi=80)
