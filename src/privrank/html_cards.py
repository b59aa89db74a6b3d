"""How every object a user holds shows itself in a notebook: one HTML card, the same shape for every type.

A card is a title (the type's name and a one-line summary), a few facts (public parameters and
sizes: never raw preferences), optionally a table (a ranking's rows, an accountant's spends) and
the guarantee in plain words. A class takes part by deriving from :class:`Shown` and saying what
its card holds in ``_card()``; the HTML is written here alone.

Everything is escaped (item labels and notes are user data) and bounded whatever the size of the
result: a table shows its first :data:`HEAD_ROWS` and its last :data:`TAIL_ROWS` rows around one
ellipsis row, a cell at most :data:`SHOWN_LABEL` characters, a fact at most :data:`SHOWN_FACT`.
This module imports nothing from privrank, so that every module can derive from :class:`Shown`.
"""
from __future__ import annotations

import html
import numbers

#: the first rows a table shows
HEAD_ROWS = 10
#: the last rows a table shows, after an ellipsis row, when it has more than HEAD_ROWS + TAIL_ROWS
TAIL_ROWS = 3
#: longest item label shown (labels can be long answers or titles)
SHOWN_LABEL = 40
#: longest fact or summary shown (notes and descriptions are free text)
SHOWN_FACT = 600


def clip(x, limit: int = SHOWN_LABEL) -> str:
    """``str(x)``, cut to ``limit`` characters with "..." at the end."""
    text = str(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cell(x) -> str:
    """A table cell's text: a real number to 4 significant digits, anything else clipped."""
    if isinstance(x, numbers.Real) and not isinstance(x, (numbers.Integral, bool)):
        return f"{float(x):.4g}"
    return clip(x)


def shown_rows(n: int) -> tuple[list[int], int]:
    """The indices of the rows a table of ``n`` rows shows, and where the ellipsis row goes (-1: none)."""
    if n <= HEAD_ROWS + TAIL_ROWS:
        return list(range(n)), -1
    return list(range(HEAD_ROWS)) + list(range(n - TAIL_ROWS, n)), HEAD_ROWS


def table(rows, more: str = "") -> str:
    """An HTML table of a sequence of dicts (the same keys in each; anything with ``len`` and
    indexing by position), bounded as :func:`shown_rows` says; ``more`` says where to find the rest."""
    n = len(rows)
    if not n:
        return ""
    picked, gap = shown_rows(n)
    first = rows[0]
    columns = list(first)
    head = "".join(f"<th>{html.escape(clip(c))}</th>" for c in columns)
    body = []
    for k, index in enumerate(picked):
        if k == gap:
            hidden = n - HEAD_ROWS - TAIL_ROWS
            hint = f" ({html.escape(more)})" if more else ""
            body.append(f'<tr><td colspan="{len(columns)}" style="text-align:center">&#8942; {hidden:,} more '
                        f"row{'' if hidden == 1 else 's'}{hint}</td></tr>")
        row = first if index == 0 else rows[index]
        body.append("<tr>" + "".join(f"<td>{html.escape(cell(row[c]))}</td>" for c in columns) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def card(kind: str, summary: str = "", *, facts=(), rows=(), more: str = "", guarantee=None) -> str:
    """The HTML card: ``kind`` (the type's name) and ``summary`` in bold, ``facts`` (pairs of name
    and value; a value of None is left out) as a list, the table of ``rows``, and the guarantee's
    plain sentence and its technical words (anything with ``plain()`` and ``describe()``)."""
    title = f"<b>{html.escape(clip(kind))}</b>" + (f", {html.escape(clip(summary, SHOWN_FACT))}" if summary else "")
    listed = "".join(f"<li>{html.escape(clip(name))}: {html.escape(clip(value, SHOWN_FACT))}</li>"
                     for name, value in facts if value is not None)
    words = "" if guarantee is None else (f"<p><b>Guarantee:</b> {html.escape(guarantee.plain())}</p>"
                                          f"<p><small>{html.escape(guarantee.describe())}</small></p>")
    return (f"<div><p>{title}</p>" + (f"<ul>{listed}</ul>" if listed else "") + table(rows, more) + words
            + "</div>")


class Rows:
    """``n`` table rows made on demand by ``row(k)``: a card of a large result makes only the rows it shows."""

    def __init__(self, n: int, row):
        self.n, self.row = n, row

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, k: int) -> dict:
        return self.row(k)


class Shown:
    """Mixin of every object a user holds: a notebook shows it as the HTML :func:`card` of ``_card()``,
    a dict of :func:`card`'s keyword arguments (``summary``, ``facts``, ``rows``, ``more``, ``guarantee``)."""

    def _card(self) -> dict:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _repr_html_(self) -> str:
        return card(type(self).__name__, **self._card())
