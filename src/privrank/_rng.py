"""Coerce ``rng`` arguments.

Every randomized function in privrank takes ``rng=``: ``None`` draws from a cryptographically
secure generator keyed by the operating system (AES-128 in counter mode, ``randomgen.AESCounter``,
with a fresh 128-bit key from :func:`secrets.token_bytes`); an ``int`` or a
:class:`numpy.random.Generator` gives a reproducible stream. Seeded runs are for research and
tests; a real release leaves ``rng=None``.
"""
from __future__ import annotations

import secrets

import numpy as np

from .errors import InputError

RNGLike = None | int | np.random.Generator


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng`` (None, int seed or Generator)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None:
        return np.random.Generator(secure_bits(secrets.token_bytes(16)))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise InputError("a seed must be a whole number >= 0")
        return np.random.default_rng(rng)
    raise InputError("rng must be None, an int seed or a numpy.random.Generator")


def secure_bits(key: bytes, counter: int = 0):
    """AES-128 in counter mode (a CSPRNG) under ``key`` (16 bytes), from block ``counter`` on."""
    from randomgen import AESCounter

    return AESCounter(key=int.from_bytes(key, "little"), counter=counter)


def is_seeded(rng: RNGLike) -> bool:
    """True when ``rng`` makes a run reproducible (an int seed or a Generator): research, not a release."""
    return rng is not None
