"""The central release: objective perturbation, with intervals.

In the central model a trusted curator holds the raw judgments and releases only the scores,
fitted by a perturbed maximum-likelihood objective (epsilon = 1 per comparison). The item list
must be public: LLMFAO's 59 models are a published list, so they are declared. The intervals
(bias-corrected, privacy noise included) assume every pair was compared equally often: the real
design is data, which the release does not show.
"""
import dataclasses

import privrank as pr
from privrank.data.datasets import load_llmfao

comps = dataclasses.replace(load_llmfao(), items_declared=True)
release = pr.perturbed_mle(comps, epsilon=1.0, rng=0)
intervals = pr.confidence_intervals(release, bias_corrected=True)

figure = intervals.plot(title="LLMFAO, central objective perturbation, epsilon = 1")
figure.savefig("figure.png")
