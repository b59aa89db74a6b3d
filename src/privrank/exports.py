"""Results as files other tools read as they are: CSV, Parquet and strict JSON, each with the guarantee.

CSV and Parquet are plain tables that pandas, R's ``read.csv``, pyarrow and polars read with their
defaults: the ranking's columns, then the guarantee's columns (:data:`GUARANTEE_COLUMNS`, the same
on every row) and any notes (one column each, also the same on every row). Parquet also holds the
JSON guarantee in its schema's metadata under :data:`PARQUET_KEY`. JSON is strict: a number that
is not finite is ``null``, and a non-private result has ``"private": false`` and ``"epsilon": null``.
The command line writes its outputs with these, and every result writes itself with them
(``to_csv``, ``to_parquet``).
"""
from __future__ import annotations

import csv
import io
import json
import math

from .guarantees import Guarantee

#: the guarantee's columns of a CSV or Parquet output, after the ranking's: ``private`` (TRUE or
#: FALSE), ``epsilon``, ``delta`` and ``epsilon_per_user`` (empty when not private or not stated),
#: ``model``, ``unit``, ``mechanism``, ``seeded``, ``guarantee`` (the plain-words sentence) and
#: ``guarantee_detail`` (the exact statement, as the table's ``guarantee:`` line)
GUARANTEE_COLUMNS = ("private", "epsilon", "delta", "epsilon_per_user", "model", "unit", "mechanism", "seeded",
                     "guarantee", "guarantee_detail")
#: guarantee columns that Parquet types as numbers, also when every row's is empty
_NUMBERS = ("epsilon", "delta", "epsilon_per_user")
#: the key of the guarantee (JSON) in a Parquet output's schema metadata
PARQUET_KEY = b"privrank.guarantee"


def json_safe(x):
    """``x`` with every number that is not finite as None, and numpy scalars as Python ones."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return json_safe(x.item())
    return x


def dumps(doc) -> str:
    """Strict JSON text of ``doc`` (:func:`json_safe`: no NaN or Infinity token)."""
    return json.dumps(json_safe(doc), indent=2, allow_nan=False)


def guarantee_doc(guarantee: Guarantee) -> dict:
    """The guarantee of a JSON output: its fields (:meth:`~privrank.guarantees.Guarantee.to_dict`) and words."""
    return {**guarantee.to_dict(), "description": guarantee.describe(), "plain": guarantee.plain()}


def table_columns(rows: list[dict], guarantee: Guarantee, extra: dict) -> dict[str, list]:
    """The columns of a CSV or Parquet output: the rows', the guarantee's and one per note (spaces as ``_``)."""
    names = list(rows[0].keys()) if rows else ["rank", "item"]
    columns = {c: [r[c] for r in rows] for c in names}
    fields = guarantee.to_dict()
    fields = {**{k: fields[k] for k in GUARANTEE_COLUMNS[:-2]}, "guarantee": guarantee.plain(),
              "guarantee_detail": guarantee.describe()}
    fields.update({k.replace(" ", "_"): v for k, v in extra.items()})
    columns.update({name: [value] * len(rows) for name, value in fields.items()})
    return columns


def csv_text(columns: dict[str, list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow(columns)
    for r in zip(*columns.values()):
        cells = [_csv_cell(v) for v in r]
        # csv leaves a bare CR unquoted when lines end in LF, and readers would end the row there
        (quoted if any("\r" in c for c in cells) else w).writerow(cells)
    return buf.getvalue()


def parquet_bytes(columns: dict[str, list], guarantee: Guarantee) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrays = {}
    for name, values in columns.items():
        values = [v.item() if hasattr(v, "item") and not isinstance(v, (str, bytes)) else v for v in values]
        try:
            arrays[name] = pa.array(values, pa.float64() if name in _NUMBERS else None)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError):  # labels of mixed types: as text
            arrays[name] = pa.array([None if v is None else str(v) for v in values], pa.string())
    table = pa.table(arrays).replace_schema_metadata({PARQUET_KEY: dumps(guarantee_doc(guarantee)).encode()})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _csv_cell(v) -> str:
    """A CSV cell as pandas and R read it by default: empty for missing, ``TRUE``/``FALSE`` for booleans,
    a number with every digit, a list or mapping as JSON text."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, float):  # every digit (the shortest text that reads back as the same number)
        return repr(float(v))
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(json_safe(v), allow_nan=False)
    return str(v)
