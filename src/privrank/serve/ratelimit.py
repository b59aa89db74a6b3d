"""The registration limit of an open survey: one token bucket kept in the store, shared by every server
process on the database (``privrank serve --workers N``, or several servers started on one ``--db``).

The bucket holds at most ``per_minute`` tokens (the burst) and gains ``per_minute / 60`` a second; a
registration takes one. Its state is the one row of the store's table ``registration_limit``: the
tokens left when it was last drawn from, and that time (seconds since the epoch). A registration reads
it and writes it back in the same write transaction as the respondent it adds (SQLite: ``BEGIN
IMMEDIATE`` serializes the writers of every process; PostgreSQL: the row is locked, ``FOR UPDATE``),
so the processes together register at most as many as one bucket allows. A refused registration
writes nothing: it neither stores a respondent nor takes a token.

The time of the last draw is the time an open survey last registered someone, finer than the day to
which the store keeps a respondent's times. It is kept only while the limit needs it: a bucket is full
again :func:`full_after` seconds after its last draw, and from then on the store forgets the draw
(:meth:`~privrank.serve.store.Store.forget_full_bucket`, which a store that drew from the bucket runs
every half of that time until it is closed); a forgotten bucket is a full one. A database copied, or
left by a server stopped, within that time still holds the time of its last registration.
"""
from __future__ import annotations

import math

from ..errors import InputError


class RegistrationsLimited(InputError):
    """A registration refused by the limit: nothing was stored; ``retry_after`` is the seconds until the
    bucket holds a token again."""

    def __init__(self, retry_after: float):
        super().__init__("too many new respondents right now: try again in a moment")
        self.retry_after = retry_after


def check_rate(per_minute) -> float:
    """``per_minute`` as a float, or :class:`~privrank.errors.InputError` unless it is a finite positive number."""
    if isinstance(per_minute, bool) or not isinstance(per_minute, (int, float)) or \
            not (math.isfinite(per_minute) and per_minute > 0):
        raise InputError("the registration rate must be a positive number per minute")
    return float(per_minute)


def full_after(per_minute: float) -> float:
    """Seconds after its last draw when a bucket is full again, however empty the draw left it: its
    capacity over its rate (60 s from one registration a minute on)."""
    return max(1.0, per_minute) / (per_minute / 60.0)


def draw(tokens: float | None, at: float | None, per_minute: float, now: float) -> tuple[float, float]:
    """The bucket ``(tokens, at)`` after one registration at ``now`` (seconds since the epoch), from the
    bucket as stored (``None, None``: never drawn from, so full). A clock that went back refills
    nothing until it is past ``at`` again.

    Raises
    ------
    RegistrationsLimited
        The bucket holds less than one token at ``now``.
    """
    rate, capacity = per_minute / 60.0, max(1.0, per_minute)
    held = capacity if tokens is None or at is None else min(capacity, tokens + max(0.0, now - at) * rate)
    if held < 1.0:
        raise RegistrationsLimited((1.0 - held) / rate)
    return held - 1.0, now
