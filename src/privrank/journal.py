"""The privacy ledger's journal: which ledger holds each data set's history, kept outside the ledger.

A ledger that disappears must not look like a fresh one. Each ledger has a random id (its table
``meta``), and the journal (:func:`journal_dir`, one small file per data set named by its
fingerprint) remembers which ledger holds each data set's budget and releases, and how many
releases it had (a seeded run, research output rather than a private release, is recorded
without binding the data set to its ledger). A release or budget of a data set that the journal
places in another ledger, or in this ledger with more releases than it now holds (a ledger
truncated, deleted, replaced, or restored from an older copy), is refused with a message that
says where its history is; so is a journal entry privrank did not write.

An entry is written to a temporary file inside the ledger's write transaction, so a journal that
cannot be written rolls the transaction back (nothing is charged), and renamed into place after
the commit. :class:`Journalled` is this side of :class:`~privrank.ledger.Ledger`.
"""
from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import SimpleNamespace

from .errors import InputError

ENV_STATE = "PRIVRANK_STATE"


def journal_dir() -> Path:
    """``$PRIVRANK_STATE``, else ``$XDG_STATE_HOME/privrank`` (``~/.local/state`` by default)."""
    env = os.environ.get(ENV_STATE)
    if env:
        return Path(env)
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "privrank"


class Journalled:
    """The journal's side of a :class:`~privrank.ledger.Ledger` (one of its bases): a data set's
    entry read and checked, staged inside the ledger's transaction and placed after its commit.
    Uses the ledger's ``id``, ``path``, connection ``_db`` and ``_transaction``."""

    # set by the ledger
    id: str
    path: Path
    _db: sqlite3.Connection
    _transaction: Callable[[], AbstractContextManager[object]]

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


def _journal_entry(entry) -> bool:
    """Whether ``entry`` has the shape :meth:`Journalled._stage_journal` writes: the ledger's id (text), its path
    (text) and a release count (a whole number >= 0)."""
    return (isinstance(entry, dict) and isinstance(entry.get("ledger"), str) and isinstance(entry.get("path", ""), str)
            and type(entry.get("releases", 0)) is int and entry.get("releases", 0) >= 0)
