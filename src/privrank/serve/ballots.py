"""The export of a ranking survey: its randomized ballots as CSV, and the private ranking read back from it.

Layout (``GET /export.csv`` on a ranking survey)::

    user,A > B,A > C,B > C,epsilon
    r1,1.73...,-0.41...,2.05...,1.0

One row per ballot: ``user`` (``r1``, ``r2``, ...: the rows are ordered by their content, never by
arrival, and one respondent sends one ballot), then one column per pair of items ``i < j`` in the
survey's order and in the contract's row-major order ((0,1), (0,2), ..., (1,2), ...), named
``ITEM_I > ITEM_J`` -- the entry is the respondent's randomized report of ``1[ITEM_I ranked above
ITEM_J] - 1/2``, so a positive value leans to ``ITEM_I`` -- and the survey's ``epsilon`` per ballot.
Numbers are written with every digit (``repr``), so the file reads back exactly.

Reading it back costs no privacy: the ballots were randomized in the respondents' browsers, so
:func:`rank_ballots` is post-processing, and its guarantee is the survey's (epsilon-local DP for
each respondent's whole ranking). It ranks as the dashboard does: the unbiased estimate
``w~ = 1/2 + mean of the reports`` ordered by exact Kemeny up to ``EXACT_KEMENY_ITEMS`` items,
else by Borda row sums.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .survey import NORM_TOLERANCE

#: between the two labels of a pair's column name
PAIR_SEPARATOR = " > "


@dataclass(frozen=True)
class Ballots:
    """Randomized ranking ballots: ``vectors[k]`` is ballot ``k``'s report, one entry per pair ``i < j``
    of ``items`` in row-major order, each ballot ``epsilon``-local DP for its respondent's ranking."""

    items: tuple
    epsilon: float
    vectors: np.ndarray


def pair_names(items) -> list[str]:
    """The column names of the pairs ``i < j`` of ``items`` in row-major order: ``ITEM_I > ITEM_J``."""
    return [f"{a}{PAIR_SEPARATOR}{b}" for k, a in enumerate(items) for b in items[k + 1:]]


def ballots_to_csv(items, vectors, epsilon: float) -> str:
    """CSV text of randomized ballots (module docstring); the rows are sorted by their content."""
    V = np.asarray(vectors, dtype=float).reshape(-1, len(pair_names(items)))
    V = V[np.lexsort(V.T[::-1])] if len(V) else V
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["user", *pair_names(items), "epsilon"])
    eps = repr(float(epsilon))
    writer.writerows([f"r{k + 1}", *map(repr, row.tolist()), eps] for k, row in enumerate(V))
    return out.getvalue()


def _items_of(names: list[str], source: str) -> tuple:
    """The items whose :func:`pair_names` are ``names``: the first item is what precedes the separator in
    every one of the first ``m - 1`` names; a label holding the separator itself can make two readings
    possible, which is refused."""
    M = len(names)
    m = (1 + math.isqrt(1 + 8 * M)) // 2
    if M < 1 or m * (m - 1) // 2 != M:
        raise InputError(f"{source}: a ballots file has one column per pair of items between user and epsilon "
                         f"(m(m-1)/2 of them for m items), not {M}")
    first, found = names[0], []
    start = first.find(PAIR_SEPARATOR)
    while start >= 0:
        head = first[:start + len(PAIR_SEPARATOR)]
        if all(n.startswith(head) for n in names[:m - 1]):
            items = (first[:start], *(n[len(head):] for n in names[:m - 1]))
            if len(set(items)) == m and pair_names(items) == names:
                found.append(items)
        start = first.find(PAIR_SEPARATOR, start + 1)
    if len(found) != 1:
        raise InputError(f"{source}: the pair columns must be named 'A{PAIR_SEPARATOR}B' for the pairs of the "
                         "items in the survey's order, as the export writes them"
                         + (" (these names can be read in two ways)" if found else ""))
    return found[0]


def read_ballots(source) -> Ballots:
    """Read a ranking survey's export (the path of its CSV file).

    Raises
    ------
    InputError
        Not that layout: other columns, a missing or non-finite number, epsilons that differ, or a
        ballot whose norm is not the one every randomized ballot of these items has at that epsilon.
    """
    from ..mechanisms.local_vectors import duchi_l2_scale

    name = str(source)
    try:
        with open(source, encoding="utf-8-sig", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        raise InputError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: cannot read the ballots ({getattr(exc, 'strerror', None) or type(exc).__name__})"
                         ) from None
    rows = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    if not rows or len(rows[0]) < 3 or rows[0][0] != "user" or rows[0][-1] != "epsilon":
        raise InputError(f"{name}: a ballots file has the columns user, one per pair of items, epsilon")
    items = _items_of(rows[0][1:-1], name)
    values = []
    for line, row in enumerate(rows[1:], start=2):
        try:
            if len(row) != len(rows[0]) or not row[0]:
                raise ValueError
            numbers = [float(v) for v in row[1:]]
        except ValueError:
            raise InputError(f"{name}, record {line}: a user, then {len(rows[0]) - 1} numbers") from None
        if not all(math.isfinite(v) for v in numbers):
            raise InputError(f"{name}, record {line}: the numbers must be finite")
        values.append(numbers)
    if not values:
        raise InputError(f"{name}: no ballot")
    table = np.array(values)
    epsilon = float(table[0, -1])
    if np.any(table[:, -1] != epsilon):
        raise InputError(f"{name}: every ballot must have the survey's one epsilon")
    M = table.shape[1] - 1
    scale = duchi_l2_scale(M, math.sqrt(M) / 2.0, epsilon)
    norms = np.linalg.norm(table[:, :-1], axis=1)
    bad = np.flatnonzero(np.abs(norms - scale) > NORM_TOLERANCE * scale)
    if bad.size:
        raise InputError(f"{name}, record {bad[0] + 2}: not a randomized ballot (its norm is not {scale:.12g}, the "
                         f"norm of every randomized ballot of {len(items)} items at epsilon {epsilon:g})")
    return Ballots(items, epsilon, table[:, :-1])


def rank_ballots(ballots):
    """The private ranking of randomized ballots (a :class:`Ballots`, or what :func:`read_ballots`
    reads): post-processing, no privacy spent; its guarantee is the survey's.

    Returns
    -------
    AggregateResult
        ``order`` (item indices, best first), ``ranking`` (labels), ``guarantee``, and in
        ``details`` the method, the number of ballots and the ``manipulation_margin`` (as the
        dashboard states it: :func:`~privrank.inference.manipulation.ballot_margin`).
    """
    from ..aggregation.kemeny_exact import exact_kemeny
    from ..aggregation.kemeny_heuristics import borda
    from ..aggregation.private_kemeny import AggregateResult
    from ..guarantees import UNIT_RANKING, Guarantee
    from ..inference.manipulation import ballot_margin
    from ..mechanisms.local_vectors import duchi_l2_scale
    from ..mechanisms.pairwise_matrix import matrix_from_upper
    from .dashboard import EXACT_KEMENY_ITEMS

    if not isinstance(ballots, Ballots):
        ballots = read_ballots(ballots)
    m = len(ballots.items)
    W = matrix_from_upper(0.5 + ballots.vectors.mean(axis=0), m)
    exact = m <= EXACT_KEMENY_ITEMS
    order = np.asarray(exact_kemeny(W) if exact else borda(W), dtype=np.int64)
    guarantee = Guarantee(epsilon=ballots.epsilon, model="local", unit=UNIT_RANKING,
                          mechanism="Duchi et al. l2 randomizer of the pairwise vector (in the respondent's browser)",
                          note="Every respondent sends one ballot; the ranking is post-processing of the ballots.")
    M = ballots.vectors.shape[1]
    norm = duchi_l2_scale(M, math.sqrt(M) / 2.0, ballots.epsilon) * (1.0 + NORM_TOLERANCE)
    margin = ballot_margin(ballots.vectors.sum(axis=0), len(ballots.vectors), ballots.items, norm,
                           "kemeny" if exact else "borda")
    return AggregateResult(order, guarantee, {"method": "exact Kemeny" if exact else "Borda row sums",
                                              "ballots": len(ballots.vectors), "manipulation_margin": margin.to_dict()},
                           items=ballots.items)
