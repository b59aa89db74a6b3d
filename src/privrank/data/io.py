"""Readers and writers for comparison and ranking files.

CSV comparisons come in two shapes, recognised from the header:

* long format ``user,item_a,item_b,outcome`` with outcome 1 (item_a preferred), -1 (item_b)
  or 0 (tie). ``respondent`` and ``worker`` are accepted for ``user``, ``result`` for
  ``outcome``; the user column is optional.
* ``winner,loser`` (optionally with ``user``): every record is a win for ``winner``.

An optional ``epsilon`` column marks the records as randomized reports (respondents already
applied randomized response with that epsilon on their device): they will be debiased, never
randomized again. Errors name the offending line number but never echo its contents.

Rankings (:func:`read_rankings`) come from PrefLib files (``.soc`` complete strict orders,
``.soi`` strict incomplete orders, ``.toc`` complete orders with ties; the 2022 PrefLib format
with ``# ALTERNATIVE NAME k: label`` headers and lines ``count: a,b,{c,d},e``) or from CSV with
one ranking per row (see :func:`read_rankings`). Kemeny and footrule aggregation need complete
strict rankings; the ``partial`` policy says what to do with a ballot that has ties or unranked
items:

``"error"`` (default)
    refuse the file, saying how many ballots are affected and which options exist;
``"drop"``
    keep only the complete strict ballots;
``"randomize"``
    complete every such voter's ballot independently and uniformly at random: each tied group
    is put in a uniformly random order, and the unranked items follow the ranked ones in a
    uniformly random order. A pair the voter did not order then counts as "i before j" with
    probability 1/2, i.e. as no preference in expectation. The completion depends only on that
    voter's own ballot, so neighbouring profiles (one ballot changed) stay neighbours and every
    privacy guarantee of the aggregation holds for the original ballots.
"""
from __future__ import annotations

import csv
import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np

from .._rng import as_generator
from ..errors import InputError
from .comparisons import PairwiseComparisons
from .rankings import Rankings

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
    return _read_text(_read_comparisons, path, items)


def _read_text(read, path: Path, *args):
    """``read(path, *args)`` on a text file: bytes that are not UTF-8 are an input error."""
    try:
        return read(path, *args)
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


# --------------------------------------------------------------------------------------------
# rankings
# --------------------------------------------------------------------------------------------

PARTIAL_POLICIES = ("error", "drop", "randomize")
RANKING_ID_COLUMNS = ("voter", "user", "respondent", "judge", "id", "ballot")
_PREFLIB_NAME = re.compile(r"#\s*ALTERNATIVE NAME\s+(\d+)\s*:\s*(.*)$")
_PREFLIB_COUNT = re.compile(r"#\s*NUMBER ALTERNATIVES\s*:\s*(\d+)\s*$")
_PREFLIB_GROUP = re.compile(r"\{[^}]*\}|[^,{}\s]+")
_RANK_COLUMN = re.compile(r"rank\s*_?\s*\d+$")


def read_rankings(path, *, partial: str = "error", rng=None) -> Rankings:
    """Read rankings from a PrefLib (``.soc``, ``.soi``, ``.toc``) or CSV file.

    CSV files have a header row and one ranking per row, in one of two layouts recognised
    from the header:

    * order layout -- columns ``rank1, rank2, ...``: each cell is an item label, best first
      (trailing empty cells leave items unranked);
    * rank layout -- one column per item: each cell is that item's rank, 1 = best (equal ranks
      are ties, an empty cell leaves the item unranked).

    In both, an optional ``count`` column gives how many voters cast the row (rows with count 0
    are skipped, as are PrefLib lines with count 0), and one optional
    id column (``voter``, ``user``, ``respondent``, ``judge``, ``id`` or ``ballot``) is ignored.

    Parameters
    ----------
    path
        The file; the extension selects the reader.
    partial
        What to do with ballots that have ties or unranked items: ``"error"``, ``"drop"`` or
        ``"randomize"`` (module docstring).
    rng
        Randomness of ``partial="randomize"``.

    Raises
    ------
    InputError
        On a missing file, a malformed line (named by number, never echoed), an unknown item,
        an item ranked twice, or incomplete ballots under ``partial="error"``.
    """
    if partial not in PARTIAL_POLICIES:
        raise InputError(f"partial must be one of {', '.join(PARTIAL_POLICIES)}")
    path = Path(path)
    if not path.is_file():
        raise InputError(f"no such file: {path}")
    suffix = path.suffix.lower()
    if suffix in (".soc", ".soi", ".toc", ".toi"):
        labels, ballots = _read_text(_read_preflib, path)
    elif suffix == ".csv":
        labels, ballots = _read_text(_read_ranking_csv, path)
    else:
        raise InputError(f"{path}: unknown ranking file type; use .soc, .soi, .toc or .csv")
    return _complete_ballots(labels, ballots, partial, rng, path)


def _read_preflib(path: Path):
    names: dict[int, str] = {}
    m = None
    ballots = []  # (line, count, groups of 0-based items)
    with path.open(encoding="utf-8-sig") as fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                hit = _PREFLIB_NAME.match(line)
                if hit:
                    names[int(hit.group(1))] = hit.group(2).strip()
                hit = _PREFLIB_COUNT.match(line)
                if hit:
                    m = int(hit.group(1))
                continue
            if ":" not in line:
                raise InputError(f"{path}, line {line_no}: expected 'count: a,b,...' "
                                 "(the 2022 PrefLib format)")
            count_text, order_text = line.split(":", 1)
            try:
                count = int(count_text)
                groups = [[int(x) - 1 for x in g.strip("{}").split(",") if x.strip()]
                          for g in _PREFLIB_GROUP.findall(order_text)]
            except ValueError:
                raise InputError(f"{path}, line {line_no}: counts and items must be integers") from None
            if count < 0:
                raise InputError(f"{path}, line {line_no}: the count must be >= 0")
            if count:  # PrefLib lists some orders with count 0
                ballots.append((line_no, count, [g for g in groups if g]))
    if m is None:
        m = max(names) if names else None
    if not m:
        raise InputError(f"{path}: no '# NUMBER ALTERNATIVES' or '# ALTERNATIVE NAME' header")
    labels = tuple(names.get(k + 1, str(k + 1)) for k in range(m))
    if len(set(labels)) != m:
        labels = tuple(str(k + 1) for k in range(m))
    return labels, ballots


def _read_ranking_csv(path: Path):
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        lines = _rows(reader)
        try:
            header = [h.strip() for h in next(lines)]
        except StopIteration:
            raise InputError(f"{path} is empty") from None
        lower = [h.lower() for h in header]
        count_col = lower.index("count") if "count" in lower else None
        id_col = next((lower.index(c) for c in RANKING_ID_COLUMNS if c in lower), None)
        cols = [k for k in range(len(header)) if k not in (count_col, id_col)]
        if len(cols) < 1:
            raise InputError(f"{path}: no item or rank columns")
        order_layout = all(_RANK_COLUMN.match(lower[k]) for k in cols)
        rows = []
        for line_no, row in enumerate(lines, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{path}, line {line_no}: expected {len(header)} fields, found {len(row)}")
            count = 1
            if count_col is not None:
                try:
                    count = int(row[count_col])
                except ValueError:
                    raise InputError(f"{path}, line {line_no}: count must be an integer >= 0") from None
                if count < 0:
                    raise InputError(f"{path}, line {line_no}: count must be an integer >= 0")
            if count:
                rows.append((line_no, count, [row[k].strip() for k in cols]))
    if not rows:
        raise InputError(f"{path} has a header but no rankings")
    if order_layout:
        found = {c for _, _, cells in rows for c in cells if c}
        try:
            labels = tuple(sorted(found))
        except TypeError:  # pragma: no cover - csv cells are strings
            labels = tuple(sorted(found, key=str))
        index = {lab: k for k, lab in enumerate(labels)}
        ballots = []
        for line_no, count, cells in rows:
            filled = [c for c in cells if c]
            if len(filled) != len(cells) and any(cells[len(filled):]):
                raise InputError(f"{path}, line {line_no}: empty cells may only trail the ranking")
            ballots.append((line_no, count, [[index[c]] for c in filled]))
        return labels, ballots
    labels = tuple(header[k] for k in cols)
    ballots = []
    for line_no, count, cells in rows:
        ranks = np.full(len(cells), np.nan)
        for k, c in enumerate(cells):
            if c and c.lower() not in ("na", "nan"):
                try:
                    ranks[k] = float(c)
                except ValueError:
                    raise InputError(f"{path}, line {line_no}: ranks must be numbers (1 = best)") from None
        ranked = np.flatnonzero(np.isfinite(ranks))
        levels = np.unique(ranks[ranked])
        ballots.append((line_no, count, [list(ranked[ranks[ranked] == v]) for v in levels]))
    return labels, ballots


def _complete_ballots(labels, ballots, partial, rng, path) -> Rankings:
    """Apply the ``partial`` policy and build :class:`Rankings` (module docstring)."""
    m = len(labels)
    if not ballots:
        raise InputError(f"{path} holds no rankings")
    complete_rows, complete_w = [], []
    incomplete = []  # (count, groups)
    for line_no, count, groups in ballots:
        flat = [i for g in groups for i in g]
        if any(i < 0 or i >= m for i in flat):
            raise InputError(f"{path}, line {line_no}: an item number is outside 1..{m}")
        if len(set(flat)) != len(flat):
            raise InputError(f"{path}, line {line_no}: an item is ranked twice")
        if len(flat) == m and all(len(g) == 1 for g in groups):
            complete_rows.append(flat)
            complete_w.append(count)
        else:
            incomplete.append((count, groups))
    if incomplete and partial == "error":
        voters = sum(c for c, _ in incomplete)
        raise InputError(f"{path}: {voters} ballot(s) have ties or unranked items, but Kemeny and "
                         "footrule aggregation need complete strict rankings; choose a policy: "
                         "partial='drop' (--partial drop) keeps only complete ballots, "
                         "partial='randomize' (--partial randomize) completes each such ballot "
                         "uniformly at random")
    orders = [np.asarray(complete_rows, dtype=np.int64).reshape(-1, m)]
    weights = [np.asarray(complete_w, dtype=np.int64)]
    if incomplete and partial == "randomize":
        gen = as_generator(rng)
        for count, groups in incomplete:  # one vectorised draw per distinct ballot
            level = np.full(m, len(groups), dtype=float)
            for g, members in enumerate(groups):
                level[members] = g
            key = level[None, :] + gen.random((count, m))
            orders.append(np.argsort(key, axis=1))
            weights.append(np.ones(count, dtype=np.int64))
    orders_all = np.concatenate(orders, axis=0)
    if orders_all.shape[0] == 0:
        raise InputError(f"{path}: no complete strict ballot is left after partial='drop'")
    return Rankings.from_orders(orders_all, items=labels, weights=np.concatenate(weights))
