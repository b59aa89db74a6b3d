"""Footrule methods of ``privrank aggregate`` (Hillebrand et al.).

``METHODS`` maps a ``--method`` name to ``(profile, args) -> (order, guarantee, extra, result)``
(``result``: the private result object, None for the non-private method); the aggregate command
renders the order with the profile's item labels. ``args`` carries the
aggregate command's options (``epsilon``, ``delta``, ``seed``; optionally ``solver``,
``variant``, ``buckets``, ``kappa``). Non-private methods add ``footrule_cost`` (mean Spearman
footrule distance from the output to the input rankings, per voter, unnormalised); private
methods report nothing computed exactly from the rankings.
"""
from __future__ import annotations

from ..aggregation.footrule import footrule_optimal_order, profile_arrays
from ..aggregation.private_footrule import dp_footrule, dp_ptas, ldp_footrule
from ..errors import InputError
from ..guarantees import Guarantee
from ..metrics import footrule_cost

PRIVATE = ("dp-footrule", "ldp-footrule", "dp-ptas")


def _need_epsilon(args, method):
    eps = getattr(args, "epsilon", None)
    if eps is None:
        raise InputError(f"--method {method} needs --epsilon")
    return eps


def _footrule(profile, args):
    if getattr(args, "epsilon", None) is not None:
        raise InputError("--method footrule is not private: drop --epsilon (or use dp-footrule)")
    orders, w = profile_arrays(profile)
    order = footrule_optimal_order(orders, w)
    g = Guarantee.non_private("footrule optimum (min-cost assignment)")
    return order, g, {"footrule_cost": footrule_cost(order, orders, w)}, None


def _dp_footrule(profile, args):
    res = dp_footrule(profile, epsilon=_need_epsilon(args, "dp-footrule"),
                      delta=getattr(args, "delta", 0.0) or 0.0,
                      kappa=getattr(args, "kappa", None), rng=getattr(args, "seed", None))
    return res.order, res.guarantee, {"noise_scale": res.release.noise_scale}, res


def _ldp_footrule(profile, args):
    if getattr(args, "delta", 0.0):
        raise InputError("--method ldp-footrule is pure epsilon-local DP: drop --delta")
    res = ldp_footrule(profile, epsilon=_need_epsilon(args, "ldp-footrule"),
                       kappa=getattr(args, "kappa", None), rng=getattr(args, "seed", None))
    return res.order, res.guarantee, {}, res


def _dp_ptas(profile, args):
    res = dp_ptas(profile, epsilon=_need_epsilon(args, "dp-ptas"),
                  delta=getattr(args, "delta", 0.0) or 0.0,
                  variant=getattr(args, "variant", None) or "auto",
                  solver=getattr(args, "solver", None) or "exact",
                  buckets=getattr(args, "buckets", None), rng=getattr(args, "seed", None))
    extra = {"variant": res.variant}
    extra.update({k: v for k, v in res.details.items()})
    return res.order, res.guarantee, extra, res


METHODS = {
    "footrule": _footrule,
    "dp-footrule": _dp_footrule,
    "ldp-footrule": _ldp_footrule,
    "dp-ptas": _dp_ptas,
}
