"""How ranking results show themselves: a short ``repr``, an HTML card for notebooks, a pandas DataFrame.

Every ranking result a user holds (a fitted or private ranking, an aggregate, intervals) shows
the same three things: what it is, its items in ranking order, and its guarantee in plain words.
The repr stays under ~1,000 characters whatever the number of items, and so does the notebook's
card (its first and last rows, :mod:`privrank.html_cards`); the full table is ``to_pandas()``
(pandas is imported only then).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import InputError
from .html_cards import SHOWN_LABEL, Shown, clip

if TYPE_CHECKING:
    from .guarantees import Guarantee


def _label(x) -> str:
    return clip(x, SHOWN_LABEL)


def short_repr(kind: str, rows: list[dict], n_items: int, guarantee) -> str:
    """``kind(m items; top: a, b, c ...; <guarantee in plain words>)``."""
    top = ", ".join(_label(r["item"]) for r in rows[:5]) + (", ..." if n_items > 5 else "")
    plain = guarantee.plain() if guarantee is not None else ""
    text = f"{kind}({n_items} items; top: {top}"
    text += f"; {plain}" if plain else ""
    return (text if len(text) <= 990 else text[:987] + "...") + ")"


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


class Displayed(Shown):
    """Mixin of a result with ``_rows()`` (ranking rows, best first), ``items`` and ``guarantee``:
    a short repr, an HTML card for notebooks (its first and last rows: :mod:`privrank.html_cards`),
    and ``to_pandas()``."""

    items: tuple  # the subclass's fields (the mixin declares what it reads)
    guarantee: Guarantee | None

    def _rows(self) -> list[dict]:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __repr__(self) -> str:
        return short_repr(type(self).__name__, self._rows(), len(self.items), self.guarantee)

    def _card(self) -> dict:
        n = len(self.items)
        return {"summary": f"{n} item{'' if n == 1 else 's'}", "rows": self._rows(),
                "more": "all of them: .to_pandas()", "guarantee": self.guarantee}

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
