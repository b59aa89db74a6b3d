"""Rank Centrality (Negahban, Oh and Shah 2017): a spectral ranking of pairwise comparisons, not private."""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np

from ..data.comparisons import PairwiseComparisons
from ..data.pair_counts import PairCounts
from ..data.tabular import TableLike
from ..errors import DisconnectedError, InputError, check_positive
from ..guarantees import Guarantee
from .arena import comparisons_or_arena
from .central import CentralRanking, _as_counts, _check_counts, _items


def rank_centrality(data: PairwiseComparisons | PairCounts | TableLike | Sequence[Hashable],
                    ys: Sequence[Hashable] | None = None, winners: Sequence[Any] | None = None, *,
                    pseudo_count: float = 1.0) -> CentralRanking:
    """Rank Centrality (Negahban, Oh and Shah 2017): the stationary distribution of a random walk.

    From item ``i`` the walk moves to each compared item ``j`` with probability
    ``a_ji / d_max``, where ``a_ji = (wins of j over i + c) / (comparisons of i and j + 2c)`` with
    pseudo-count ``c`` (which keeps the walk irreducible when an item never loses) and
    ``d_max`` the largest number of distinct opponents; it stays put otherwise. Under BTL the
    stationary distribution ``pi`` is proportional to ``exp(theta)`` when the ``a_ji`` equal
    the true probabilities, so the scores are ``log pi``, centred. Not private. The comparison
    graph must be connected. ``rank_centrality(xs, ys, winners)`` takes evalica's call shape
    (:mod:`privrank.pairwise.arena`).

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> rc = pr.rank_centrality(comps)
    >>> np.round(rc.scores, 3), rc.order
    (array([ 1.062,  0.486, -0.065, -0.453, -1.03 ]), array([0, 1, 2, 3, 4]))
    """
    import scipy.sparse.linalg  # imported where used: the commands that rank otherwise skip it

    c = check_positive(pseudo_count, name="pseudo_count", allow_zero=True)
    pc = _check_counts(_as_counts(comparisons_or_arena(data, ys, winners, "rank_centrality")))
    m = pc.n_items
    if pc.n_components() > 1:
        raise DisconnectedError("the comparison graph is not connected: Rank Centrality needs every item "
                                "linked to every other through comparisons")
    d_max = float(np.max(np.bincount(pc.i, minlength=m) + np.bincount(pc.j, minlength=m)))
    to_j = (pc.totals - pc.wins + c) / (pc.totals + 2 * c) / d_max  # i -> j: j beat i
    to_i = (pc.wins + c) / (pc.totals + 2 * c) / d_max  # j -> i
    out = np.bincount(pc.i, to_j, m) + np.bincount(pc.j, to_i, m)
    P = scipy.sparse.csr_matrix((np.concatenate([to_j, to_i, 1.0 - out]),
                                 (np.concatenate([pc.i, pc.j, np.arange(m)]),
                                  np.concatenate([pc.j, pc.i, np.arange(m)]))), shape=(m, m))
    # pi (I - P) = 0 with pi_{m-1} = 1: the first m-1 columns of (I - P) give m-1 equations.
    A = (scipy.sparse.identity(m, format="csr") - P).T.tocsc()
    pi = np.ones(m)
    with np.errstate(all="ignore"):
        pi[:-1] = scipy.sparse.linalg.spsolve(A[:-1, :-1], -A[:-1, -1].toarray().ravel())
    if not (np.all(np.isfinite(pi)) and np.all(pi > 0)):
        raise InputError("the Rank Centrality walk has no positive stationary distribution (an item never "
                         "loses); use pseudo_count > 0")
    scores = np.log(pi)
    return CentralRanking(scores - scores.mean(), _items(pc), Guarantee.non_private("Rank Centrality"),
                          method="Rank Centrality", params={"pseudo_count": c})
