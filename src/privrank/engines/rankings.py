"""The ``rankings`` kind of the engines: complete rankings to a :class:`~privrank.data.rankings.RankingTally`.

A partial statistic of some voters holds their number, the item labels and, as int64 arrays
that add up exactly in any order and grouping, the statistics asked for: the pairwise counts
``N[i, j]`` (voters placing ``i`` before ``j``), the position counts ``counts[q, x]``, or the
fixed-point sum of the voters' local reports of one of them. Every ballot of a complete profile
names every item, so all partials with voters carry the same labels; partials that do not are
refused (some ballot is incomplete).

Local randomization is per voter: voter ``v`` of the file (voters numbered in file order, a row
of count ``c`` holding ``c`` of them) randomizes its own vector with the ``v``-th block of the
counter-based stream under the key (:func:`~privrank.mechanisms.local_vectors.duchi_l2_records`),
exactly as :func:`~privrank.aggregation.private_kemeny.ldp_matrix` and
:func:`~privrank.aggregation.private_footrule.ldp_footrule` randomize voter ``v`` of an
in-memory profile, so the release is the same whatever the engine and the partitioning.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._rng import is_seeded
from ..data.io import RANKING_BATCH_CELLS, RankingFile, different_items_error, read_rankings
from ..data.rankings import TALLY_STATISTICS, Rankings, RankingTally, position_counts, positions_of
from ..errors import InputError
from ..mechanisms.pairwise_matrix import local_pair_reports
from ..mechanisms.randomized_response import record_key
from ..mechanisms.tree import DEFAULT_KAPPA, local_footrule_reports, tree_layout

KIND = "rankings"
CONTAINER = Rankings


def open_file(path, options=None) -> RankingFile:
    return RankingFile(path)


@dataclass(frozen=True, eq=False)
class Partial:
    """Statistics of ``n`` voters over ``items`` (``()`` when ``n`` is 0); arrays not asked for are None."""

    items: tuple
    n: int
    pair_counts: np.ndarray | None = None
    position_counts: np.ndarray | None = None
    reports: np.ndarray | None = None


def read(path, options) -> Rankings:
    return read_rankings(path)


def item_list(items):
    raise InputError("every ballot names every item, so the item list comes from the file (sorted labels, "
                     "or the item columns of a rank-layout file): give no items")


def check(source, options) -> None:
    """Refuse statistics and local randomizations that do not exist."""
    if options.statistic is not None and options.statistic not in TALLY_STATISTICS:
        raise InputError(f"statistic must be one of {', '.join(TALLY_STATISTICS)} (or None for both)")
    if options.epsilon is not None and options.statistic is None:
        raise InputError("with epsilon every voter randomizes one vector: give statistic='pairwise' "
                         "(ldp-matrix) or statistic='positions' (ldp-footrule)")
    if options.kappa is not None and (options.epsilon is None or options.statistic != "positions"):
        raise InputError("kappa is the tree weight of randomized positions: it needs epsilon and "
                         "statistic='positions'")


def _kappa(options) -> float:
    return DEFAULT_KAPPA["local"] if options.kappa is None else float(options.kappa)


def in_memory(R: Rankings, options, rng) -> RankingTally:
    """The tally of an in-memory profile; its voters are records ``0 .. n-1``. It keeps the
    profile's provenance marks, which private algorithms check on the tally as on the profile."""
    if options.epsilon is not None:
        options = replace(options, key=record_key(rng), seeded=is_seeded(rng))
    tally = finish(_counted(R.items, R.orders, R.weights, 0, options), options)
    return replace(tally, items_declared=R.items_declared, selected=R.selected)


def records(batch) -> int:
    """Voters of a batch (a row of count 0 holds none)."""
    return batch.n_voters


def partial(batch, options) -> Partial:
    """Map step: the partial statistic of one :class:`~privrank.data.io.RankingBatch`."""
    return _counted(batch.items, batch.orders, batch.weights, batch.first_voter, options)


def _counted(items, orders, weights, first_voter: int, options) -> Partial:
    if not weights.size:
        return Partial((), 0)
    stat = options.statistic
    if options.epsilon is None:
        pair = None if stat == "positions" else \
            Rankings.from_orders(orders, items=items, weights=weights).pairwise_counts()
        pos = None if stat == "pairwise" else position_counts(positions_of(orders), weights)
        return Partial(tuple(items), int(weights.sum()), pair, pos)
    m = orders.shape[1]
    layout = tree_layout(m, _kappa(options)) if stat == "positions" else None
    total = None
    for first, voters in _voters(orders, weights, max(1, RANKING_BATCH_CELLS // m)):
        if stat == "pairwise":
            part = local_pair_reports(voters, options.epsilon, options.key, first_voter + first)
        else:
            assert layout is not None  # statistic 'positions', the only other one with an epsilon
            part = local_footrule_reports(positions_of(voters), layout, options.epsilon, options.key,
                                          first_voter + first)
        total = part if total is None else total + part
    return Partial(tuple(items), int(weights.sum()), reports=total)


def _voters(orders, weights, block: int):
    """``(offset, orders)`` of consecutive blocks of at most ``block`` voters (rows repeated by count)."""
    ends = np.cumsum(weights)
    for start in range(0, int(ends[-1]), block):  # blocks of voters, each vectorised
        rows = np.searchsorted(ends, np.arange(start, min(start + block, int(ends[-1]))), side="right")
        yield start, orders[rows]


def combine(partials) -> Partial:
    """Exact sum of partial statistics of disjoint sets of voters."""
    parts = [p for p in partials if p.n]
    if not parts:
        return partials[0]
    items = parts[0].items
    if any(p.items != items for p in parts[1:]):
        raise different_items_error()

    def total(name):
        arrays = [getattr(p, name) for p in parts]
        if arrays[0] is None:
            return None
        out = arrays[0].copy()
        for a in arrays[1:]:  # one step per partial
            out += a
        return out
    return Partial(items, sum(p.n for p in parts), total("pair_counts"), total("position_counts"),
                   total("reports"))


def finish(part: Partial | None, options) -> RankingTally:
    """The final tally."""
    if part is None or not part.n:
        raise InputError("the file has a header but no rankings")
    local = options.epsilon is not None
    return RankingTally(part.items, part.n, part.pair_counts, part.position_counts, part.reports,
                        statistic=options.statistic if local else None, epsilon=options.epsilon,
                        kappa=_kappa(options) if local and options.statistic == "positions" else None,
                        seeded=options.seeded)
