"""Comparisons in the call shape of arena leaderboards and evalica: three sequences ``xs, ys, winners``.

``fit_btl(xs, ys, winners)``, and every public function that takes comparisons (the non-private fits
:func:`~privrank.penalised_mle`, :func:`~privrank.copeland`, :func:`~privrank.rank_centrality`, the
local releases :func:`~privrank.randomized_response`, :func:`~privrank.debiased_randomized_response`,
:func:`~privrank.classic_randomized_response`, :func:`~privrank.local_laplace`, and the central ones
:func:`~privrank.perturbed_mle` and :func:`~privrank.noisy_copeland`), read the ``k``-th comparison as
``xs[k]`` against ``ys[k]``, with ``winners[k]`` one of evalica's ``Winner`` values (an ``IntEnum``):
``Winner.X`` (1, ``xs[k]`` won), ``Winner.Y`` (2, ``ys[k]`` won) or ``Winner.Draw`` (0, a tie), given as
the enum's members or their integers -- evalica itself is not needed. The releases take their budget
by keyword (``debiased_randomized_response(xs, ys, winners, epsilon=1)``). Their items are the labels
that occur, which a local release may use (each report shows its pair anyway); a central release needs
the item list declared, ``items=`` (which items occur is a fact of the data).
"""
from __future__ import annotations

import numpy as np

from ..data.comparisons import PairwiseComparisons
from ..errors import InputError
from ..release import reads

#: evalica's ``Winner`` values and privrank's outcome of ``xs[k]`` against ``ys[k]`` for each
WINNER_OUTCOMES = {0: 0, 1: 1, 2: -1}  # Draw, X, Y


def arena_comparisons(xs, ys, winners, items=None) -> PairwiseComparisons:
    """:class:`PairwiseComparisons` of ``xs[k]`` against ``ys[k]`` with evalica's ``winners[k]``, of the
    declared ``items`` (default: the labels that occur)."""
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
    return PairwiseComparisons.from_labels(xs, ys, outcome, items=items)


def comparisons_or_arena(data, ys, winners, name: str, *, items=None):
    """``data`` as given, or -- with ``ys`` and ``winners`` -- the comparisons ``data, ys, winners`` in
    evalica's call shape (:func:`arena_comparisons`) of the declared ``items``."""
    if ys is None and winners is None:
        if items is not None:
            raise InputError(f"{name}: items= declares the item list of xs, ys, winners; comparisons carry their "
                             "own (read_comparisons(..., items=...))")
        return data
    if ys is None or winners is None:
        raise InputError(f"{name} takes one data argument, or three sequences xs, ys, winners (evalica's call "
                         "shape); its other options are keyword-only")
    return arena_comparisons(data, ys, winners, items)


def release_arguments(data, ys, winners, epsilon, name: str, *, items=None):
    """``(comparisons, epsilon)`` of a release called ``name(comparisons, epsilon)`` (without ``winners``,
    ``ys`` stands for the epsilon, as the release's second parameter did before evalica's shape) or
    ``name(xs, ys, winners, epsilon=...)``; comparisons built from ``xs, ys, winners`` are the data set of
    the open release (:func:`privrank.release.reads`)."""
    if winners is None and epsilon is None:
        ys, epsilon = None, ys
    comps = comparisons_or_arena(data, ys, winners, name, items=items)
    if comps is not data:
        reads(comps)
    return comps, epsilon
