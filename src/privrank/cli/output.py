"""Shared output of ranking commands: table, csv or json, to stdout or an atomic file."""
from __future__ import annotations

import csv
import io
import json
import math
import sys
from dataclasses import replace

from ..errors import InputError
from ..files import Output, write_text_atomic
from ..guarantees import Guarantee

FORMATS = ("table", "csv", "json")


def add_output_options(parser) -> None:
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="output format (default table); every format carries the guarantee (csv: leading "
                             "'#' comment lines, read with pandas.read_csv(..., comment='#'))")
    parser.add_argument("--output", "-o", metavar="PATH", help="write to PATH instead of standard output")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --output file")


def _json_safe(x):
    if isinstance(x, float) and not math.isfinite(x):
        return None if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if hasattr(x, "item") and not isinstance(x, (str, bytes)):
        return _json_safe(x.item())
    return x


def shown_guarantee(guarantee: Guarantee, args) -> Guarantee:
    """The guarantee to print: a run with ``--seed`` says it is research output, not a release."""
    return replace(guarantee, seeded=True) if getattr(args, "seed", None) is not None else guarantee


def render(rows: list[dict], guarantee: Guarantee, fmt: str, extra: dict | None = None) -> str:
    """Render ranking rows (dicts with at least ``rank`` and ``item``) with their guarantee."""
    if fmt == "json":
        doc = {"ranking": rows, "guarantee": guarantee.to_dict()}
        doc["guarantee"]["description"] = guarantee.describe()
        doc["guarantee"]["plain"] = guarantee.plain()
        doc.update(extra or {})
        return json.dumps(_json_safe(doc), indent=2) + "\n"
    columns = list(rows[0].keys()) if rows else ["rank", "item"]
    if fmt == "csv":  # the guarantee and notes lead as '#' comments (pandas: read_csv(..., comment="#"))
        buf = io.StringIO()
        buf.write("# guarantee: " + guarantee.describe() + "\n")
        buf.write("# in plain words: " + guarantee.plain() + "\n")
        for k, v in (extra or {}).items():
            buf.write(f"# {k}: {_fmt_cell(v)}\n")
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        for r in rows:
            w.writerow([_fmt_cell(r[c]) for c in columns])
        return buf.getvalue()
    cells = [[str(c) for c in columns]] + [[_fmt_cell(r[c]) for c in columns] for r in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append("")
    lines.append("guarantee: " + guarantee.describe())
    lines.append("in plain words: " + guarantee.plain())
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {_fmt_cell(v)}")
    return "\n".join(lines) + "\n"


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def emit(text: str, output, *, force: bool = False) -> None:
    """Write ``text`` to ``output``: a reserved :class:`~privrank.files.Output`, a path (``-``:
    standard output; an existing file only with ``force``), or None for standard output."""
    if output is None:
        if sys.stdout is None or sys.stdout.closed:
            raise InputError("standard output is closed: write to a file with --out FILE")
        sys.stdout.write(text)
        sys.stdout.flush()
    elif isinstance(output, Output):
        output.write_text(text)
    else:
        write_text_atomic(output, text, force=force)
