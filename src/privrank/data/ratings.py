"""Comparisons from ratings (MovieLens style ``user,item,rating``), with a declared cap per user.

A user who rated ``r`` items implies ``r (r - 1) / 2`` comparisons: the higher rating wins and
equal ratings are a tie (outcome 0, half a win each in the likelihood; randomized response
answers a tie as a fair coin). Per-user privacy needs a bound on what one user contributes,
so each user gives at most ``max_pairs`` of those pairs, chosen uniformly at random among the
user's pairs (all of them when there are no more). The choice depends on that user's ratings
only, so neighbouring data sets (one user's ratings changed) stay neighbours, and ``max_pairs``
is the declared bound a per-user guarantee uses: ``max_answers=max_pairs`` (central) or
``user_epsilon=`` (local, split over the user's pairs).
"""
from __future__ import annotations

import os
from collections.abc import Hashable, Sequence
from dataclasses import replace

import numpy as np

from .._rng import as_generator
from ..errors import InputError, check_whole
from .comparison_files import ComparisonColumns
from .comparisons import PairwiseComparisons, sorted_labels
from .arrow_columns import arrow_table, first_null, is_table, label_indices, present_labels, pyarrow_module
from .tabular import ColumnarFile, TableLike, USER_COLUMNS, item_list, pick_column

#: column names of a ratings table (matched case-insensitively)
RATING_USER_COLUMNS = (*USER_COLUMNS, "userid")
RATING_ITEM_COLUMNS = ("item", "item_id", "itemid", "movieid", "movie_id", "model")
RATING_VALUE_COLUMNS = ("rating", "score", "stars")
#: pairs per user unless told otherwise: enough to rank, small enough for a useful per-user epsilon
DEFAULT_MAX_PAIRS = 10
#: users with at most this many pairs per pair drawn have their pairs listed, then chosen
_LIST_PAIRS_FACTOR = 64


def holds_ratings(header) -> bool:
    """True when a header names a ratings table (a user, an item and a rating column) and no
    comparison layout."""
    names = [str(h).strip().lower() for h in header]
    if not all(pick_column(names, cols) for cols in (RATING_USER_COLUMNS, RATING_ITEM_COLUMNS, RATING_VALUE_COLUMNS)):
        return False
    try:
        ComparisonColumns.from_header(header, "")
    except InputError:
        return True
    return False


class RatingsFile(ColumnarFile):
    """A ratings file (CSV, Parquet, Arrow) or table in memory, read with the shared Arrow reader."""

    def __init__(self, source, *, user=None, item=None, rating=None):
        super().__init__(source)
        names = [h.strip().lower() for h in self.header]
        chosen = []
        for given, aliases, what in ((user, RATING_USER_COLUMNS, "user"), (item, RATING_ITEM_COLUMNS, "item"),
                                     (rating, RATING_VALUE_COLUMNS, "rating")):
            if given is not None:
                if not isinstance(given, str):
                    raise InputError(f"{what}= names the {what} column: give its name as text")
                if given not in self.header:
                    raise InputError(f"{self.path} has no column {given!r}")
                chosen.append(given)
                continue
            found = pick_column(names, aliases)
            if found is None:
                raise InputError(f"{self.path}: a ratings table needs a {what} column ({', '.join(aliases)})")
            chosen.append(self.header[names.index(found)])
        if len(set(chosen)) < 3:
            raise InputError("the user, item and rating columns must be different columns")
        self.names = chosen
        self.label_names = chosen[:2]

    def read(self):
        """User indices, item labels per rating, and ratings (float), in file order."""
        pa = pyarrow_module()
        parts, first = [], 0
        for batch in self.raw_batches(1 << 20):
            users, items = (self.column(batch, n) for n in self.names[:2])
            for col, what in ((users, "user id"), (items, "item")):
                missing = first_null(col)
                if missing is not None:
                    raise InputError(f"{self.where(first + missing)}: empty {what}")
            values = self._numbers(self.column(batch, self.names[2]), "rating", first)
            bad = np.flatnonzero(~np.isfinite(values))
            if bad.size:
                raise InputError(f"{self.where(first + int(bad[0]))}: the rating must be a finite number")
            parts.append((users, items, values))
            first += len(values)
        if not first:
            raise InputError(f"{self.path} has a header but no ratings")
        users = pa.chunked_array([p[0] for p in parts]).combine_chunks()
        items = pa.chunked_array([p[1] for p in parts]).combine_chunks()
        return users, items, np.concatenate([p[2] for p in parts])


def comparisons_from_ratings(source: str | os.PathLike[str] | TableLike, *, max_pairs: int = DEFAULT_MAX_PAIRS,
                             items: Sequence[Hashable] | None = None, user: str | None = None,
                             item: str | None = None, rating: str | None = None,
                             rng: int | np.random.Generator | None = None) -> PairwiseComparisons:
    """Comparisons implied by ratings, at most ``max_pairs`` per user (module docstring).

    Parameters
    ----------
    source : path or table
        A CSV, Parquet or Arrow file, or a DataFrame / Arrow table, with a user, an item and a
        rating column (found by name: ``user``/``userId``/``respondent``..., ``item``/``movieId``...,
        ``rating``/``score``), or named by ``user=``, ``item=``, ``rating=``.
    max_pairs : int
        Most pairs taken from one user: the declared per-user bound.
    items : sequence, optional
        The public item list (needed by central releases); else the rated items.
    rng : seed or numpy Generator, optional
        Chooses the pairs of users with more than ``max_pairs``.

    Returns
    -------
    PairwiseComparisons
        With a user column (the user ids), outcome 1 when ``item_a`` was rated higher, -1 when
        lower, 0 for equal ratings.

    Examples
    --------
    >>> import pyarrow as pa
    >>> import privrank as pr
    >>> ratings = pa.table({"user": [1, 1, 1, 2, 2], "item": ["a", "b", "c", "a", "c"],
    ...                     "rating": [5, 3, 3, 2, 4]})
    >>> comps = pr.comparisons_from_ratings(ratings, max_pairs=2, rng=0)
    >>> comps.n_records, comps.items, comps.pairs_from_ratings
    (3, ('a', 'b', 'c'), True)
    >>> [(comps.items[a], comps.items[b], int(o))
    ...  for a, b, o in zip(comps.item_a, comps.item_b, comps.outcome)]
    [('a', 'c', 1), ('b', 'c', 0), ('a', 'c', -1)]
    """
    k = check_whole(max_pairs, name="max_pairs")
    gen = as_generator(rng)
    if is_table(source):
        source = arrow_table(source)
    users, labels, values = RatingsFile(source, user=user, item=item, rating=rating).read()
    known = sorted_labels(set(present_labels(labels))) if items is None else item_list(items)
    user_ids = sorted_labels(set(present_labels(users)))
    u = label_indices(users, user_ids)
    try:
        x = label_indices(labels, known)
    except InputError:
        raise InputError("a rating names an item that is not in the given item list") from None
    order = np.lexsort((x, u))
    u, x, values = u[order], x[order], values[order]
    if np.any((u[1:] == u[:-1]) & (x[1:] == x[:-1])):
        raise InputError("a user rated the same item twice; keep one rating per user and item")
    starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
    ends = np.r_[starts[1:], u.size]
    firsts, seconds = [], []
    for s, e in zip(starts, ends):
        i, j = _user_pairs(e - s, k, gen)
        firsts.append(s + i)
        seconds.append(s + j)
    a = np.concatenate(firsts) if firsts else np.zeros(0, np.int64)
    b = np.concatenate(seconds) if seconds else np.zeros(0, np.int64)
    if not a.size:
        raise InputError("no user rated two items: ratings give comparisons only between a user's own items")
    outcome = np.sign(values[a] - values[b]).astype(np.int8)
    ia, ib = x[a], x[b]
    if items is None:  # the items of the pairs taken, as for any comparisons read without an item list
        used = np.unique(np.concatenate([ia, ib]))
        known = tuple(known[k] for k in used)
        ia, ib = np.searchsorted(used, ia), np.searchsorted(used, ib)
    comps = PairwiseComparisons.from_indices(known, ia, ib, outcome, user=u[a], users=user_ids,
                                             items_declared=items is not None)
    return replace(comps, pairs_from_ratings=True)


def _user_pairs(r: int, k: int, gen) -> tuple[np.ndarray, np.ndarray]:
    """At most ``k`` distinct pairs ``i < j`` of ``r`` items, uniformly at random among all pairs."""
    total = r * (r - 1) // 2
    if total <= k:
        return np.triu_indices(r, 1)
    if total <= _LIST_PAIRS_FACTOR * k:
        i, j = np.triu_indices(r, 1)
        pick = np.sort(gen.choice(total, size=k, replace=False))
        return i[pick], j[pick]
    chosen: dict[tuple[int, int], None] = {}  # in draw order: uniform draws with repeats skipped give a uniform set of k pairs
    while len(chosen) < k:
        i, j = gen.integers(0, r, size=(2, 2 * (k - len(chosen))))
        for p, q in zip(i.tolist(), j.tolist()):
            if p != q and len(chosen) < k:
                chosen.setdefault((min(p, q), max(p, q)), None)
    pairs = np.array(list(chosen), dtype=np.int64)
    return pairs[:, 0], pairs[:, 1]
