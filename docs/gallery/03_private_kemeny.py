"""Rank intervals of a private Kemeny aggregate.

2,000 voters each rank 12 items, drawn from a Mallows model around the order 0, 1, ..., 11
(dispersion 0.8: noisy voters). A private Kemeny aggregate at epsilon = 1 (central model: each
voter's whole ranking is protected) orders the items; the rank intervals, post-processing of
the release, show how far the privacy noise could move each one. (The eleven NFL standings of
`load_nfl_standings` are far too few rankings for this epsilon: every interval spans all 32
ranks.)
"""
import privrank as pr
from privrank.simulate import sample_mallows

rankings = sample_mallows(12, phi=0.8, n=2000, rng=0)
aggregate = pr.private_kemeny(rankings, epsilon=1.0, rng=0)
intervals = pr.aggregate_intervals(aggregate, n_bootstrap=200, rng=0)

figure = intervals.plot(title="2,000 Mallows rankings, private Kemeny, epsilon = 1")
figure.savefig("figure.png")
