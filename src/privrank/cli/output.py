"""Shared output of ranking commands: table, CSV, JSON or Parquet, to stdout or an atomic file.

Every format carries the guarantee. CSV and Parquet are plain tables that pandas, R's
``read.csv``, pyarrow and polars read with their defaults: the ranking's columns, then the
guarantee's columns (:data:`GUARANTEE_COLUMNS`, the same on every row) and the command's notes
(one column each, also the same on every row). Parquet also holds the JSON guarantee in its
schema's metadata under ``b"privrank.guarantee"``. JSON is strict: a number that is not finite
is ``null``, and a non-private output has ``"private": false`` and ``"epsilon": null``.
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import InputError
from ..files import STDOUT, Output, write_stdout, write_text_atomic
from ..guarantees import Guarantee

FORMATS = ("table", "csv", "json", "parquet")
#: the format of an ``--output`` file by its suffix, when ``--format`` is not given (else: table)
SUFFIX_FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}
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


def add_output_options(parser) -> None:
    parser.add_argument("--format", choices=FORMATS,
                        help="output format (default: by the suffix of --output, .csv, .json, .parquet or .pq, else "
                             "table); every format carries the guarantee (csv and parquet: as columns on every "
                             "row, read with pandas.read_csv or read.csv as they are)")
    parser.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --output file")


def output_format(fmt: str | None, path) -> str:
    """The output format: ``fmt`` if given, else the one :data:`SUFFIX_FORMATS` names for ``path``, else table."""
    if fmt is not None:
        return fmt
    return "table" if path in (None, STDOUT) else SUFFIX_FORMATS.get(Path(path).suffix.lower(), "table")


def _json_safe(x):
    """``x`` with every number that is not finite as None, and numpy scalars as Python ones."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return _json_safe(x.item())
    return x


def dumps(doc) -> str:
    """Strict JSON text of ``doc`` (:func:`_json_safe`: no NaN or Infinity token)."""
    return json.dumps(_json_safe(doc), indent=2, allow_nan=False)


def shown_guarantee(guarantee: Guarantee, args) -> Guarantee:
    """The guarantee to print: a run with ``--seed`` says it is research output, not a release."""
    return replace(guarantee, seeded=True) if getattr(args, "seed", None) is not None else guarantee


def guarantee_doc(guarantee: Guarantee) -> dict:
    """The guarantee of a JSON output: its fields (:meth:`~privrank.guarantees.Guarantee.to_dict`) and words."""
    return {**guarantee.to_dict(), "description": guarantee.describe(), "plain": guarantee.plain()}


def render(rows: list[dict], guarantee: Guarantee, fmt: str, extra: dict | None = None) -> str | bytes:
    """Render ranking rows (dicts with at least ``rank`` and ``item``) with their guarantee (Parquet: bytes)."""
    if fmt == "json":
        doc = {"ranking": rows, "guarantee": guarantee_doc(guarantee)}
        doc.update(extra or {})
        return dumps(doc) + "\n"
    if fmt in ("csv", "parquet"):
        columns = _table_columns(rows, guarantee, extra or {})
        return _csv(columns) if fmt == "csv" else _parquet(columns, guarantee)
    columns = list(rows[0].keys()) if rows else ["rank", "item"]
    cells = [[str(c) for c in columns]] + [[_shown(r[c]) for c in columns] for r in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append("")
    lines.append("guarantee: " + guarantee.describe())
    lines.append("in plain words: " + guarantee.plain())
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {_shown(v)}")
    return "\n".join(lines) + "\n"


def _table_columns(rows: list[dict], guarantee: Guarantee, extra: dict) -> dict[str, list]:
    """The columns of a CSV or Parquet output: the rows', the guarantee's and one per note (spaces as ``_``)."""
    names = list(rows[0].keys()) if rows else ["rank", "item"]
    columns = {c: [r[c] for r in rows] for c in names}
    fields = guarantee.to_dict()
    fields = {**{k: fields[k] for k in GUARANTEE_COLUMNS[:-2]}, "guarantee": guarantee.plain(),
              "guarantee_detail": guarantee.describe()}
    fields.update({k.replace(" ", "_"): v for k, v in extra.items()})
    columns.update({name: [value] * len(rows) for name, value in fields.items()})
    return columns


def _csv(columns: dict[str, list]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
    w.writerow(columns)
    for r in zip(*columns.values()):
        cells = [_csv_cell(v) for v in r]
        # csv leaves a bare CR unquoted when lines end in LF, and readers would end the row there
        (quoted if any("\r" in c for c in cells) else w).writerow(cells)
    return buf.getvalue()


def _parquet(columns: dict[str, list], guarantee: Guarantee) -> bytes:
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


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# Labels come from the data and must not forge output. Text lines show control characters (C0, DEL,
# C1, line/paragraph separators, bidi overrides) escaped, Python-style, so a label is one line and
# sends no terminal escape sequence. CSV and Parquet keep labels exact (CSV: quoted where needed), so
# that the data tools reading them get the labels of the data; JSON escapes everything.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _shown(v) -> str:
    """A cell for a line of text: control characters escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), _fmt_cell(v))


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
        return json.dumps(_json_safe(v), allow_nan=False)
    return str(v)


def emit(text: str | bytes, output, *, force: bool = False) -> None:
    """Write ``text`` (or bytes) to ``output``: a reserved :class:`~privrank.files.Output`, a path (``-``:
    standard output; an existing file only with ``force``), or None for standard output."""
    try:
        if output is None:
            if sys.stdout is None or sys.stdout.closed:
                raise InputError("standard output is closed: write to a file with --out FILE")
            write_stdout(text)
        elif isinstance(output, Output):
            if isinstance(text, bytes):
                output.write_bytes(text)
            else:
                output.write_text(text)
        else:
            write_text_atomic(output, text, force=force)
    except InputError as exc:
        from ..release import inside_charging

        if not inside_charging():
            raise
        # recorded before its noise was drawn, the release stays in the ledger: the safe side
        raise InputError(f"{exc}; the release is recorded in the ledger") from None
