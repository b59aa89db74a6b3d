"""The survey's admins: named dashboard tokens, each revocable, of which the store keeps only hashes.

An admin is a name and a token. ``privrank serve SURVEY --add-admin NAME`` makes a random token,
prints it once and keeps its SHA-256 under the name, with the UTC day it was added
(:meth:`AdminTable.add_admin`); ``--revoke-admin NAME`` deletes it (:meth:`AdminTable.revoke_admin`);
``--admins`` lists the names and days, never a token or a hash. The token ``privrank serve`` makes (or is
given) when it first serves a database is the admin :data:`OWNER`'s; a database that held the single,
unnamed admin token of earlier versions is migrated on open so that token becomes the owner's.

Every admin's token opens the dashboard and the export of every server on the database, and the same
page: the dashboard shows no name, as nothing is done in one. A server reads the admins from the store
at most once per :attr:`AdminTokens.REFRESH` seconds (:class:`AdminTokens`), so a revoked or replaced
token opens nothing within about that long, and a request with a wrong token costs no query.

Rules: a name is 1 to 40 characters of lowercase letters, digits, ``.``, ``_`` and ``-``, starting with a
letter or a digit (it is typed on a command line and read in a list); names are unique (an admin who
needs a new token is revoked and added again); the last admin cannot be revoked, so the dashboard is
never left without a token that opens it (add another first, or replace the owner's with
``--new-admin-token``).
"""
from __future__ import annotations

import hashlib
import re
import secrets
import time
from typing import Any, Callable

from ..errors import InputError
from .schema import utc_day
from .throttle import Throttle

#: the admin whose token ``privrank serve`` makes, or is given, when it serves a database
OWNER = "owner"
#: an admin's name (:func:`check_admin_name`)
ADMIN_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
#: the shape of an admin token (:func:`check_admin_token`) and of its hash (:func:`admin_token_hash`)
ADMIN_TOKEN, ADMIN_TOKEN_HASH = re.compile(r"[A-Za-z0-9._~-]{16,1024}"), re.compile(r"[0-9a-f]{64}")


def check_admin_name(name) -> str:
    """``name`` if it is an admin's name (module docstring: 1 to 40 characters of ``a-z``, ``0-9``, ``.``,
    ``_``, ``-``, the first a letter or digit), else :class:`~privrank.errors.InputError`."""
    if not isinstance(name, str) or ADMIN_NAME.fullmatch(name) is None:
        raise InputError("an admin's name is 1 to 40 characters of lowercase letters, digits, '.', '_' and '-', "
                         "starting with a letter or a digit (e.g. alice or j.smith)")
    return name


def check_admin_token(token) -> None:
    """Refuse an admin token other than 16 to 1024 characters of letters, digits, ``-``, ``_``, ``.`` and ``~``
    (it guards the dashboard and the export, and travels unchanged in a URL and a header)."""
    if not isinstance(token, str) or ADMIN_TOKEN.fullmatch(token) is None:
        raise InputError("the admin token must be at least 16 characters (at most 1024), each a letter, a digit, "
                         "'-', '_', '.' or '~' (default: a random one)")


def admin_token_hash(token: str) -> str:
    """What is kept of an admin token: the hex SHA-256 of its text (the token is random or chosen by the
    operator, at least 16 characters: a key-derivation function would add nothing against a guess)."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_admin_token() -> str:
    """A random admin token: 32 random bytes as base64url (43 characters)."""
    return secrets.token_urlsafe(32)


class AdminTable:
    """The store's admins (a base of :class:`~privrank.serve.store.Store`, whose statements and writer
    it uses): names, token hashes and the UTC day each was added."""

    _query: Callable[..., list]
    _sql: Callable[[str], str]
    _write: Callable[[Callable], Any]

    def admins(self) -> list[tuple[str, str, str]]:
        """``(name, token hash, UTC day added)`` of every admin, by day added, then name."""
        return [(str(name), str(digest), str(day)) for name, digest, day in self._query("admins")]

    def add_admin(self, name: str, digest: str, *, replace: bool = False) -> None:
        """Keep ``digest`` (:func:`admin_token_hash` of the token) as the admin ``name``'s, added today (with
        ``replace``, an admin given a new token is listed as added today).

        Raises
        ------
        InputError
            ``name`` is not an admin's name, ``digest`` not a hex SHA-256, or (without ``replace``, which
            gives an admin a new token) there is an admin of that name.
        """
        check_admin_name(name)
        if not isinstance(digest, str) or ADMIN_TOKEN_HASH.fullmatch(digest) is None:
            raise InputError("an admin token's hash is 64 hex digits (admin_token_hash(token))")

        def work(cur):
            cur.execute(self._sql("set_admin" if replace else "add_admin"), (name, digest, utc_day()))
            if cur.rowcount != 1:
                raise InputError(f"there is an admin named {name!r} already: a name is given once (to give them "
                                 f"a new token, revoke it with --revoke-admin {name}, then add it again)")
        self._write(work)

    def revoke_admin(self, name: str) -> None:
        """Delete the admin ``name``: their token opens nothing from then on (a running server refuses it
        within :attr:`AdminTokens.REFRESH` seconds).

        Raises
        ------
        InputError
            No admin of that name, or the last admin (the dashboard would have no token).
        """
        check_admin_name(name)

        def work(cur):
            cur.execute(self._sql("lock_admins"))
            (admins,) = cur.execute(self._sql("count_admins")).fetchone()
            cur.execute(self._sql("revoke_admin"), (name,))
            if cur.rowcount != 1:
                raise InputError(f"there is no admin named {name!r} (privrank serve SURVEY --admins lists them)")
            if admins <= 1:
                raise InputError(f"{name!r} is the survey's last admin: revoking it would leave the dashboard "
                                 "without a token. Add another admin first (--add-admin NAME), or replace the "
                                 "owner's token (--new-admin-token)")
        self._write(work)


class AdminTokens:
    """The token hashes that open a running server's dashboard and export: the store's admins, read at
    most once per :attr:`REFRESH` seconds (:meth:`due`, then :meth:`read`); while the store holds none
    (a store no ``privrank serve`` has given an admin), ``fallback``, the hash the application was made
    with. ``clock``: monotonic seconds."""

    REFRESH = 1.0

    def __init__(self, store, fallback: str, clock=time.monotonic):
        self._store, self._fallback = store, fallback
        self._throttle = Throttle(self.REFRESH, clock)
        self._hashes: tuple[str, ...] = ()
        self.read()

    def due(self) -> bool:
        """Whether this caller must :meth:`read` the store now (one caller per :attr:`REFRESH` seconds)."""
        return self._throttle.due()

    def read(self) -> None:
        """Read the admins' token hashes from the store (a query: blocking)."""
        self._hashes = tuple(digest for _, digest, _ in self._store.admins()) or (self._fallback,)

    def holds(self, given: str) -> bool:
        """Whether ``given`` (:func:`admin_token_hash` of a token) is an admin's, as last read. It is compared
        with every admin's hash, each in constant time and none skipped: neither the token's length, a
        prefix, nor which admin it matches leaks through the time taken."""
        found = False
        for digest in self._hashes:
            found |= secrets.compare_digest(given, digest)
        return found
