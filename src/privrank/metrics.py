"""Error metrics for rankings and scores (Xu, Sun, Cheng §2.5).

Score-based metrics take score vectors (larger = better) over the same items.
"""
from __future__ import annotations

import numpy as np

from .errors import InputError


def _pair(est, true):
    a = np.asarray(est, dtype=float)
    b = np.asarray(true, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError("score vectors must be 1-d and of the same length")
    if a.size < 2:
        raise InputError("need at least two items")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise InputError("scores must be finite")
    return a, b


def kendall_distance(est, true, *, tol: float = 1e-8) -> float:
    """Normalised Kendall tau distance: the fraction of item pairs ordered oppositely.

    Score differences within ``tol`` count as ties (sign 0) and are never discordant, so weak
    orders that agree up to round-off have distance 0.
    """
    a, b = _pair(est, true)
    da = a[:, None] - a[None, :]
    db = b[:, None] - b[None, :]
    sa = np.where(np.abs(da) <= tol, 0, np.sign(da))
    sb = np.where(np.abs(db) <= tol, 0, np.sign(db))
    m = a.size
    return float(np.sum(np.triu(sa * sb < 0, 1)) / (m * (m - 1) / 2))


def top_k_hamming(est, true, k: int) -> float:
    """Normalised top-K Hamming error H_K: the fraction of the true top-K that is missed.

    Ties at the boundary are broken by item index in both vectors.
    """
    a, b = _pair(est, true)
    if not 1 <= int(k) <= a.size:
        raise InputError("k must be between 1 and the number of items")
    idx = np.arange(a.size)
    top_a = set(np.lexsort((idx, -a))[: int(k)])
    top_b = set(np.lexsort((idx, -b))[: int(k)])
    return len(top_b - top_a) / int(k)


def l2_error(est, true) -> float:
    """``||est - true||_2 / sqrt(m)`` (both centred to sum zero first)."""
    a, b = _pair(est, true)
    d = (a - a.mean()) - (b - b.mean())
    top = np.max(np.abs(d))  # scaled so that huge scores do not overflow the squares
    return float(top * np.linalg.norm(d / top) / np.sqrt(a.size)) if top > 0 else 0.0


def linf_error(est, true) -> float:
    """``||est - true||_inf`` (both centred to sum zero first)."""
    a, b = _pair(est, true)
    return float(np.max(np.abs((a - a.mean()) - (b - b.mean()))))


# --- Spearman footrule (Hillebrand et al. §1.2) ---------------------------------------------

def _orders(orders, m: int | None = None) -> np.ndarray:
    o = np.asarray(orders)
    if o.ndim == 1:
        o = o[None, :]
    if o.ndim != 2 or o.shape[1] < 1:
        raise InputError("orders must be a ranking or an (n, m) array of rankings")
    if m is not None and o.shape[1] != m:
        raise InputError("rankings must rank the same number of items")
    if np.any(np.sort(o, axis=1) != np.arange(o.shape[1])):
        raise InputError("every ranking must be a permutation of the items 0 .. m-1")
    return o


def footrule_distance(order_a, order_b) -> int:
    """Spearman footrule ``F = sum_q |pos_a(q) - pos_b(q)|`` between two orders (best first)."""
    a = _orders(order_a)
    b = _orders(order_b, a.shape[1])
    return int(np.abs(np.argsort(a[0]) - np.argsort(b[0])).sum())


def footrule_cost(order, orders, weights=None) -> float:
    """Mean footrule distance from ``order`` to the rankings ``orders`` (per voter, unnormalised).

    ``(1/n) sum_i F(order, orders_i)`` with optional non-negative voter ``weights`` (then the
    weighted mean), the objective of footrule aggregation (Hillebrand et al. §1.2).
    """
    out = _orders(order)
    rs = _orders(orders, out.shape[1])
    d = np.abs(np.argsort(rs, axis=1) - np.argsort(out[0])[None, :]).sum(axis=1)
    if weights is None:
        return float(d.mean())
    w = np.asarray(weights, dtype=float)
    if w.shape != (rs.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
        raise InputError("weights must be non-negative, finite, one per ranking, not all zero")
    return float(np.dot(w, d) / w.sum())
