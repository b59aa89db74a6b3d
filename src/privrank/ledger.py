"""Persistent privacy ledger: what every release spent on each data set, across restarts and crashes.

One SQLite file (WAL journal, ``synchronous=FULL``) holds these tables:

* ``budgets``: a total ``(epsilon, delta)`` promised for a data set, per protected unit
  (``comparison``, ``user`` or ``ranking``);
* ``releases``: one row per release: data set fingerprint, time, mechanism, model, unit, epsilon,
  delta, per-user epsilon, whether it is private, where the output went, and the curator's reason
  when the data was declared new (``new_data``);
* ``identities`` and ``sketches``: what each data set is recognised by (below).

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
releases it had (a seeded run, research output rather than a private release, is recorded
without binding the data set to its ledger). A release or budget of a data set that the journal places in another ledger,
or in this ledger with more releases than it now holds (a ledger truncated, deleted, replaced,
or restored from an older copy), is refused with a message that says where its history is. An
existing empty file, a file of another application, a damaged file (any damaged page: the ledger
is checked, ``PRAGMA quick_check``, when it is opened), a journal entry privrank did not write
and a locked ledger are refused with a clear error before anything is released; a damaged ledger
is never replaced by a new one.

A data set is identified by its records, not its file (:mod:`privrank.fingerprints`,
:func:`identify`): its fingerprint with labels normalised (case, Unicode form, surrounding
spaces), the fingerprint of its labels as written (the key of ledgers written before), and a
label-free structural fingerprint are each recorded for it (table ``identities``), so the same
records relabelled, or with items and users renamed, are charged to the same budget
(:meth:`Ledger.key`). A MinHash sketch of its records (table ``sketches``) recognises a
near-duplicate of a budgeted data set -- rows appended, dropped or doubled -- which is refused
before anything is spent unless the curator records why it is new data (``new_data``, kept with
the release or budget). Data changed beyond that is a different data set to the ledger: keep one
canonical file per data set. The ledger describes the raw data (fingerprints, sketches, file
names): it is the curator's internal record, not something to publish.
"""
from __future__ import annotations

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

from .errors import BudgetExceededError, InputError, check_delta, check_epsilon
from .fingerprints import NEAR_DUPLICATE, Identity, fingerprint, identify, shared, users_digest
from .guarantees import (UNIT_COMPARISON, UNIT_RANKING, UNIT_USER, Accountant, ApproxDP, Guarantee, cost_in_unit,
                         PureDP, compose_budgets)
from .html_cards import Shown

__all__ = ["BUDGET_UNITS", "ENV_PATH", "ENV_STATE", "Identity", "Ledger", "RELEASE_COLUMNS", "charge",
           "default_path", "fingerprint", "identify", "journal_dir", "ledger_files", "spent", "users_digest"]

ENV_PATH = "PRIVRANK_LEDGER"
ENV_STATE = "PRIVRANK_STATE"
#: seconds a release waits for a ledger that another process is writing
LOCK_TIMEOUT = 10.0
_TABLES = {"budgets", "releases", "meta", "identities", "sketches", "sqlite_sequence"}
BUDGET_UNITS = {"comparison": UNIT_COMPARISON, "user": UNIT_USER, "ranking": UNIT_RANKING}
RELEASE_COLUMNS = ("id", "fingerprint", "dataset", "time", "mechanism", "model", "unit", "epsilon", "delta",
                   "epsilon_per_user", "private", "output", "command", "new_data")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    fingerprint TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    dataset TEXT NOT NULL, time TEXT NOT NULL, new_data TEXT, PRIMARY KEY (fingerprint, unit));
CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, dataset TEXT NOT NULL, time TEXT NOT NULL,
    mechanism TEXT NOT NULL, model TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    epsilon_per_user REAL, private INTEGER NOT NULL, output TEXT NOT NULL, command TEXT NOT NULL, new_data TEXT);
CREATE INDEX IF NOT EXISTS releases_by_data ON releases (fingerprint);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS identities (alias TEXT PRIMARY KEY, fingerprint TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sketches (labels TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, size INTEGER NOT NULL,
    sketch BLOB NOT NULL);
"""
#: columns added since the first ledgers (an older ledger file gains them when it is opened)
_ADDED_COLUMNS = {"budgets": "new_data TEXT", "releases": "new_data TEXT"}


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


class Ledger(Shown):
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

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def _card(self) -> dict:  # the budgets and what is spent of them (no data: a data set is its fingerprint)
        try:
            self._db.total_changes  # noqa: B018 - raises on a closed connection
        except (sqlite3.ProgrammingError, AttributeError):  # closed, or never opened
            return {"summary": "closed", "facts": [("file", self.path)]}
        budgets = self.budgets()
        return {"summary": f"{len(budgets)} budget{'' if len(budgets) == 1 else 's'}",
                "facts": [("file", self.path), ("releases recorded", f"{len(self._releases(None)):,}")],
                "rows": [{"data set": b["dataset"] or b["fingerprint"][:12], "unit": b["unit"],
                          "budget epsilon": b["epsilon"], "spent epsilon": b["spent_epsilon"],
                          "remaining epsilon": b["remaining_epsilon"]}
                         for b in budgets],
                "more": "all of them: .budgets()"}

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
            self._upgrade()
            self._db.execute("INSERT OR IGNORE INTO meta VALUES ('id', ?)", (secrets.token_hex(16),))
            self.id = self._db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]

    def _upgrade(self) -> None:
        """Add the columns a ledger written by an older privrank lacks (in one transaction, so two
        processes opening it at once add them once). Its rows keep their fingerprints: a data set
        recorded before labels were normalised is found by the fingerprint of its labels as written
        (:attr:`~privrank.fingerprints.Identity.legacy`), and its other identities are recorded the
        next time it is released or budgeted."""
        missing = {t: c for t, c in _ADDED_COLUMNS.items()
                   if c.split()[0] not in {r[1] for r in self._db.execute(f"PRAGMA table_info({t})")}}
        if not missing:
            return
        with self._transaction():
            for table, column in missing.items():
                if column.split()[0] not in {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {column}")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()

    def set_budget(self, fingerprint, unit: str, epsilon: float, delta: float = 0.0, *, dataset: str = "",
                   users: str | None = None, new_data: str | None = None) -> None:
        """Promise a total ``(epsilon, delta)`` per ``unit`` (``comparison``, ``user`` or ``ranking``) for a data set.

        ``fingerprint``: the data set's :class:`~privrank.fingerprints.Identity` (:func:`identify`),
        or a name the caller gives it (a fingerprint, or letters, digits, ``-`` and ``_``). An
        identity is resolved as :meth:`key` does -- a data set the ledger knows under another name
        (labels normalised, renamed) gets that one's budget, a near-duplicate of a budgeted data set
        is refused unless ``new_data`` says why it is new data -- and recorded.

        Replaces an earlier budget of the same data set and unit; releases already recorded
        still count against it. ``users``: for a budget per user, the data set's
        :func:`users_digest` (an identity carries its own); every later release charged to the
        budget must then come from records grouped into users the same way (:meth:`record`).
        The CLI always gives it.
        """
        if unit not in BUDGET_UNITS:
            raise InputError(f"unit must be one of {', '.join(BUDGET_UNITS)}")
        eps = check_epsilon(epsilon)
        dlt = check_delta(delta)
        reason = _check_new_data(new_data)
        with _database_errors(self.path), self._journalled() as entry:
            key, how = self._resolve(fingerprint, reason)
            if how == "structure" and unit == "user":
                raise BudgetExceededError(_RENAMED_PER_USER)
            entry.key = key
            entry.releases = self._check_journal(key)
            self._db.execute("INSERT OR REPLACE INTO budgets (fingerprint, unit, epsilon, delta, dataset, time, "
                             "new_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                             (key, BUDGET_UNITS[unit], eps, dlt, dataset, _now(), reason))
            self._register(key, fingerprint)
            if unit == "user":
                users = fingerprint.users if isinstance(fingerprint, Identity) else users
                self._db.execute("DELETE FROM meta WHERE key = ?", (_users_key(key),))
                if users is not None:
                    self._db.execute("INSERT INTO meta VALUES (?, ?)", (_users_key(key), str(users)))

    def record(self, fingerprint, guarantee: Guarantee, *, dataset: str = "", output: str = "",
               command: str = "", users: str | None = None, new_data: str | None = None) -> int:
        """Charge a release to its data set, or refuse it; returns the release's id.

        ``fingerprint``: the data set's :class:`~privrank.fingerprints.Identity`, resolved as
        :meth:`key` does (a near-duplicate of a budgeted data set is refused unless ``new_data``,
        the curator's reason for calling it new data, is given; the reason is recorded with the
        release), or a name (see :meth:`set_budget`).

        ``users``: for a name, the :func:`users_digest` of the released records (an identity
        carries its own), needed when the data set's budget per user was set with one: records
        grouped into users otherwise than then (the user column rewritten) are refused, because
        every per-user statement counts the people as the user column names them. Records known
        by their structure alone (items or users renamed) are refused under such a budget.

        In one transaction: every budget of the data set is checked with the release added
        (:func:`spent`), the release is inserted only if all of them still hold, and the journal
        entry is written (to a temporary file beside it) before the commit: a journal folder that
        cannot be written (missing and not creatable, not a folder, read-only, full) is refused
        with nothing recorded. The entry is renamed into place after the commit. A seeded run
        (research output, not a private release: :attr:`Guarantee.seeded`) is recorded but writes no
        journal entry, so it does not bind the data set to this ledger.

        Raises
        ------
        BudgetExceededError
            If the release would exceed a budget, or its data is a near-duplicate; nothing is recorded.
        """
        if not isinstance(guarantee, Guarantee):
            raise InputError("record needs the release's Guarantee")
        reason = _check_new_data(new_data)
        row = _release_row(guarantee)
        with _database_errors(self.path), self._journalled() as entry:
            key, how = self._resolve(fingerprint, reason)
            entry.key = key
            self._check_journal(key)
            past = self._releases(key)
            for budget in self._db.execute("SELECT * FROM budgets WHERE fingerprint = ?", (key,)).fetchall():
                refusal = _refusal(budget, past, row, guarantee)
                if refusal:
                    raise BudgetExceededError(refusal)
            grouped = self._users(key)
            if grouped is not None and how == "structure":
                raise BudgetExceededError(_RENAMED_PER_USER)
            given = {fingerprint.users, fingerprint.legacy_users} if isinstance(fingerprint, Identity) else {users}
            if grouped is not None and grouped not in given:
                raise BudgetExceededError("refused: these records are grouped into users otherwise than the data set "
                                          "whose budget per user was set (its user column was rewritten), and a "
                                          "budget per user counts the people as that user column names them; "
                                          "release from the file the budget was set on")
            cur = self._db.execute(
                "INSERT INTO releases (fingerprint, dataset, time, mechanism, model, unit, epsilon, delta, "
                "epsilon_per_user, private, output, command, new_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (key, dataset, _now(), row["mechanism"], row["model"], row["unit"], row["epsilon"],
                 row["delta"], row["epsilon_per_user"], int(row["private"]), output, command, reason))
            release_id = int(cur.lastrowid)
            self._register(key, fingerprint)
            entry.releases, entry.bind = len(past) + 1, not guarantee.seeded
        return release_id

    def key(self, identity, *, new_data: str | None = None) -> str:
        """The fingerprint this ledger knows a data set by, whose budgets and releases are its own.

        An :class:`~privrank.fingerprints.Identity` (:func:`identify`) is matched, in order, by
        its fingerprint (labels normalised) or that of its labels as written (a ledger written
        before labels were normalised), each as a data set's own or as one recorded for it; then
        by its structure (the same records with items and users renamed). Data known by none is a
        new data set (its fingerprint) -- unless it shares at least :data:`NEAR_DUPLICATE` of its
        records with a budgeted data set (:func:`~privrank.fingerprints.shared`: rows appended,
        dropped or doubled), which is refused before anything is spent, naming that data set and
        the share in common, unless ``new_data`` gives the curator's reason to call it new data. A
        name (text) is its own key.

        Raises
        ------
        BudgetExceededError
            For a near-duplicate of a budgeted data set without ``new_data``.
        """
        reason = _check_new_data(new_data)
        with _database_errors(self.path):
            return self._resolve(identity, reason)[0]

    def find(self, identity) -> str | None:
        """The key of a data set this ledger knows (found as :meth:`key` finds it), or None: a new
        data set, or a near-duplicate of a budgeted one (not refused here)."""
        with _database_errors(self.path):
            key, how = self._resolve(identity, None, near=False)
        return None if how == "new" else key

    def _resolve(self, identity, new_data, near: bool = True) -> tuple[str, str]:
        """``(key, how)``: the data set's key and how it was found (``name``, ``fingerprint``,
        ``structure`` or ``new``); see :meth:`key`. ``near``: refuse a near-duplicate."""
        if not isinstance(identity, Identity):
            _check_fingerprint(identity)
            return identity, "name"
        for fp in (identity.labels, identity.legacy):
            row = self._db.execute("SELECT fingerprint FROM identities WHERE alias = ? UNION ALL "
                                   "SELECT fingerprint FROM budgets WHERE fingerprint = ? UNION ALL "
                                   "SELECT fingerprint FROM releases WHERE fingerprint = ? LIMIT 1",
                                   (f"fingerprint {fp}", fp, fp)).fetchone()
            if row is not None:
                return row[0], "fingerprint"
        row = self._db.execute("SELECT fingerprint FROM identities WHERE alias = ?",
                               (f"structure {identity.structure}",)).fetchone()
        if row is not None:
            return row[0], "structure"
        if near and new_data is None:
            rows = self._db.execute("SELECT s.size, s.sketch, b.dataset FROM sketches s JOIN budgets b "
                                    "ON b.fingerprint = s.fingerprint").fetchall()
            if rows:
                sketches = np.stack([np.frombuffer(r["sketch"], dtype="<u8") for r in rows])
                share = shared(identity.sketch, identity.size, sketches, [r["size"] for r in rows])
                best = int(np.argmax(share))
                if share[best] >= NEAR_DUPLICATE:
                    raise BudgetExceededError(_near_duplicate(rows[best]["dataset"], float(share[best])))
        return identity.labels, "new"

    def _register(self, key: str, identity) -> None:
        """Record an identity's fingerprints, structure and sketch as the data set ``key``'s (first
        come, first kept); a name has none."""
        if not isinstance(identity, Identity):
            return
        aliases = [f"fingerprint {identity.labels}", f"fingerprint {identity.legacy}",
                   f"structure {identity.structure}"]
        self._db.executemany("INSERT OR IGNORE INTO identities VALUES (?, ?)", [(a, key) for a in aliases])
        self._db.execute("INSERT OR IGNORE INTO sketches VALUES (?, ?, ?, ?)",
                         (identity.labels, key, identity.size, identity.sketch.astype("<u8").tobytes()))

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
    def _journalled(self):
        """A write transaction that stages the data set's journal entry before it commits.

        The block sets ``entry.key``, the data set's key (resolved inside the transaction), and
        ``entry.releases``, its release count after it; ``entry.bind = False`` writes no entry (a
        seeded run, which is not a private release, does not bind the data set to this ledger).
        The entry is written to a temporary file inside the transaction, so a journal that cannot
        be written rolls the transaction back (nothing is charged), and renamed into place after
        the commit.
        """
        entry, staged = SimpleNamespace(key=None, releases=0, bind=True), None
        try:
            with self._transaction():
                yield entry
                if entry.bind:
                    staged = self._stage_journal(entry.key, entry.releases)
        except BaseException:
            if staged is not None:
                Path(staged).unlink(missing_ok=True)
            raise
        if staged is not None:
            self._place_journal(entry.key, staged)

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
        raise InputError("a data set is identified by its identity (privrank.ledger.identify), or a fingerprint or "
                         "name of letters, digits, - and _")


#: the one flag of the releasing commands that declares data new (a near-duplicate's refusal names it)
NEW_DATA_FLAG = "--new-data"
_RENAMED_PER_USER = ("refused: these records are those of a data set with a budget per user, with their items or users "
                     "renamed, and a budget per user counts the people as the user column of the file it was set on "
                     "names them; release from that file")


def _check_new_data(reason) -> str | None:
    """The curator's reason for calling near-duplicate data new: None, or non-empty text."""
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason.strip():
        raise InputError(f"new_data (CLI: {NEW_DATA_FLAG}) needs a reason in words: why is this data new, not the "
                         "budgeted data set it resembles?")
    return reason.strip()


def _near_duplicate(dataset: str, share: float) -> str:
    """The refusal of a near-duplicate of the budgeted data set ``dataset``: the share in common, rounded to
    10% (an estimate from the sketches, never a count)."""
    return (f"refused before anything was spent: these records have about {10 * round(10 * share):d}% of the smaller "
            f"data set's records in common with the data set {dataset or '(unnamed)'!r}, which has a privacy budget "
            "(rows appended, dropped or doubled keep most of them): release from that data set, whose budget they "
            f"spend. If this is new data, say why: {NEW_DATA_FLAG} REASON (Python: new_data=\"REASON\"); the reason is "
            "recorded in the ledger")


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
