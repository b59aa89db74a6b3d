"""The ledger's identity of a data set, computed from its records: fingerprints and a similarity sketch.

The privacy ledger (:mod:`privrank.ledger`) stores budgets and releases; this module says which
data set a release reads. :func:`identify` reads the records once (in memory, or streamed from a
file batch by batch, vectorised) and returns an :class:`Identity` of four parts:

``labels``
    The fingerprint (:func:`fingerprint`): the multiset of records with every label
    *normalised* (:func:`normalise_label`: Unicode NFKC, case folded, surrounding whitespace
    stripped), so ``"Apple"``, ``"APPLE "`` and ``"apple"`` are one item to the ledger.
``legacy``
    The same multiset with the labels as written: the fingerprint of ledgers written before the
    labels were normalised, by which their data sets are still found.
``structure``
    A label-free fingerprint, the same under any renaming of items and users (a bijection on the
    labels): colour refinement (Weisfeiler--Leman, :data:`ROUNDS` rounds) of the graph the records
    draw -- for comparisons the item multigraph with outcome-directed edges, for ratings the
    user--item graph with ratings on its edges -- hashed as the multiset of final colours; for
    rankings each item's histogram of (place, ballot length). Isomorphic data sets share it; two
    different data sets that colour refinement cannot tell apart share it too, and are then
    charged to one budget: a refusal the ledger need not make, never a release it should refuse.
``sketch``
    A MinHash sketch (one-permutation hashing into :data:`SKETCH_BINS` bins) of the records as a
    set, by which a data set that shares most of its records with another is recognised
    (:func:`shared`). Its elements are the data set's units: each user's records (the user's
    distinct records, minhashed, so that rows doubled leave the user unchanged and the user's id
    plays no part), else each record or ballot, the ``j``-th copy of an identical one being its
    own element (``j`` below :data:`COPIES`), so that doubled rows are seen.

``users`` and ``legacy_users`` are :func:`users_digest` of comparisons with a user column (with
normalised and as-written item labels). Every part is a sum over records (mod 2^64) or a minimum,
so a file is identified streamed in bounded memory per distinct user, record cell and ballot.
"""
from __future__ import annotations

import hashlib
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .data.comparisons import PairwiseComparisons
from .errors import InputError

#: rounds of colour refinement of the structural fingerprint
ROUNDS = 3
#: bins of the MinHash sketch
SKETCH_BINS = 128
#: copies of one identical record (or user, ballot) that the sketch tells apart
COPIES = 1024
#: a data set sharing at least this share of the smaller one's sketched records with a budgeted
#: data set is refused as its near-duplicate (:func:`shared`)
NEAR_DUPLICATE = 0.5
_EMPTY = np.uint64(2 ** 64 - 1)
_VALUE_BITS = np.uint64(64 - 7)  # 2 ** 7 = SKETCH_BINS
_K = [np.uint64(k) for k in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                             0xBF58476D1CE4E5B9, 0x94D049BB133111EB, 0x2545F4914F6CDD1D, 0x9FB21C651E98DF25)]


@dataclass(frozen=True, eq=False)
class Identity:
    """What the ledger knows a data set by (see the module docstring); from :func:`identify`."""

    labels: str
    legacy: str
    structure: str
    sketch: np.ndarray
    size: int
    users: str | None = None
    legacy_users: str | None = None


def normalise_label(label) -> str:
    """A label as the ledger compares it: its text (as Python writes the value), NFKC-normalised,
    case folded and stripped of surrounding whitespace.

    >>> normalise_label("  Ｃafé ") == normalise_label("CAFÉ") == "café"
    True
    """
    text = unicodedata.normalize("NFKC", str(label)).casefold()
    return unicodedata.normalize("NFKC", text).strip()


def fingerprint(data) -> str:
    """SHA-256 identifying a data set by its records, whatever their order, file or labels' case.

    Comparisons: each record is (the pair's two item labels, the outcome seen from one of
    them), so row order, the orientation of a pair, the file format, column names, items that
    never occur, and the user and epsilon columns do not change the fingerprint -- dropping or
    renaming a column does not give a data set a fresh budget -- and one changed answer does.
    (Two data sets with the same answers by different users share a fingerprint, and so a
    budget: the ledger over-counts, the safe side.) A row of count ``c`` (a file's multiplicity
    column) is ``c`` records, so a counted file and its rows repeated are one data set; a table of
    per-pair counts (:mod:`privrank.data.pair_count_files`) is the comparisons it counts. Rankings:
    each voter's ballot is the set of (item label, place) of the items it ranks (tied items share a
    place); :class:`~privrank.data.rankings.Rankings` in memory and a file of the same complete
    ballots have the same fingerprint. Ratings: each user's set of (item, rating), whatever the user's
    id. Labels are compared normalised (:func:`normalise_label`). The records are combined as a
    multiset: the sum over records (mod 2^64) of a 64-bit digest of each record, and their
    number; a file is streamed batch by batch in bounded memory (without pyarrow, a CSV file is
    read whole), with the same result as for the data in memory; a data set of many files (a
    directory or glob pattern, :mod:`privrank.data.parts`) has the fingerprint of the one file
    that concatenates them. A path holds rankings or comparisons as
    :func:`~privrank.data.io.holds_rankings` decides. The ledger knows a data set
    by more than this (:func:`identify`).
    """
    return identify(data).labels


def users_digest(data) -> str | None:
    """SHA-256 of how the records of comparisons group into users, whatever the users' ids and the
    records' order: the multiset over users of each user's multiset of records (the records as
    :func:`fingerprint` digests them). None for data without a user column, and for rankings and
    ratings (a ranking is its own unit; a ratings fingerprint already holds each user's records).

    The fingerprint leaves the user column out, so that renaming users keeps a data set's budget;
    this digest tells a budget per user whether the people are still grouped as when it was set
    (:meth:`~privrank.ledger.Ledger.record`): a copy whose records were regrouped (each its own
    "user", say) has the same fingerprint, and a per-user release on it would state a per-user
    epsilon for users who are not the people. Users are told apart by their ids as written, as a
    release counts them."""
    return identify(data).users


def identify(data) -> Identity:
    """The :class:`Identity` of comparisons, rankings or ratings (in memory, a file or a DataFrame), in one pass."""
    if isinstance(data, PairwiseComparisons):
        acc = _Comparisons()
        labels = _label_digests(data.items)
        users = None if data.user is None or data.users is None else (data.user, np.arange(len(data.users)))
        acc.add(labels, labels, data.item_a, data.item_b, data.outcome, users)
        return acc.identity()
    from .data.rankings import Rankings

    if isinstance(data, Rankings):
        ranked = _Rankings()
        ranked.add_orders(data.items, data.orders, data.weights)
        return ranked.identity()
    from .data.parts import DataParts, data_source
    from .data.pinned import PinnedFile
    from .data.arrow_columns import is_table

    table = is_table(data)  # a DataFrame is read as the file of the same columns would be
    if table or isinstance(data, (str, Path, PinnedFile, DataParts)):
        return _identify_file(data if table else data_source(data), table)
    raise InputError("the ledger identifies a data set by its records: give the comparisons or rankings "
                     "themselves (in memory, a file or a DataFrame), not counts or statistics of them")


def _identify_file(data, table: bool) -> Identity:
    from .data.io import (PREFLIB_SUFFIXES, ComparisonFile, RankingFile, file_format, holds_rankings,
                          read_ballots, read_comparisons)
    from .data.pair_count_files import PairCountFile, holds_pair_count_table
    from .data.ratings import holds_ratings
    from .data.parts import file_suffix
    from .data.tabular import ColumnarFile

    columnar = table or file_suffix(data) not in PREFLIB_SUFFIXES and file_format(data) != "csv"
    if holds_pair_count_table(data):
        compared = _Comparisons()  # per-pair counts: the comparisons they stand for
        for batch in PairCountFile(data).record_batches():
            compared.add_batch(batch)
        return compared.identity()
    rankings = holds_rankings(data)
    if columnar and rankings:  # complete rankings, streamed batch by batch
        acc = _Rankings()
        for batch in RankingFile(data).batches():
            if batch.weights.size:
                acc.add_orders(batch.items, batch.orders, batch.weights)
        return acc.identity()
    if rankings:
        labels, ballots = read_ballots(data)
        acc = _Rankings()
        acc.add(_label_digests(labels), np.array([i for _, _, groups in ballots for g in groups for i in g], np.int64),
                np.array([p for _, _, groups in ballots for p, g in enumerate(groups) for _ in g], np.int64),
                np.array([sum(len(g) for g in groups) for _, _, groups in ballots], np.int64),
                np.array([c for _, c, _ in ballots], np.int64))
        return acc.identity()
    try:
        if holds_ratings(ColumnarFile(data).header):
            return _ratings_identity(data)
        compared = _Comparisons()
        for batch in ComparisonFile(data).batches():
            compared.add_batch(batch)
    except InputError as exc:
        if "need pyarrow" not in str(exc):
            raise
        return identify(read_comparisons(data))
    return compared.identity()


def records_digest(batch) -> tuple[int, int]:
    """What one validated batch of a comparisons or rankings file adds to :func:`fingerprint`:
    the sum (mod 2^64) of its records' digests and their number (a row of count ``c`` being ``c``
    records, as repeated rows are). The parts of a file's batches, added up, give its fingerprint
    (:func:`digest_fingerprint`) however the file is split."""
    from .data.io import ComparisonBatch

    if isinstance(batch, ComparisonBatch):
        compared = _Comparisons(labels_only=True)
        for piece in batch.pieces():  # a row of count c is c records
            compared.add_batch(piece)
        return compared.total[0], compared.count
    ranked = _Rankings(labels_only=True)
    if batch.weights.size:
        ranked.add_orders(batch.items, batch.orders, batch.weights)
    return ranked.total[0], ranked.count


def digest_fingerprint(total: int, count: int, kind: str) -> str:
    """The fingerprint of a data set of ``kind`` (comparisons or rankings) from its :func:`records_digest` sums."""
    return _fingerprint_text(total % 2 ** 64, count, kind)


def shared(sketch, size: int, sketches, sizes) -> np.ndarray:
    """Estimated share of the smaller data set's elements that a data set (``sketch`` over ``size``
    elements) has in common with each of others (rows of ``sketches``, ``sizes``): the MinHash
    estimate of the Jaccard index ``J`` (equal minima among the bins either fills), turned into
    the containment ``J (|A| + |B|) / ((1 + J) min(|A|, |B|))``. The standard error of ``J`` is
    about ``sqrt(J (1 - J) / 128)``, under 0.045."""
    sketches, sizes = np.atleast_2d(sketches), np.asarray(sizes, dtype=np.float64)
    filled = (sketches != _EMPTY) | (sketch != _EMPTY)
    either = filled.sum(axis=1)
    jaccard = ((sketches == sketch) & (sketch != _EMPTY)).sum(axis=1) / np.maximum(either, 1)
    smaller = np.maximum(np.minimum(sizes, size), 1)
    return np.minimum(jaccard * (sizes + size) / ((1 + jaccard) * smaller), 1.0)


#: the batches' parts of a fingerprint are merged past this many entries (and twice their last merged size)
MERGE_ENTRIES = 1 << 20


class _Comparisons:
    """The parts of an :class:`Identity` of comparisons, added up batch by batch.

    Each batch is reduced to its (pair, outcome) cells first: every record digest is computed
    once per cell (with normalised and as-written labels) and gathered back to the records only
    for the per-user parts. ``labels_only``: the labelled sums alone (a worker's share of a file).
    """

    def __init__(self, labels_only: bool = False):
        self.labels_only = labels_only
        self.total, self.count = [0, 0], 0  # sums of record digests: normalised, as written
        self.cells: list[tuple] = []  # per batch, the arrays of its (pair, outcome) cells
        self.users: list[tuple] = []  # per batch, the arrays of its users' digests
        self.merged = [0, 0]  # entries of cells and users at their last merge (see _merge)

    def add_batch(self, batch) -> None:
        """A validated :class:`~privrank.data.io.ComparisonBatch` (a self-comparison is refused here);
        a batch with ``counts`` and no users (a counts table's rows) is added row by row, each row
        weighing as many records as its count."""
        from .data.arrow_columns import dictionary_encoded

        (la, a), (lb, b) = (_encoded(col) for col in (batch.item_a, batch.item_b))
        batch.distinct(la[1][a], lb[1][b])  # a self-comparison is refused here, before the release reads (and pays)
        users = None
        if batch.user is not None and not self.labels_only:
            encoded = dictionary_encoded(batch.user)
            users = (encoded.indices.to_numpy(zero_copy_only=False), encoded.dictionary)
        assert batch.counts is None or batch.user is None, "a batch with users is added record by record"
        self.add(la, lb, a, b, batch.outcome, users, batch.counts)

    def add(self, la, lb, a, b, outcome, users=None, weights=None) -> None:
        """Records ``(a, b, outcome)``, ``a`` and ``b`` codes into labels ``la``, ``lb`` (pairs of
        digest arrays: normalised, as written); ``users``: (user codes, the user ids they index: an
        array, numpy for data in memory, pyarrow for a file's batches, whose equal ids are one user);
        ``weights`` (without users): how many records each stands for, whole numbers."""
        n = int(outcome.size)
        if not n:
            return
        nb = np.int64(len(lb[0]))
        idx = (a.astype(np.int64) * nb + b) * 3 + (outcome.astype(np.int64) + 1)
        span = int(len(la[0]) * nb * 3)
        if span <= max(4 * n, 1 << 16):  # few cells beside the records: count them in one pass
            counts = np.bincount(idx, weights, minlength=span).astype(np.int64)  # exact: weights sum below 2^53
            present = np.flatnonzero(counts)
            counts = counts[present]
            where = None
            if users is not None:
                where = np.zeros(span, dtype=np.int64)
                where[present] = np.arange(present.size)
                where = where[idx]
        else:
            present, where, counts = np.unique(idx, return_inverse=True, return_counts=True)
            if weights is not None:
                counts = np.bincount(where, weights, present.size).astype(np.int64)
                present, counts = present[counts > 0], counts[counts > 0]
        pair, o = np.divmod(present, 3)
        ca, cb = np.divmod(pair, nb)
        o = o - 1
        weights = counts.astype(np.uint64)
        x_norm = _record_digests(la[0][ca], lb[0][cb], o)
        x_raw = _record_digests(la[1][ca], lb[1][cb], o)
        with np.errstate(over="ignore"):
            self.total = [(t + int((x * weights).sum(dtype=np.uint64))) % 2 ** 64 for t, x in zip(self.total,
                                                                                             (x_norm, x_raw))]
        self.count += n if weights is None else int(counts.sum())
        if self.labels_only:
            return
        da, db = la[0][ca], lb[0][cb]
        swap = da > db
        self.cells.append((np.where(swap, db, da), np.where(swap, da, db), np.where(swap, -o, o).astype(np.int8),
                           counts.astype(np.int64)))
        if users is not None:
            code, ids = users
            per_user = [_sums_by(code, x[where], len(ids)) for x in (x_norm, x_raw)]
            sizes = np.bincount(code, minlength=len(ids))
            mins = _group_minima(code, x_norm[where], len(ids))
            kept = np.flatnonzero(sizes)
            self.users.append((ids.take(kept), *(s[kept] for s in per_user), sizes[kept], *(m[kept] for m in mins)))
        self._merge()

    def _merge(self) -> None:
        """Merge the batches' cells (users) into one part when they have grown past twice their size at
        the last merge (and ``MERGE_ENTRIES``): memory then grows with the distinct cells and users,
        not with the number of batches. Sums add and minima are kept, so merging in steps changes nothing."""
        for k, (parts, merged) in enumerate(((self.cells, _merged_cells), (self.users, _merged_users))):
            entries = sum(len(part[-1]) for part in parts)
            if len(parts) > 1 and entries > 2 * self.merged[k] + MERGE_ENTRIES:
                parts[:] = [merged(parts)]
                self.merged[k] = len(parts[0][-1])

    def identity(self) -> Identity:
        lo, hi, o, counts = _merged_cells(self.cells)
        structure = _comparisons_structure(lo, hi, o, counts, self.count)
        users = legacy_users = None
        if self.users:
            ids, s_norm, s_raw, sizes, m1, m2 = _merged_users(self.users)  # a user's parts from every batch
            n = len(ids)
            users, legacy_users = (_fingerprint_text(_users_total(s, sizes), n, "users") for s in (s_norm, s_raw))
            sketch, size = _sketch(*np.unique(_user_keys(m1, m2), return_counts=True))
        else:
            sketch, size = _sketch(_record_digests(lo, hi, o), counts)
        return Identity(_fingerprint_text(self.total[0], self.count), _fingerprint_text(self.total[1], self.count),
                        structure, sketch, size, users, legacy_users)


def _merged_users(users) -> tuple:
    """The parts of users' digests (:meth:`_Comparisons.add`) merged, one entry per user: ``(ids,
    normalised sums, sums as written, sizes, first minima, second minima)``, sums added mod 2^64."""
    parts = list(zip(*users))
    s_norm, s_raw, sizes, m1, m2 = (np.concatenate(x) for x in parts[1:])
    ids, group = _merged_ids(parts[0])
    n = len(ids)
    mins = [np.full(n, _EMPTY) for _ in range(2)]
    for m, part in zip(mins, (m1, m2)):
        np.minimum.at(m, group, part)
    return (ids, _sums_by(group, s_norm, n), _sums_by(group, s_raw, n),
            np.bincount(group, weights=sizes, minlength=n).astype(np.int64), *mins)


def _merged_ids(parts) -> tuple:
    """``(ids, group)``: the distinct ids in arrays ``parts`` (numpy, or pyarrow arrays of one type)
    and each id's index among them, so that one user's parts in several batches add up."""
    if isinstance(parts[0], np.ndarray):
        return np.unique(np.concatenate(parts), return_inverse=True)
    from .data.arrow_columns import pyarrow_module
    import pyarrow.compute as pc

    pa = pyarrow_module()
    encoded = pc.dictionary_encode(pa.concat_arrays([p.cast(parts[0].type) for p in parts]))
    return encoded.dictionary, encoded.indices.to_numpy(zero_copy_only=False)


def _merged_cells(cells):
    """The (pair, outcome) cells of every batch with their counts added: ``(lo, hi, outcome, counts)``.
    One batch's cells are merged too: its cells ``(a, b, 1)`` and ``(b, a, -1)`` are one record."""
    if not cells:
        empty = np.zeros(0, dtype=np.uint64)
        return empty, empty, np.zeros(0, dtype=np.int8), np.zeros(0, dtype=np.int64)
    lo, hi, o, counts = (np.concatenate(x) for x in zip(*cells))
    order = np.lexsort((o, hi, lo))
    lo, hi, o, counts = lo[order], hi[order], o[order], counts[order]
    start = np.flatnonzero(np.concatenate([[True], (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1]) | (o[1:] != o[:-1])]))
    return lo[start], hi[start], o[start], np.add.reduceat(counts, start)


def _comparisons_structure(lo, hi, o, counts, n: int) -> str:
    """Colour refinement of the item multigraph: each item's colour is refined by the multiset of
    (its neighbour's colour, the outcome seen from the item) over its records."""
    nodes, ends = np.unique(np.concatenate([lo, hi]), return_inverse=True)
    a, b = ends[:lo.size], ends[lo.size:]
    colour = np.zeros(nodes.size, dtype=np.uint64)
    weights = counts.astype(np.uint64)
    o = o.astype(np.int64)
    seen_a, seen_b = ((o + 2).astype(np.uint64) * _K[1]), ((2 - o).astype(np.uint64) * _K[1])  # outcome per side
    with np.errstate(over="ignore"):
        for _ in range(ROUNDS):
            heard = np.concatenate([_mix((colour[b] * _K[0]) ^ seen_a), _mix((colour[a] * _K[0]) ^ seen_b)])
            colour = _mix((colour * _K[2]) ^ _sums_by(ends, heard * np.concatenate([weights, weights]), nodes.size))
        total = int(_mix(colour ^ _K[3]).sum(dtype=np.uint64))
    return _fingerprint_text(total, n, "structure of comparisons")


def _ratings_identity(path) -> Identity:
    """Identity of a ratings file: each user's set of (item, rating) records, as a multiset over users,
    so that neither the order of the records nor the users' ids (renamed, re-typed) change it.
    The pairs a run draws from the ratings change from run to run; the data set does not."""
    from .data.ratings import RatingsFile
    from .data.arrow_columns import dictionary_encoded

    users, items, values = RatingsFile(path).read()
    user = dictionary_encoded(users).indices.to_numpy(zero_copy_only=False)
    (item_norm, item_raw), item = _encoded(items)
    sizes = np.bincount(user)
    bits = (values + 0.0).view(np.uint64) * _K[1]  # -0.0 as 0.0
    with np.errstate(over="ignore"):
        x_norm, x_raw = (_mix((labels[item] * _K[0]) ^ bits) for labels in (item_norm, item_raw))
    labels, legacy = (_fingerprint_text(_users_total(_sums_by(user, x, sizes.size), sizes), int(values.size),
                                        "ratings") for x in (x_norm, x_raw))
    keys, item = np.unique(item_norm[item], return_inverse=True)  # items by their normalised labels
    user_colour, item_colour = np.zeros(sizes.size, dtype=np.uint64), np.zeros(keys.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for _ in range(ROUNDS):
            user_colour, item_colour = (
                _mix((user_colour * _K[2]) ^ _sums_by(user, _mix((item_colour[item] * _K[0]) ^ bits), sizes.size)),
                _mix((item_colour * _K[3]) ^ _sums_by(item, _mix((user_colour[user] * _K[4]) ^ bits), keys.size)))
        total = int((_mix(user_colour[sizes > 0] ^ _K[5]).sum(dtype=np.uint64)
                     + _mix(item_colour ^ _K[6]).sum(dtype=np.uint64)))
    structure = _fingerprint_text(total, int(values.size), "structure of ratings")
    mins = _group_minima(user, x_norm, sizes.size)
    sketch, size = _sketch(*np.unique(_user_keys(*(m[sizes > 0] for m in mins)), return_counts=True))
    return Identity(labels, legacy, structure, sketch, size)


class _Rankings:
    """The parts of an :class:`Identity` of ballots, added up batch by batch."""

    def __init__(self, labels_only: bool = False):
        self.labels_only = labels_only
        self.total, self.count = [0, 0], 0
        self.ballots: list[tuple[np.ndarray, np.ndarray]] = []  # per batch: ballot digests, voters
        self.items: list[tuple[np.ndarray, np.ndarray]] = []  # per batch: label digests, their place sums

    def add_orders(self, items, orders, weights) -> None:
        """Complete rankings: ``orders`` (best first) over ``items``, ``weights`` voters each."""
        k, m = orders.shape
        self.add(_label_digests(items), np.asarray(orders).ravel(), np.tile(np.arange(m), k), np.full(k, m),
                 np.asarray(weights))

    def add(self, labels, items, places, sizes, counts) -> None:
        """Ballots given flat: ``items[k]`` ranked at ``places[k]``, ``sizes[b]`` entries per ballot in
        ballot order, ``counts[b]`` voters per ballot; ``labels`` the item label digests (normalised,
        as written)."""
        counts = counts.astype(np.uint64)
        digests = [_ballot_digests(x, items, places, sizes) for x in labels]
        with np.errstate(over="ignore"):
            self.total = [(t + int((d * counts).sum(dtype=np.uint64))) % 2 ** 64 for t, d in zip(self.total, digests)]
        self.count += int(counts.sum())
        if self.labels_only:
            return
        keys, where = np.unique(digests[0], return_inverse=True)
        self.ballots.append((keys, np.bincount(where, weights=counts, minlength=keys.size).astype(np.int64)))
        weight = np.repeat(counts, sizes)
        with np.errstate(over="ignore"):
            seen = _mix(((places.astype(np.uint64) + np.uint64(1)) * _K[1]) ^ (np.repeat(sizes, sizes).astype(np.uint64)
                                                                             * _K[2])) * weight
        self.items.append((labels[0], _sums_by(items, seen, len(labels[0]))))

    def identity(self) -> Identity:
        none = (np.zeros(0, np.uint64),) * 2
        ballots, counts = (np.concatenate(x) for x in zip(*self.ballots)) if self.ballots else none
        ballots, where = np.unique(ballots, return_inverse=True)
        counts = np.bincount(where, weights=counts, minlength=ballots.size).astype(np.int64)
        keys, sums = (np.concatenate(x) for x in zip(*self.items)) if self.items else none
        keys, where = np.unique(keys, return_inverse=True)
        with np.errstate(over="ignore"):
            total = int(_mix(_sums_by(where, sums, keys.size) ^ _K[3]).sum(dtype=np.uint64))
        return Identity(_fingerprint_text(self.total[0], self.count, "rankings"),
                        _fingerprint_text(self.total[1], self.count, "rankings"),
                        _fingerprint_text(total, self.count, "structure of rankings"), *_sketch(ballots, counts))


def _ballot_digests(labels, items, places, sizes) -> np.ndarray:
    """The 64-bit digest of each ballot given flat (:meth:`_Rankings.add`); ``labels`` one digest array."""
    with np.errstate(over="ignore"):
        x = _mix((labels[items] * _K[0]) ^ ((places.astype(np.uint64) + np.uint64(1)) * _K[1]))
        ends = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(x, dtype=np.uint64)])  # mod 2^64
        bounds = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)])
        return _mix((ends[bounds[1:]] - ends[bounds[:-1]]) ^ (sizes.astype(np.uint64) * _K[2]))


def _sketch(keys, counts) -> tuple[np.ndarray, int]:
    """One-permutation MinHash of the elements ``(key, j)``, ``j`` below ``min(count, COPIES)``:
    each element's hash picks a bin (its top 7 bits) and the bin keeps the least of the rest."""
    reps = np.minimum(np.asarray(counts, dtype=np.int64), COPIES)
    key = np.repeat(np.asarray(keys, dtype=np.uint64), reps)
    copy = np.arange(key.size, dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    with np.errstate(over="ignore"):
        h = _mix(key ^ _mix((copy.astype(np.uint64) + np.uint64(1)) * _K[7]))
    sketch = np.full(SKETCH_BINS, _EMPTY)
    np.minimum.at(sketch, (h >> _VALUE_BITS).astype(np.intp), h & ((np.uint64(1) << _VALUE_BITS) - np.uint64(1)))
    return sketch, int(key.size)


def _group_minima(group, digests, n: int) -> list[np.ndarray]:
    """Per group ``0 .. n-1``, the least of two salted hashes of its members' ``digests`` (a MinHash of
    the group's distinct records, unchanged by repeats)."""
    out = []
    with np.errstate(over="ignore"):
        for salt in _K[4:6]:
            m = np.full(n, _EMPTY)
            np.minimum.at(m, group, _mix(digests ^ salt))
            out.append(m)
    return out


def _user_keys(m1, m2) -> np.ndarray:
    """A user's element of the sketch: the two minima of :func:`_group_minima` in one 64-bit key."""
    with np.errstate(over="ignore"):
        return _mix(m1 ^ _mix(m2 * _K[6]))


def _encoded(labels) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """``((normalised, as written), codes)``: digests of the distinct labels of a pyarrow array and
    each record's code into them. A label that is not text is written as Python writes its value,
    as for the data in memory (Arrow writes the float 1.0 as ``1``, Python and a CSV file as ``1.0``)."""
    from .data.arrow_columns import dictionary_encoded

    encoded = dictionary_encoded(labels)
    return _label_digests(encoded.dictionary.to_pylist()), encoded.indices.to_numpy(zero_copy_only=False)


def _label_digests(labels) -> tuple[np.ndarray, np.ndarray]:
    """Digests of labels (:func:`_text_digests`): normalised (:func:`normalise_label`), and as written."""
    texts = [str(x) for x in labels]
    raw = _text_digests(texts)
    normalised = [normalise_label(t) for t in texts]
    changed = [k for k, (t, n) in enumerate(zip(texts, normalised)) if t != n]
    norm = raw.copy()
    if changed:
        norm[changed] = _text_digests([normalised[k] for k in changed])
    return norm, raw


def _text_digests(texts) -> np.ndarray:
    """A 64-bit digest of each string (blake2b of its UTF-8 bytes)."""
    return np.array([int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little")
                     for t in texts], dtype=np.uint64)


def _record_digests(a, b, outcome) -> np.ndarray:
    """The 64-bit digest of each comparison (label digests ``a``, ``b``; the pair ordered by digest)."""
    swap = a > b
    with np.errstate(over="ignore"):
        x = (np.where(swap, b, a) * _K[0]) ^ (np.where(swap, a, b) * _K[1])
        x ^= (np.where(swap, -outcome, outcome).astype(np.int64) + 2).astype(np.uint64) * _K[2]
        return _mix(x)


def _sums_by(group, values, n: int) -> np.ndarray:
    """Per group ``0 .. n-1``, the sum (mod 2^64) of the uint64 ``values`` of its members: by
    ``bincount``, 16 bits at a time, so that float64 adds them exactly."""
    sums = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for shift in map(np.uint64, (0, 16, 32, 48)):
            part = np.bincount(group, weights=((values >> shift) & np.uint64(0xFFFF)).astype(np.float64), minlength=n)
            sums += part.astype(np.uint64) << shift
    return sums


def _users_total(sums, sizes) -> int:
    """The multiset over users (those with records) of (the sum of their records' digests, their
    number of records), as one sum mod 2^64."""
    present = sizes > 0
    with np.errstate(over="ignore"):
        per_user = _mix(sums[present] ^ (sizes[present].astype(np.uint64) * _K[2]))
        return int(per_user.sum(dtype=np.uint64))


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, element-wise on uint64 (arithmetic mod 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x *= _K[4]
    x ^= x >> np.uint64(27)
    x *= _K[5]
    return x ^ (x >> np.uint64(31))


def _fingerprint_text(total: int, count: int, kind: str = "comparisons") -> str:
    return hashlib.sha256(f"privrank {kind} {count} {total}".encode()).hexdigest()
