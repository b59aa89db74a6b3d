"""Noisy Borda: its sensitivities, the noise it draws, its engines, and its distance to the truth."""
import itertools

import numpy as np
import pytest

import privrank as pr
from privrank.aggregation.private_borda import borda_sensitivities
from privrank.metrics import kendall_distance
from privrank.simulate import sample_mallows


def points(order):
    """Borda points of one ranking (item indices best first): the number of items each beats."""
    out = np.empty(len(order))
    out[np.asarray(order)] = np.arange(len(order))[::-1]
    return out


@pytest.mark.parametrize("m", [2, 3, 4, 5])
def test_the_sensitivities_are_the_largest_distance_between_two_rankings(m):
    vectors = np.array([points(p) for p in itertools.permutations(range(m))])
    diff = vectors[:, None, :] - vectors[None, :, :]
    l1, l2 = borda_sensitivities(m)
    assert np.abs(diff).sum(axis=2).max() == l1
    assert np.sqrt((diff ** 2).sum(axis=2)).max() == pytest.approx(l2)


def test_the_noise_drawn_has_the_stated_scale():
    """The released scores minus the true mean points, over 400 draws of 6 items: their standard
    deviation is sqrt(2) x the Laplace scale floor(m^2/2) / (n eps), within 4 standard errors (a
    release drawing half the noise is far outside)."""
    R = sample_mallows(6, phi=0.7, n=50, rng=0)
    truth = R.pairwise_counts().sum(axis=1) / R.n_voters
    res = [pr.noisy_borda(R, epsilon=2.0, rng=seed) for seed in range(400)]
    scale = res[0].details["noise_scale"]
    assert scale == pytest.approx(18 / (50 * 2.0))
    noise = np.concatenate([r.release.scores - truth for r in res])
    sd, expected = noise.std(), np.sqrt(2) * scale
    assert abs(sd - expected) < 4 * expected / np.sqrt(2 * noise.size) * 1.6  # Laplace kurtosis 6
    gaussian = pr.noisy_borda(R, epsilon=1.0, delta=1e-6, rng=0)
    assert gaussian.details["noise"] == "gaussian" and gaussian.guarantee.delta == 1e-6


def test_the_tally_of_the_engines_gives_the_same_release():
    R = sample_mallows(7, phi=0.8, n=300, rng=1)
    tally = pr.sufficient_statistics(R, kind="rankings")
    a, b = pr.noisy_borda(R, epsilon=1.0, rng=5), pr.noisy_borda(tally, epsilon=1.0, rng=5)
    assert np.array_equal(a.order, b.order) and np.allclose(a.release.scores, b.release.scores)


def test_closer_to_the_truth_than_the_papers_methods_at_fifty_items():
    """Mallows (phi 0.8) around 0..49, 1,000 rankings, epsilon 1, 6 seeds: noisy Borda misorders
    about 3.5% of the pairs, Hay's quicksort (the best of the papers' methods there) about 14%."""
    m, seeds = 50, 6
    truth = -np.arange(m, dtype=float)

    def error(method, seed):
        R = sample_mallows(m, phi=0.8, n=1000, rng=seed)
        order = method(R, epsilon=1.0, rng=seed + 100).order
        scores = np.empty(m)
        scores[order] = -np.arange(m)
        return kendall_distance(scores, truth)

    borda = [error(pr.noisy_borda, s) for s in range(seeds)]
    hay = [error(pr.hay_quicksort, s) for s in range(seeds)]
    se = np.hypot(np.std(borda, ddof=1), np.std(hay, ddof=1)) / np.sqrt(seeds)
    assert np.mean(hay) - np.mean(borda) > 4 * se
