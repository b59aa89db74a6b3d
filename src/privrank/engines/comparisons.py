"""The ``comparisons`` kind of the engines: pairwise comparison records to a :class:`ComparisonTally`.

A partial statistic is the tally of a batch of records, with the items it saw, plus (for
randomized reports with user ids) a table of records per (user, epsilon), because the per-user
guarantee is a maximum over users of sums that may span batches. Partials add exactly: tallies
are re-indexed on the union of their items and levels and their integer counts summed; user
tables are concatenated and grouped.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..data.comparisons import (ComparisonTally, PairwiseComparisons, group_sums, max_user_epsilon,
                                sorted_labels, user_level_counts)
from ..data.io import ComparisonFile, item_list, read_comparisons
from ..errors import InputError
from ..mechanisms.randomized_response import randomize_records
from ..pairwise.local import randomized_response

CONTAINER = PairwiseComparisons
open_file = ComparisonFile
USER_TABLE_SLACK = 1 << 20


@dataclass(frozen=True, eq=False)
class Partial:
    """Tally of some records (``epsilon_per_user`` unset) and their records per (user, epsilon).

    ``users`` holds pyarrow tables with columns ``user``, ``epsilon``, ``records`` (a user may
    appear in several); it is empty when the records are raw answers or carry no user ids.
    """

    tally: ComparisonTally
    users: tuple = ()


def read(path, options) -> PairwiseComparisons:
    return read_comparisons(path, items=options.items)


def check(source, options) -> None:
    """Refuse to randomize randomized reports (``source`` is a file or in-memory data)."""
    if options.epsilon is not None and source.is_randomized:
        raise InputError("the data are randomized reports with their own epsilon column; they are "
                         "counted as they are, so give no epsilon")


def in_memory(comps: PairwiseComparisons, options, rng) -> ComparisonTally:
    """The tally of in-memory comparisons, randomized first when ``options.epsilon`` is set."""
    if options.items is not None and tuple(comps.items) != options.items:
        raise InputError("in-memory comparisons carry their own item list; build them with items=... instead")
    if options.epsilon is not None:
        comps = randomized_response(comps, options.epsilon, rng=rng)
    return comps.tally()


def partial(batch, options) -> Partial:
    """Map step: the tally of one :class:`~privrank.data.io.ComparisonBatch`."""
    items = options.items if options.items is not None else sorted_labels(batch.labels())
    a, b = batch.item_indices(items)
    values2 = batch.outcome.astype(np.int64) + 1
    epsilon = batch.epsilon
    if options.epsilon is not None:
        reports = randomize_records(values2 / 2.0, options.epsilon, options.key, batch.first_record)
        values2 = 2 * reports.astype(np.int64)
        epsilon = np.full(len(batch), options.epsilon)
    tally = ComparisonTally.from_records(items, a, b, values2, epsilon=epsilon)
    users = () if epsilon is None or batch.user is None else (_user_table(batch.user, epsilon),)
    return Partial(tally, users)


def _user_table(user, epsilon):
    import pyarrow as pa
    import pyarrow.compute as pc

    encoded = pc.dictionary_encode(user)
    who, eps, n = user_level_counts(encoded.indices.to_numpy(zero_copy_only=False), epsilon)
    return pa.table({"user": encoded.dictionary.take(pa.array(who)), "epsilon": eps, "records": n})


def combine(partials) -> Partial:
    """Exact sum of partial statistics of disjoint sets of records."""
    tallies = [p.tally for p in partials]
    items = tallies[0].items
    if any(t.items != items for t in tallies[1:]):
        items = sorted_labels(set().union(*(t.items for t in tallies)))
    levels = None if tallies[0].epsilons is None else np.unique(np.concatenate([t.epsilons for t in tallies]))
    m = len(items)
    position = {label: k for k, label in enumerate(items)}
    keys = []
    for t in tallies:  # one step per partial; within it everything is vectorised
        index = np.arange(m) if t.items == items else np.array([position[x] for x in t.items], dtype=np.int64)
        level = t.level if levels is None else np.searchsorted(levels, t.epsilons)[t.level]
        # index is increasing (sorted labels), so i < j is kept
        keys.append((level * m + index[t.i]) * m + index[t.j])
    size = (1 if levels is None else levels.size) * m * m
    keys, (n, wins2) = group_sums(np.concatenate(keys), size, np.concatenate([t.n for t in tallies]),
                                  np.concatenate([t.wins2 for t in tallies]))
    tally = ComparisonTally(items, levels, keys // (m * m), keys // m % m, keys % m,
                            n.astype(np.int64), wins2.astype(np.int64))
    return Partial(tally, _user_tables([t for p in partials for t in p.users]))


def _user_tables(tables: list) -> tuple:
    """Keep per-user tables compact: group them into one when the ungrouped rows outgrow it."""
    if len(tables) < 2:
        return tuple(tables)
    import pyarrow as pa

    rows = [t.num_rows for t in tables]
    if sum(rows) - max(rows) <= max(max(rows), USER_TABLE_SLACK):
        return tuple(tables)
    grouped = pa.concat_tables(tables, promote_options="permissive").group_by(["user", "epsilon"]) \
        .aggregate([("records", "sum")])
    return (pa.table({"user": grouped["user"], "epsilon": grouped["epsilon"], "records": grouped["records_sum"]}),)


def finish(part: Partial | None, options) -> ComparisonTally:
    """The final tally, with the per-user epsilon of randomized reports that carry user ids."""
    if part is None or part.tally.n_records == 0:
        raise InputError("the file has a header but no comparisons")
    tally = part.tally
    if tally.n_items < 2:
        raise InputError("at least two distinct items are needed to rank anything")
    if part.users:
        import pyarrow as pa
        import pyarrow.compute as pc

        users = pa.concat_tables(part.users, promote_options="permissive").combine_chunks()
        codes = pc.dictionary_encode(users["user"]).chunk(0).indices.to_numpy(zero_copy_only=False)
        per_user = max_user_epsilon(codes, users["epsilon"].to_numpy(), users["records"].to_numpy())
        tally = replace(tally, epsilon_per_user=per_user)
    return tally
