"""Comparison files (CSV, Parquet, Arrow): long ``user,item_a,item_b,outcome`` or ``winner,loser`` (see :mod:`privrank.data.io`)."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InputError
from .comparisons import PairwiseComparisons, sorted_labels
from .tabular import (ColumnarFile, DEFAULT_BATCH_SIZE, OUTCOME_COLUMNS, USER_COLUMNS, check_data_file, csv_rows,
                      file_format, item_list, label_indices, pick_column, present_labels, pyarrow_module, read_text)

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


@dataclass(frozen=True)
class ComparisonColumns:
    """Positions in a file's header of the fields of a comparison.

    ``outcome`` is None for a ``winner,loser`` file (every record is a win for ``item_a``, the
    winner); ``user`` and ``epsilon`` are None when the file has no such column.
    """

    item_a: int
    item_b: int
    outcome: int | None
    user: int | None
    epsilon: int | None

    @classmethod
    def from_header(cls, header, source) -> "ComparisonColumns":
        """The layout named by ``header``. The header is never echoed: a file without one would
        show its first record in the message."""
        names = [str(h).strip().lower() for h in header]
        known = {"winner", "loser", "item_a", "item_b", "epsilon", *OUTCOME_COLUMNS, *USER_COLUMNS}
        repeated = sorted({n for n in names if n in known and names.count(n) > 1})
        if repeated:
            raise InputError(f"{source}: the column {repeated[0]!r} appears more than once; name each column once")
        if len([n for n in names if n in USER_COLUMNS]) > 1:
            raise InputError(f"{source}: more than one user column ({', '.join(USER_COLUMNS)}); keep one")
        user = pick_column(names, USER_COLUMNS)
        outcome = pick_column(names, OUTCOME_COLUMNS)
        if "winner" in names and "loser" in names:
            a, b, outcome = "winner", "loser", None
        elif "item_a" in names and "item_b" in names and outcome:
            a, b = "item_a", "item_b"
        else:
            raise InputError(f"{source}: need a header row naming the columns item_a,item_b,outcome (or result) "
                             f"or winner,loser; the first row has {len(names)} fields and none of these names "
                             "(is the header missing?)")

        def pos(name):
            return None if name is None else names.index(name)
        return cls(pos(a), pos(b), pos(outcome), pos(user), pos("epsilon" if "epsilon" in names else None))

    def positions(self) -> list[int]:
        """Header positions of the fields present, in the order item_a, item_b, outcome, user, epsilon."""
        return [k for k in (self.item_a, self.item_b, self.outcome, self.user, self.epsilon) if k is not None]


def read_comparisons(path, *, items=None) -> PairwiseComparisons:
    """Read pairwise comparisons from a CSV, Parquet or Arrow file into memory.

    See the module docstring for the formats. CSV needs only the standard library; Parquet and
    Arrow files are read with :class:`ComparisonFile` (pyarrow).

    Raises
    ------
    InputError
        On a missing file or column, an unknown outcome, an empty field, NaN, or fewer than two
        items; the message names the line (CSV) or the record.
    """
    path = Path(path)
    check_data_file(path)
    if file_format(path) != "csv":
        return ComparisonFile(path).read(items=items)
    return read_text(_read_comparisons, path, items)


def _read_comparisons(path: Path, items) -> PairwiseComparisons:
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh)
        rows = csv_rows(reader)
        try:
            header = [h.strip().lower() for h in next(rows)]
        except StopIteration:
            raise InputError(f"{path} is empty") from None
        layout = ComparisonColumns.from_header(header, path)
        cols = [layout.item_a, layout.item_b] + ([] if layout.outcome is None else [layout.outcome])
        uidx, eidx = layout.user, layout.epsilon
        a, b, out, users, eps, lines = [], [], [], [], [], []
        width = len(header)
        for line, row in enumerate(rows, start=2):
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != width:
                raise InputError(f"line {line}: expected {width} fields, found {len(row)}")
            fields = [row[c].strip() for c in cols]
            if any(f == "" or f.lower() in ("nan", "na") for f in fields):
                raise InputError(f"line {line}: empty or NaN field")
            a.append(fields[0])
            b.append(fields[1])
            lines.append(line)
            out.append(1 if layout.outcome is None else _parse_outcome(fields[2], line))
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


@dataclass(frozen=True, eq=False)
class ComparisonBatch:
    """Validated records of one batch of a comparison file.

    ``item_a``, ``item_b`` and ``user`` are pyarrow arrays of labels (possibly
    dictionary-encoded); ``outcome`` int8 in {1, -1, 0}; ``epsilon`` the per-record epsilon of
    randomized reports or None. ``first_record`` is the index in the file of the first record.
    """

    item_a: object
    item_b: object
    outcome: np.ndarray
    user: object
    epsilon: np.ndarray | None
    first_record: int

    def __len__(self) -> int:
        return int(self.outcome.size)

    def labels(self, used_only: bool = True) -> set:
        """Item labels that occur in the batch; with ``used_only=False`` possibly more: the whole
        dictionary of a dictionary-encoded column (no pass over the records)."""
        return set(present_labels(self.item_a, used_only)) | set(present_labels(self.item_b, used_only))

    def item_indices(self, items: tuple) -> tuple[np.ndarray, np.ndarray]:
        """Indices of each record's two items in ``items``; refuses unknown items and self-comparisons."""
        a = label_indices(self.item_a, items)
        b = label_indices(self.item_b, items)
        same = np.flatnonzero(a == b)
        if same.size:
            raise InputError(f"record {self.first_record + int(same[0]) + 1} compares an item with itself")
        return a, b


class ComparisonFile(ColumnarFile):
    """A comparison file (CSV, Parquet or Arrow IPC) read in batches (:class:`ColumnarFile`)."""

    def __init__(self, path):
        super().__init__(path)
        self.columns = ComparisonColumns.from_header(self.header, self.path)
        self.names = [self.header[k] for k in self.columns.positions()]
        self.label_names = [self.header[k] for k in (self.columns.item_a, self.columns.item_b)]

    @property
    def is_randomized(self) -> bool:
        """True when the file has an epsilon column (randomized reports)."""
        return self.columns.epsilon is not None

    @property
    def has_users(self) -> bool:
        return self.columns.user is not None

    def batches(self, batch_size: int = DEFAULT_BATCH_SIZE):
        """Validated :class:`ComparisonBatch` objects covering the file in order."""
        first = 0
        for raw in self.raw_batches(batch_size):
            batch = self.validate(raw, first)
            first += len(batch)
            yield batch

    def validate(self, table, first_record: int) -> ComparisonBatch:
        """Check and convert a table (or record batch) of this file's columns, whose first record
        has index ``first_record`` in the file (see the class docstring)."""
        pa = pyarrow_module()
        c = self.columns

        def column(pos):
            return self.column(table, self.header[pos])

        def check_present(col, name):
            if col.null_count:
                bad = np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))
                raise InputError(f"record {first_record + int(bad[0]) + 1}: empty {name}")
            dictionary = pa.types.is_dictionary(col.type)
            values = col.dictionary if dictionary else col
            t = values.type
            if pa.types.is_boolean(t):
                raise InputError(f"the {name} column must hold numbers, not true/false (an outcome is 1 when the "
                                 "first item wins, -1 when the second does, 0 for a tie)")
            if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_integer(t)
                    or pa.types.is_floating(t)):
                raise InputError(f"the {name} column must hold text or numbers, not {t}")
            empty = None
            if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
                import pyarrow.compute as pc
                empty = pc.is_in(pc.utf8_lower(values), pa.array(["", "nan", "na"])).to_numpy(zero_copy_only=False)
            elif pa.types.is_floating(values.type):
                empty = np.isnan(values.to_numpy(zero_copy_only=False))
            if empty is not None:  # the same fields the CSV reader of the local engine refuses
                if dictionary and empty.any():
                    empty = np.isin(col.indices.to_numpy(zero_copy_only=False), np.flatnonzero(empty))
                bad = np.flatnonzero(empty)
                if bad.size:
                    raise InputError(f"record {first_record + int(bad[0]) + 1}: empty or NaN {name}")
            return col

        item_a = check_present(column(c.item_a), "item")
        item_b = check_present(column(c.item_b), "item")
        n = len(item_a)
        if c.outcome is None:
            outcome = np.ones(n, dtype=np.int8)
        else:
            x = self._numbers(check_present(column(c.outcome), "outcome"), "outcome", first_record)
            bad = np.flatnonzero((x != 1) & (x != -1) & (x != 0))
            if bad.size:
                raise InputError(f"record {first_record + int(bad[0]) + 1}: outcome must be 1, -1 or 0")
            outcome = x.astype(np.int8)
        user = None if c.user is None else check_present(column(c.user), "user id")
        epsilon = None
        if c.epsilon is not None:
            epsilon = self._numbers(check_present(column(c.epsilon), "epsilon"), "epsilon", first_record)
            bad = np.flatnonzero(~np.isfinite(epsilon) | (epsilon <= 0))
            if bad.size:
                raise InputError(f"record {first_record + int(bad[0]) + 1}: epsilon must be finite and > 0")
            ties = np.flatnonzero(outcome == 0)
            if ties.size:
                raise InputError(f"record {first_record + int(ties[0]) + 1}: a randomized report must be 1 or -1, "
                                 "not a tie (randomized response never outputs a tie)")
        return ComparisonBatch(item_a, item_b, outcome, user, epsilon, int(first_record))

    def read(self, *, items=None) -> PairwiseComparisons:
        """The whole file in memory (items in sorted label order unless ``items`` is given)."""
        batches = list(self.batches())
        if not batches or not sum(len(b) for b in batches):
            raise InputError(f"{self.path} has a header but no comparisons")
        labels = sorted_labels(set().union(*(b.labels() for b in batches))) if items is None else item_list(items)
        pairs = [b.item_indices(labels) for b in batches]
        user = users = None
        if self.has_users:
            users = sorted_labels(set().union(*(present_labels(b.user) for b in batches)))
            user = np.concatenate([label_indices(b.user, users) for b in batches])
        epsilon = np.concatenate([b.epsilon for b in batches]) if self.is_randomized else None
        return PairwiseComparisons.from_indices(
            labels, np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]),
            np.concatenate([b.outcome for b in batches]), user=user, users=users, epsilon=epsilon,
            items_declared=items is not None)


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
