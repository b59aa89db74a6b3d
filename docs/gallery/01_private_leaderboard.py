"""A private leaderboard of LLMs with 95% intervals.

Each crowd judgment of LLMFAO is released by debiased randomized response at epsilon = 1 (local
differential privacy: the curator never sees a true answer); a Bradley-Terry-Luce fit of the
release gives each model a score, and sandwich intervals (bias-corrected for the fit's ridge) show
the uncertainty, privacy noise included.
"""
import privrank as pr
from privrank.data.datasets import load_llmfao

comps = load_llmfao()
release = pr.debiased_randomized_response(comps, epsilon=1.0, rng=0)
intervals = pr.confidence_intervals(pr.fit_btl(release), bias_corrected=True)

figure = intervals.plot(title="LLMFAO, local epsilon = 1 per comparison")
figure.savefig("figure.png")
