"""Releases called the way an adversary (or a careless caller) would: every spend a release states
is what it charges, and a parameter that is not a number is refused before anything is charged."""
import warnings

import numpy as np
import pytest

import privrank as pr


def _comparisons():
    return pr.PairwiseComparisons.from_labels(
        ["a", "b", "a", "c", "b", "a"], ["b", "c", "c", "b", "a", "c"], [1, -1, 1, 1, 0, -1],
        user=["u", "u", "v", "v", "w", "w"], items=["a", "b", "c"])


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


def test_whole_float_quota_is_released_as_charged():
    # a quota given as 2.0 was charged and drawn, then refused by the reports: privacy spent, nothing released
    acct = pr.Accountant(pr.PureDP(10.0))
    reports = _quiet(pr.randomized_response, _comparisons(), epsilon=1.0, max_answers=2.0, rng=0, accountant=acct)
    assert reports.max_answers == 2
    assert acct.spent == pr.PureDP(2.0)


@pytest.mark.parametrize("release, kwargs", [
    (pr.randomized_response, {"epsilon": 1.0}),
    (pr.debiased_randomized_response, {"epsilon": 1.0}),
    (pr.local_laplace, {"epsilon": 1.0}),
    (pr.noisy_copeland, {"epsilon": 1.0}),
    (pr.noisy_copeland, {"user_epsilon": 1.0}),
    (pr.perturbed_mle, {"user_epsilon": 1.0, "gamma": 10.0}),
])
@pytest.mark.parametrize("bound", [True, np.True_])
def test_truth_value_as_answers_bound_is_refused_before_charge(release, kwargs, bound):
    acct = pr.Accountant(pr.PureDP(10.0))
    with pytest.raises(pr.InputError, match="max_answers must be a whole number"):
        _quiet(release, _comparisons(), max_answers=bound, rng=0, accountant=acct, **kwargs)
    assert acct.spent is None


def test_truth_value_as_respondents_is_refused():
    with pytest.raises(pr.InputError, match="respondents must be a whole number"):
        pr.noisy_copeland(_comparisons(), user_epsilon=1.0, max_answers=2, respondents=True, rng=0)


@pytest.mark.parametrize("value", [True, np.True_, "1.0", b"1", np.array("1.0")])
@pytest.mark.parametrize("release", [pr.noisy_copeland, pr.perturbed_mle, pr.debiased_randomized_response])
def test_epsilon_that_is_not_a_number_is_refused_before_charge(release, value):
    acct = pr.Accountant(pr.PureDP(10.0))
    with pytest.raises(pr.InputError, match="epsilon must be a number > 0"):
        _quiet(release, _comparisons(), epsilon=value, rng=0, accountant=acct)
    assert acct.spent is None


@pytest.mark.parametrize("delta", [False, "1e-6"])
def test_delta_that_is_not_a_number_is_refused(delta):
    with pytest.raises(pr.InputError, match="delta must be a number"):
        pr.noisy_counts(np.array([3, 4]), epsilon=1.0, delta=delta, unit="one ranking", rng=0)


@pytest.mark.parametrize("budget", [lambda: pr.PureDP(True), lambda: pr.ApproxDP(1.0, "0"),
                                    lambda: pr.ZCDP("0.1"),
                                    lambda: pr.Guarantee(True, "central", "one ranking", "m")])
def test_budgets_refuse_truth_values_and_text(budget):
    with pytest.raises(pr.InputError):
        budget()


@pytest.mark.parametrize("counts", [
    lambda: pr.PairCounts.from_arrays(3, [0, 1], [1, 5], [1.0, 1.0], [1.0, 1.0], items="abc"),
    lambda: pr.PairCounts.from_arrays(3, [-1, 1], [1, 2], [1.0, 1.0], [1.0, 1.0], items="abc"),
    lambda: pr.PairCounts.from_arrays(3, [0, 1], [1, 2], [1.0, 1.0], [1.0, np.inf], items="abc"),
    lambda: pr.PairCounts.from_arrays(3, [0, 1], [1, 2], [1.0, 1.0], [1.0, 1.0], items="ab"),
])
@pytest.mark.parametrize("release", [pr.noisy_copeland, pr.perturbed_mle])
def test_counts_that_are_no_comparisons_are_refused_before_charge(release, counts):
    acct = pr.Accountant(pr.PureDP(10.0))
    with pytest.raises(pr.InputError):
        _quiet(release, counts(), epsilon=1.0, rng=0, accountant=acct)
    assert acct.spent is None


def _reports(**kwargs):
    return _quiet(pr.randomized_response, _comparisons(), rng=1, **kwargs)


@pytest.mark.parametrize("claim", [
    lambda: pr.Guarantee(0.1, "local", "one comparison", "randomized response"),
    lambda: pr.Guarantee(0.1, "central", "one ranking", "randomized response"),
    lambda: pr.Guarantee(5.0, "local", "one comparison", "randomized response", epsilon_per_comparison=5.0,
                         epsilon_per_user=5.0),
    lambda: pr.Guarantee(5.0, "local", "all comparisons of one user", "randomized response"),
])
def test_release_from_reports_refuses_a_guarantee_the_reports_do_not_deliver(claim):
    # every report is randomized at 5 and each user sent two: 10 per user by composition
    with pytest.raises(pr.InputError, match="more protection than these randomized reports deliver"):
        pr.release_from_reports(_reports(epsilon=5.0), guarantee=claim())


def test_release_from_reports_takes_a_guarantee_the_reports_deliver():
    claim = pr.Guarantee(5.0, "local", "one comparison", "randomized response", epsilon_per_comparison=5.0,
                         epsilon_per_user=10.0)
    assert pr.release_from_reports(_reports(epsilon=5.0), guarantee=claim).guarantee.epsilon_per_user == 10.0
    split = _reports(user_epsilon=3.0)
    claim = pr.Guarantee(3.0, "local", "all comparisons of one user", "randomized response")
    assert pr.release_from_reports(split, guarantee=claim).guarantee.epsilon == 3.0


def test_per_user_epsilons_of_the_wrong_length_do_not_say_how_many_users_there_are():
    comps = _comparisons()  # three users
    with pytest.raises(pr.InputError) as caught:
        pr.debiased_randomized_response(comps, epsilon=[1.0, 1.0], rng=0)
    assert "3" not in str(caught.value)


@pytest.mark.parametrize("release", [
    lambda acct: pr.approximate_median(np.arange(5), 5, epsilon=1.0, noise="gaussian", rng=0, accountant=acct),
    lambda acct: pr.footrule_cost_release(np.array([[0, 1, 2], [1, 0, 2]]), epsilon=1.0, noise="gaussian", rng=0,
                                          accountant=acct),
])
def test_gaussian_tree_without_delta_is_refused_before_charge(release):
    acct = pr.Accountant(pr.ApproxDP(10.0, 1e-3))
    with pytest.raises(pr.InputError, match="delta > 0"):
        release(acct)
    assert acct.spent is None


class _ConstantStream(np.random.Generator):
    """A Generator whose every random word is zero; it gives up after many words instead of letting a
    sampler that never stops run forever."""

    def __init__(self):
        super().__init__(np.random.PCG64(0))
        self.calls = 0

    def integers(self, low, high=None, size=None, dtype=np.int64, endpoint=False):
        self.calls += 1
        if self.calls > 100_000:
            raise RuntimeError("the sampler kept drawing from a constant stream")
        return np.zeros(size, dtype=dtype)


@pytest.mark.parametrize("release", [
    lambda rng: pr.noisy_copeland(_comparisons(), epsilon=1.0, rng=rng),
    lambda rng: pr.noisy_counts(np.array([3, 4]), epsilon=1.0, delta=1e-6, unit="one ranking", rng=rng),
])
def test_a_constant_random_stream_is_refused_not_run_forever(release):
    with pytest.raises(pr.InputError, match="not random"):
        release(_ConstantStream())


@pytest.mark.parametrize("release", ["private_kemeny", "dp_kwiksort", "hay_quicksort", "dp_footrule"])
@pytest.mark.parametrize("mark", ["items_declared", "selected"])
def test_a_tally_keeps_the_marks_its_profile_is_refused_for(release, mark):
    """A profile whose items were read off randomly completed ballots, or whose incomplete ballots were
    dropped, is refused by every private release; its tally (sufficient_statistics) lost the marks and
    was released: a guarantee the data's own choices would have calibrated."""
    profile = pr.Rankings.from_orders([[0, 1, 2], [1, 0, 2], [0, 2, 1]] * 10, items=["a", "b", "c"])
    marked = profile.marked(**{mark: mark == "selected"})
    tally = pr.sufficient_statistics(marked, kind="rankings")
    acct = pr.Accountant(pr.PureDP(10.0))
    with pytest.raises(pr.InputError, match="partial='randomize'" if mark == "selected" else "public item list"):
        _quiet(getattr(pr, release), tally, epsilon=1.0, rng=None, accountant=acct)
    assert acct.can_spend(pr.PureDP(10.0))  # nothing was charged
    _quiet(getattr(pr, release), pr.sufficient_statistics(profile, kind="rankings"), epsilon=1.0, accountant=acct)
