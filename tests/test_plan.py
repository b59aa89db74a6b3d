"""The privacy planner: agreement with a direct simulation of every user, and the epsilon search."""
import numpy as np
import pytest

import privrank as pr
from privrank.errors import InputError
from privrank.metrics import linf_error
from privrank.plan import PLANNER_MODEL, Design, predict, smallest_epsilon
from privrank.simulate import btl_complete_design


def direct_linf(design, eps, reps, seed):
    """Each user's answers simulated, randomized and fitted by the library, as in a real study."""
    gen = np.random.default_rng(seed)
    errs = [linf_error(pr.fit_btl(pr.debiased_randomized_response(
        btl_complete_design(design.scores, design.users, rng=gen), eps, rng=gen)).scores, design.scores)
        for _ in range(reps)]
    return np.mean(errs), np.std(errs, ddof=1) / np.sqrt(reps)


def test_prediction_matches_direct_simulation():
    """Within the issue's 20%. Monte-Carlo SEs: planner ~0.010 on ~0.8 (300 reps), direct ~0.018 (120 reps);
    the 20% band is over 7 combined SEs, so a failure is a real disagreement, not noise."""
    design = Design(10, 100)
    plan = predict(design, 0.5, reps=300, rng=1)
    mean, se = direct_linf(design, 0.5, 120, seed=2)
    assert se / mean < 0.03 and plan.standard_error["linf"] / plan.predicted["linf"] < 0.03
    assert plan.predicted["linf"] / mean == pytest.approx(1.0, abs=0.2)
    # negative control: a planner that forgot the privacy noise (epsilon 50) fails the same check
    assert predict(design, 50.0, reps=300, rng=1).predicted["linf"] / mean < 0.8


def test_smallest_epsilon_meets_the_target():
    design = Design(12, 200)
    best, curve = smallest_epsilon(design, "kendall", 0.05)
    assert best.predicted["kendall"] <= 0.05
    assert predict(design, 0.8 * best.epsilon).predicted["kendall"] > 0.05  # smaller epsilon misses it
    errs = [c.predicted["linf"] for c in curve]
    assert errs[0] > errs[len(errs) // 2] > errs[-1]  # errors fall as epsilon grows
    assert best.epsilon_per_user == pytest.approx(66 * best.epsilon)  # all 66 pairs, basic composition


def test_central_mechanisms_and_design():
    d = Design(30, 100, 10, model="central", mechanism="noisy-copeland")
    p = predict(d, 0.5, reps=50)
    assert p.predicted["linf"] is None and 0 < p.predicted["kendall"] < 0.5
    assert "1000 comparisons of uniformly random pairs" in p.to_dict()["assumptions"]
    assert p.to_dict()["epsilon_per_user"] == 5.0
    op = predict(Design(30, 100, 10, model="central"), 0.5, reps=50)
    assert op.predicted["kendall"] > p.predicted["kendall"]  # Cai et al.: Copeland wins at small budgets
    with pytest.raises(InputError, match="do not estimate scores"):
        smallest_epsilon(d, "linf", 0.1)


@pytest.mark.parametrize("kwargs,match", [
    ({"items": 1, "users": 5}, "at least 2 items"),
    ({"items": 5, "users": 5, "comparisons_per_user": 11}, "between 1 and the 10 pairs"),
    ({"items": 5, "users": 5, "model": "shuffle"}, "model"),
    ({"items": 5, "users": 5, "mechanism": "noisy-copeland"}, "local model plans"),
    ({"items": 5, "users": 5, "k": 5}, "k must"),
])
def test_bad_designs(kwargs, match):
    with pytest.raises(InputError, match=match):
        Design(**kwargs)


def test_unreachable_target():
    with pytest.raises(InputError, match="more users"):
        smallest_epsilon(Design(40, 5, 3), "linf", 0.01, reps=20)


def test_a_pure_noise_plan_predicts_a_coin_flip_per_pair():
    # regression (issue 16): at epsilon 1e-10 every estimate ties and the Kendall distance was predicted 0
    p = predict(Design(5, 100), 1e-10, reps=20, rng=0)
    assert p.predicted["kendall"] == pytest.approx(0.5, abs=0.05)


def test_a_plan_like_llmfao_predicts_a_direct_simulation_within_20_percent():
    """Randomizing LLMFAO's own answers (30 releases at epsilon 1) and fitting gives a mean Kendall
    distance to the non-private fit; the plan calibrated on LLMFAO (--like) predicts it within 20%,
    and the evenly spaced default, which the check must be able to catch, misses by far more."""
    import warnings

    from privrank.data.datasets import load_llmfao
    from privrank.plan import Design, design_like, predict

    comps = load_llmfao()
    exact = pr.fit_btl(comps).scores
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = np.mean([pr.kendall_distance(pr.fit_btl(pr.debiased_randomized_response(comps, 1.0, rng=s)).scores,
                                              exact, tie_penalty=0.5) for s in range(30)])
    like = design_like(comps)
    assert (like.items, like.users, like.per_user) == (59, 124, 72)
    predicted = predict(like, 1.0).predicted["kendall"]
    assert abs(predicted - direct) / direct < 0.2, (predicted, direct)
    default = predict(Design(59, 124, 72), 1.0).predicted["kendall"]
    assert abs(default - direct) / direct > 0.35, (default, direct)


def test_plan_cli_takes_a_per_user_budget_and_a_like_file(cli, tmp_path):
    import json

    from privrank.data.datasets import _shipped

    code, out, err = cli("plan", "--like", _shipped("llmfao_crowd.csv"), "--user-epsilon", "36", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["epsilon"] == pytest.approx(0.5) and doc["epsilon_per_user"] == pytest.approx(36)
    assert "non-private BTL fit" in doc["assumptions"]
    code, _, err = cli("plan", "--like", _shipped("llmfao_crowd.csv"), "--items", "10", "--epsilon", "1")
    assert code == 2 and "drop --items" in err
    code, _, err = cli("plan", "--epsilon", "1")
    assert code == 2 and "--items and --users" in err
    (tmp_path / "c.csv").write_text("item_a,item_b,outcome\nA,B,1\nB,C,1\nC,A,1\n")
    code, _, err = cli("plan", "--like", tmp_path / "c.csv", "--epsilon", "1")
    assert code == 2 and "no user column" in err


def frontier_points(model):
    """``(m, n, epsilon) -> {method: row}`` of the shipped frontier's central rankings rows for ``model``."""
    from privrank.plan import AGGREGATION_METHODS, frontier

    points = {}
    for r in frontier()["rows"]:
        if r["family"] == "rankings" and r["model"] == model and r["method"] in AGGREGATION_METHODS["central"]:
            points.setdefault((r["m"], r["n"], r["epsilon"]), {})[r["method"]] = r
    return points


def test_the_planner_reads_every_measured_point_back():
    from privrank.plan import predict_aggregation

    for (m, n, eps), rows in frontier_points(PLANNER_MODEL).items():
        for p in predict_aggregation(m, n, eps):
            assert p.kendall == pytest.approx(rows[p.method]["kendall"], abs=1e-12) and not p.outside


@pytest.mark.slow
def test_auto_is_within_two_standard_errors_of_the_best_method_at_every_point_of_the_frontier():
    """The done-when of the frontier: at every grid point of every rankings model measured (the
    planner's, the dispersed Mallows, Plackett-Luce), the method auto chooses from the public
    parameters is within two standard errors of the best one measured there (the two errors
    combined). On real rankings (sushi) the reference is the Kemeny order of all of them, and
    their Borda order differs from it (in 2 of 45 pairs): where the noise no longer hides that,
    noisy Borda's error is that bias, which a choice blind to the data cannot see; those points,
    and only those, may miss."""
    from privrank.plan import ROBUST_MODELS, choose_aggregation, frontier

    models = {r["model"] for r in frontier()["rows"] if r["family"] == "rankings"}
    assert set(ROBUST_MODELS) <= models
    missed, bias, points = [], [], 0
    for model in sorted(models):
        for (m, n, eps), rows in frontier_points(model).items():
            chosen = rows[choose_aggregation(m, n, eps).method]
            best = min(rows.values(), key=lambda r: r["kendall"])
            points += 1
            if chosen["kendall"] > best["kendall"] + 2 * np.hypot(chosen["kendall_se"], best["kendall_se"]):
                real_bias = model not in ROBUST_MODELS and chosen["method"] == "noisy-borda" \
                    and chosen["kendall"] == pytest.approx(2 / 45, abs=0.01)
                (bias if real_bias else missed).append((model, m, n, eps, chosen["method"], best["method"]))
    assert points > 300 and not missed and len(bias) <= 3


@pytest.mark.parametrize("m, n, eps", [(15, 3000, 1.5), pytest.param(30, 3000, 1.0, marks=pytest.mark.slow)])
def test_the_planner_agrees_with_a_fresh_run_between_grid_points(m, n, eps):
    """Off the grid the interpolated prediction of each method meets a fresh measurement on the
    planner's model within three combined standard errors (8 seeds; a run's error is resolved to one
    pair in ``m(m-1)/2``, so a mean of zeros has a standard error of at least one pair in all runs)."""
    from privrank.aggregation.auto import run_method
    from privrank.metrics import kendall_distance
    from privrank.plan import predict_aggregation
    from privrank.simulate import sample_mallows

    phi, seeds = float(PLANNER_MODEL.split("-")[1]), 8
    truth = -np.arange(m, dtype=float)
    for p in predict_aggregation(m, n, eps, methods=("noisy-matrix", "noisy-matrix+borda", "hay-quicksort",
                                                     "dp-footrule")):
        errors = []
        for seed in range(seeds):
            order = run_method(p.method, sample_mallows(m, phi=phi, n=n, rng=seed), epsilon=eps, rng=seed + 100).order
            scores = np.empty(m)
            scores[order] = -np.arange(m)
            errors.append(kendall_distance(scores, truth))
        measured = np.mean(errors)
        se = max(np.std(errors, ddof=1) / np.sqrt(seeds), 2.0 / (m * (m - 1) * seeds))
        assert abs(measured - p.kendall) <= 3 * np.hypot(se, p.standard_error), (p.method, measured, se, p)


@pytest.mark.slow
def test_central_auto_is_within_two_standard_errors_of_the_best_mechanism_on_btl_data():
    """`rank --mechanism central-auto` against the frontier's BTL comparisons: within two standard errors of
    the better central mechanism at all but one point (m = 200, n = 1,000, epsilon 8, where the planner's
    two predictions are within their errors). On LLMFAO's uneven design (one model compared 2,762 times,
    the median 174), Copeland counts measure exposure, which the choice cannot see: reported in the notes,
    not tested."""
    from privrank.plan import choose_mechanism, frontier

    points = {}
    for r in frontier()["rows"]:
        if r["family"] == "comparisons" and r["trust"] == "central" and r["model"] == "btl":
            points.setdefault((r["m"], r["n"], r["epsilon"]), {})[r["method"]] = r
    missed = []
    for (m, n, eps), rows in points.items():
        chosen = rows[choose_mechanism(m, n, eps).method]
        best = min(rows.values(), key=lambda r: r["kendall"])
        if chosen["kendall"] > best["kendall"] + 2 * np.hypot(chosen["kendall_se"], best["kendall_se"]):
            missed.append((m, n, eps))
    assert len(points) >= 100 and len(missed) <= 1, missed
