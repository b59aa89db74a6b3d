"""Shared output of ranking commands: table, CSV, JSON or Parquet, to stdout or an atomic file.

Every format carries the guarantee. CSV, Parquet and JSON are written as :mod:`privrank.exports`
writes every result (the guarantee as columns, in Parquet's metadata, strict JSON); the table
ends with the guarantee's two lines.
"""
from __future__ import annotations

import re
import sys
from dataclasses import replace
from pathlib import Path

from ..errors import InputError
from ..files import STDOUT, Output, write_stdout, write_text_atomic
from ..exports import csv_text, dumps, guarantee_doc, parquet_bytes, table_columns
from ..guarantees import Guarantee

FORMATS = ("table", "csv", "json", "parquet")
#: the format of an ``--output`` file by its suffix, when ``--format`` is not given (else: table)
SUFFIX_FORMATS = {".csv": "csv", ".json": "json", ".parquet": "parquet", ".pq": "parquet"}


def add_output_options(parser) -> None:
    """The "output" group of ``parser``: ``--format``, ``--output`` and ``--force``."""
    group = parser.add_argument_group("output")
    group.add_argument("--format", choices=FORMATS,
                       help="output format (default: by the suffix of --output, .csv, .json, .parquet or .pq, else "
                            "table); every format carries the guarantee (csv and parquet: as columns on every "
                            "row, read with pandas.read_csv or read.csv as they are)")
    group.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    group.add_argument("--force", action="store_true", help="overwrite an existing --output file")


def output_format(fmt: str | None, path) -> str:
    """The output format: ``fmt`` if given, else the one :data:`SUFFIX_FORMATS` names for ``path``, else table."""
    if fmt is not None:
        return fmt
    return "table" if path in (None, STDOUT) else SUFFIX_FORMATS.get(Path(path).suffix.lower(), "table")


def shown_guarantee(guarantee: Guarantee, args) -> Guarantee:
    """The guarantee to print: a run with ``--seed`` says it is research output, not a release."""
    return replace(guarantee, seeded=True) if getattr(args, "seed", None) is not None else guarantee


def render(rows: list[dict], guarantee: Guarantee, fmt: str, extra: dict | None = None) -> str | bytes:
    """Render ranking rows (dicts with at least ``rank`` and ``item``) with their guarantee (Parquet: bytes)."""
    if fmt == "json":
        doc = {"ranking": rows, "guarantee": guarantee_doc(guarantee)}
        doc.update(extra or {})
        return dumps(doc) + "\n"
    if fmt in ("csv", "parquet"):
        columns = table_columns(rows, guarantee, extra or {})
        return csv_text(columns) if fmt == "csv" else parquet_bytes(columns, guarantee)
    names = list(rows[0].keys()) if rows else ["rank", "item"]
    cells = [[str(c) for c in names]] + [[_shown(r[c]) for c in names] for r in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(names))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append("")
    lines.append("guarantee: " + guarantee.describe())
    lines.append("in plain words: " + guarantee.plain())
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {_shown(v)}")
    return "\n".join(lines) + "\n"


#: a bound on the bytes of a ranking's output beside its rows (header, guarantee, notes, Parquet's
#: metadata), and on each row's beside its label (CSV repeats the guarantee and the notes on every
#: row: measured, under 1,100 bytes)
OUTPUT_FIXED_BYTES = 1 << 16
OUTPUT_ROW_BYTES = 1 << 12


def longest_label(labels) -> int:
    """Bytes of the longest label (UTF-8)."""
    return max((len(str(x).encode("utf-8", "surrogatepass")) for x in labels), default=0)


def ranking_bytes(labels) -> int:
    """A generous bound on the bytes of a ranking of ``labels`` in any format: a row per item at most,
    each taking at most :data:`OUTPUT_ROW_BYTES` beside six bytes per byte of the longest label (JSON
    writes a control character as ``\\u0000``; the table pads every label to the longest)."""
    return OUTPUT_FIXED_BYTES + len(labels) * (OUTPUT_ROW_BYTES + 6 * longest_label(labels))


def records_bytes(comps) -> int:
    """A generous bound on the bytes of ``comps`` written as CSV (:func:`~privrank.data.io.comparisons_to_csv`):
    per record, its user and two item labels (each quoted, its quotes doubled: at most twice its bytes
    and two) and at most 64 bytes of outcome, epsilon, quota and separators."""
    longest = longest_label(list(comps.items) + list(comps.users if comps.user is not None else []))
    return OUTPUT_FIXED_BYTES + comps.n_records * (64 + 3 * (2 * longest + 2))


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
