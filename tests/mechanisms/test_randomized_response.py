"""Randomized response, its counter-based randomness, debiasing (Xu, Sun, Cheng §2.1-2.3; notes §8)."""
import numpy as np
import pytest

from privrank.data.tally import EpsilonLevels
from privrank.errors import InputError
from privrank.mechanisms.randomized_response import (RECORD_CHUNK, debias, flip_probability, randomize_answer,
                                                     randomize_bits, randomize_records, record_key, record_uniforms,
                                                     variance_inflation)

EPS = (0.1, 0.7, 1.0, 3.0)


@pytest.mark.parametrize("eps", EPS)
def test_flip_probability_and_exact_ratio(eps):
    p = flip_probability(eps)
    assert p == pytest.approx(1 / (1 + np.exp(eps)))
    assert p < 0.5
    # P(report 1 | y=1) / P(report 1 | y=0) and the same for report 0: exactly e^eps
    assert (1 - p) / p == pytest.approx(np.exp(eps))


@pytest.mark.parametrize("eps", (0.1, 1.0, 3.0))
def test_empirical_report_probabilities(eps):
    n = 1_000_000
    rng = np.random.default_rng(int(eps * 10))
    keep = 1 - flip_probability(eps)
    for y, expected in ((1.0, keep), (0.0, 1 - keep), (0.5, 0.5)):
        freq = randomize_bits(np.full(n, y), eps, rng).mean()
        se = np.sqrt(expected * (1 - expected) / n)
        assert abs(freq - expected) < 4 * se


def test_under_noised_randomizer_is_caught():
    # Negative control: randomization at 2*eps while claiming eps must violate the e^eps ratio.
    eps, n = 1.0, 400_000
    rng = np.random.default_rng(3)
    p1 = randomize_bits(np.ones(n), 2 * eps, rng).mean()
    p0 = randomize_bits(np.zeros(n), 2 * eps, rng).mean()
    se = np.sqrt(p1 * (1 - p1) / n) / p0 + p1 * np.sqrt(p0 * (1 - p0) / n) / p0 ** 2
    assert p1 / p0 - 4 * se > np.exp(eps)


def test_debias_values():
    np.testing.assert_allclose(debias([0, 1], 1.0), [-0.5819767068693265, 1.5819767068693265])
    eps = 2.0
    np.testing.assert_allclose(debias([0, 1], eps), [-1 / np.expm1(eps), np.exp(eps) / np.expm1(eps)])


@pytest.mark.parametrize("eps,P", [(0.7, 0.8), (1.0, 0.5), (2.0, 0.1), (0.3, 0.95)])
def test_debiased_mean_and_variance(eps, P):
    n = 400_000
    rng = np.random.default_rng(11)
    y = (rng.random(n) < P).astype(float)
    z = debias(randomize_bits(y, eps, rng), eps)
    var = variance_inflation(eps) / 4 - (P - 0.5) ** 2
    assert abs(z.mean() - P) < 4 * np.sqrt(var / n)
    # z is two-valued: exact fourth central moment gives the standard error of the sample variance;
    # estimating the mean adds a term of order var/n (it dominates when P = 1/2, where mu4 = var^2)
    q = 0.5 + np.tanh(eps / 2) * (P - 0.5)
    v0, v1 = debias([0, 1], eps)
    mu4 = (1 - q) * (v0 - P) ** 4 + q * (v1 - P) ** 4
    assert abs(z.var() - var) < 4 * np.sqrt(max(mu4 - var ** 2, 0.0) / n) + 4 * var / n
    if (eps, P) == (0.7, 0.8):
        assert var == pytest.approx(2.1195, abs=1e-4)


@pytest.mark.parametrize("eps,P", [(2.0, 0.8), (0.5, 0.3)])
def test_classic_rr_mean_is_shrunk(eps, P):
    # Lemma 1: E[report] = 1/2 + tanh(eps/2) (P - 1/2)
    n = 400_000
    rng = np.random.default_rng(5)
    y = (rng.random(n) < P).astype(float)
    r = randomize_bits(y, eps, rng)
    expected = 0.5 + np.tanh(eps / 2) * (P - 0.5)
    assert abs(r.mean() - expected) < 4 * np.sqrt(expected * (1 - expected) / n)


def test_respondent_side_function():
    rng = np.random.default_rng(0)
    reports = [randomize_answer(1, 1.0, rng) for _ in range(4000)]
    assert set(reports) <= {1, -1}
    keep = 1 - flip_probability(1.0)
    assert abs(np.mean(np.array(reports) == 1) - keep) < 4 * np.sqrt(keep * (1 - keep) / 4000)
    assert randomize_answer(0, 5.0, 1) in (1, -1)
    with pytest.raises(InputError):
        randomize_answer(2, 1.0)
    with pytest.raises(InputError):
        randomize_answer(1, 0.0)
    with pytest.raises(InputError):
        randomize_answer(1, float("nan"))


def test_seeded_randomization_is_reproducible():
    y = np.tile([0.0, 1.0, 0.5], 100)
    np.testing.assert_array_equal(randomize_bits(y, 1.0, 42), randomize_bits(y, 1.0, 42))


def test_counter_based_reports_do_not_depend_on_batching():
    # record r always uses the r-th Philox output, so any split into batches gives the same reports
    v = np.random.default_rng(1).integers(0, 3, 10_001)
    key = record_key(123)
    whole = randomize_records(v, 0.9, key)
    cuts = [0, 1, 2, 3, 7, 4096, 5003, 10_001]
    pieces = [randomize_records(v[s:e], 0.9, key, first_record=s) for s, e in zip(cuts, cuts[1:])]
    np.testing.assert_array_equal(np.concatenate(pieces), whole)
    # negative control: forgetting the record offsets is visible
    wrong = [randomize_records(v[s:e], 0.9, key) for s, e in zip(cuts, cuts[1:])]
    assert not np.array_equal(np.concatenate(wrong), whole)


@pytest.mark.parametrize("eps", [1e-12, 0.9, 40.0, 800.0])  # p near 1/2, typical, 1 - p rounding to 1, p = 0
def test_each_report_is_its_records_uniform_below_its_answers_probability(eps):
    # the definition, record by record, across chunks and from an odd first record
    n, first = RECORD_CHUNK + 1001, 7
    v = np.random.default_rng(2).integers(0, 3, n)
    p = flip_probability(eps)
    expected = record_uniforms(record_key(8), first, n).reshape(-1) < np.array([p, 0.5, 1.0 - p])[v]
    np.testing.assert_array_equal(randomize_records(v, eps, record_key(8), first), expected)


@pytest.mark.parametrize("n_levels", [3, 60])  # table rows as int8, and as int16
def test_levels_randomize_as_per_record_epsilons_do(n_levels):
    rng = np.random.default_rng(6)
    v = rng.integers(0, 3, 50_000).astype(np.int8)
    index = rng.integers(0, n_levels, v.size).astype(np.int8)
    levels = EpsilonLevels(np.linspace(0.3, 2.5, n_levels), index)
    key = record_key(9)
    np.testing.assert_array_equal(randomize_records(v, levels, key), randomize_records(v, levels.values[index], key))
    shared = EpsilonLevels(np.array([1.7]), np.int64(0))
    np.testing.assert_array_equal(randomize_records(v, shared, key), randomize_records(v, 1.7, key))
    # a level read off by one is caught
    assert not np.array_equal(randomize_records(v, levels, key),
                              randomize_records(v, levels.values[(index + 1) % n_levels], key))


def test_bad_epsilon_levels_are_clear_errors():
    v = np.array([0, 2, 1], dtype=np.int8)
    for levels in (EpsilonLevels(np.array([1.0, 2.0]), np.array([0, 2, 1], dtype=np.int8)),
                   EpsilonLevels(np.array([1.0]), np.int64(-1)),
                   EpsilonLevels(np.array([1.0, 2.0]), np.array([0, 1], dtype=np.int8))):
        with pytest.raises(InputError, match="epsilon level"):
            randomize_records(v, levels, record_key(1))
    with pytest.raises(InputError):
        randomize_records(v, EpsilonLevels(np.array([1.0, -2.0]), np.array([0, 1, 0])), record_key(1))


def test_record_keys():
    assert np.array_equal(record_key(7), record_key(7)) and not np.array_equal(record_key(7), record_key(8))
    gen = np.random.default_rng(0)
    assert not np.array_equal(record_key(gen), record_key(gen))  # one Generator, independent runs
    assert not np.array_equal(record_key(None), record_key(None))
    with pytest.raises(InputError, match="rng must be"):
        record_key("seed")


def test_neighbouring_records_are_independent():
    # Reports of consecutive records (which share Philox blocks of four outputs) are uncorrelated:
    # the lag-1 correlation of n iid reports has standard error 1/sqrt(n). The same check catches
    # a generator that reused one uniform for the four records of a block.
    n = 400_000
    reports = randomize_records(np.ones(n, dtype=np.int8), 1.0, record_key(3)).astype(float)

    def lag_correlation(r):
        return np.corrcoef(r[:-1], r[1:])[0, 1]
    assert abs(lag_correlation(reports)) < 4 / np.sqrt(n)
    u = np.random.Generator(np.random.Philox(key=record_key(3))).random(n // 4)
    reused = (np.repeat(u, 4) < 1 - flip_probability(1.0)).astype(float)
    assert abs(lag_correlation(reused)) > 4 / np.sqrt(n)


@pytest.mark.parametrize("per_record", [False, True])
def test_likelihood_ratio_per_epsilon_form(per_record):
    # P(report 1 | answer 1) / P(report 1 | answer 0) must be e^eps for a scalar epsilon and for one
    # epsilon per record; the ratio's standard error is by the delta method. Randomizing at 2 eps
    # while claiming eps exceeds e^eps by far more than that.
    eps, n = 1.0, 400_000

    def ratio(true_eps):
        e = np.full(n, true_eps) if per_record else true_eps
        p1 = randomize_records(np.full(n, 2, dtype=np.int8), e, record_key(10)).mean()
        p0 = randomize_records(np.zeros(n, dtype=np.int8), e, record_key(11)).mean()
        se = np.sqrt(p1 * (1 - p1) / n) / p0 + p1 * np.sqrt(p0 * (1 - p0) / n) / p0 ** 2
        return p1 / p0, se
    r, se = ratio(eps)
    assert abs(r - np.exp(eps)) < 4 * se
    r, se = ratio(2 * eps)
    assert r - 4 * se > np.exp(eps)


def test_randomize_records_validates():
    with pytest.raises(InputError):
        randomize_records(np.array([3]), 1.0, record_key(0))
    with pytest.raises(InputError):
        randomize_records(np.array([0.5]), 1.0, record_key(0))
    with pytest.raises(InputError):
        randomize_records(np.array([1]), 1.0, record_key(0), first_record=-1)
    with pytest.raises(InputError):
        randomize_bits(np.array([0.25]), 1.0, 0)


def test_respondent_side_function_refuses_what_is_not_one_answer():
    # an array was compared with (1, -1, 0): numpy's "truth value ... is ambiguous"
    with pytest.raises(InputError, match="outcome must be 1, -1 or 0"):
        randomize_answer(np.array([1, -1]), 1.0)
    # False would have been answered as a tie
    with pytest.raises(InputError, match="outcome must be 1, -1 or 0"):
        randomize_answer(False, 1.0)
    with pytest.raises(InputError, match="epsilon must be a number > 0, got list"):
        randomize_answer(1, [[0.5, 1.0], [2.0]])
