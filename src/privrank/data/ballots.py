"""The partial-ballot policy: what happens to ballots with ties or unranked items (see :mod:`privrank.data.io`)."""
from __future__ import annotations

import numpy as np

from .._rng import as_generator
from ..errors import InputError
from .rankings import Rankings
from .tabular import MAX_EXACT_COUNT

PARTIAL_POLICIES = ("error", "drop", "randomize")


def check_ballots(labels, ballots, path) -> None:
    """Refuse ballots that name an item outside the labels or rank one twice (every reader's
    ballots pass here before anything, the ledger's fingerprint included, reads them)."""
    m = len(labels)
    for line_no, _, groups in ballots:
        flat = [i for g in groups for i in g]
        if any(i < 0 or i >= m for i in flat):
            raise InputError(f"{path}, line {line_no}: an item number is outside 1..{m}")
        if len(set(flat)) != len(flat):
            raise InputError(f"{path}, line {line_no}: an item is ranked twice")


def complete_ballots(labels, ballots, partial, rng, path) -> Rankings:
    """Apply the ``partial`` policy to checked ballots (:func:`check_ballots`) and build
    :class:`Rankings` (module docstring)."""
    m = len(labels)
    if not ballots:
        raise InputError(f"{path} holds no rankings")
    if m == 0:
        raise InputError(f"{path} names no item: every ballot is empty")
    if sum(count for _, count, _ in ballots) > MAX_EXACT_COUNT:
        raise InputError(f"{path}: the ballots' counts add up to more than 2^53 voters, which cannot be "
                         "counted exactly")
    complete_rows, complete_w = [], []
    incomplete = []  # (count, groups)
    for _, count, groups in ballots:
        flat = [i for g in groups for i in g]
        if len(flat) == m and all(len(g) == 1 for g in groups):
            complete_rows.append(flat)
            complete_w.append(count)
        else:
            incomplete.append((count, groups))
    if incomplete and partial == "error":
        raise InputError(f"{path}: some ballots have ties or unranked items, but Kemeny and "
                         "footrule aggregation need complete strict rankings; choose a policy: "
                         "partial='drop' (CLI: --partial drop) keeps only complete ballots, "
                         "partial='randomize' (CLI: --partial randomize) completes each such ballot "
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
