"""PrefLib ranking files (``.soc``, ``.soi``, ``.toc``, ``.toi``; the 2022 format), read without loading the alternatives' count unchecked."""
from __future__ import annotations

import re

from ..errors import InputError
from .tabular import MAX_EXACT_COUNT, check_items, open_text

PREFLIB_SUFFIXES = (".soc", ".soi", ".toc", ".toi")
_PREFLIB_NAME = re.compile(r"#\s*ALTERNATIVE NAME\s+(\d+)\s*:\s*(.*)$")
_PREFLIB_COUNT = re.compile(r"#\s*NUMBER ALTERNATIVES\s*:\s*(\d+)\s*$")
_PREFLIB_GROUP = re.compile(r"\{[^}]*\}|[^,{}\s]+")


def read_preflib(path):
    names: dict[int, str] = {}
    m = None
    ballots = []  # (line, count, groups of 0-based items)
    with open_text(path) as fh:
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
            if count < 0 or count > MAX_EXACT_COUNT:
                raise InputError(f"{path}, line {line_no}: the count must be a whole number from 0 to 2^53")
            if count:  # PrefLib lists some orders with count 0
                ballots.append((line_no, count, [g for g in groups if g]))
    if m is None:
        m = max(names) if names else None
    if not m:
        raise InputError(f"{path}: no '# NUMBER ALTERNATIVES' or '# ALTERNATIVE NAME' header")
    if names and m > len(names):
        raise InputError(f"{path}: the header declares more alternatives than it names; give every alternative "
                         "an '# ALTERNATIVE NAME' line")
    check_items(m, str(path))
    labels = tuple(names.get(k + 1, str(k + 1)) for k in range(m))
    if len(set(labels)) != m:
        labels = tuple(str(k + 1) for k in range(m))
    return labels, ballots
