"""privrank: differentially private rank aggregation.

Every private function returns an object carrying a :class:`Guarantee` that states the
privacy parameters, the trust model and the protected unit. Estimators and solvers are
post-processing of private releases.
"""
from .data.comparisons import ComparisonTally, PairCounts, PairwiseComparisons
from .data.io import read_comparisons
from .engines import sufficient_statistics
from .errors import BudgetExceededError, DisconnectedError, InputError
from .guarantees import Guarantee, compose
from .mechanisms.randomized_response import debias, flip_probability, randomize_answer
from .metrics import kendall_distance, l2_error, linf_error, top_k_hamming
from .pairwise.btl import BTLFit, fit_btl
from .pairwise.local import (adaptive_epsilon, classic_randomized_response,
                               debiased_randomized_response, local_laplace, randomized_response)
from .pairwise.release import PairwiseRelease, release_from_reports

__version__ = "0.1.0"

__all__ = [
    "BTLFit", "BudgetExceededError", "ComparisonTally", "DisconnectedError", "Guarantee", "InputError",
    "PairCounts", "PairwiseComparisons", "PairwiseRelease", "adaptive_epsilon", "classic_randomized_response",
    "compose", "debias", "debiased_randomized_response", "fit_btl", "flip_probability",
    "kendall_distance", "l2_error", "linf_error", "local_laplace", "randomize_answer",
    "randomized_response", "read_comparisons", "release_from_reports", "sufficient_statistics",
    "top_k_hamming",
]
