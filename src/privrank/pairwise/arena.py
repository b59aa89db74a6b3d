"""Comparisons in the call shape of arena leaderboards and evalica: three sequences ``xs, ys, winners``.

``fit_btl(xs, ys, winners)`` (and :func:`~privrank.penalised_mle`, :func:`~privrank.copeland`,
:func:`~privrank.rank_centrality`) read the ``k``-th comparison as ``xs[k]`` against ``ys[k]``, with
``winners[k]`` one of evalica's ``Winner`` values (an ``IntEnum``): ``Winner.X`` (1, ``xs[k]`` won),
``Winner.Y`` (2, ``ys[k]`` won) or ``Winner.Draw`` (0, a tie), given as the enum's members or their
integers -- evalica itself is not needed. These are the non-private fits: a private release needs the
item list declared, which the labels that occur in three sequences cannot be
(:func:`privrank.read_comparisons` of a table with ``items=`` gives it).
"""
from __future__ import annotations

import numpy as np

from ..data.comparisons import PairwiseComparisons
from ..errors import InputError

#: evalica's ``Winner`` values and privrank's outcome of ``xs[k]`` against ``ys[k]`` for each
WINNER_OUTCOMES = {0: 0, 1: 1, 2: -1}  # Draw, X, Y


def arena_comparisons(xs, ys, winners) -> PairwiseComparisons:
    """:class:`PairwiseComparisons` of ``xs[k]`` against ``ys[k]`` with evalica's ``winners[k]``."""
    try:
        w = np.asarray(winners)
        with np.errstate(invalid="ignore"):
            codes = w.astype(np.int64) if w.dtype.kind in "iuf" or w.dtype == object else None
    except (TypeError, ValueError, OverflowError):
        codes = None
    if codes is None or w.ndim != 1 or not np.all(codes == w) or not np.all(np.isin(codes, list(WINNER_OUTCOMES))):
        raise InputError("winners must hold evalica's Winner values: Winner.X (1: xs[k] won), Winner.Y (2: ys[k] "
                         "won) or Winner.Draw (0: a tie); for outcomes 1, -1, 0 use "
                         "PairwiseComparisons.from_labels or read_comparisons")
    n = codes.size
    if any(not hasattr(s, "__len__") or len(s) != n for s in (xs, ys)):
        raise InputError("xs, ys and winners must be sequences of the same length (one comparison each)")
    outcome = np.array([WINNER_OUTCOMES[k] for k in sorted(WINNER_OUTCOMES)], dtype=np.int8)[codes]
    return PairwiseComparisons.from_labels(xs, ys, outcome)


def comparisons_or_arena(data, ys, winners, name: str):
    """``data`` as given, or -- with ``ys`` and ``winners`` -- the comparisons ``data, ys, winners`` in
    evalica's call shape (:func:`arena_comparisons`)."""
    if ys is None and winners is None:
        return data
    if ys is None or winners is None:
        raise InputError(f"{name} takes one data argument, or three sequences xs, ys, winners (evalica's call "
                         "shape); its other options are keyword-only")
    return arena_comparisons(data, ys, winners)
