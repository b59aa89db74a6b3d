"""Coerce ``rng`` arguments.

Every randomized function in privrank takes ``rng=``: ``None`` draws fresh OS entropy,
an ``int`` or a :class:`numpy.random.Generator` gives a reproducible stream. Seeded runs
are for research and tests; a real release should leave ``rng=None``.
"""
from __future__ import annotations

import numpy as np

RNGLike = None | int | np.random.Generator


def as_generator(rng: RNGLike) -> np.random.Generator:
    """Return a :class:`numpy.random.Generator` for ``rng`` (None, int seed or Generator)."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return np.random.default_rng(rng)
    raise TypeError("rng must be None, an int seed or a numpy.random.Generator")


def is_seeded(rng: RNGLike) -> bool:
    """True when ``rng`` makes a run reproducible (an int seed or a Generator): research, not a release."""
    return rng is not None
