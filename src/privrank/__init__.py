"""privrank: differentially private rank aggregation.

Every private function returns an object carrying a :class:`Guarantee` that states the
privacy parameters, the trust model and the protected unit. Estimators and solvers are
post-processing of private releases.

The names below are imported on first use (PEP 562), so that ``import privrank`` and the
command line start fast; ``privrank.X`` and ``from privrank import X`` work as usual.
"""
import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: every public name and the module (under privrank) that defines it
_EXPORTS = {
    "Accountant": "guarantees",
    "AggregateResult": "aggregation.private_kemeny",
    "ApproxDP": "guarantees",
    "BTLFit": "pairwise.btl",
    "BudgetExceededError": "errors",
    "CentralRanking": "pairwise.central",
    "ComparisonTally": "data.tally",
    "ConfidenceIntervals": "inference",
    "CountRelease": "mechanisms.counts",
    "DisconnectedError": "errors",
    "Guarantee": "guarantees",
    "InputError": "errors",
    "PrivacyWarning": "errors",
    "UtilityWarning": "errors",
    "WeakPrivacyWarning": "errors",
    "Ledger": "ledger",
    "ManipulationMargin": "inference.manipulation",
    "PairCounts": "data.pair_counts",
    "PairwiseComparisons": "data.comparisons",
    "PairwiseRelease": "pairwise.release",
    "PureDP": "guarantees",
    "RankIntervals": "inference",
    "RankingTally": "data.rankings",
    "Rankings": "data.rankings",
    "ScoredRanking": "pairwise.btl",
    "TreeRelease": "mechanisms.tree",
    "ZCDP": "guarantees",
    "adaptive_epsilon": "pairwise.local",
    "aggregate_intervals": "inference",
    "approximate_median": "mechanisms.tree",
    "classic_randomized_response": "pairwise.local",
    "comparisons_from_ratings": "data.ratings",
    "compose": "guarantees",
    "compose_budgets": "guarantees",
    "confidence_intervals": "inference",
    "copeland": "pairwise.central",
    "debias": "mechanisms.randomized_response",
    "debiased_randomized_response": "pairwise.local",
    "dp_footrule": "aggregation.private_footrule",
    "dp_kwiksort": "aggregation.private_kemeny",
    "dp_ptas": "aggregation.private_footrule",
    "exact_kemeny": "aggregation.kemeny_exact",
    "exponential_kemeny": "aggregation.private_kemeny",
    "fit_btl": "pairwise.btl",
    "flip_probability": "mechanisms.randomized_response",
    "footrule_cost": "metrics",
    "footrule_cost_matrix": "aggregation.footrule",
    "footrule_cost_release": "mechanisms.tree",
    "footrule_distance": "metrics",
    "footrule_optimal_order": "aggregation.footrule",
    "hay_quicksort": "aggregation.private_kemeny",
    "kemeny_cost": "metrics",
    "kendall_distance": "metrics",
    "kendall_tau_distance": "metrics",
    "l2_error": "metrics",
    "ldp_footrule": "aggregation.private_footrule",
    "ldp_kwiksort": "aggregation.private_kemeny",
    "ldp_matrix": "aggregation.private_kemeny",
    "linf_error": "metrics",
    "local_laplace": "pairwise.local",
    "manipulation_margin": "inference.manipulation",
    "noisy_borda": "aggregation.private_borda",
    "noisy_copeland": "pairwise.central",
    "noisy_counts": "mechanisms.counts",
    "penalised_mle": "pairwise.central",
    "perturbed_mle": "pairwise.central",
    "plot_intervals": "inference",
    "private_aggregate": "aggregation.auto",
    "private_kemeny": "aggregation.private_kemeny",
    "randomize_answer": "mechanisms.randomized_response",
    "randomized_response": "pairwise.local",
    "rank_centrality": "pairwise.spectral",
    "rank_position_mismatch": "metrics",
    "read_comparisons": "data.io",
    "read_pair_counts": "data.pair_count_files",
    "read_rankings": "data.io",
    "release_from_reports": "pairwise.release",
    "sufficient_statistics": "engines",
    "top_k_hamming": "metrics",
    "zcdp_epsilon": "guarantees",
    "zcdp_rho": "guarantees",
}

# the same names for type checkers (__all__ re-exports them); tests/test_typing.py keeps the two lists equal
if TYPE_CHECKING:
    from .aggregation.auto import private_aggregate
    from .aggregation.footrule import footrule_cost_matrix, footrule_optimal_order
    from .aggregation.private_borda import noisy_borda
    from .aggregation.kemeny_exact import exact_kemeny
    from .aggregation.private_footrule import dp_footrule, dp_ptas, ldp_footrule
    from .aggregation.private_kemeny import (AggregateResult, dp_kwiksort, exponential_kemeny, hay_quicksort,
                                             ldp_kwiksort, ldp_matrix, private_kemeny)
    from .data.comparisons import PairwiseComparisons
    from .data.io import read_comparisons, read_rankings
    from .data.pair_count_files import read_pair_counts
    from .data.pair_counts import PairCounts
    from .data.rankings import RankingTally, Rankings
    from .data.ratings import comparisons_from_ratings
    from .data.tally import ComparisonTally
    from .engines import sufficient_statistics
    from .errors import (BudgetExceededError, DisconnectedError, InputError, PrivacyWarning, UtilityWarning,
                         WeakPrivacyWarning)
    from .guarantees import (Accountant, ApproxDP, Guarantee, PureDP, ZCDP, compose, compose_budgets, zcdp_epsilon,
                             zcdp_rho)
    from .inference import ConfidenceIntervals, RankIntervals, aggregate_intervals, confidence_intervals, plot_intervals
    from .inference.manipulation import ManipulationMargin, manipulation_margin
    from .ledger import Ledger
    from .mechanisms.counts import CountRelease, noisy_counts
    from .mechanisms.randomized_response import debias, flip_probability, randomize_answer
    from .mechanisms.tree import TreeRelease, approximate_median, footrule_cost_release
    from .metrics import (footrule_cost, footrule_distance, kemeny_cost, kendall_distance, kendall_tau_distance,
                          l2_error, linf_error, rank_position_mismatch, top_k_hamming)
    from .pairwise.btl import BTLFit, ScoredRanking, fit_btl
    from .pairwise.central import CentralRanking, copeland, noisy_copeland, penalised_mle, perturbed_mle
    from .pairwise.spectral import rank_centrality
    from .pairwise.local import (adaptive_epsilon, classic_randomized_response, debiased_randomized_response,
                                 local_laplace, randomized_response)
    from .pairwise.release import PairwiseRelease, release_from_reports

__all__ = [
    "Accountant", "AggregateResult", "ApproxDP", "BTLFit", "BudgetExceededError", "CentralRanking",
    "ComparisonTally", "ConfidenceIntervals", "CountRelease", "DisconnectedError", "Guarantee", "InputError",
    "Ledger", "ManipulationMargin", "PairCounts", "PairwiseComparisons", "PairwiseRelease", "PrivacyWarning", "PureDP",
    "RankIntervals", "RankingTally", "Rankings", "ScoredRanking", "TreeRelease", "UtilityWarning",
    "WeakPrivacyWarning", "ZCDP",
    "adaptive_epsilon", "aggregate_intervals", "approximate_median", "classic_randomized_response",
    "comparisons_from_ratings", "compose", "compose_budgets", "confidence_intervals", "copeland", "debias",
    "debiased_randomized_response", "dp_footrule", "dp_kwiksort", "dp_ptas", "exact_kemeny",
    "exponential_kemeny", "fit_btl", "flip_probability", "footrule_cost", "footrule_cost_matrix",
    "footrule_cost_release", "footrule_distance", "footrule_optimal_order", "hay_quicksort", "kemeny_cost",
    "kendall_distance", "kendall_tau_distance", "l2_error", "ldp_footrule", "ldp_kwiksort", "ldp_matrix",
    "linf_error", "local_laplace", "manipulation_margin", "noisy_borda", "noisy_copeland", "noisy_counts", "penalised_mle", "perturbed_mle", "plot_intervals",
    "private_aggregate", "private_kemeny", "randomize_answer", "randomized_response", "rank_centrality", "rank_position_mismatch",
    "read_comparisons", "read_pair_counts", "read_rankings", "release_from_reports", "sufficient_statistics", "top_k_hamming",
    "zcdp_epsilon", "zcdp_rho",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
    else:  # a subpackage or module, e.g. privrank.inference
        try:
            value = importlib.import_module(f".{name}", __name__)
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module 'privrank' has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
