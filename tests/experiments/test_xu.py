"""The Xu, Sun, Cheng study: its replications, its claims against broken variants, missing data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import privrank as pr
from privrank.data.datasets import DatasetNotFound
from privrank.experiments import runner, xu
from privrank.simulate import release_complete_answers, sample_local_releases


def _claims(study, prefix):
    return tuple(c for c in study.claims if c.id.startswith(prefix))


def _only(study, experiment, prefix, **changes):
    """The study reduced to one experiment (with ``changes``) and its claims starting with ``prefix``.

    Figures are left out: drawing them is tested once, in the command-line test.
    """
    exp = replace(study.experiment(experiment), **changes)
    return runner.Study("xu", "part", (exp,), tuple(replace(c, figure=None) for c in _claims(study, prefix)))


def classic_consistency(cell, rng):
    """Scenario I with the debiasing step left out (classic RR): a broken estimator of theta*."""
    theta = xu._uniform_theta(rng, cell["m"])
    rel = sample_local_releases(theta, cell["L"], cell["eps"], ("classic",), rng)["classic"]
    fit = pr.fit_btl(rel)
    return {"linf": pr.linf_error(fit.scores, theta), "l2": pr.l2_error(fit.scores, theta)}


def independent_reports(cell, rng):
    """Scenario V where classic RR is fitted on other reports than debiased RR: a broken pairing."""
    out = xu.mechanisms(cell, rng)
    theta = xu._uniform_theta(rng, cell["m"])
    a = sample_local_releases(theta, cell["L"], xu.V_EPS, ("classic",), rng)["classic"]
    b = sample_local_releases(theta, cell["L"], xu.V_EPS, ("debiased",), rng)["debiased"]
    out["order_mismatch"] = pr.kendall_distance(pr.fit_btl(a).scores, pr.fit_btl(b).scores, tie_penalty=0.5)
    return out


@pytest.mark.slow
def test_scenario1_claims_hold_and_catch_a_missing_debiasing_step(tmp_path):
    # quick grid L in {100, 800}, m in {10, 40}, 60 replications: the slope SE is ~0.02 (l2) to
    # 0.03 (l_inf), and the true slopes (~ -0.5) sit > 4 SE inside [-0.65, -0.35] with 2 SE to
    # spare. Without debiasing the errors barely move with L (slope ~ -0.05): far outside.
    study = xu.build(quick=True, reps=60)
    good = runner.run(_only(study, "scenario1", "I-"), tmp_path / "good", seed=5, progress=False)
    assert all(c["holds"] is True for c in good["claims"]), good["claims"]
    bad = runner.run(_only(study, "scenario1", "I-", replicate=classic_consistency), tmp_path / "bad", seed=5,
                     progress=False)
    slopes = {c["id"]: c["holds"] for c in bad["claims"] if "-L-" in c["id"]}
    assert len(slopes) == 6 and not any(slopes.values()), bad["claims"]


def test_scenario5_same_ranking_claim_catches_unpaired_reports(tmp_path):
    # at (m, L) = (10, 50) a Borda tie or a near-tie broken differently by independent reports
    # occurs in most replications, so 20 replications catch the broken pairing for sure
    study = xu.build(quick=True, reps=20)
    cells = runner.grid(m=(10,), L=(50,))
    good = runner.run(_only(study, "scenario5", "V-same-ranking", cells=cells), tmp_path / "good", seed=2,
                      jobs=1, progress=False)
    assert good["claims"][0]["holds"] is True
    bad = runner.run(_only(study, "scenario5", "V-same-ranking", cells=cells, replicate=independent_reports),
                     tmp_path / "bad", seed=2, jobs=1, progress=False)
    assert bad["claims"][0]["holds"] is False


def test_replications_return_declared_metrics():
    rng = np.random.default_rng(0)
    assert set(xu.consistency({"L": 100, "m": 10, "eps": 1.0}, rng)) == {"linf", "l2"}
    assert set(xu.estimation_threshold({"L": 100, "m": 10, "scheme": "critical"}, rng)) == {"linf", "l2"}
    r3 = xu.ranking_recovery({"L": 400, "m": 10, "delta": 0.2}, rng)
    assert set(r3) == {"top_k", "kendall"} and r3["top_k"] in {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}
    assert set(xu.ranking_threshold({"L": 50, "m": 10, "scheme": "log_under"}, rng)) == {"kendall"}
    r5 = xu.mechanisms({"L": 50, "m": 10}, rng)
    assert r5["order_mismatch"] == 0.0
    assert set(r5) == {f"{k}.{n}" for k in ("linf", "l2", "kendall") for n in xu.V_METHODS} | {"order_mismatch"}
    mixed = xu.mixed_privacy({"L": 100, "share": 0.0}, rng)
    assert mixed["l2.uniform"] == pytest.approx(mixed["l2.inverse_variance"])  # one eps: same weights


def test_quick_and_full_grids_declare_every_claim():
    quick, full = xu.build(quick=True), xu.build()
    assert [c.id for c in quick.claims] == [c.id for c in full.claims]
    assert sum(c.required for c in full.claims) == 37
    assert {f.id for f in full.figures} == {"fig2_scenario1", "fig3_scenario2", "fig4_scenario3", "fig5_scenario4",
                                            "fig6_scenario5", "fig7_movielens", "ext_mixed_epsilon"}
    assert full.experiment("scenario1").reps == 50 and full.experiment("movielens").reps == 200
    assert xu.build(reps=7).experiment("scenario3").reps == 7


def test_movielens_replication():
    try:
        answers, theta = xu.movielens_data()
    except DatasetNotFound:
        pytest.skip("MovieLens ml-latest-small is not in the data directory")
    assert answers.shape == (610, 780) and theta.size == 40 and abs(theta.sum()) < 1e-9
    # the answer array holds the same data as the comparisons: its non-private fit is theta*
    rel = release_complete_answers(answers, mechanisms=("none",))["none"]
    np.testing.assert_allclose(pr.fit_btl(rel).scores, theta, atol=1e-9)
    assert 0.5 < np.mean(answers == 0) < 0.6  # about half of the answers are ties
    for scheme in ("critical", "none"):
        out = xu.movielens({"L": 50, "scheme": scheme}, np.random.default_rng(1))
        assert set(out) == {"kendall", "top_10", "l2", "linf"}
        assert 0 < out["kendall"] < 0.5 and 0 <= out["top_10"] <= 1
    assert xu.movielens({"L": 610, "scheme": "none"}, np.random.default_rng(1))["linf"] < 1e-9  # all users


def test_missing_movielens_is_skipped_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVRANK_DATA", str(tmp_path / "empty"))
    xu.movielens_data.cache_clear()
    try:
        study = xu.build(quick=True, reps=2)
        out = runner.run(_only(study, "movielens", "ML-"), tmp_path / "out", jobs=1, progress=False)
    finally:
        xu.movielens_data.cache_clear()
    assert "MovieLens" in out["skipped"]["movielens"]
    assert all(o["holds"] == "skipped" for o in out["observations"])
