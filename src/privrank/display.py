"""How results show themselves: a short ``repr``, an HTML table for notebooks, a pandas DataFrame.

Every result a user holds (a fitted or private ranking, an aggregate, intervals) shows the
same three things: what it is, its first items in ranking order, and its guarantee in plain
words. The repr stays under ~1,000 characters whatever the number of items; the full table is
``to_pandas()`` (pandas is imported only then).
"""
from __future__ import annotations

import html

from .errors import InputError

#: rows shown by a repr and by a notebook's HTML table
SHOWN_ROWS = 10
#: longest item label shown in a repr (labels can be long answers or titles)
SHOWN_LABEL = 40


def _label(x) -> str:
    text = str(x)
    return text if len(text) <= SHOWN_LABEL else text[: SHOWN_LABEL - 3] + "..."


def short_repr(kind: str, rows: list[dict], n_items: int, guarantee) -> str:
    """``kind(m items; top: a, b, c ...; <guarantee in plain words>)``."""
    top = ", ".join(_label(r["item"]) for r in rows[:5]) + (", ..." if n_items > 5 else "")
    plain = guarantee.plain() if guarantee is not None else ""
    text = f"{kind}({n_items} items; top: {top}"
    text += f"; {plain}" if plain else ""
    return (text if len(text) <= 990 else text[:987] + "...") + ")"


def html_table(kind: str, rows: list[dict], n_items: int, guarantee) -> str:
    """An HTML table of the first :data:`SHOWN_ROWS` rows, with the guarantee under it."""
    if not rows:
        return f"<p>{html.escape(kind)}: no items</p>"
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r[c]))}</td>" for c in columns) + "</tr>"
                   for r in rows[:SHOWN_ROWS])
    more = f"<p>... {n_items - SHOWN_ROWS} more items (<code>.to_pandas()</code>)</p>" if n_items > SHOWN_ROWS else ""
    words = "" if guarantee is None else (f"<p><b>Guarantee:</b> {html.escape(guarantee.plain())}</p>"
                                          f"<p><small>{html.escape(guarantee.describe())}</small></p>")
    return (f"<div><p><b>{html.escape(kind)}</b>, {n_items} items</p><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>{more}{words}</div>")


def _cell(x) -> str:
    if isinstance(x, float):
        return f"{x:.4g}"
    return _label(x)


def data_frame(rows: list[dict], guarantee):
    """The rows as a pandas DataFrame; the guarantee in ``attrs`` (``guarantee``: its words,
    ``guarantee_plain``: the plain sentence, ``guarantee_fields``: its parameters)."""
    try:
        import pandas as pd
    except ImportError:
        raise InputError("to_pandas needs pandas: pip install pandas") from None
    frame = pd.DataFrame(rows)
    if guarantee is not None:
        frame.attrs["guarantee"] = guarantee.describe()
        frame.attrs["guarantee_plain"] = guarantee.plain()
        frame.attrs["guarantee_fields"] = guarantee.to_dict()
    return frame


class Displayed:
    """Mixin of a result with ``_rows()`` (ranking rows, best first), ``items`` and ``guarantee``:
    a short repr, an HTML table for notebooks, and ``to_pandas()``."""

    def _rows(self) -> list[dict]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return short_repr(type(self).__name__, self._rows(), len(self.items), self.guarantee)

    def _repr_html_(self) -> str:
        return html_table(type(self).__name__, self._rows(), len(self.items), self.guarantee)

    def to_pandas(self):
        """Every item's row, best first, as a pandas DataFrame (the guarantee in ``.attrs``)."""
        return data_frame(self._rows(), self.guarantee)

    def to_csv(self, path=None) -> str | None:
        """Every item's row, best first, as the CSV ``privrank rank --format csv`` writes: the guarantee
        in columns on every row (:data:`privrank.exports.GUARANTEE_COLUMNS`), which ``pandas.read_csv``
        and R's ``read.csv`` read with their defaults. Written to ``path`` (replaced if it exists), or
        returned as text when ``path`` is None."""
        from .exports import csv_text, table_columns

        text = csv_text(table_columns(self._rows(), self._export_guarantee(), {}))
        if path is None:
            return text
        with open(path, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
        return None

    def to_parquet(self, path) -> None:
        """:meth:`to_csv` as a Parquet file at ``path``, the guarantee also as JSON in its schema's metadata
        (key ``privrank.guarantee``)."""
        from .exports import parquet_bytes, table_columns

        guarantee = self._export_guarantee()
        with open(path, "wb") as fh:
            fh.write(parquet_bytes(table_columns(self._rows(), guarantee, {}), guarantee))

    def _export_guarantee(self):
        if self.guarantee is None:
            raise InputError(f"this {type(self).__name__} states no guarantee to export with its rows")
        return self.guarantee
