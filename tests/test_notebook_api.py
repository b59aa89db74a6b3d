"""The library from Python and notebooks: figures that leave pyplot alone, evalica's call shape (every
function of comparisons takes it), scores as a pandas Series, the weak-epsilon warning, bad numbers
refused, a readable Accountant."""
import inspect
import math
import warnings

import numpy as np
import pytest

import privrank as pr
from privrank.simulate import btl_complete_design, sample_debiased_release, sample_mallows

COMPS = btl_complete_design(np.linspace(-1, 1, 4), 5, rng=0)
PROFILE = sample_mallows(5, phi=0.6, n=40, rng=1)

# evalica's Winner (an IntEnum): X = 1 (xs[k] won), Y = 2 (ys[k] won), Draw = 0
XS = ["a", "b", "c", "a", "b", "c", "a", "d", "d", "c"]
YS = ["b", "c", "a", "c", "a", "b", "b", "a", "b", "d"]
WINNERS = [1, 2, 0, 1, 2, 1, 2, 2, 1, 1]


# ---------------------------------------------------------------------------------- figures

def test_plots_return_a_figure_and_leave_the_backend_and_pyplot_alone(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    plt.switch_backend("svg")  # a backend other than Agg, as a notebook's inline backend would be
    before = plt.get_fignums()
    fit = pr.fit_btl(sample_debiased_release(np.linspace(-1, 1, 6), 200, 1.0, rng=0))
    figures = [pr.plot_intervals(pr.confidence_intervals(fit)), pr.confidence_intervals(fit, level=0.9).plot(),
               pr.private_kemeny(PROFILE, epsilon=1.0, rng=2).plot(n_bootstrap=100, rng=3)]
    assert matplotlib.get_backend() == "svg" and plt.get_fignums() == before
    assert all(isinstance(f, Figure) for f in figures)
    assert "90% score intervals" in [a.get_title() for a in figures[1].axes]
    path = tmp_path / "forest.png"
    assert isinstance(pr.confidence_intervals(fit).plot(path, title="t"), Figure) and path.stat().st_size > 1000
    assert matplotlib.get_backend() == "svg"


# ---------------------------------------------------------------------------------- evalica's call shape

def test_fit_btl_takes_evalicas_call_shape_and_matches_its_scores():
    evalica = pytest.importorskip("evalica")
    winners = [evalica.Winner(w) for w in WINNERS]
    fit = pr.fit_btl(XS, YS, winners)
    assert fit.info["estimate"] == "maximum likelihood" and not fit.guarantee.private
    theirs = np.log(evalica.bradley_terry(XS, YS, winners, tolerance=1e-12, limit=10_000).scores)
    ours = fit.scores_series()
    np.testing.assert_allclose(ours[theirs.index].to_numpy(), (theirs - theirs.mean()).to_numpy(), atol=1e-6)


def test_the_call_shape_reads_winners_as_evalica_does():
    pytest.importorskip("pandas")
    same = pr.PairwiseComparisons.from_labels(XS, YS, [{0: 0, 1: 1, 2: -1}[w] for w in WINNERS])
    np.testing.assert_allclose(pr.fit_btl(XS, YS, WINNERS).scores, pr.fit_btl(same).scores)
    for fn, options in ((pr.penalised_mle, {}), (pr.copeland, {"rng": 0}), (pr.rank_centrality, {})):
        assert fn(XS, YS, np.array(WINNERS), **options).ranking == fn(same, **options).ranking  # copeland: ties at random
    series = pr.fit_btl(XS, YS, WINNERS).scores_series()
    assert list(series.index) == pr.fit_btl(same).ranking and series.attrs["guarantee_plain"]


#: the public functions whose first parameter takes comparisons (the engines' sufficient_statistics takes
#: a file or a container, and manipulation_margin randomized reports: neither takes evalica's shape)
TAKES_COMPARISONS = sorted(name for name in pr.__all__ if inspect.isfunction(getattr(pr, name))
                           and list(inspect.signature(getattr(pr, name)).parameters)[:1] in (["data"], ["comps"]))


def _result(res):
    """What a function of comparisons returned, as numbers: reports' outcomes, a release's BTL scores, or scores."""
    if isinstance(res, pr.PairwiseComparisons):
        return res.outcome
    return pr.fit_btl(res).scores if isinstance(res, pr.PairwiseRelease) else res.scores


def test_every_function_of_comparisons_takes_evalicas_call_shape():
    assert set(TAKES_COMPARISONS) == {
        "fit_btl", "penalised_mle", "copeland", "rank_centrality", "randomized_response",
        "debiased_randomized_response", "classic_randomized_response", "local_laplace", "perturbed_mle",
        "noisy_copeland"}
    outcomes = [{0: 0, 1: 1, 2: -1}[w] for w in WINNERS]
    items = sorted(set(XS) | set(YS))
    for name in TAKES_COMPARISONS:
        fn, parameters = getattr(pr, name), inspect.signature(getattr(pr, name)).parameters
        assert list(parameters)[1:3] == ["ys", "winners"], name
        options = {"epsilon": 1.0} if "epsilon" in parameters else {}
        options |= {"rng": 0} if "rng" in parameters else {}
        declared = {"items": items} if "items" in parameters else {}  # a central release: the item list declared
        same = pr.PairwiseComparisons.from_labels(XS, YS, outcomes, **declared)
        ours = fn(XS, YS, WINNERS, **options, **declared)
        np.testing.assert_array_equal(_result(ours), _result(fn(same, **options)), err_msg=name)
        if "epsilon" in options:  # the budget may still come second, as before
            np.testing.assert_array_equal(_result(fn(same, 1.0, rng=0)), _result(ours), err_msg=name)


def test_a_release_of_xs_ys_winners_is_recorded_as_its_comparisons(tmp_path):
    same = pr.PairwiseComparisons.from_labels(XS, YS, [{0: 0, 1: 1, 2: -1}[w] for w in WINNERS])
    ledger = tmp_path / "ledger.sqlite"
    pr.debiased_randomized_response(XS, YS, WINNERS, epsilon=1.0, ledger=ledger)
    pr.debiased_randomized_response(same, epsilon=1.0, ledger=ledger)
    with pr.Ledger(ledger) as book:
        first, second = book.releases()
    assert first["fingerprint"] == second["fingerprint"]


def test_a_central_release_of_xs_ys_winners_needs_the_items_declared():
    with pytest.raises(pr.InputError, match="public item list"):
        pr.noisy_copeland(XS, YS, WINNERS, epsilon=1.0)
    with pytest.raises(pr.InputError, match="items= declares the item list of xs, ys, winners"):
        pr.noisy_copeland(COMPS, epsilon=1.0, items=["a"])


@pytest.mark.parametrize("winners", [[1, 2, 0, 1, 2, 1, 2, 2, 1, -1], [True] * 10, ["X"] * 10, [1.5] * 10,
                                     [math.nan] * 10, [1, 2]])
def test_winners_that_are_not_evalicas_are_refused(winners):
    with pytest.raises(pr.InputError, match="winners|same length"):
        pr.fit_btl(XS, YS, winners)


def test_two_sequences_are_refused_and_lam_is_a_keyword():
    with pytest.raises(pr.InputError, match="keyword-only"):
        pr.fit_btl(COMPS, 0.5)
    assert pr.fit_btl(COMPS, lam=0.5).lam == 0.5


# ---------------------------------------------------------------------------------- weak epsilon

def test_a_weak_epsilon_warns_once_per_call_and_says_why():
    with pytest.warns(pr.WeakPrivacyWarning) as caught:
        pr.debiased_randomized_response(COMPS, 20.0, rng=0)
    weak = [w for w in caught if issubclass(w.category, pr.WeakPrivacyWarning)]
    assert len(weak) == 1 and issubclass(pr.WeakPrivacyWarning, UserWarning)
    assert "epsilon 20" in str(weak[0].message) and "above 10" in str(weak[0].message) \
        and "22,026" in str(weak[0].message)
    with pytest.warns(pr.WeakPrivacyWarning, match="epsilon 15 protects one ranking"):
        pr.private_kemeny(PROFILE, epsilon=15.0, rng=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", pr.WeakPrivacyWarning)
        pr.debiased_randomized_response(COMPS, 10.0, rng=0)  # at the threshold: no warning


# ---------------------------------------------------------------------------------- bad numbers

BAD_CALLS = [
    ("approximate_median m huge", lambda: pr.approximate_median([1, 2], m=10 ** 12, epsilon=1.0, rng=0)),
    ("approximate_median m fractional", lambda: pr.approximate_median([1, 2], m=4.5, epsilon=1.0, rng=0)),
    ("approximate_median m text", lambda: pr.approximate_median([1, 2], m="x", epsilon=1.0, rng=0)),
    ("approximate_median kappa text", lambda: pr.approximate_median([1, 2], m=4, epsilon=1.0, kappa="x", rng=0)),
    ("Guarantee epsilon text", lambda: pr.Guarantee("x", "central", "one ranking", "m")),
    ("Guarantee per-user NaN", lambda: pr.Guarantee(1.0, "central", "one ranking", "m", epsilon_per_user=math.nan)),
    ("Guarantee per-comparison negative", lambda: pr.Guarantee(1.0, "local", "one comparison", "m",
                                                               epsilon_per_comparison=-1.0)),
    ("dp_kwiksort queries NaN", lambda: pr.dp_kwiksort(PROFILE, epsilon=1.0, queries=math.nan, rng=0)),
    ("dp_kwiksort queries fractional", lambda: pr.dp_kwiksort(PROFILE, epsilon=1.0, queries=2.5, rng=0)),
    ("dp_kwiksort fallback_fraction NaN", lambda: pr.dp_kwiksort(PROFILE, epsilon=1.0, queries=100,
                                                                  fallback_fraction=math.nan, rng=0)),
    ("dp_kwiksort fail_probability text", lambda: pr.dp_kwiksort(PROFILE, epsilon=1.0, fail_probability="x", rng=0)),
    ("hay_quicksort queries inf", lambda: pr.hay_quicksort(PROFILE, epsilon=1.0, queries=math.inf, rng=0)),
    ("ldp_kwiksort tau inf", lambda: pr.ldp_kwiksort(PROFILE, epsilon=1.0, tau=math.inf, rng=0)),
    ("ldp_kwiksort fallback_fraction text", lambda: pr.ldp_kwiksort(PROFILE, epsilon=1.0, fallback_fraction="x",
                                                                     rng=0)),
    ("private_kemeny best_of NaN", lambda: pr.private_kemeny(PROFILE, epsilon=1.0, best_of=math.nan, rng=0)),
    ("ldp_matrix best_of fractional", lambda: pr.ldp_matrix(PROFILE, epsilon=1.0, best_of=2.5, rng=0)),
    ("dp_ptas buckets NaN", lambda: pr.dp_ptas(PROFILE, epsilon=1.0, variant="buckets", buckets=math.nan, rng=0)),
    ("dp_footrule kappa text", lambda: pr.dp_footrule(PROFILE, epsilon=1.0, kappa="x", rng=0)),
    ("exact_kemeny time_limit NaN", lambda: pr.exact_kemeny(np.ones((3, 3)) - np.eye(3), time_limit=math.nan)),
    ("exact_kemeny max_items negative", lambda: pr.exact_kemeny(np.ones((3, 3)) - np.eye(3), max_items=-1)),
    ("debias n inf", lambda: pr.debias(np.array([0.0, 1.0]), 1.0, n=math.inf)),
    ("debias n text", lambda: pr.debias(np.array([0.0, 1.0]), 1.0, n="x")),
    ("kendall_distance tol NaN", lambda: pr.kendall_distance(np.arange(3.0), np.arange(3.0), tol=math.nan)),
    ("kendall_distance tie_penalty text", lambda: pr.kendall_distance(np.arange(3.0), np.arange(3.0),
                                                                      tie_penalty="x")),
    ("top_k_hamming k NaN", lambda: pr.top_k_hamming(np.arange(3.0), np.arange(3.0), k=math.nan)),
    ("top_k k fractional", lambda: pr.fit_btl(COMPS).top_k(1.5)),
    ("fit_btl lam text list", lambda: pr.fit_btl(COMPS, lam=[1])),
    ("penalised_mle gamma 1e-300", lambda: pr.penalised_mle(COMPS, gamma=1e-300)),
]


@pytest.mark.parametrize("call", [c for _, c in BAD_CALLS], ids=[name for name, _ in BAD_CALLS])
def test_bad_numbers_are_input_errors(call):
    with pytest.raises(pr.InputError):
        call()


#: a valid call of each public function taking numbers: its positional and keyword arguments
BASE_CALLS = {
    "adaptive_epsilon": (("critical",), {"m": 5, "L": 100}),
    "aggregate_intervals": (None, {"n_bootstrap": 100, "rng": 0}),
    "approximate_median": (([1, 2, 3],), {"m": 5, "epsilon": 1.0, "rng": 0}),
    "confidence_intervals": (None, {}),
    "debiased_randomized_response": ((COMPS,), {"epsilon": 1.0, "rng": 0}),
    "dp_footrule": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "dp_kwiksort": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "dp_ptas": ((PROFILE,), {"epsilon": 1.0, "variant": "buckets", "rng": 0}),
    "exact_kemeny": ((np.ones((3, 3)) - np.eye(3),), {}),
    "fit_btl": ((COMPS,), {}),
    "hay_quicksort": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "kendall_distance": ((np.arange(3.0), np.arange(3.0)), {}),
    "ldp_footrule": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "ldp_kwiksort": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "ldp_matrix": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "noisy_copeland": ((COMPS,), {"epsilon": 1.0, "rng": 0}),
    "penalised_mle": ((COMPS,), {}),
    "private_kemeny": ((PROFILE,), {"epsilon": 1.0, "rng": 0}),
    "rank_centrality": ((COMPS,), {}),
    "top_k_hamming": ((np.arange(3.0), np.arange(3.0)), {"k": 2}),
}
#: the numeric parameters swept, wherever a public function takes one
NUMERIC = {"epsilon", "delta", "kappa", "queries", "tau", "best_of", "buckets", "fail_probability",
           "fallback_fraction", "max_items", "time_limit", "lam", "tol", "max_iter", "gamma", "pseudo_count",
           "tie_penalty", "k", "m", "level", "L", "L0", "n_bootstrap"}


def _sweep():
    import inspect

    for name, (args, kwargs) in BASE_CALLS.items():
        for param in sorted(NUMERIC & set(inspect.signature(getattr(pr, name)).parameters)):
            for bad in (math.nan, math.inf, "x"):
                yield pytest.param(name, args, {**kwargs, param: bad}, id=f"{name}-{param}-{bad}")


@pytest.mark.parametrize("name,args,kwargs", list(_sweep()))
def test_every_numeric_parameter_of_the_public_functions_refuses_nan_inf_and_text(name, args, kwargs):
    """Table-driven sweep of privrank.__all__: NaN, infinity or text for a number is an InputError."""
    if args is None:  # the intervals functions take a result
        args = (pr.fit_btl(COMPS),) if name == "confidence_intervals" else \
            (pr.private_kemeny(PROFILE, epsilon=1.0, rng=2),)
    kwargs = dict(kwargs)
    if kwargs.get("n_bootstrap") is not None and name == "confidence_intervals":
        kwargs["method"] = "bootstrap"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(pr.InputError):
            getattr(pr, name)(*args, **kwargs)


def test_a_gamma_too_small_to_regularise_is_a_usage_error(cli, tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("item_a,item_b,outcome\n" + "A,B,1\nB,C,1\nA,C,-1\nC,A,1\nB,A,0\n" * 5)
    code, _, err = cli("rank", path, "--mechanism", "penalised-mle", "--gamma", "1e-300")
    assert code == 2 and "too small to regularise" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------- Accountant

def test_the_accountant_shows_its_budget():
    acct = pr.Accountant(pr.PureDP(1.0), unit="one ranking")
    assert repr(acct) == "Accountant(total=1-DP, spent=nothing, remaining=1-DP, spends=0, unit='one ranking')"
    acct.spend(pr.PureDP(0.4), "first")
    assert repr(acct) == "Accountant(total=1-DP, spent=0.4-DP, remaining=0.6-DP, spends=1, unit='one ranking')"
