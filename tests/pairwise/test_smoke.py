import numpy as np

import privrank as pr
from privrank.simulate import btl_complete_design


def test_private_fit_recovers_scores():
    theta = np.linspace(-1, 1, 8)
    comps = btl_complete_design(theta, 300, rng=1)
    fit = pr.fit_btl(pr.debiased_randomized_response(comps, 2.0, rng=2))
    assert fit.converged and abs(fit.scores.sum()) < 1e-8
    assert pr.kendall_distance(fit.scores, theta) < 0.2
