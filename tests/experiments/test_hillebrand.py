"""The Hillebrand et al. study: its replications, its claims against broken variants, missing data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from privrank.aggregation.footrule import assignment_order
from privrank.experiments import hillebrand, runner


def _only(study, experiment, ids, **changes):
    """The study reduced to one experiment (with ``changes``) and the claims ``ids`` (no figures)."""
    exp = replace(study.experiment(experiment), **changes)
    claims = tuple(replace(c, figure=None) for c in study.claims if c.id in ids)
    assert len(claims) == len(ids)
    return runner.Study("hillebrand", "part", (exp,), claims)


def _held(report):
    return {c["id"]: c["holds"] for c in report["claims"]}


def _maximising_dp_footrule(monkeypatch):
    """Make the study's dp-footrule solve the assignment the wrong way round (the costliest
    matching): a broken solver. Runs are in-process (jobs=1), so the patch reaches them."""
    real = hillebrand.dp_footrule

    def broken(*args, **kwargs):
        res = real(*args, **kwargs)
        return replace(res, order=assignment_order(-res.release.costs))
    monkeypatch.setattr(hillebrand, "dp_footrule", broken)


def noise_ignores_n(cell, rng):
    """The release calibrated as if every profile had 250 rankings: noise that does not shrink with n."""
    return hillebrand.footrule_error({**cell, "eps": cell["eps"] * cell["n"] / 250}, rng)


@pytest.mark.slow
def test_error_claims_hold_and_catch_broken_variants(tmp_path, monkeypatch):
    # Laplace, m = 8, n in {250, 1000, 4000}, 30 replications: the bound's relative sd is ~0.15, so
    # each cell mean has a relative SE ~0.03 and the slope an SE ~0.02 over ln(16) = 2.8; the true
    # slope -1 sits 5 SE inside [-1.1, -0.9]. With noise calibrated for n = 250 the slope is 0.
    study = hillebrand.build(quick=True, reps=30)
    cells = runner.grid(noise=("laplace",), m=(8,), eps=(1.0,), n=(250, 1000, 4000))
    ids = ("T4.1-laplace-n", "E.1-error_n")

    def run(name, **changes):
        return _held(runner.run(_only(study, "error_n", ids, cells=cells, **changes), tmp_path / name, seed=3,
                                jobs=1, progress=False))

    assert run("good") == dict.fromkeys(ids, True)
    assert run("flat", replicate=noise_ignores_n)["T4.1-laplace-n"] is False
    _maximising_dp_footrule(monkeypatch)  # far above the optimum while the bound shrinks like 1/n
    assert run("maximising")["E.1-error_n"] is False


@pytest.mark.slow
def test_comparison_claims_hold_and_catch_a_broken_order(tmp_path, monkeypatch):
    # 20 Mallows replications at eps = 0.01 and 10: at 0.01 every method's Kemeny excess is ~5
    # (sd ~2, SE ~0.5), at 10 it is ~0 for the Kemeny methods and ~0.5 for dp-footrule: > 5 SE apart.
    # The costliest matching breaks the footrule bound at eps = 10; Theorem 4.2's bound 2 OPT_K
    # exceeds every Kemeny cost on these profiles (OPT_K ~ 16 of 45 pairs), so it cannot catch it.
    study = hillebrand.build(quick=True, reps=20)
    cells = runner.grid(data=("mallows",), eps=(0.01, 10.0))
    ids = ("E.1-mallows", "T4.2-mallows", "mallows-dp-footrule-consistent", "mallows-dp-kwiksort-consistent",
           "mallows-noisy-matrix-consistent")

    def run(name):
        return _held(runner.run(_only(study, "mallows", ids, cells=cells), tmp_path / name, seed=1, jobs=1,
                                progress=False))

    assert run("good") == dict.fromkeys(ids, True)
    _maximising_dp_footrule(monkeypatch)
    bad = run("maximising")
    assert bad["E.1-mallows"] is False


def test_replications_return_declared_metrics():
    rng = np.random.default_rng(0)
    for noise in hillebrand.NOISES:
        out = hillebrand.footrule_error({"noise": noise, "m": 6, "n": 300, "eps": 1.0}, rng)
        assert set(out) == {"bound", "excess", "bound_gap"}
        assert out["excess"] >= -1e-12 and out["bound_gap"] <= 1e-9
    out = hillebrand.compare({"data": "mallows", "eps": 1.0}, rng)
    methods = set(hillebrand.METHODS)
    assert set(out) == {f"{k}.{m}" for k in ("kemeny", "footrule") for m in methods} | {"footrule_gap",
                                                                                      "kemeny_gap"}
    assert min(out[f"kemeny.{m}"] for m in methods) >= -1e-12


def test_quick_and_full_grids_declare_every_claim():
    quick, full = hillebrand.build(quick=True), hillebrand.build()
    assert [c.id for c in quick.claims] == [c.id for c in full.claims]
    assert sum(c.required for c in full.claims) == 32 and sum(not c.required for c in full.claims) == 9
    assert {f.id for f in full.figures} == {"error_n", "error_eps", "error_m", "compare_sushi", "compare_netflix",
                                            "compare_mallows"}
    assert hillebrand.build(reps=7).experiment("sushi").reps == 7
    # the Gaussian eps-claim is centred on the calibration's own slope, between -1 and -0.9
    assert -1.0 < hillebrand.noise_eps_slope("gaussian", (0.25, 0.5, 1.0)) < -0.9


def test_missing_data_is_skipped_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVRANK_DATA", str(tmp_path / "empty"))
    hillebrand.real_profile.cache_clear()
    try:
        study = hillebrand.build(quick=True, reps=2)
        part = runner.Study("hillebrand", "part", (study.experiment("sushi"), study.experiment("netflix")),
                            tuple(replace(c, figure=None) for c in study.claims
                                  if c.id.startswith(("sushi", "netflix", "E.1-sushi", "E.1-netflix"))))
        out = runner.run(part, tmp_path / "out", jobs=1, progress=False)
    finally:
        hillebrand.real_profile.cache_clear()
    assert "sushi" in out["skipped"]["sushi"] and "Netflix" in out["skipped"]["netflix"]
    assert out["claims"] and all(c["holds"] == "skipped" for c in out["claims"])
