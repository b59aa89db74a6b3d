"""Persistent privacy ledger: what every release spent on each data set, across restarts and crashes.

One SQLite file (WAL journal, ``synchronous=FULL``) holds two tables:

* ``budgets``: a total ``(epsilon, delta)`` promised for a data set, per protected unit
  (``comparison``, ``user`` or ``ranking``);
* ``releases``: one row per release: data set fingerprint, time, mechanism, model, unit, epsilon,
  delta, per-user epsilon, whether it is private, and where the output went.

Budget arithmetic is the accountant's (:class:`~privrank.guarantees.Accountant`, typed
composition): every release is charged to a budget as a :class:`~privrank.guarantees.PureDP` or
:class:`~privrank.guarantees.ApproxDP` cost in the budget's unit (:func:`charge`); epsilons add
and deltas add. A budget with ``delta = 0`` is pure and refuses approximate-DP releases; give the
budget a delta to allow them. Releases that state zero-concentrated DP are charged by the
``(epsilon, delta)`` statement they carry.

Never under-counting. :meth:`Ledger.record` checks the budgets and inserts the release in one
``BEGIN IMMEDIATE`` transaction, so two processes cannot both pass the check; release commands
record *before* they write any output. A crash after the commit and before the output leaves a
charge for nothing (the ledger over-counts, the safe side); a crash before the commit leaves no
charge and no output.

A ledger that disappears must not look like a fresh one. Each ledger has a random id (table
``meta``), and a *journal* outside it (:func:`journal_dir`, one small file per data set named by
its fingerprint) remembers which ledger holds each data set's budget and releases, and how many
releases it had. A release or budget of a data set that the journal places in another ledger,
or in this ledger with more releases than it now holds (a ledger truncated, deleted, replaced,
or restored from an older copy), is refused with a message that says where its history is. An
existing empty file, a file of another application, a damaged file (any damaged page: the ledger
is checked, ``PRAGMA quick_check``, when it is opened), a journal entry privrank did not write
and a locked ledger are refused with a clear error before anything is released; a damaged ledger
is never replaced by a new one.

The data set is identified by :func:`fingerprint`, computed from its records as a multiset
(independent of row order, file format and unused items), in memory or streamed from the file:
comparisons, or the ballots of a rankings file as they are written (before any completion of
partial ballots). A modified data set is a different data set to the ledger: keep one
canonical file per data set. The ledger describes the raw data
(fingerprints, file names): it is the curator's internal record, not something to publish.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import secrets
import sqlite3
import tempfile
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from .data.comparisons import PairwiseComparisons
from .data.rankings import Rankings
from .errors import BudgetExceededError, InputError, check_delta, check_epsilon
from .guarantees import (UNIT_COMPARISON, UNIT_RANKING, UNIT_USER, Accountant, ApproxDP, Guarantee, cost_in_unit,
                         PureDP, compose_budgets)

ENV_PATH = "PRIVRANK_LEDGER"
ENV_STATE = "PRIVRANK_STATE"
#: seconds a release waits for a ledger that another process is writing
LOCK_TIMEOUT = 10.0
_TABLES = {"budgets", "releases", "meta", "sqlite_sequence"}
BUDGET_UNITS = {"comparison": UNIT_COMPARISON, "user": UNIT_USER, "ranking": UNIT_RANKING}
RELEASE_COLUMNS = ("id", "fingerprint", "dataset", "time", "mechanism", "model", "unit", "epsilon", "delta",
                   "epsilon_per_user", "private", "output", "command")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    fingerprint TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    dataset TEXT NOT NULL, time TEXT NOT NULL, PRIMARY KEY (fingerprint, unit));
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, dataset TEXT NOT NULL, time TEXT NOT NULL,
    mechanism TEXT NOT NULL, model TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    epsilon_per_user REAL, private INTEGER NOT NULL, output TEXT NOT NULL, command TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS releases_by_data ON releases (fingerprint);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def default_path() -> Path:
    """``$PRIVRANK_LEDGER``, else ``$XDG_DATA_HOME/privrank/ledger.sqlite`` (``~/.local/share`` by default)."""
    env = os.environ.get(ENV_PATH)
    if env:
        return Path(env)
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "privrank" / "ledger.sqlite"


def ledger_files(path=None) -> list[Path]:
    """The files of the ledger at ``path`` (default :func:`default_path`): the database, and SQLite's
    write-ahead log and shared-memory index beside it. Writing over any of them loses the ledger's history."""
    path = Path(path) if path is not None else default_path()
    return [path] + [Path(f"{path}{suffix}") for suffix in ("-wal", "-shm", "-journal")]


def journal_dir() -> Path:
    """``$PRIVRANK_STATE``, else ``$XDG_STATE_HOME/privrank`` (``~/.local/state`` by default)."""
    env = os.environ.get(ENV_STATE)
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "privrank"


def fingerprint(data) -> str:
    """SHA-256 identifying a data set by its records, whatever their order or file.

    Comparisons: each record is (the pair's two item labels, the outcome seen from one of
    them), taken as text, so row order, the orientation of a pair, the file format, column
    names, items that never occur, and the user and epsilon columns do not change the
    fingerprint -- dropping or renaming a column does not give a data set a fresh budget -- and
    one changed answer does. (Two data sets with the same answers by different users share a
    fingerprint, and so a budget: the ledger over-counts, the safe side.) Rankings: each voter's ballot is the set of (item label, place) of the items it ranks
    (tied items share a place); :class:`~privrank.data.rankings.Rankings` in memory and a file
    of the same complete ballots have the same fingerprint. Ratings: each user's set of (item,
    rating), whatever the user's id. The records are combined as a
    multiset: the sum over records (mod 2^64) of a 64-bit digest of each record, and their
    number. A sum can be formed batch by batch, so a comparisons path is fingerprinted by
    streaming its records in bounded memory (:class:`~privrank.data.io.ComparisonFile`; without
    pyarrow, a CSV file is read whole), with the same result as for the data in memory; so is a
    Parquet or Arrow rankings file (:class:`~privrank.data.io.RankingFile`). A path
    holds rankings or comparisons as :func:`~privrank.data.io.holds_rankings` decides.
    """
    if isinstance(data, Rankings):
        return _fingerprint_text(*_orders_digest(data.items, data.orders, data.weights), "rankings")
    from .data.pinned import PinnedFile
    from .data.tabular import is_table

    table = is_table(data)  # a DataFrame is read as the file of the same columns would be
    if table or isinstance(data, (str, Path, PinnedFile)):
        from .data.io import (PREFLIB_SUFFIXES, ComparisonFile, RankingFile, file_format, holds_rankings,
                              read_ballots, read_comparisons)
        from .data.tabular import ColumnarFile, file_suffix

        columnar = table or file_suffix(data) not in PREFLIB_SUFFIXES and file_format(data) != "csv"
        rankings = holds_rankings(data)
        if columnar and rankings:  # complete rankings, streamed batch by batch
            total, count = 0, 0
            for batch in RankingFile(data).batches():
                if batch.weights.size:
                    part, n = _orders_digest(batch.items, batch.orders, batch.weights)
                    total, count = (total + part) % 2 ** 64, count + n
            return _fingerprint_text(total, count, "rankings")
        if rankings:
            labels, ballots = read_ballots(data)
            items = [i for _, _, groups in ballots for g in groups for i in g]
            places = [p for _, _, groups in ballots for p, g in enumerate(groups) for _ in g]
            sizes = [sum(len(g) for g in groups) for _, _, groups in ballots]
            return _ballots_fingerprint(_text_digests([str(x) for x in labels]), np.array(items, dtype=np.int64),
                                        np.array(places, dtype=np.int64), np.array(sizes, dtype=np.int64),
                                        np.array([c for _, c, _ in ballots], dtype=np.int64))
        try:
            from .data.ratings import holds_ratings
            if holds_ratings(ColumnarFile(data).header):
                return _ratings_fingerprint(data)
            batches = ComparisonFile(data).batches()
            total = _digest_batches(batches)
        except InputError as exc:
            if "need pyarrow" not in str(exc):
                raise
            return fingerprint(read_comparisons(data))
        return _fingerprint_text(*total)
    if not isinstance(data, PairwiseComparisons):
        raise InputError("the ledger identifies a data set by its records: give the comparisons or rankings "
                         "themselves (in memory, a file or a DataFrame), not counts or statistics of them")
    return _fingerprint_text(*_comparisons_digest(data))


def _comparisons_digest(data: PairwiseComparisons) -> tuple[int, int]:
    """:func:`_records_digest` of comparisons in memory. Equal records have equal digests: when the
    (pair, outcome) cells are fewer than the records, the records are counted per cell in one pass
    and each cell present is digested once, weighted by its count (the same sum mod 2^64)."""
    labels = _text_digests([str(x) for x in data.items])
    m = data.n_items
    if 3 * m * m > data.n_records:
        return _records_digest(labels[data.item_a], labels[data.item_b], data.outcome)
    cells = np.bincount((data.item_a * m + data.item_b) * 3 + (data.outcome + 1), minlength=3 * m * m)
    present = np.flatnonzero(cells)
    pair, outcome = np.divmod(present, 3)
    a, b = np.divmod(pair, m)
    return _records_digest(labels[a], labels[b], outcome - 1, cells[present])


def _label_digests(labels) -> np.ndarray:
    """:func:`_text_digests` of every label of a pyarrow array, through its distinct labels. A label
    that is not text is written as Python writes its value, as for the data in memory (Arrow writes
    the float 1.0 as ``1``, Python and a CSV file as ``1.0``)."""
    from .data.tabular import dictionary_encoded

    encoded = dictionary_encoded(labels)
    texts = [str(x) for x in encoded.dictionary.to_pylist()]
    return _text_digests(texts)[encoded.indices.to_numpy(zero_copy_only=False)]


def _digest_batches(batches) -> tuple[int, int]:
    """Sum of record digests and number of records of :class:`~privrank.data.io.ComparisonBatch` objects."""
    total, count = 0, 0
    for batch in batches:  # a self-comparison is refused here, before the release reads (and pays)
        a, b = batch.distinct(_label_digests(batch.item_a), _label_digests(batch.item_b))
        part, n = _records_digest(a, b, batch.outcome)
        total, count = (total + part) % 2 ** 64, count + n
    return total, count


def users_digest(data) -> str | None:
    """SHA-256 of how the records of comparisons group into users, whatever the users' ids and the
    records' order: the multiset over users of each user's multiset of records (the records as
    :func:`fingerprint` digests them). None for data without a user column, and for rankings and
    ratings (a ranking is its own unit; a ratings fingerprint already holds each user's records).

    The fingerprint leaves the user column out, so that renaming users keeps a data set's budget;
    this digest tells a budget per user whether the people are still grouped as when it was set
    (:meth:`Ledger.record`): a copy whose records were regrouped (each its own "user", say) has the
    same fingerprint, and a per-user release on it would state a per-user epsilon for users who are
    not the people. In memory, or streamed from a file in bounded memory per user."""
    if isinstance(data, Rankings):
        return None
    from .data.pinned import PinnedFile
    from .data.tabular import is_table

    if is_table(data) or isinstance(data, (str, Path, PinnedFile)):
        from .data.io import ComparisonFile, holds_rankings
        from .data.ratings import holds_ratings
        from .data.tabular import ColumnarFile

        if holds_rankings(data) or holds_ratings(ColumnarFile(data).header):
            return None
        parts = []
        for batch in ComparisonFile(data).batches():
            if batch.user is None:
                return None
            a, b = batch.distinct(_label_digests(batch.item_a), _label_digests(batch.item_b))
            keys, group = np.unique(_label_digests(batch.user), return_inverse=True)
            parts.append((keys, _sums_by(group, _record_digests(a, b, batch.outcome), keys.size),
                          np.bincount(group, minlength=keys.size)))
        if not parts:
            return None
        keys, sums, sizes = (np.concatenate(x) for x in zip(*parts))
        keys, group = np.unique(keys, return_inverse=True)  # a user's parts from every batch, added up
        sums, sizes = _sums_by(group, sums, keys.size), np.bincount(group, weights=sizes, minlength=keys.size)
        return _fingerprint_text(_users_total(sums, sizes), keys.size, "users")
    if not isinstance(data, PairwiseComparisons) or data.user is None:
        return None
    labels = _text_digests([str(x) for x in data.items])
    n, user = len(data.users), data.user
    sums = _sums_by(user, _record_digests(labels[data.item_a], labels[data.item_b], data.outcome), n)
    sizes = np.bincount(user, minlength=n)
    return _fingerprint_text(_users_total(sums, sizes), int(np.count_nonzero(sizes)), "users")


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


def _ratings_fingerprint(path) -> str:
    """Fingerprint of a ratings file: of each user's set of (item, rating) records, as a multiset over
    users, so that neither the order of the records nor the users' ids (renamed, re-typed) change it.
    The pairs a run draws from the ratings change from run to run; the data set does not."""
    from .data.ratings import RatingsFile
    from .data.tabular import dictionary_encoded

    users, items, values = RatingsFile(path).read()
    user = dictionary_encoded(users).indices.to_numpy(zero_copy_only=False)
    sizes = np.bincount(user)
    with np.errstate(over="ignore"):
        x = _mix((_label_digests(items) * _K[0]) ^ ((values + 0.0).view(np.uint64) * _K[1]))  # -0.0 as 0.0
    return _fingerprint_text(_users_total(_sums_by(user, x, sizes.size), sizes), int(values.size), "ratings")


_K = [np.uint64(k) for k in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                             0xBF58476D1CE4E5B9, 0x94D049BB133111EB)]


def _mix(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, element-wise on uint64 (arithmetic mod 2^64)."""
    x = x ^ (x >> np.uint64(30))
    x *= _K[4]
    x ^= x >> np.uint64(27)
    x *= _K[5]
    return x ^ (x >> np.uint64(31))


def _text_digests(texts) -> np.ndarray:
    """A 64-bit digest of each string (blake2b of its UTF-8 bytes)."""
    return np.array([int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "little")
                     for t in texts], dtype=np.uint64)


def records_digest(batch) -> tuple[int, int]:
    """What one validated batch of a comparisons or rankings file adds to :func:`fingerprint`:
    the sum (mod 2^64) of its records' digests and their number. The parts of a file's batches,
    added up, give its fingerprint (:func:`digest_fingerprint`) however the file is split."""
    from .data.io import ComparisonBatch

    if isinstance(batch, ComparisonBatch):
        return _digest_batches([batch])
    return _orders_digest(batch.items, batch.orders, batch.weights) if batch.weights.size else (0, 0)


def digest_fingerprint(total: int, count: int, kind: str) -> str:
    """The fingerprint of a data set of ``kind`` (comparisons or rankings) from its :func:`records_digest` sums."""
    return _fingerprint_text(total % 2 ** 64, count, kind)


def _records_digest(a, b, outcome, counts=None) -> tuple[int, int]:
    """Sum (mod 2^64) of the records' digests and their number; ``a``, ``b`` are label digests
    per record, the pair ordered by digest so that its orientation does not matter; ``counts``:
    how many times each record occurs (default once)."""
    x = _record_digests(a, b, outcome)
    with np.errstate(over="ignore"):
        if counts is None:
            return int(x.sum(dtype=np.uint64)), int(x.size)
        return int((x * counts.astype(np.uint64)).sum(dtype=np.uint64)), int(counts.sum())


def _record_digests(a, b, outcome) -> np.ndarray:
    """The 64-bit digest of each comparison (label digests ``a``, ``b``; the pair ordered by digest)."""
    swap = a > b
    with np.errstate(over="ignore"):
        x = (np.where(swap, b, a) * _K[0]) ^ (np.where(swap, a, b) * _K[1])
        x ^= (np.where(swap, -outcome, outcome).astype(np.int64) + 2).astype(np.uint64) * _K[2]
        return _mix(x)


def _fingerprint_text(total: int, count: int, kind: str = "comparisons") -> str:
    return hashlib.sha256(f"privrank {kind} {count} {total}".encode()).hexdigest()


def _orders_digest(items, orders, weights) -> tuple[int, int]:
    """:func:`_ballots_digest` of complete rankings: ``orders`` (best first) over ``items``."""
    k, m = orders.shape
    return _ballots_digest(_text_digests([str(x) for x in items]), np.asarray(orders).ravel(),
                           np.tile(np.arange(m), k), np.full(k, m), np.asarray(weights))


def _ballots_fingerprint(labels, items, places, sizes, counts) -> str:
    """Fingerprint of ballots given flat (:func:`_ballots_digest`)."""
    return _fingerprint_text(*_ballots_digest(labels, items, places, sizes, counts), "rankings")


def _ballots_digest(labels, items, places, sizes, counts) -> tuple[int, int]:
    """Sum of ballot digests (mod 2^64) and number of voters of ballots given flat: ``items[k]``
    ranked at ``places[k]``, ``sizes[b]`` entries per ballot in ballot order, ``counts[b]`` voters
    per ballot; ``labels`` are the item label digests."""
    with np.errstate(over="ignore"):
        x = _mix((labels[items] * _K[0]) ^ ((places.astype(np.uint64) + np.uint64(1)) * _K[1]))
        ends = np.concatenate([np.zeros(1, dtype=np.uint64), np.cumsum(x, dtype=np.uint64)])  # mod 2^64
        bounds = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(sizes)])
        ballot = _mix((ends[bounds[1:]] - ends[bounds[:-1]]) ^ (sizes.astype(np.uint64) * _K[2]))
        total = int((ballot * counts.astype(np.uint64)).sum(dtype=np.uint64))
    return total, int(counts.sum())


def charge(release: dict, unit: str):
    """What one recorded release costs a budget protecting ``unit``: PureDP, ApproxDP, or None
    (:func:`~privrank.guarantees.cost_in_unit`; None also for a release that is not private)."""
    if not release["private"]:
        return None
    return cost_in_unit(unit, release["unit"], release["epsilon"], release["delta"], release["epsilon_per_user"])


def spent(releases, unit: str) -> tuple[float, float]:
    """The ``(epsilon, delta)`` that ``releases`` spent on a budget protecting ``unit``.

    The :func:`charge` of every release, composed by :func:`~privrank.guarantees.compose_budgets`
    (epsilons add, deltas add); epsilon is infinite when some release cannot be bounded in that
    unit or the deltas reach 1.
    """
    releases = list(releases)
    charges = [charge(r, unit) for r in releases]
    delta = math.fsum(r["delta"] for r in releases)
    if not charges:
        return 0.0, 0.0
    if any(c is None for c in charges) or delta >= 1:
        return math.inf, delta
    total = compose_budgets(*charges)
    return total.epsilon, getattr(total, "delta", 0.0)


def _budget_total(budget: dict):
    """A budget row's total as a typed budget: PureDP when its delta is 0, else ApproxDP."""
    return ApproxDP(budget["epsilon"], budget["delta"]) if budget["delta"] > 0 else PureDP(budget["epsilon"])


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _release_row(guarantee: Guarantee) -> dict:
    return {"mechanism": guarantee.mechanism, "model": guarantee.model, "unit": guarantee.unit,
            "epsilon": guarantee.epsilon, "delta": guarantee.delta, "epsilon_per_user": guarantee.epsilon_per_user,
            "private": bool(guarantee.private)}


class Ledger:
    """A privacy ledger in one SQLite file (created on first use); usable as a context manager.

    Parameters
    ----------
    path : str or Path, optional
        The ledger file (default :func:`default_path`). Its directory is created if missing.

    Examples
    --------
    A ledger promises a budget per data set (named by its :func:`fingerprint`) and refuses a release
    that would exceed it. The example keeps its ledger and the journal (``$PRIVRANK_STATE``) in a
    scratch folder, away from the real ones:

    >>> import os
    >>> import tempfile
    >>> import privrank as pr
    >>> from privrank.ledger import fingerprint
    >>> scratch = tempfile.TemporaryDirectory()
    >>> os.environ["PRIVRANK_STATE"] = scratch.name
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, 1, -1])
    >>> release = pr.Guarantee(0.75, "local", "one comparison", "randomized response")
    >>> with pr.Ledger(os.path.join(scratch.name, "ledger.sqlite")) as ledger:
    ...     ledger.set_budget(fingerprint(comps), "comparison", 1.0, dataset="votes")
    ...     first = ledger.record(fingerprint(comps), release, dataset="votes")
    ...     try:
    ...         ledger.record(fingerprint(comps), release, dataset="votes")
    ...     except pr.BudgetExceededError as exc:
    ...         print(exc)
    ...     print([(r["dataset"], r["mechanism"], r["epsilon"]) for r in ledger.releases()])
    refused: this release costs epsilon = 0.75 per comparison, but only 0.25 of the data set's budget of 1 per
    comparison remains (0.75 spent); lower epsilon or stop releasing from this data set
    [('votes', 'randomized response', 0.75)]
    >>> scratch.cleanup()
    """

    def __init__(self, path=None):
        self.path = Path(path) if path is not None else default_path()
        if self.path.is_dir():
            raise InputError(f"the ledger {self.path} is a directory; give a file")
        if self.path.exists() and not self.path.is_file():
            raise InputError(f"the ledger {self.path} is not a regular file (a pipe or device); give a file")
        if self.path.exists() and self.path.is_file() and self.path.stat().st_size == 0:
            raise InputError(f"the ledger {self.path} is an empty file: a ledger that was truncated has lost its "
                             "history. Restore it from a backup, or delete the file to start a new ledger")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create the ledger's directory {self.path.parent} ({exc.strerror})") from None
        self._db = None
        created = not self.path.exists()
        try:
            self._open()
        except BaseException:
            self.close()
            if created:  # a file this set-up left half made would later read as a truncated ledger
                for leftover in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
                    try:
                        leftover.unlink(missing_ok=True)
                    except OSError:  # a read-only file system, where nothing was made either
                        pass
            raise

    def _open(self) -> None:
        with _database_errors(self.path):
            self._db = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            foreign = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} - _TABLES
            if foreign:
                raise InputError(f"{self.path} is a database of another application, not a privrank ledger; "
                                 "give privrank a file of its own")
            problems = [r[0] for r in self._db.execute("PRAGMA quick_check")]
            if problems != ["ok"]:
                raise sqlite3.DatabaseError(f"database disk image is malformed: {problems[0]}")
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('id', ?)", (secrets.token_hex(16),))
            self.id = self._db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def set_budget(self, fingerprint: str, unit: str, epsilon: float, delta: float = 0.0, *, dataset: str = "",
                   users: str | None = None) -> None:
        """Promise a total ``(epsilon, delta)`` per ``unit`` (``comparison``, ``user`` or ``ranking``) for a data set.

        Replaces an earlier budget of the same data set and unit; releases already recorded
        still count against it. ``users``: for a budget per user, the data set's
        :func:`users_digest`; every later release charged to the budget must then come from
        records grouped into users the same way (:meth:`record`). The CLI always gives it.
        """
        if unit not in BUDGET_UNITS:
            raise InputError(f"unit must be one of {', '.join(BUDGET_UNITS)}")
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta)
        _check_fingerprint(fingerprint)
        with _database_errors(self.path), self._journalled(fingerprint) as entry:
            entry.releases = self._check_journal(fingerprint)
            self._db.execute("INSERT OR REPLACE INTO budgets VALUES (?, ?, ?, ?, ?, ?)",
                             (fingerprint, BUDGET_UNITS[unit], eps, dlt, dataset, _now()))
            if unit == "user":
                self._db.execute("DELETE FROM meta WHERE key = ?", (_users_key(fingerprint),))
                if users is not None:
                    self._db.execute("INSERT INTO meta VALUES (?, ?)", (_users_key(fingerprint), str(users)))

    def record(self, fingerprint: str, guarantee: Guarantee, *, dataset: str = "", output: str = "",
               command: str = "", users: str | None = None) -> int:
        """Charge a release to its data set, or refuse it; returns the release's id.

        ``users``: the :func:`users_digest` of the released records, needed when the data set's
        budget per user was set with one (:meth:`groups_users`): records grouped into users
        otherwise than then (the user column rewritten) are refused, because every per-user
        statement counts the people as the user column names them.

        In one transaction: every budget of the data set is checked with the release added
        (:func:`spent`), the release is inserted only if all of them still hold, and the journal
        entry is written (to a temporary file beside it) before the commit: a journal folder that
        cannot be written (missing and not creatable, not a folder, read-only, full) is refused
        with nothing recorded. The entry is renamed into place after the commit.

        Raises
        ------
        BudgetExceededError
            If the release would exceed a budget; nothing is recorded.
        """
        if not isinstance(guarantee, Guarantee):
            raise InputError("record needs the release's Guarantee")
        _check_fingerprint(fingerprint)
        row = _release_row(guarantee)
        with _database_errors(self.path), self._journalled(fingerprint) as entry:
            self._check_journal(fingerprint)
            past = self._releases(fingerprint)
            for budget in self._db.execute("SELECT * FROM budgets WHERE fingerprint = ?", (fingerprint,)).fetchall():
                refusal = _refusal(budget, past, row, guarantee)
                if refusal:
                    raise BudgetExceededError(refusal)
            grouped = self._users(fingerprint)
            if grouped is not None and users != grouped:
                raise BudgetExceededError("refused: these records are grouped into users otherwise than the data set "
                                          "whose budget per user was set (its user column was rewritten), and a "
                                          "budget per user counts the people as that user column names them; "
                                          "release from the file the budget was set on")
            cur = self._db.execute(
                "INSERT INTO releases (fingerprint, dataset, time, mechanism, model, unit, epsilon, delta, "
                "epsilon_per_user, private, output, command) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (fingerprint, dataset, _now(), row["mechanism"], row["model"], row["unit"], row["epsilon"],
                 row["delta"], row["epsilon_per_user"], int(row["private"]), output, command))
            release_id = int(cur.lastrowid)
            entry.releases = len(past) + 1
        return release_id

    def groups_users(self, fingerprint: str) -> bool:
        """Whether the data set's budget per user was set with its :func:`users_digest` (so a release
        charged to it must give its own, :meth:`record`)."""
        with _database_errors(self.path):
            return self._users(fingerprint) is not None

    def _users(self, fingerprint: str) -> str | None:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (_users_key(fingerprint),)).fetchone()
        return None if row is None else row[0]

    def _journal(self, fingerprint: str) -> Path:
        return journal_dir() / "datasets" / fingerprint

    def _check_journal(self, fingerprint: str) -> int:
        """Refuse a data set whose history the journal places elsewhere; returns its release count here."""
        count = self._db.execute("SELECT COUNT(*) FROM releases WHERE fingerprint = ?", (fingerprint,)).fetchone()[0]
        try:
            entry = json.loads(self._journal(fingerprint).read_text())
        except (FileNotFoundError, NotADirectoryError):  # none yet (a journal that cannot be written is refused
            return count                                   # when the entry is staged)
        except (OSError, ValueError):
            entry = None
        if not _journal_entry(entry):
            raise InputError(f"the ledger journal entry {self._journal(fingerprint)} is unreadable or damaged (not an "
                             "entry privrank writes); restore it from a backup, or delete it (the ledger then no "
                             "longer checks that it holds this data set's whole history)")
        if entry.get("ledger") != self.id:
            raise InputError(f"this data set's budget and releases are recorded in another ledger ({entry.get('path')}); "
                             "this one does not know them. Open that file (Ledger(path); CLI: --ledger), or restore it; to start over "
                             f"on purpose, delete {self._journal(fingerprint)}")
        if entry.get("releases", 0) > count:
            raise InputError(f"the ledger {self.path} has lost releases of this data set (it holds fewer than it "
                             "recorded: truncated, or restored from an older copy); restore the newer copy, or "
                             f"delete {self._journal(fingerprint)} to start over on purpose")
        return count

    @contextmanager
    def _journalled(self, fingerprint: str):
        """A write transaction that stages the data set's journal entry before it commits.

        The block sets ``entry.releases``, the data set's release count after it. The entry is
        written to a temporary file inside the transaction, so a journal that cannot be written
        rolls the transaction back (nothing is charged), and renamed into place after the commit.
        """
        entry, staged = SimpleNamespace(releases=0), None
        try:
            with self._transaction():
                yield entry
                staged = self._stage_journal(fingerprint, entry.releases)
        except BaseException:
            if staged is not None:
                Path(staged).unlink(missing_ok=True)
            raise
        self._place_journal(fingerprint, staged)

    def _stage_journal(self, fingerprint: str, releases: int) -> str:
        """Write a journal entry to a temporary file beside its place; returns the temporary's name."""
        path = self._journal(fingerprint)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # a temporary name of its own per writer (threads of one process share the pid)
            with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", suffix=".tmp",
                                             delete=False) as tmp:
                tmp.write(json.dumps({"ledger": self.id, "path": str(self.path.resolve()), "releases": releases}))
        except OSError as exc:
            if tmp is not None:
                Path(tmp.name).unlink(missing_ok=True)
            raise InputError(f"cannot write the ledger journal in {path.parent} ({exc.strerror}); set "
                             f"${ENV_STATE} to a writable directory (nothing was recorded)") from None
        return tmp.name

    def _place_journal(self, fingerprint: str, staged: str) -> None:
        """Rename a staged journal entry into place (atomic)."""
        path = self._journal(fingerprint)
        try:
            os.replace(staged, path)
        except OSError as exc:
            Path(staged).unlink(missing_ok=True)
            raise InputError(f"cannot write the ledger journal in {path.parent} ({exc.strerror}); set "
                             f"${ENV_STATE} to a writable directory") from None

    def releases(self, fingerprint: str | None = None) -> list[dict]:
        """Recorded releases (all, or of one data set), oldest first."""
        return self._releases(fingerprint)

    def budgets(self, fingerprint: str | None = None) -> list[dict]:
        """Budgets with what has been spent on them and what remains."""
        where, params = ("WHERE fingerprint = ?", (fingerprint,)) if fingerprint else ("", ())
        out = []
        with _database_errors(self.path):
            rows = self._db.execute(f"SELECT * FROM budgets {where} ORDER BY time", params).fetchall()
        for b in rows:
            eps, delta = spent(self._releases(b["fingerprint"]), b["unit"])
            out.append({**dict(b), "spent_epsilon": eps, "spent_delta": delta,
                        "remaining_epsilon": max(b["epsilon"] - eps, 0.0),
                        "remaining_delta": max(b["delta"] - delta, 0.0)})
        return out

    def _releases(self, fingerprint):
        where, params = ("WHERE fingerprint = ?", (fingerprint,)) if fingerprint else ("", ())
        with _database_errors(self.path):
            rows = self._db.execute(f"SELECT * FROM releases {where} ORDER BY id", params).fetchall()
        return [{**dict(r), "private": bool(r["private"])} for r in rows]

    def _transaction(self):
        return _Transaction(self._db, self.path)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error): takes the write lock up front."""

    def __init__(self, db, path):
        self._db, self._path = db, path

    def __enter__(self):
        with _database_errors(self._path):
            self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, *exc):
        with _database_errors(self._path):
            self._db.execute("ROLLBACK" if exc_type else "COMMIT")


class _database_errors:
    """SQLite's errors as :class:`InputError`: locked, read-only, damaged or not a ledger."""

    def __init__(self, path):
        self._path = path

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None or not issubclass(exc_type, sqlite3.Error):
            return False
        text = str(exc).lower()
        if "locked" in text or "busy" in text:
            raise InputError(f"the ledger {self._path} is locked by another process (waited {LOCK_TIMEOUT:g} s); "
                             "try again when it has finished") from None
        if "readonly" in text or "read-only" in text:
            raise InputError(f"the ledger {self._path} is read-only; a release must be recorded before it is drawn") \
                from None
        if "unable to open" in text:
            raise InputError(f"cannot open the ledger {self._path}" + (" (its file system is read-only)" if
                                                                       _read_only(self._path) else "")) from None
        if "disk is full" in text or "disk i/o" in text:  # the file is fine; the disk is not
            raise InputError(f"could not write the ledger {self._path}: {exc}; free space (or mend the disk) and "
                             "run again: nothing was released") from None
        if "not a database" in text:
            raise InputError(f"{self._path} is not a privrank ledger, or its first page is damaged ({exc}): if it is "
                             "your ledger, restore it from a backup; else give privrank a file of its own "
                             "(Ledger(path); CLI: --ledger)") from None
        raise InputError(f"the ledger {self._path} is damaged ({exc}): restore it from a backup. privrank does not "
                         "start a new ledger in its place, since a ledger that forgets releases would let their "
                         "budget be spent again") from None


def _journal_entry(entry) -> bool:
    """Whether ``entry`` has the shape :meth:`Ledger._stage_journal` writes: the ledger's id (text), its path
    (text) and a release count (a whole number >= 0)."""
    return (isinstance(entry, dict) and isinstance(entry.get("ledger"), str) and isinstance(entry.get("path", ""), str)
            and type(entry.get("releases", 0)) is int and entry.get("releases", 0) >= 0)


def _read_only(path: Path) -> bool:
    """Whether the file system holding ``path`` is mounted read-only."""
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _users_key(fingerprint: str) -> str:
    """The ``meta`` key of the :func:`users_digest` a data set's budget per user was set with."""
    return f"users {fingerprint}"


def _check_fingerprint(fingerprint) -> None:
    """A data set's identity: its :func:`fingerprint`, or any name of letters, digits, ``-`` and ``_``."""
    if not (isinstance(fingerprint, str) and 0 < len(fingerprint) <= 128
            and all(c.isascii() and (c.isalnum() or c in "-_") for c in fingerprint)):
        raise InputError("a data set is identified by its fingerprint (privrank.ledger.fingerprint)")


def _refusal(budget, past, row, guarantee: Guarantee) -> str:
    """Why ``row`` may not be added to ``past`` under ``budget`` (the accountant decides), or ``""``."""
    unit = next(k for k, v in BUDGET_UNITS.items() if v == budget["unit"])
    if not guarantee.private:
        return (f"refused: this output is not private, and the data set has a privacy budget per {unit} "
                f"(epsilon = {budget['epsilon']:g}); use a private mechanism")
    cost = charge(row, budget["unit"])
    if cost is None:
        return (f"refused: this release ({guarantee.unit}) states no guarantee per {unit}, and the data set has a "
                f"budget per {unit}; give a budget per {unit} instead (e.g. user_epsilon=; CLI: --user-epsilon)")
    total = _budget_total(budget)
    if isinstance(cost, ApproxDP) and isinstance(total, PureDP):
        return (f"refused: this release is {cost}, but the data set's budget per {unit} is pure "
                f"epsilon-DP ({total}); a budget that allows it needs a delta (Ledger.set_budget(..., delta); CLI: privrank ledger "
                f"set-budget --delta)")
    before = spent(past, budget["unit"])
    charges = [charge(r, budget["unit"]) for r in past]
    if isinstance(total, PureDP) and before[1] > 0:
        return (f"refused: approximate-DP releases (delta > 0) are already recorded on this data set, but its budget "
                f"per {unit} is pure epsilon-DP ({total}); give the budget a delta (Ledger.set_budget(..., delta); "
                "CLI: privrank ledger set-budget --delta)")
    if None not in charges and Accountant(total, history=[("", c) for c in charges]).can_spend(cost):
        return ""
    left_eps = max(budget["epsilon"] - before[0], 0.0)
    if isinstance(cost, ApproxDP) and before[0] + cost.epsilon <= budget["epsilon"] * (1 + 1e-12):
        return (f"refused: this release's delta = {cost.delta:g} exceeds the {max(budget['delta'] - before[1], 0.0):g} "
                f"left of the data set's budget of delta {budget['delta']:g} per {unit}; lower delta or stop "
                "releasing from this data set")
    return (f"refused: this release costs epsilon = {cost.epsilon:.4g} per {unit}, but only {left_eps:.4g} of the "
            f"data set's budget of {budget['epsilon']:g} per {unit} remains ({before[0]:.4g} spent); lower epsilon or "
            "stop releasing from this data set")
