"""Regularised Bradley-Terry-Luce M-estimator (post-processing only), and its Newton solver.

Minimises the count-weighted penalised negative log-likelihood

    L(theta) = sum_pairs [ n_ij * log(1 + exp(theta_i - theta_j)) - s_ij * (theta_i - theta_j) ]
               + lam * ||theta||^2

over the per-pair statistic of :class:`~privrank.data.pair_counts.PairCounts` (``n_ij``
records, ``s_ij`` the sum of record values for "i beats j"). On the complete design with L
users this is L times eq. (3) of Xu, Sun, Cheng with ``lam_paper = lam / L``; with
``s_ij`` the debiased sums it is their private M-estimator. ``lam > 0`` always: debiased
values leave [0, 1], and without a ridge the objective can be unbounded below.

The Hessian is a weighted graph Laplacian plus ``2 lam I`` and does not depend on ``s``, so
the problem is strongly convex and Newton's method converges quadratically. Two solvers:
dense Newton (Cholesky of the m x m Hessian) and, for large m, Newton with conjugate
gradients on the sparse Hessian. Both stop at a gradient 2-norm <= ``tol`` (default 1e-9), or at
the floating-point floor of 1e-14 times the total record weight when that is larger.
Because the gradient components sum to ``2 lam sum(theta)``, the minimiser has sum zero
(Lemma 3).

The objective, its derivatives and the solver take a ``link`` (:mod:`privrank.pairwise.links`;
default logistic, the BTL likelihood above) and an optional linear term ``linear @ theta``:
with them the same solver minimises the objective-perturbed likelihood of Cai, Chakraborty and
Wang (:mod:`privrank.pairwise.central`). With a link other than logistic, ``s_ij`` must lie in
``[0, n_ij]`` for the loss to be convex.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.pair_counts import PairCounts, grouped_csr, row_order
from ..data.tabular import TableLike
from ..errors import DisconnectedError, InputError, UtilityWarning, check_positive, check_whole
from ..display import Displayed
from ..guarantees import Guarantee
from .. import kernels
from .arena import comparisons_or_arena
from .links import LOGISTIC, Link

if TYPE_CHECKING:
    from ..data.comparisons import PairwiseComparisons
    from .release import PairwiseRelease

DENSE_MAX_ITEMS = 600
#: up to this many items the logistic link's dense Newton loop runs compiled (:mod:`privrank.kernels`, when
#: built): there numpy's per-call overhead, not arithmetic, sets the time; above it LAPACK's solve is faster
KERNEL_MAX_ITEMS = 96


def _compiled_newton(m: int, link: Link):
    """The compiled kernels when a dense fit on ``m`` items with ``link`` runs its full Newton steps
    there, else None."""
    return kernels.compiled if m <= KERNEL_MAX_ITEMS and link is LOGISTIC else None


@dataclass(frozen=True, repr=False)
class ScoredRanking(Displayed):
    """Scores of items (larger is better) and the ranking they induce, with a guarantee.

    Attributes
    ----------
    scores : ndarray
        One score per item, in item order.
    items : tuple
        Item labels.
    guarantee : Guarantee
        What the scores protect.
    tie_break : ndarray or None
        Keyword only: a permutation of the items; among equal scores the item with the smaller
        ``tie_break`` value ranks first. None breaks ties by item index.

    Examples
    --------
    >>> import numpy as np
    >>> import privrank as pr
    >>> r = pr.ScoredRanking(np.array([0.2, 1.5, -0.7]), ("a", "b", "c"), pr.Guarantee.non_private())
    >>> r.ranking, r.top_k(2)
    (['b', 'a', 'c'], ['b', 'a'])
    >>> r.table(2)
    [{'rank': 1, 'item': 'b', 'score': 1.5}, {'rank': 2, 'item': 'a', 'score': 0.2}]
    """

    scores: np.ndarray
    items: tuple
    guarantee: Guarantee
    tie_break: np.ndarray | None = field(default=None, kw_only=True)

    @property
    def order(self) -> np.ndarray:
        """Item indices from best to worst (ties broken by ``tie_break``)."""
        key = np.arange(self.scores.size) if self.tie_break is None else self.tie_break
        return np.lexsort((key, -self.scores))

    @property
    def ranking(self) -> list:
        """Item labels from best to worst."""
        return [self.items[k] for k in self.order]

    def top_k(self, k: int) -> list:
        """Labels of the k items with the largest scores."""
        if not 1 <= check_whole(k, name="k") <= len(self.items):
            raise InputError(f"k must be between 1 and the number of items ({len(self.items)})")
        return self.ranking[: int(k)]

    def table(self, k: int | None = None) -> list[dict]:
        """Ranking rows ``{rank, item, score}`` from best to worst (the first ``k`` if given)."""
        order = self.order if k is None else self.order[: len(self.top_k(k))]
        return [{"rank": r + 1, "item": self.items[i], "score": float(self.scores[i])}
                for r, i in enumerate(order)]

    def _rows(self) -> list[dict]:
        return self.table()

    def scores_series(self):
        """The scores as a pandas Series indexed by item label, best first (pandas is imported only
        here); the guarantee in ``attrs`` as in :meth:`to_pandas`."""
        frame = self.to_pandas()
        series = frame.set_index("item")["score"]
        series.attrs.update(frame.attrs)
        return series


@dataclass(frozen=True, repr=False)
class BTLFit(ScoredRanking):
    """Result of a BTL fit.

    Attributes
    ----------
    scores : ndarray
        Sum-zero BTL scores (log-strengths), one per item, in item order.
    items : tuple
        Item labels.
    guarantee : Guarantee
        What the input release protects (fitting is post-processing).
    lam : float
        Ridge strength used (count-weighted form).
    n_iter, grad_norm, converged, solver
        Convergence diagnostics of the solver; ``objective``, the penalised objective at the
        scores, is computed when first read.
    release : PairwiseRelease or None
        The release the scores were fitted to (set by :func:`fit_btl`); confidence intervals
        (:func:`privrank.confidence_intervals`) need it.
    counts : PairCounts or None
        The per-pair statistic the scores were fitted to (``objective`` is evaluated on it).

    Examples
    --------
    The non-private fit of the 2019 NFL season's games (shipped with privrank):

    >>> import privrank as pr
    >>> from privrank.data.datasets import load_nfl
    >>> fit = pr.fit_btl(load_nfl(2019))
    >>> fit.top_k(3)
    ['SF', 'BAL', 'KC']
    >>> fit.converged, fit.solver, fit.info["estimate"]
    (True, 'dense', 'maximum likelihood')
    >>> print(fit.guarantee.describe())
    NOT PRIVATE: no differential-privacy guarantee.
    """

    lam: float
    n_iter: int
    grad_norm: float
    converged: bool
    solver: str
    info: dict = field(default_factory=dict)
    release: PairwiseRelease | None = field(default=None, repr=False, compare=False)
    counts: PairCounts | None = field(default=None, repr=False, compare=False)

    @cached_property
    def objective(self) -> float:
        """The penalised objective at the scores (computed when first read)."""
        if self.counts is None:
            raise InputError("this fit keeps no per-pair statistic to evaluate its objective on")
        return btl_objective(self.scores, self.counts, self.lam)


def btl_objective(theta, pc, lam, link: Link = LOGISTIC, linear=None) -> float:
    """Penalised negative log-likelihood, plus ``linear @ theta`` when given."""
    d = theta[pc.i] - theta[pc.j]
    f = float(link.pair_loss(d, pc.wins, pc.totals).sum() + lam * theta @ theta)
    return f if linear is None else f + float(linear @ theta)


def btl_gradient(theta, pc, lam, link: Link = LOGISTIC, linear=None) -> np.ndarray:
    return _derivatives(theta, pc, lam, link, linear)[0]


def _derivatives(theta, pc, lam, link: Link = LOGISTIC, linear=None, work=None):
    """The gradient and the Hessian's edge weights (one per pair) at ``theta``; ``work``: three
    float arrays of one entry per pair that hold the intermediate results (the edge weights
    returned are the second), so that Newton's iterations allocate no per-pair memory (a fresh
    array of a few MB costs its page faults on every call)."""
    m = theta.size
    if work is None:
        r, w = link.pair_derivatives(theta[pc.i] - theta[pc.j], pc.wins, pc.totals)
        g = pc.row_sums(r) - np.bincount(pc.j, r, m)
    else:
        d, w, other = work
        theta.take(pc.i, out=d, mode="clip")  # the pairs' indices are in range: no bounds checks
        d -= theta.take(pc.j, out=other, mode="clip")
        r, w = link.pair_derivatives(d, pc.wins, pc.totals, out=(d, w))
        g = pc.row_sums(r) - np.bincount(pc.j, r, m)
    if lam:
        g += 2.0 * lam * theta
    return (g if linear is None else g + linear), w


_LAPLACIAN_SIGNS = np.array([[-1.0], [-1.0], [1.0], [1.0]])  # the entries (i, j), (j, i), (i, i), (j, j)


def laplacian_positions(i, j, m: int) -> np.ndarray:
    """Flat positions in an ``m x m`` matrix of the entries ``(i, j)``, ``(j, i)``, ``(i, i)`` and
    ``(j, j)`` of every pair: what :func:`weighted_laplacian` fills (computed once per solve)."""
    return np.concatenate((i, j, i, j)) * m + np.concatenate((j, i, i, j))


def weighted_laplacian(i, j, w, m: int, ridge: float = 0.0, positions=None) -> np.ndarray:
    """Dense ``sum_k w_k (e_i[k] - e_j[k])(e_i[k] - e_j[k])^T + ridge I`` over distinct pairs, summed
    by one ``bincount`` over the :func:`laplacian_positions` (given, or computed here)."""
    pos = laplacian_positions(i, j, m) if positions is None else positions
    H: np.ndarray = np.bincount(pos, (_LAPLACIAN_SIGNS * w).ravel(), m * m).reshape(m, m)  # weighted: floats
    if ridge:
        H.flat[:: m + 1] += ridge
    return H


def btl_hessian(theta, pc, lam, link: Link = LOGISTIC) -> np.ndarray:
    """Dense Hessian: weighted Laplacian of the comparison graph plus ``2 lam I``."""
    w = link.pair_curvature(theta[pc.i] - theta[pc.j], pc.wins, pc.totals)
    return weighted_laplacian(pc.i, pc.j, w, theta.size, 2.0 * lam)


class _SparseHessian:
    """The Hessian ``diag(h) - U - U^T`` as an operator: ``U`` holds one edge weight per pair
    (row ``i``, column ``j``) in a CSR structure built once per solve; each Newton step only
    refills its values (``U^T`` is the same arrays read by columns)."""

    def __init__(self, pc):
        self.order = row_order(pc.i)
        self.upper = grouped_csr(pc.i, pc.j, pc.n_items, order=self.order)

    def operator(self, w, diag, shift: float):
        """The operator at edge weights ``w`` and diagonal ``diag``, plus ``shift * 1 1'``."""
        import scipy.sparse.linalg

        U = self.upper
        U.data = w if self.order is None else w[self.order]
        UT = U.T

        def matvec(x):
            y = diag * x - U @ x - UT @ x
            return y + shift * x.sum() if shift else y

        m = diag.size
        return scipy.sparse.linalg.LinearOperator((m, m), matvec=matvec, dtype=float)


def newton_btl(pc, lam: float, *, link: Link = LOGISTIC, linear=None, tol: float = 1e-9,
               max_iter: int = 200, solver: str = "auto", theta0=None):
    """Minimise the penalised objective of ``link`` (plus ``linear @ theta`` when given).

    The one Newton solver of privrank: the BTL fits of :func:`fit_btl` and the objective-
    perturbed MLE of :mod:`privrank.pairwise.central` both run it. Returns
    ``(theta, n_iter, grad_norm, converged, solver)``.
    """
    m = pc.n_items
    if isinstance(solver, str) and solver == "auto":
        solver = "dense" if m <= DENSE_MAX_ITEMS else "sparse"
    if not isinstance(solver, str) or solver not in ("dense", "sparse"):
        raise InputError("solver must be 'auto', 'dense' or 'sparse'")
    theta = np.zeros(m) if theta0 is None else np.array(theta0, dtype=float)
    # The gradient is a sum over records: below ~1e-14 x total weight it is rounding noise.
    scale = float(np.abs(pc.totals).sum()) + (0.0 if linear is None else float(np.abs(linear).sum()))
    tol = max(tol, 1e-14 * scale)
    # the likelihood alone is flat along 1 and g is orthogonal to it: with lam = 0 the step is
    # solved with H + 1 1'/m, nonsingular, which gives the same step on the sum-zero subspace
    shift = 1.0 / m if lam == 0 else 0.0
    it = 0
    compiled = _compiled_newton(m, link) if solver == "dense" else None
    if compiled is not None:
        # the full steps compiled; the loop below goes on where one needs a line search (status 1) or
        # the Cholesky factorisation meets a pivot <= 0 (status 2: LU decides)
        it, gnorm, status = compiled.full_steps(
            np.ascontiguousarray(pc.i, dtype=np.int64), np.ascontiguousarray(pc.j, dtype=np.int64),
            np.ascontiguousarray(pc.wins, dtype=float), np.ascontiguousarray(pc.totals, dtype=float),
            None if linear is None else np.ascontiguousarray(linear, dtype=float), theta, float(lam), shift, tol,
            int(max_iter))
        if status == 0:
            return theta, it, gnorm, gnorm <= tol, solver
    f = None  # the objective at theta, evaluated only when a step needs a line search
    # the per-pair work arrays: the edge weights w are only read to form the step, so every
    # candidate's derivatives may overwrite them
    work = tuple(np.empty(pc.n_pairs) for _ in range(3))
    g, w = _derivatives(theta, pc, lam, link, linear, work)
    gnorm = math.sqrt(g @ g)
    sparse_hessian = _SparseHessian(pc) if solver == "sparse" else None
    positions = laplacian_positions(pc.i, pc.j, m) if solver == "dense" else None
    while gnorm > tol and it < max_iter:
        it += 1
        if solver == "dense":
            H = weighted_laplacian(pc.i, pc.j, w, m, 2.0 * lam, positions)
            if shift:
                H += shift
            step = np.linalg.solve(H, g)  # H step = g: the step is -step (numpy's LAPACK: nothing to import)
        else:
            import scipy.sparse.linalg  # the sparse solver alone imports scipy

            assert sparse_hessian is not None  # solver "sparse"
            diag = pc.row_sums(w) + np.bincount(pc.j, w, m) + 2.0 * lam
            # forcing term 0.01 ||g|| (quadratic convergence), but no tighter than needed for the
            # next gradient, about the residual, to land below a tenth of tol
            rtol = max(min(1e-2, max(1e-2 * gnorm, 0.1 * tol / gnorm)), 1e-12)
            M = scipy.sparse.diags(1.0 / (diag + shift))
            step, _ = scipy.sparse.linalg.cg(sparse_hessian.operator(w, diag, shift), g, rtol=rtol, atol=0.0,
                                             M=M, maxiter=10 * m)
        # A full step that shrinks the gradient norm by a tenth is taken without evaluating the
        # objective (the usual case: Newton on a smooth convex objective); otherwise Armijo
        # backtracking on the objective. Near the optimum objective differences drop below
        # rounding, so a full step that reduces the gradient is taken when the objective is flat.
        cand = theta - step
        gc, wc = _derivatives(cand, pc, lam, link, linear, work)
        gc_norm = math.sqrt(gc @ gc)
        if gc_norm <= 0.9 * gnorm:
            theta, f, g, w, gnorm = cand, None, gc, wc, gc_norm
            continue
        f = btl_objective(theta, pc, lam, link, linear) if f is None else f
        slope = -float(g @ step)
        flat = 1e-12 * (1.0 + abs(f))
        t = 1.0
        while True:
            cand = theta - t * step
            fc = btl_objective(cand, pc, lam, link, linear)
            if fc <= f + 1e-4 * t * slope or t < 1e-10:
                gc, wc = _derivatives(cand, pc, lam, link, linear, work)
                break
            if t == 1.0 and fc <= f + flat:
                gc, wc = _derivatives(cand, pc, lam, link, linear, work)
                if math.sqrt(gc @ gc) < gnorm:
                    break
            t *= 0.5
        gc_norm = math.sqrt(gc @ gc)
        if gc_norm >= gnorm and fc >= f:  # no progress possible in floating point
            break
        theta, f, g, w, gnorm = cand, fc, gc, wc, gc_norm
    return theta, it, gnorm, gnorm <= tol, solver


def newton_btl_many(i, j, n_items: int, totals, wins, lam: float, *, link: Link = LOGISTIC, linear=None,
                    max_iter: int = 100):
    """Solve many penalised problems on one comparison design at once.

    Row ``b`` of ``wins`` (and of ``linear``, when given) defines problem ``b`` on the pairs
    ``(i, j)`` with ``totals`` records each. The problems are stacked into one block-diagonal
    problem over ``B * n_items`` scores and solved by :func:`newton_btl`, so the work is
    vectorised over problems; on up to ``KERNEL_MAX_ITEMS`` items, with the compiled kernels,
    each problem is solved on its own instead. Returns ``(theta, ok)``: the ``B x n_items`` solutions and, per
    problem, whether it converged to finite scores.
    """
    wins = np.atleast_2d(np.asarray(wins, dtype=float))
    B = wins.shape[0]
    tot = np.broadcast_to(np.asarray(totals, dtype=float), wins.shape)
    lin = None if linear is None else np.asarray(linear, dtype=float).reshape(B, n_items)
    if _compiled_newton(n_items, link) is not None:
        # on few items one compiled fit per problem beats the stacked problem's sparse solve (a
        # simulated study of 59 items: about 0.1 ms against 10 ms)
        i, j = np.ascontiguousarray(i, dtype=np.int64), np.ascontiguousarray(j, dtype=np.int64)  # once, not per fit
        theta, gnorm = np.empty((B, n_items)), np.empty(B)
        for b in range(B):
            theta[b], _, gnorm[b], *_ = newton_btl(PairCounts(n_items, i, j, wins[b], tot[b]), lam, link=link,
                                                   linear=None if lin is None else lin[b], max_iter=max_iter)
    else:
        offset = (np.arange(B) * n_items)[:, None]
        pc = PairCounts(B * n_items, (i + offset).ravel(), (j + offset).ravel(), wins.ravel(), tot.ravel())
        flat = None if lin is None else lin.ravel()
        theta, *_ = newton_btl(pc, lam, link=link, linear=flat, max_iter=max_iter)
        gnorm = np.linalg.norm(btl_gradient(theta, pc, lam, link, flat).reshape(B, n_items), axis=1)
        theta = theta.reshape(B, n_items)
    scale = 1.0 + tot.sum(axis=1) + (0.0 if lin is None else np.abs(lin).sum(axis=1))
    ok = np.all(np.isfinite(theta), axis=1) & (np.max(np.abs(theta), axis=1) <= 50.0) & (gnorm <= 1e-7 * scale)
    return theta, ok


def refuse_uncompared(compared) -> None:
    """Refuse a fit with items that appear in no comparison (``compared``: each item's records)."""
    missing = np.count_nonzero(np.asarray(compared) <= 0)
    if missing:
        raise DisconnectedError(f"{missing} item(s) appear in no comparison and cannot be ranked; "
                                "drop them from the item list")


def fit_pair_counts(pc, lam: float, guarantee: Guarantee, *, tol: float = 1e-9, max_iter: int = 200,
                    solver: str = "auto", info: dict | None = None, release=None) -> BTLFit:
    """Fit BTL scores to a :class:`PairCounts` statistic (see module docstring); ``release``: the
    release it came from, kept on the fit."""
    try:
        lam = float(lam)
    except (TypeError, ValueError, OverflowError):
        lam = math.nan
    if not (lam >= 0 and np.isfinite(lam)):
        raise InputError("lam must be a finite number >= 0 (0: the maximum-likelihood estimate)")
    if pc.n_pairs == 0:
        raise DisconnectedError("no comparisons between distinct items")
    compared = pc.items_compared()
    refuse_uncompared(compared)
    info = dict(info or {})
    ncomp = info["n_components"] = info.get("n_components") or pc.n_components()
    if ncomp > 1:
        warnings.warn(f"the comparison graph has {ncomp} connected components: scores of items in "
                      "different components are compared only through the ridge penalty",
                      UtilityWarning, stacklevel=3)
    try:
        theta, it, gnorm, ok, used = newton_btl(pc, lam, tol=tol, max_iter=max_iter, solver=solver,
                                                theta0=None if lam else _log_odds(pc, compared))
    except np.linalg.LinAlgError:
        raise InputError(f"the ridge lam = {lam:g} is too small for this comparison design: the Newton system is "
                         "singular in floating point; use a larger lam (e.g. the default)") from None
    theta -= theta.sum() / theta.size  # exact sum-zero (Lemma 3), removes round-off drift
    if not ok:
        warnings.warn(f"BTL fit stopped at gradient norm {gnorm:.3g} > tol {tol:.3g}",
                      UtilityWarning, stacklevel=3)
    if np.abs(theta).max() > 50:
        warnings.warn("BTL scores are very large: increase lam (the data may be nearly separable "
                      "or too noisy for this privacy level)", UtilityWarning, stacklevel=3)
    items = pc.items if pc.items else tuple(range(pc.n_items))
    return BTLFit(theta, items, guarantee, float(lam), it, gnorm, ok, used, info, release, pc)


def fit_btl(data: PairwiseRelease | PairwiseComparisons | TableLike | Sequence[Hashable],
            ys: Sequence[Hashable] | None = None, winners: Sequence[Any] | None = None, *, lam: float | str = "default",
            weights: str = "uniform", tol: float = 1e-9, max_iter: int = 200, solver: str = "auto") -> BTLFit:
    """Fit the regularised BTL model (Xu, Sun, Cheng eq. 3, count-weighted form).

    ``fit_btl(data)``, or ``fit_btl(xs, ys, winners)`` in evalica's call shape (the non-private fit
    of raw comparisons, :mod:`privrank.pairwise.arena`); the scores keyed by item are
    ``fit.scores_series()``.

    Parameters
    ----------
    data : PairwiseRelease or PairwiseComparisons
        A private release (from :func:`privrank.debiased_randomized_response` and friends),
        randomized reports with an epsilon column (debiased here, never randomized again), or
        raw comparisons (the non-private fit), or a DataFrame of either; or ``xs``, the first item
        of each comparison.
    ys : sequence, optional
        With ``xs`` as ``data`` and ``winners``: the second item of each comparison, ``ys[k]``
        against ``xs[k]``.
    winners : sequence, optional
        With ``xs`` and ``ys``: evalica's ``Winner`` of each comparison (``Winner.X`` or 1:
        ``xs[k]`` won; ``Winner.Y`` or 2: ``ys[k]`` won; ``Winner.Draw`` or 0: a tie).
    lam : float, "default" or "paper"
        Ridge strength in the count-weighted objective. ``"default"``: for a private release
        ``G``, the variance inflation of the release (``mean coth^2(eps/2)``): on the complete
        design with L users this is the ``lambda = G(eps)/L`` of eq. (3) that the paper's theory
        supports; for raw comparisons the maximum-likelihood estimate (``lam = 0``, what choix and
        evalica compute) where it exists (:func:`mle_exists`), else the ridge ``lam = 1``;
        ``info["estimate"]`` says which. ``"paper"`` is the literal ``(e^eps+1)^2/(e^eps-1)`` of
        the paper's §5.1, which over-shrinks at large eps (kept for reproduction only). ``0``
        asks for the maximum-likelihood estimate and is refused where it does not exist.
    weights : {"uniform", "inverse_variance"}
        How debiased reports are averaged when ``data`` are reports (see
        :func:`privrank.pairwise.release.record_weights`).
    tol : float
        Stop at gradient 2-norm <= tol.
    solver : {"auto", "dense", "sparse"}
        Dense Newton (m <= 600 by default) or sparse Newton-CG.

    Returns
    -------
    BTLFit
        Carries the guarantee of the input release: fitting is post-processing.

    Examples
    --------
    The non-private maximum-likelihood fit of raw comparisons, then the fit of a local-DP release
    (post-processing: the fit carries the release's guarantee):

    >>> import numpy as np
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> np.round(pr.fit_btl(comps).scores, 3)
    array([ 1.079,  0.478, -0.04 , -0.522, -0.995])
    >>> fit = pr.fit_btl(pr.debiased_randomized_response(comps, epsilon=1.0, rng=1))
    >>> np.round(fit.scores, 3), fit.ranking
    (array([ 1.097,  0.404, -0.033, -0.27 , -1.199]), [0, 1, 2, 3, 4])
    >>> fit.guarantee.epsilon, fit.guarantee.model
    (1.0, 'local')
    """
    from .release import WEIGHTS, as_release

    data = comparisons_or_arena(data, ys, winners, "fit_btl")
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise InputError(f"weights must be one of {', '.join(WEIGHTS)}")
    if weights != "uniform" and not getattr(data, "is_randomized", False):
        raise InputError("weights apply when fitting randomized reports (a release is already weighted; raw "
                         "comparisons are not randomized)")
    check_positive(tol, name="tol")
    check_whole(max_iter, name="max_iter")
    rel = as_release(data, weights=weights)
    estimate = "ridge-penalised"
    if isinstance(lam, str):
        if lam == "default":
            lam = rel.variance_factor
            if not rel.guarantee.private and rel.variance_factor == 1.0 and rel.counts.n_pairs:
                if mle_exists(rel.counts):
                    lam, estimate = 0.0, "maximum likelihood"
                else:
                    estimate = ("ridge-penalised (lam = 1): the maximum-likelihood estimate does not exist, because "
                                "some group of items never loses (or never wins) against the rest")
        elif lam == "paper":
            if rel.paper_lam is None:
                raise InputError("lam='paper' needs a private release with a finite epsilon")
            lam = rel.paper_lam
        else:
            raise InputError("lam must be a positive number, 'default' or 'paper'")
    if estimate != "maximum likelihood" and isinstance(lam, (int, float, np.number)) and lam == 0:
        if not mle_exists(rel.counts):
            raise InputError("lam = 0 asks for the maximum-likelihood estimate, which does not exist here: some "
                             "group of items never loses (or never wins) against the rest; use lam > 0")
        estimate = "maximum likelihood"
    info = {"variance_factor": rel.variance_factor, "estimate": estimate}
    if estimate == "maximum likelihood":
        info["n_components"] = 1  # a strongly connected graph is connected
    return fit_pair_counts(rel.counts, lam, rel.guarantee, tol=tol, max_iter=max_iter, solver=solver, info=info,
                           release=rel)


def _log_odds(pc, compared) -> np.ndarray:
    """Each item's log-odds of winning (``compared``: its records), smoothed by a half win and a half
    loss: a start for the maximum-likelihood Newton iterations (about two fewer steps than from zero)."""
    won = pc.borda()  # debiased reports may count below 0 or above the records: clipped to a half
    return np.log(np.maximum(won + 0.5, 0.5) / np.maximum(compared - won + 0.5, 0.5))


def mle_exists(pc) -> bool:
    """Whether the unpenalised BTL likelihood has a maximiser: the graph with an edge ``i -> j``
    whenever ``i`` beat ``j`` (a tie is half a win each way) is strongly connected (Zermelo; Ford
    1957). Otherwise some group of items never loses to the rest and its scores run to infinity."""
    m = pc.n_items
    if m <= DENSE_MAX_ITEMS:  # a dense breadth-first search: no sparse matrices to build
        won, lost = pc.wins > 0, pc.wins < pc.totals
        edges = np.zeros((2, m, m), dtype=bool)
        beaten = edges[0]  # row l: the items that beat l, which reach l
        beaten[pc.j[won], pc.i[won]] = True
        beaten[pc.i[lost], pc.j[lost]] = True
        beaten.flat[:: m + 1] = True  # an item reaches itself
        edges[1] = beaten.T  # row k: the items k beat, which k reaches
        return _reaches_all(edges)
    import scipy.sparse.csgraph

    both = (pc.wins > 0) & (pc.totals - pc.wins > 0)  # pairs won and lost: edges both ways
    rows = pc.i[both]
    two_way = grouped_csr(rows, pc.j[both], m, order=row_order(rows))
    if scipy.sparse.csgraph.connected_components(two_way, directed=False)[0] == 1:
        return True  # they alone connect every item (4x faster than the whole graph's strong components)
    order = row_order(pc.i)
    won = grouped_csr(pc.i, pc.j, m, data=(pc.wins > 0).astype(float), order=order)  # edges i -> j
    lost = grouped_csr(pc.i, pc.j, m, data=(pc.totals - pc.wins > 0).astype(float), order=order)
    graph = won + lost.T  # and j -> i where i lost
    graph.eliminate_zeros()  # a zero is no edge
    return scipy.sparse.csgraph.connected_components(graph, directed=True, connection="strong")[0] == 1


def _reaches_all(edges) -> bool:
    """Whether node 0 reaches every node and every node reaches node 0: ``edges`` holds, in row ``l``
    of ``edges[0]``, the nodes with an edge to ``l`` and, in row ``k`` of ``edges[1]``, the nodes
    ``k`` has an edge to, each with a True diagonal. Both searches take one step per matrix product
    (read along rows, stopping at the first edge from a reached node)."""
    k, m, _ = edges.shape
    seen = edges[:, :, :1]  # one step from node 0
    count = np.count_nonzero(seen)
    while True:
        seen = edges @ seen
        reached = np.count_nonzero(seen)
        if reached in (count, k * m):
            return reached == k * m
        count = reached
