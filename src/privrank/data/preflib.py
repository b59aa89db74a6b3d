"""PrefLib ranking files (``.soc``, ``.soi``, ``.toc``, ``.toi``; the 2022 format), read without loading the alternatives' count unchecked.

A file whose header disagrees with its body is refused: the declared number of alternatives
must be the number named, and the declared numbers of voters and unique orders (when given)
must be what the order lines hold, so a truncated or spliced file is never aggregated. Every
order line must be well formed (items separated by commas, tied items in closed, non-empty
braces); an error names the line, never its contents.
"""
from __future__ import annotations

import re

from ..errors import InputError
from .tabular import MAX_EXACT_COUNT, check_items, open_text

_PREFLIB_NAME = re.compile(r"#\s*ALTERNATIVE NAME\s+(\d+)\s*:\s*(.*)$")
_PREFLIB_DECLARED = re.compile(r"#\s*NUMBER (ALTERNATIVES|VOTERS|UNIQUE ORDERS)\s*:\s*(\d+)\s*$")
_PREFLIB_GROUP = re.compile(r"\{[^}]*\}|[^,{}\s]+")
_ITEM = r"\s*\d+\s*"
_GROUP = rf"(?:{_ITEM}|\s*\{{{_ITEM}(?:,{_ITEM})*\}}\s*)"
#: an order: items separated by commas, tied items in braces (``1,{2,3},4``)
_PREFLIB_ORDER = re.compile(rf"{_GROUP}(?:,{_GROUP})*")


def read_preflib(path):
    names: dict[int, str] = {}
    declared: dict[str, int] = {}
    ballots = []  # (line, count, groups of 0-based items)
    order_lines = voters = 0
    with open_text(path) as fh:
        for line_no, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                hit = _PREFLIB_NAME.match(line)
                if hit:
                    k = int(hit.group(1))
                    if k in names:
                        raise InputError(f"{path}, line {line_no}: alternative {k} is named twice")
                    names[k] = hit.group(2).strip()
                hit = _PREFLIB_DECLARED.match(line)
                if hit:
                    if hit.group(1) in declared:
                        raise InputError(f"{path}, line {line_no}: the header declares the number of "
                                         f"{hit.group(1).lower()} twice")
                    declared[hit.group(1)] = int(hit.group(2))
                continue
            if ":" not in line:
                raise InputError(f"{path}, line {line_no}: expected 'count: a,b,...' "
                                 "(the 2022 PrefLib format)")
            count_text, order_text = line.split(":", 1)
            try:
                count = int(count_text)
            except ValueError:
                raise InputError(f"{path}, line {line_no}: counts and items must be integers") from None
            if not _PREFLIB_ORDER.fullmatch(order_text):
                raise InputError(f"{path}, line {line_no}: not an order: items are integers separated by commas, "
                                 "tied items in braces ({a,b}), every brace closed and none empty")
            groups = [[int(x) - 1 for x in g.strip("{}").split(",")] for g in _PREFLIB_GROUP.findall(order_text)]
            if count < 0 or count > MAX_EXACT_COUNT:
                raise InputError(f"{path}, line {line_no}: the count must be a whole number from 0 to 2^53")
            order_lines += 1
            voters += count
            if count:  # PrefLib lists some orders with count 0
                ballots.append((line_no, count, groups))
    m = declared.get("ALTERNATIVES")
    if m is None:
        m = max(names) if names else None
    if not m:
        raise InputError(f"{path}: no '# NUMBER ALTERNATIVES' or '# ALTERNATIVE NAME' header")
    if names and m > len(names):
        raise InputError(f"{path}: the header declares more alternatives than it names; give every alternative "
                         "an '# ALTERNATIVE NAME' line")
    if names and set(names) != set(range(1, m + 1)):
        raise InputError(f"{path}: the header names alternatives outside 1..{m}, the number it declares; "
                         "number them 1 to '# NUMBER ALTERNATIVES'")
    check_items(m, str(path))
    if "VOTERS" in declared and declared["VOTERS"] != voters:
        raise InputError(f"{path}: the order lines' counts do not add up to the header's '# NUMBER VOTERS': "
                         "the file is truncated or was edited; restore it or correct the header")
    if "UNIQUE ORDERS" in declared and not len(ballots) <= declared["UNIQUE ORDERS"] <= order_lines:
        raise InputError(f"{path}: the number of order lines differs from the header's '# NUMBER UNIQUE ORDERS': "
                         "the file is truncated or was edited; restore it or correct the header")
    labels = tuple(names.get(k + 1, str(k + 1)) for k in range(m))
    if len(set(labels)) != m:
        raise InputError(f"{path}: two alternatives have the same '# ALTERNATIVE NAME'; give each its own name")
    return labels, ballots
