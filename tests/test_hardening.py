"""Property-based hardening of every public function and reader.

Bad input -- NaN or infinite numbers, epsilon <= 0, delta outside [0, 1), empty data, a single
item, unknown labels, a ranking with a repeated item, malformed CSV -- must raise
:class:`privrank.InputError` (a ``ValueError``): never another exception, never a silent
answer, and never a message that repeats what a respondent answered.
"""
from __future__ import annotations

import math
import string

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import privrank as pr
from privrank import audit, metrics, simulate
from privrank.aggregation import footrule, private_footrule
from privrank.data import ranking_files
from privrank.cli import main
from privrank.data.comparisons import PairwiseComparisons
from privrank.data.pair_counts import PairCounts
from privrank.data.io import read_comparisons
from privrank.errors import InputError
from privrank.guarantees import (UNIT_RANKING, Accountant, ApproxDP, Guarantee, PureDP, ZCDP,
                                 zcdp_epsilon, zcdp_rho)
from privrank.aggregation import private_kemeny as pk
from privrank.data.io import read_rankings
from privrank.mechanisms import (counts, exponential, local_vectors, noise, pairwise_matrix,
                                 query_oracle, randomized_response, tree)
from privrank.pairwise import central, local, release

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

BAD_NUMBERS = [math.nan, math.inf, -math.inf]
bad_epsilon = st.one_of(st.sampled_from(BAD_NUMBERS + [0, 0.0, -0.0, "one", None, [], {}]),
                        st.floats(max_value=0.0, allow_nan=False))
bad_delta = st.one_of(st.sampled_from(BAD_NUMBERS + ["x", None]),
                      st.floats(min_value=1.0, allow_nan=False),
                      st.floats(max_value=-1e-300, allow_nan=False))


def _comps():
    return PairwiseComparisons.from_labels(["a", "b", "c", "a"], ["b", "c", "a", "c"],
                                           [1, -1, 0, 1], user=["u", "u", "v", "v"], items=["a", "b", "c"])


ORDERS = np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2]])


def _solver(W):
    return np.argsort(-np.asarray(W).sum(axis=1))


#: every public function with a privacy parameter, called validly except for ``eps``/``delta``
PRIVATE_CALLS = {
    "randomize_bits": lambda e, d: randomized_response.randomize_bits([1, 0, 0.5], e, rng=0),
    "randomize_answer": lambda e, d: randomized_response.randomize_answer(1, e, rng=0),
    "randomized_response": lambda e, d: local.randomized_response(_comps(), e, rng=0),
    "randomized_response/user": lambda e, d: local.randomized_response(_comps(), user_epsilon=e, rng=0),
    "debiased": lambda e, d: local.debiased_randomized_response(_comps(), e, rng=0),
    "classic": lambda e, d: local.classic_randomized_response(_comps(), e, rng=0),
    "local_laplace": lambda e, d: local.local_laplace(_comps(), e, rng=0),
    "local_laplace/personal": lambda e, d: local.local_laplace(_comps(), {"u": 1.0, "v": e}, rng=0),
    "duchi_l2": lambda e, d: local_vectors.duchi_l2(np.ones((2, 3)) / 2, radius=1.0, epsilon=e, rng=0),
    "approximate_median": lambda e, d: tree.approximate_median([0, 2, 3], 4, epsilon=e, delta=d,
                                                               noise="gaussian" if d else "laplace", rng=0),
    "footrule_cost_release": lambda e, d: tree.footrule_cost_release(
        np.argsort(ORDERS, axis=1), epsilon=e, delta=d, noise="gaussian" if d else "laplace", rng=0),
    "dp_footrule": lambda e, d: private_footrule.dp_footrule(ORDERS, epsilon=e, delta=d, rng=0),
    "ldp_footrule": lambda e, d: private_footrule.ldp_footrule(ORDERS, epsilon=e, rng=0),
    "dp_ptas": lambda e, d: private_footrule.dp_ptas(ORDERS, epsilon=e, delta=d, solver=_solver,
                                                     variant="one-release", rng=0),
    "noisy_counts": lambda e, d: counts.noisy_counts([3, 4], epsilon=e, delta=d, unit=UNIT_RANKING,
                                                     rng=0),
    "perturbed_mle": lambda e, d: central.perturbed_mle(_comps(), e, rng=0),
    "perturbed_mle/user": lambda e, d: central.perturbed_mle(_comps(), user_epsilon=e, max_answers=2,
                                                             respondents=2, rng=0),
    "noisy_copeland": lambda e, d: central.noisy_copeland(_comps(), e, rng=0),
    "private_kemeny": lambda e, d: pk.private_kemeny(ORDERS, epsilon=e, delta=d, rng=0),
    "dp_kwiksort": lambda e, d: pk.dp_kwiksort(ORDERS, epsilon=e, delta=d, rng=0),
    "hay_quicksort": lambda e, d: pk.hay_quicksort(ORDERS, epsilon=e, delta=d, rng=0),
    "exponential_kemeny": lambda e, d: pk.exponential_kemeny(ORDERS, epsilon=e, rng=0),
    "exponential_mechanism": lambda e, d: exponential.exponential_mechanism([1.0, 2.0], 1.0, e, rng=0),
    "ldp_matrix": lambda e, d: pk.ldp_matrix(ORDERS, epsilon=e, rng=0),
    "ldp_kwiksort": lambda e, d: pk.ldp_kwiksort(ORDERS, epsilon=e, rng=0),
    "noisy_pairwise_matrix": lambda e, d: pairwise_matrix.noisy_pairwise_matrix(
        np.full((3, 3), 0.5), 3, pairwise_matrix.Budget(e, d), rng=0),
    "local_pairwise_matrix": lambda e, d: pairwise_matrix.local_pairwise_matrix(ORDERS, e, rng=0),
    "LocalPairOracle": lambda e, d: query_oracle.LocalPairOracle(ORDERS, epsilon=e, tau=1, rng=0),
    "discrete_gaussian_mu": lambda e, d: noise.discrete_gaussian_mu(e, d or 1e-6),
    "zcdp_rho": lambda e, d: zcdp_rho(e, d or 1e-6),
    "PureDP": lambda e, d: PureDP(e),
    "ApproxDP": lambda e, d: ApproxDP(e, d),
    "run_audit": lambda e, d: audit.run_audit("randomized-response", epsilon=e),
    "audit_samples": lambda e, d: audit.audit_samples(np.arange(40.0), np.arange(40.0), epsilon=e,
                                                      delta=d),
}
APPROXIMATE = ("approximate_median", "footrule_cost_release", "dp_footrule", "dp_ptas",
               "noisy_counts", "ApproxDP", "audit_samples", "private_kemeny", "dp_kwiksort",
               "hay_quicksort", "noisy_pairwise_matrix")


def test_every_private_call_works_with_valid_parameters():
    for name, call in PRIVATE_CALLS.items():
        call(1.0, 0.0)
        if name in APPROXIMATE:
            call(1.0, 1e-6)


@pytest.mark.parametrize("name", sorted(PRIVATE_CALLS))
@SETTINGS
@given(eps=bad_epsilon)
def test_bad_epsilon_is_a_specific_error(name, eps):
    with pytest.raises(InputError):
        PRIVATE_CALLS[name](eps, 0.0)


@pytest.mark.parametrize("name", APPROXIMATE)
@SETTINGS
@given(delta=bad_delta)
def test_bad_delta_is_a_specific_error(name, delta):
    with pytest.raises(InputError):
        PRIVATE_CALLS[name](1.0, delta)


# ------------------------------------------------------------------ comparisons and labels

labels = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=6)


@SETTINGS
@given(a=st.lists(labels, max_size=6), b=st.lists(labels, max_size=6),
       out=st.lists(st.sampled_from([1, -1, 0, 2, 0.5, math.nan, math.inf]), max_size=6),
       items=st.one_of(st.none(), st.lists(labels, max_size=4)))
def test_comparison_container_accepts_valid_data_or_raises(a, b, out, items):
    try:
        c = PairwiseComparisons.from_labels(a, b, out, items=items)
    except InputError:
        return
    assert c.n_records == len(a) >= 1 and c.n_items >= 2
    assert np.all(c.item_a != c.item_b)
    assert set(np.unique(c.outcome)) <= {-1, 0, 1}
    assert all(x in c.items for x in a + b)


def test_unknown_labels_empty_data_and_one_item():
    with pytest.raises(InputError):
        PairwiseComparisons.from_labels(["a"], ["z"], [1], items=["a", "b"])
    with pytest.raises(InputError):
        PairwiseComparisons.from_labels([], [], [])
    with pytest.raises(InputError):
        PairwiseComparisons.from_labels(["a"], ["a"], [1])
    with pytest.raises(InputError):
        PairCounts.from_arrays(3, [1], [0], [1.0], [1.0])


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan, ""])
def test_a_missing_label_is_refused_not_made_an_item(missing):
    # as the file readers refuse an empty cell: None, NaN or '' is no item's name
    with pytest.raises(InputError, match="record 2: empty or missing item"):
        PairwiseComparisons.from_labels(["a", missing, "b"], ["b", "c", "c"], [1, 1, -1])
    with pytest.raises(InputError, match="record 1: empty or missing user"):
        PairwiseComparisons.from_labels(["a", "b"], ["b", "c"], [1, 1], user=[missing, "u"])
    with pytest.raises(InputError, match="empty or missing"):
        pr.Rankings.from_labels([["a", "b", missing], ["b", "a", missing]])
    assert PairwiseComparisons.from_labels(["a", "nan"], ["b", "c"], [1, 1]).n_items == 4  # a label, as typed


@SETTINGS
@given(values=st.lists(st.one_of(st.floats(-1e150, 1e150), st.sampled_from(BAD_NUMBERS)),
                       min_size=2, max_size=6))
def test_metrics_reject_non_finite_scores(values):
    v = np.array(values)
    other = np.arange(v.size, dtype=float)
    for f in (metrics.kendall_distance, metrics.l2_error, metrics.linf_error):
        if np.all(np.isfinite(v)):
            assert np.isfinite(f(v, other))
        else:
            with pytest.raises(InputError):
                f(v, other)


# ------------------------------------------------------------------ rankings

@SETTINGS
@given(rows=st.lists(st.lists(st.integers(-1, 4), min_size=1, max_size=4), min_size=0, max_size=4))
def test_ranking_inputs_are_validated(rows):
    width = {len(r) for r in rows}
    arr = np.array(rows) if rows and len(width) == 1 else np.array(rows, dtype=object)
    valid = (bool(rows) and len(width) == 1
             and all(sorted(r) == list(range(len(r))) for r in rows))
    calls = [lambda: footrule.footrule_cost_matrix(arr),
             lambda: private_footrule.dp_footrule(arr, epsilon=1.0, rng=0),
             lambda: private_footrule.ldp_footrule(arr, epsilon=1.0, rng=0),
             lambda: private_footrule.dp_ptas(arr, epsilon=1.0, solver=_solver, rng=0),
             lambda: metrics.footrule_cost(arr[0] if valid else arr, arr)]
    for call in calls:
        if valid:
            call()  # one item, one ranking: still an answer, not a crash
        else:
            with pytest.raises(InputError):
                call()


def test_repeated_item_in_a_ranking_is_an_error_everywhere():
    bad = np.array([[0, 0, 2], [0, 1, 2]])
    for call in (lambda: ranking_files.as_rankings(bad),
                 lambda: private_footrule.dp_footrule(bad, epsilon=1.0),
                 lambda: tree.footrule_cost_release(bad, epsilon=1.0),
                 lambda: metrics.footrule_distance([0, 0, 1], [0, 1, 2])):
        with pytest.raises(InputError):
            call()


@SETTINGS
@given(w=st.lists(st.one_of(st.floats(-5, 5), st.sampled_from(BAD_NUMBERS)), min_size=3,
                  max_size=3))
def test_ranking_weights_are_validated(w):
    w = np.array(w)
    ok = np.all(np.isfinite(w)) and np.all(w >= 0) and w.sum() > 0
    integral = ok and np.all(w == np.round(w))
    if integral:
        private_footrule.dp_footrule(ORDERS, epsilon=1.0, weights=w, rng=0)
    else:
        with pytest.raises(InputError):
            private_footrule.dp_footrule(ORDERS, epsilon=1.0, weights=w, rng=0)


# ------------------------------------------------------------------ numeric arrays

@SETTINGS
@given(x=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=1, max_size=5))
def test_numeric_inputs_with_nan_or_inf_are_errors(x):
    arr = np.array(x, dtype=float)
    if np.all(np.isfinite(arr)):
        return
    calls = [lambda: local_vectors.duchi_l2(arr[None, :], radius=10.0, epsilon=1.0, rng=0),
             lambda: tree.approximate_median(arr, 5, epsilon=1.0, rng=0),
             lambda: counts.noisy_counts(arr, epsilon=1.0, unit=UNIT_RANKING, rng=0),
             lambda: simulate.btl_complete_design(np.r_[arr, 0.0], 2, rng=0),
             lambda: footrule.assignment_order(np.outer(arr, arr) if arr.size > 1 else arr[None, :]),
             lambda: randomized_response.randomize_bits(arr, 1.0, rng=0)]
    for call in calls:
        with pytest.raises(InputError):
            call()


@SETTINGS
@given(theta=st.lists(st.floats(-3, 3), min_size=0, max_size=4), L=st.integers(-2, 3))
def test_simulators_validate(theta, L):
    if len(theta) >= 2 and L >= 1:
        assert simulate.btl_complete_design(theta, L, rng=0).n_records == L * len(theta) * (len(theta) - 1) // 2
    else:
        with pytest.raises(InputError):
            simulate.btl_complete_design(theta, L, rng=0)


def test_fit_btl_refuses_degenerate_input():
    comps = PairwiseComparisons.from_labels(["a"], ["b"], [1], items=["a", "b", "c"])
    with pytest.raises(InputError):
        pr.fit_btl(comps)
    with pytest.raises(InputError):
        pr.fit_btl("not data")
    with pytest.raises(InputError):
        release.as_release(42)


def test_budget_objects_and_accountant_validate():
    with pytest.raises(InputError):
        ZCDP(math.nan)
    with pytest.raises(InputError):
        zcdp_epsilon(0.1, 0.0)
    with pytest.raises(InputError):
        Accountant(PureDP(1.0)).spend(3.0)
    with pytest.raises(InputError):
        Guarantee(epsilon=math.nan, model="central", unit=UNIT_RANKING, mechanism="m")
    with pytest.raises(InputError):
        Guarantee(epsilon=1.0, model="cloud", unit=UNIT_RANKING, mechanism="m")


# ------------------------------------------------------------------ CSV reader

token = st.one_of(st.sampled_from(["", " ", "nan", "NA", "1", "-1", "0", "2", "1.0", "inf", "-0",
                                   "1e400", "0.5", '"', "a,b", "\x00"]),
                  st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=3).map(lambda s: "Q" + s))
HEADERS = ["user,item_a,item_b,outcome", "item_a,item_b,result", "winner,loser",
           "user,winner,loser", "worker,item_a,item_b,outcome,epsilon", "a,b,c", "",
           "item_a,item_b", "respondent,item_a,item_b,outcome"]


@SETTINGS
@given(header=st.sampled_from(HEADERS),
       rows=st.lists(st.lists(token, min_size=0, max_size=6), max_size=6),
       raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_csv_reader_never_crashes_nor_echoes_answers(tmp_path_factory, header, rows, raw):
    path = tmp_path_factory.mktemp("csv") / "data.csv"
    if raw is not None:
        path.write_bytes(raw)
        markers = []
    else:
        path.write_text(header + "\n" + "\n".join(",".join(r) for r in rows) + "\n",
                        encoding="utf-8")
        markers = [t for r in rows for t in r if t.startswith("Q")]
    try:
        comps = read_comparisons(path)
    except InputError as exc:
        message = str(exc)
        for m in markers:  # labels and user ids a respondent wrote are never repeated
            assert m not in message.replace(str(path), "")
        return
    assert comps.n_records >= 1 and comps.n_items >= 2
    for m in markers:
        assert m not in repr(comps)


RANKING_HEADERS = ["rank1,rank2,rank3", "a,b,c", "voter,rank1,rank2", "count,rank1,rank2", "x"]


@SETTINGS
@given(suffix=st.sampled_from([".csv", ".soc", ".soi", ".toc"]),
       header=st.sampled_from(RANKING_HEADERS),
       rows=st.lists(st.lists(token, min_size=0, max_size=4), max_size=5),
       raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_ranking_reader_never_crashes_nor_echoes_answers(tmp_path_factory, suffix, header, rows, raw):
    path = tmp_path_factory.mktemp("rk") / f"data{suffix}"
    if raw is not None:
        path.write_bytes(raw)
        markers = []
    else:
        body = [header] if suffix == ".csv" else [str(len(rows))]
        body += [",".join(r) if suffix == ".csv" else "1: " + ",".join(r) for r in rows]
        path.write_text("\n".join(body) + "\n", encoding="utf-8")
        markers = [t for r in rows for t in r if t.startswith("Q")]
    try:
        prof = read_rankings(path)
    except InputError as exc:
        for m in markers:
            assert m not in str(exc).replace(str(path), "")
        return
    assert prof.n_voters >= 1 and prof.n_items >= 1
    for m in markers:
        assert m not in repr(prof)


def test_reader_errors_on_unreadable_bytes(tmp_path):
    p = tmp_path / "x.csv"
    p.write_bytes(b"item_a,item_b,outcome\n\xff\xfe,b,1\n")
    with pytest.raises(InputError):
        read_comparisons(p)
    p.write_text("item_a,item_b,outcome\n" + "a" * 200_000 + ",b,1\n")  # beyond the field limit
    with pytest.raises(InputError, match="line 2: malformed CSV"):
        read_comparisons(p)


# ------------------------------------------------------------------ command line

@SETTINGS
@given(argv=st.lists(st.sampled_from(["audit", "--list", "--epsilon", "-1", "nan", "0", "1",
                                      "--delta", "1.5", "randomized-response", "local-laplace",
                                      "--control", "--noise-scale-factor", "--trials", "5",
                                      "--seed", "x", "rank", "nope"]), max_size=6))
def test_cli_exits_cleanly(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    assert code in (0, 1, 2)


# ------------------------------------------------------------------ numeric helpers

@SETTINGS
@given(eps=bad_epsilon)
def test_randomized_response_helpers_validate_epsilon(eps):
    for call in (lambda: randomized_response.flip_probability(eps),
                 lambda: randomized_response.debias([0, 1], eps),
                 lambda: randomized_response.variance_inflation(eps),
                 lambda: local_vectors.duchi_l2_scale(3, 1.0, eps)):
        with pytest.raises(InputError):
            call()


@SETTINGS
@given(reports=st.lists(st.sampled_from([0, 1, -1, 2, 0.5, math.nan]), min_size=1, max_size=5))
def test_debias_takes_reports_in_zero_one(reports):
    if all(0 <= r <= 1 for r in reports):  # reports, or fractions of 1-reports
        assert np.all(np.isfinite(randomized_response.debias(reports, 1.0)))
    else:
        with pytest.raises(InputError):
            randomized_response.debias(reports, 1.0)


@SETTINGS
@given(m=st.integers(-2, 5), L=st.sampled_from([-1.0, 0.0, 1.0, 50.0, math.nan, math.inf]),
       scheme=st.sampled_from(["critical", "log_over", "log_under", "other"]))
def test_adaptive_epsilon_validates(m, L, scheme):
    if m >= 2 and math.isfinite(L) and L >= 1 and scheme != "other":
        assert local.adaptive_epsilon(scheme, m, L) > 0
    else:
        with pytest.raises(InputError):
            local.adaptive_epsilon(scheme, m, L)


@SETTINGS
@given(k=st.integers(-2, 6), m=st.integers(-1, 5), kappa=st.sampled_from([0.5, 1.0, 1.5, 2.0, math.nan]))
def test_small_parameters_are_validated(k, m, kappa):
    scores = np.arange(4.0)
    if 1 <= k <= 4:
        assert 0 <= metrics.top_k_hamming(scores, scores[::-1], k) <= 1
    else:
        with pytest.raises(InputError):
            metrics.top_k_hamming(scores, scores[::-1], k)
    if m >= 1 and 1 <= kappa < 2:
        assert tree.tree_layout(m, kappa).m == m
    else:
        with pytest.raises(InputError):
            tree.tree_layout(m, kappa)


# ------------------------------------------------------------------ issue 16: regressions of the review

def test_fit_btl_refuses_what_it_would_ignore():
    comps = _comps()
    for kwargs, message in ((dict(tol=math.nan), "tol"), (dict(max_iter=-1), "max_iter"),
                            (dict(weights="bogus"), "weights"), (dict(weights="inverse_variance"), "weights apply")):
        with pytest.raises(InputError, match=message):
            pr.fit_btl(comps, **kwargs)


def test_api_mechanisms_given_the_wrong_kind_of_data_say_so():
    R = pr.Rankings.from_orders(ORDERS)
    for call in (lambda: pr.debiased_randomized_response(R, 1.0), lambda: pr.local_laplace(R, 1.0),
                 lambda: pr.randomized_response(R, 1.0)):
        with pytest.raises(InputError, match="ldp_matrix"):
            call()
    with pytest.raises(InputError, match="Guarantee"):
        pr.compose("x")


def test_set_budget_on_a_file_without_users_protects_comparisons(tmp_path, capsys):
    path = tmp_path / "c.csv"
    path.write_text("item_a,item_b,outcome\nA,B,1\nB,C,1\n")
    assert main(["ledger", "set-budget", str(path), "--epsilon", "2"]) == 0
    assert "per comparison" in capsys.readouterr().out
    assert main(["ledger", "set-budget", str(path), "--epsilon", "2", "--unit", "user"]) == 2
    assert "no user column" in capsys.readouterr().err


@pytest.mark.parametrize("call", [
    lambda: pr.approximate_median([], 4, epsilon=1.0),
    lambda: pr.approximate_median([1, 2], 4, epsilon=1.0, weights=[0, 0]),
    lambda: pr.aggregate_intervals(None),
    lambda: pr.aggregate_intervals(pr.dp_kwiksort(pr.Rankings.from_orders(np.array([[0, 1], [1, 0]])), epsilon=1.0,
                                                  rng=0)),
    lambda: pr.noisy_counts([3, 4], epsilon=1.0, unit="one count", l1_sensitivity=0.5),
    lambda: pr.noisy_counts([3, 4], epsilon=1.0, delta=1e-6, unit="one count", l2_sensitivity=0.5),
])
def test_degenerate_release_arguments_are_clear_errors(call):
    with pytest.raises(pr.InputError):
        call()


def test_audit_epsilon_beyond_what_an_audit_resolves_is_refused(capsys):
    # regression (issue 16): --epsilon 1e300 was an OverflowError traceback; 36 and 38 false violations
    from privrank.cli import main
    for eps in ("1e300", "36"):
        assert main(["audit", "randomized-response", "--epsilon", eps]) == 2
        assert "above what any audit" in capsys.readouterr().err


def test_a_ridge_too_small_for_floating_point_is_a_clear_error():
    C = pr.PairwiseComparisons.from_indices(tuple("ABC"), [0, 1, 0] * 10, [1, 2, 2] * 10, [1, -1, 1] * 10)
    with pytest.raises(pr.InputError, match="too small"):
        pr.fit_btl(C, lam=1e-300)


def test_unbounded_batch_sizes_and_audit_trials_are_clear_errors(tmp_path, capsys):
    # regression (issue 16): --batch-size 1e20 was an OverflowError traceback; --trials 1e9 ran for hours
    from privrank.cli import main
    data = tmp_path / "c.csv"
    data.write_text("user,item_a,item_b,outcome\n1,A,B,1\n2,B,C,1\n")
    assert main(["rank", str(data), "--epsilon", "1", "--engine", "stream", "--batch-size", str(10 ** 20)]) == 2
    assert "batch_size must be" in capsys.readouterr().err
    assert main(["audit", "randomized-response", "--epsilon", "1", "--trials", str(10 ** 9)]) == 2
    assert "PRIVRANK_MAX_AUDIT_TRIALS" in capsys.readouterr().err
