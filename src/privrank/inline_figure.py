"""The figures privrank returns: a matplotlib ``Figure`` that shows itself in a notebook, made without pyplot.

A ``Figure`` made without pyplot belongs to no backend, so Jupyter shows it as a cell's value only
once ``%matplotlib inline`` (or pyplot) has registered matplotlib's own display of figures; in a
fresh kernel it showed ``<Figure size ...>``. :class:`InlineFigure` is a plain ``Figure``
(``savefig``, ``axes``, ``suptitle`` all as usual) with a ``_repr_png_``, which IPython asks for
when it shows a value: the figure shows itself inline in every notebook, and the notebook's backend
and pyplot are never touched (no ``matplotlib.use``, no figure manager).

Where the notebook has registered matplotlib's display (``%matplotlib inline``, or
``InlineBackend.figure_formats`` set to SVG or retina PNG), that display draws the figure, in
the formats it was told, and ``_repr_png_`` steps aside so that the figure is drawn once.
This module imports matplotlib: it is imported only when a plot is made.
"""
from __future__ import annotations

import io
import sys

from matplotlib.figure import Figure


class InlineFigure(Figure):
    """A :class:`matplotlib.figure.Figure` that a notebook shows inline as a PNG (see the module's words)."""

    def _repr_png_(self) -> bytes | None:
        if matplotlib_display_registered():
            return None
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()


def matplotlib_display_registered() -> bool:
    """True when the running IPython shows matplotlib figures itself (a formatter of some MIME type
    has a printer for ``Figure``, as ``%matplotlib inline`` registers)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    if shell is None:
        return False
    for formatter in shell.display_formatter.formatters.values():
        try:
            formatter.lookup_by_type(Figure)
        except (KeyError, AttributeError):
            continue
        return True
    return False
