"""privrank: differentially private rank aggregation.

Every private function returns an object carrying a :class:`Guarantee` that states the
privacy parameters, the trust model and the protected unit. Estimators and solvers are
post-processing of private releases.
"""
from .aggregation.footrule import footrule_cost_matrix, footrule_optimal_order
from .aggregation.kemeny import exact_kemeny
from .aggregation.private_footrule import dp_footrule, dp_ptas, ldp_footrule
from .aggregation.private_kemeny import (AggregateResult, dp_kwiksort, exponential_kemeny,
                                         hay_quicksort, ldp_kwiksort, ldp_matrix, private_kemeny)
from .data.comparisons import ComparisonTally, PairCounts, PairwiseComparisons
from .data.io import read_comparisons, read_rankings
from .data.rankings import Rankings, RankingTally
from .engines import sufficient_statistics
from .errors import BudgetExceededError, DisconnectedError, InputError
from .guarantees import (Accountant, ApproxDP, Guarantee, PureDP, ZCDP, compose, compose_budgets,
                         zcdp_epsilon, zcdp_rho)
from .inference import ConfidenceIntervals, RankIntervals, aggregate_intervals, confidence_intervals
from .ledger import Ledger
from .mechanisms.counts import CountRelease, noisy_counts
from .mechanisms.randomized_response import debias, flip_probability, randomize_answer
from .mechanisms.tree import TreeRelease, approximate_median, footrule_cost_release
from .metrics import (footrule_cost, footrule_distance, kemeny_cost, kendall_distance,
                      kendall_tau_distance, l2_error, linf_error, rank_position_mismatch,
                      top_k_hamming)
from .pairwise.btl import BTLFit, ScoredRanking, fit_btl
from .pairwise.central import (CentralRanking, copeland, noisy_copeland, penalised_mle, perturbed_mle,
                               rank_centrality)
from .pairwise.local import (adaptive_epsilon, classic_randomized_response,
                               debiased_randomized_response, local_laplace, randomized_response)
from .pairwise.release import PairwiseRelease, release_from_reports

__version__ = "0.1.0"

__all__ = [
    "Accountant", "AggregateResult", "ApproxDP", "BTLFit", "BudgetExceededError", "CentralRanking",
    "ComparisonTally", "ConfidenceIntervals", "CountRelease", "DisconnectedError", "Guarantee",
    "InputError", "Ledger", "PairCounts", "PairwiseComparisons", "PairwiseRelease", "PureDP",
    "RankIntervals", "RankingTally", "Rankings", "ScoredRanking", "TreeRelease", "ZCDP", "adaptive_epsilon",
    "aggregate_intervals", "approximate_median", "classic_randomized_response", "compose",
    "compose_budgets", "confidence_intervals", "copeland", "debias", "debiased_randomized_response",
    "dp_footrule", "dp_kwiksort", "dp_ptas", "exact_kemeny", "exponential_kemeny", "fit_btl",
    "flip_probability", "footrule_cost", "footrule_cost_matrix", "footrule_cost_release",
    "footrule_distance", "footrule_optimal_order", "hay_quicksort", "kemeny_cost", "kendall_distance",
    "kendall_tau_distance", "l2_error", "ldp_footrule", "ldp_kwiksort", "ldp_matrix", "linf_error",
    "local_laplace", "noisy_copeland", "noisy_counts", "penalised_mle", "perturbed_mle",
    "private_kemeny", "randomize_answer", "randomized_response", "rank_centrality",
    "rank_position_mismatch", "read_comparisons", "read_rankings", "release_from_reports",
    "sufficient_statistics", "top_k_hamming", "zcdp_epsilon", "zcdp_rho",
]
