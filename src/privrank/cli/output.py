"""Shared output of ranking commands: table, csv or json, to stdout or an atomic file."""
from __future__ import annotations

import csv
import io
import json
import math
import re
import sys
from dataclasses import replace

from ..errors import InputError
from ..files import Output, write_stdout, write_text_atomic
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
            buf.write(f"# {k}: {_shown(v)}\n")
        w = csv.writer(buf, lineterminator="\n")
        quoted = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)
        w.writerow(columns)
        for r in rows:
            cells = [_csv_cell(r[c]) for c in columns]
            # csv leaves a bare CR unquoted when lines end in LF, and readers would end the row there
            (quoted if any("\r" in c for c in cells) else w).writerow(cells)
        return buf.getvalue()
    cells = [[str(c) for c in columns]] + [[_shown(r[c]) for c in columns] for r in rows]
    widths = [max(len(row[k]) for row in cells) for k in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells]
    lines.append("")
    lines.append("guarantee: " + guarantee.describe())
    lines.append("in plain words: " + guarantee.plain())
    for k, v in (extra or {}).items():
        lines.append(f"{k}: {_shown(v)}")
    return "\n".join(lines) + "\n"


def _fmt_cell(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


# Labels come from the data and must not forge output. Text lines show control characters (C0, DEL,
# C1, line/paragraph separators, bidi overrides) escaped, Python-style, so a label is one line and
# sends no terminal escape sequence. CSV keeps labels exact (quoted) but prefixes "'" to a text cell a
# spreadsheet would evaluate (OWASP, CSV injection); numbers are left alone. JSON escapes everything.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _shown(v) -> str:
    """A cell for a line of text: control characters escaped."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), _fmt_cell(v))


def _csv_cell(v) -> str:
    """A CSV cell: a text cell that a spreadsheet would run as a formula is quoted with a leading "'"."""
    return "'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else _fmt_cell(v)


def emit(text: str, output, *, force: bool = False) -> None:
    """Write ``text`` to ``output``: a reserved :class:`~privrank.files.Output`, a path (``-``:
    standard output; an existing file only with ``force``), or None for standard output."""
    try:
        if output is None:
            if sys.stdout is None or sys.stdout.closed:
                raise InputError("standard output is closed: write to a file with --out FILE")
            write_stdout(text)
        elif isinstance(output, Output):
            output.write_text(text)
        else:
            write_text_atomic(output, text, force=force)
    except InputError as exc:
        from ..release import inside_charging

        if not inside_charging():
            raise
        # recorded before its noise was drawn, the release stays in the ledger: the safe side
        raise InputError(f"{exc}; the release is recorded in the ledger") from None
