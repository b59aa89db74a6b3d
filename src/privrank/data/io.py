"""Readers and writers for comparison files.

CSV comparisons come in two shapes, recognised from the header:

* long format ``user,item_a,item_b,outcome`` with outcome 1 (item_a preferred), -1 (item_b)
  or 0 (tie). ``respondent`` and ``worker`` are accepted for ``user``, ``result`` for
  ``outcome``; the user column is optional.
* ``winner,loser`` (optionally with ``user``): every record is a win for ``winner``.

An optional ``epsilon`` column marks the records as randomized reports (respondents already
applied randomized response with that epsilon on their device): they will be debiased, never
randomized again. Errors name the offending line number but never echo its contents.
"""
from __future__ import annotations

import csv
import math
import os
import tempfile
from pathlib import Path

from ..errors import InputError
from .comparisons import PairwiseComparisons

USER_COLUMNS = ("user", "respondent", "worker")
OUTCOME_COLUMNS = ("outcome", "result")


def _pick(header: list[str], names) -> str | None:
    for n in names:
        if n in header:
            return n
    return None


def _parse_outcome(text: str, line: int) -> int:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"line {line}: outcome must be 1, -1 or 0") from None
    if x not in (1.0, -1.0, 0.0):
        raise InputError(f"line {line}: outcome must be 1, -1 or 0")
    return int(x)


def _parse_epsilon(text: str, line: int) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"line {line}: epsilon must be a number > 0") from None
    if not math.isfinite(x) or x <= 0:
        raise InputError(f"line {line}: epsilon must be finite and > 0")
    return x


def _rows(reader):
    """Rows of a CSV reader; malformed CSV (e.g. a NUL byte) is an input error naming the line."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error:
            raise InputError(f"line {reader.line_num}: malformed CSV") from None


def read_comparisons(path, *, items=None) -> PairwiseComparisons:
    """Read pairwise comparisons from a CSV file (see the module docstring for the formats).

    Raises
    ------
    InputError
        On a missing file or column, an unknown outcome, an empty field, NaN, or fewer than two
        items; the message names the line.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    try:
        return _read_comparisons(path, items)
    except UnicodeDecodeError:
        raise InputError(f"{path} is not UTF-8 text") from None


def _read_comparisons(path: Path, items) -> PairwiseComparisons:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        rows = _rows(reader)
        try:
            header = [h.strip().lower() for h in next(rows)]
        except StopIteration:
            raise InputError(f"{path} is empty") from None
        user_col = _pick(header, USER_COLUMNS)
        out_col = _pick(header, OUTCOME_COLUMNS)
        eps_col = "epsilon" if "epsilon" in header else None
        if "winner" in header and "loser" in header:
            shape = "winner"
            cols = ["winner", "loser"]
        elif "item_a" in header and "item_b" in header and out_col:
            shape = "long"
            cols = ["item_a", "item_b", out_col]
        else:
            raise InputError(
                f"{path}: need columns item_a,item_b,outcome (or result) or winner,loser; "
                f"found {','.join(header)}")
        idx = {c: header.index(c) for c in cols}
        uidx = header.index(user_col) if user_col else None
        eidx = header.index(eps_col) if eps_col else None
        a, b, out, users, eps, lines = [], [], [], [], [], []
        width = len(header)
        for line, row in enumerate(rows, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != width:
                raise InputError(f"line {line}: expected {width} fields, found {len(row)}")
            fields = [row[idx[c]].strip() for c in cols]
            if any(f == "" or f.lower() in ("nan", "na") for f in fields):
                raise InputError(f"line {line}: empty or NaN field")
            a.append(fields[0])
            b.append(fields[1])
            lines.append(line)
            out.append(1 if shape == "winner" else _parse_outcome(fields[2], line))
            if uidx is not None:
                u = row[uidx].strip()
                if u == "":
                    raise InputError(f"line {line}: empty user id")
                users.append(u)
            if eidx is not None:
                eps.append(_parse_epsilon(row[eidx].strip(), line))
    if not a:
        raise InputError(f"{path} has a header but no comparisons")
    for line, x, y in zip(lines, a, b):
        if x == y:
            raise InputError(f"line {line}: a comparison of an item with itself")
    labels = set(a) | set(b)
    if len(labels) < 2 and items is None:
        raise InputError(f"{path}: only one item occurs; at least two are needed to rank")
    return PairwiseComparisons.from_labels(
        a, b, out, user=users if uidx is not None else None,
        epsilon=eps if eidx is not None else None, items=items)


def comparisons_to_csv(comps: PairwiseComparisons) -> str:
    """CSV text of comparisons in the long format (with ``epsilon`` for randomized reports)."""
    import io

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    header = (["user"] if comps.user is not None else []) + ["item_a", "item_b", "outcome"]
    if comps.is_randomized:
        header.append("epsilon")
    w.writerow(header)
    items = comps.items
    for k in range(comps.n_records):
        row = [comps.users[comps.user[k]]] if comps.user is not None else []
        row += [items[comps.item_a[k]], items[comps.item_b[k]], int(comps.outcome[k])]
        if comps.is_randomized:
            row.append(repr(float(comps.epsilon[k])))
        w.writerow(row)
    return buf.getvalue()


def write_text_atomic(path, text: str, *, force: bool = False) -> None:
    """Write ``text`` to ``path`` atomically; refuse to overwrite unless ``force``."""
    path = Path(path)
    if path.exists() and not force:
        raise InputError(f"{path} exists; pass --force (force=True) to overwrite it")
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise InputError(f"directory {directory} does not exist")
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
