"""Experiment runner: seeding, resume, tidy table, claims that hold and claims that catch a broken run."""
from __future__ import annotations

import csv
import io
import json
import os
import sys
from dataclasses import replace

import numpy as np
import pytest

from privrank.data.datasets import DatasetNotFound
from privrank.errors import InputError
from privrank.experiments import runner
from privrank.experiments.claims import Coefficient, Less, Mean, Never, Ratio, Sel, Slope, Within
from privrank.experiments.figures import Curve, Figure, Panel
from privrank.experiments.runner import Experiment, Study, grid

CELLS = grid(L=(100, 400, 1600), group=("a", "b"))
REPS = 200


def correct(cell, rng):
    """A correct method: error ~ L^-1/2 with lognormal noise (sd 0.2 on the log scale); 'flat' ~ 1."""
    return {"err": np.exp(rng.normal(0.0, 0.2)) / np.sqrt(cell["L"]),
            "flat": 1.0 + rng.normal(0.0, 0.05),
            "mismatch": 0.0}


def broken(cell, rng):
    """A broken method: the error does not shrink, 'flat' does, and rare mismatches occur."""
    return {"err": np.exp(rng.normal(0.0, 0.2)) / 10.0,
            "flat": (1.0 + rng.normal(0.0, 0.05)) * np.sqrt(100 / cell["L"]),
            "mismatch": float(rng.random() < 0.02)}


def paired(cell, rng):
    """Two methods on the same draw: b = a + 0.01 + small noise, with a varying a lot between replications."""
    a = rng.normal(1.0, 0.5)
    return {"a": a, "b": a + 0.01 + rng.normal(0.0, 0.01)}


def unavailable():
    raise DatasetNotFound("the test data set is not available: put it under $PRIVRANK_DATA")


def fake_study(replicate=correct, cells=CELLS, reps=REPS, extra=()):
    # SE arithmetic for the claims below (correct method, 200 replications per cell):
    # * log-mean of err has SE ~ 0.2/sqrt(200) = 0.014; over 3 L values and 2 groups the slope SE
    #   is ~ 0.014 / sqrt(2 * sum (log L - mean)^2) = 0.014 / sqrt(2 * 3.84) = 0.005, so the true
    #   slope -0.5 sits ~30 SE inside [-0.65, -0.35]; the broken slope 0 is ~70 SE outside.
    # * mean err at L=1600 vs L=100 differs by 0.075 with SE ~ 0.1 * 0.2 / sqrt(400) = 0.001.
    # * the 'flat' ratio has SE ~ 0.05 * sqrt(2/400) = 0.0035: the correct 1.0 is ~40 SE inside
    #   [0.85, 1.15], the broken 0.25 is far outside.
    # * the broken mismatch is 1 in 2% of 1200 replications: P(no mismatch) = 0.98^1200 ~ 3e-11.
    exp = Experiment("fake", "a fake experiment", cells, reps, replicate)
    claims = (
        Within(id="slope", text="err falls like L^-1/2", stat=Slope(Sel("fake", "err")), lo=-0.65, hi=-0.35,
               figure="f"),
        Less(id="falls", text="err at L=1600 < err at L=100", a=Mean(Sel("fake", "err", L=1600)),
             b=Mean(Sel("fake", "err", L=100))),
        Within(id="flat", text="flat within 15%", stat=Ratio(Sel("fake", "flat", L=1600), Sel("fake", "flat", L=100)),
               lo=0.85, hi=1.15),
        Never(id="same", text="never a mismatch", sel=Sel("fake", "mismatch")),
    ) + tuple(extra)
    fig = Figure("f", "Fake figure", "fake",
                 (Panel("err", tuple(Curve(g, "err", {"group": g}) for g in ("a", "b"))),))
    return Study("fake", "Fake study", (exp,), claims, (fig,), "A study for the tests.")


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_claims_hold_on_correct_and_fail_on_broken(tmp_path):
    good = runner.run(fake_study(correct), tmp_path / "good", seed=3, jobs=1, progress=False)
    assert [c["holds"] for c in good["claims"]] == [True] * 4, good["claims"]
    bad = runner.run(fake_study(broken), tmp_path / "bad", seed=3, jobs=1, progress=False)
    assert [c["holds"] for c in bad["claims"]] == [False] * 4, bad["claims"]
    rows = read_csv(tmp_path / "bad" / "claims.csv")
    assert list(rows[0]) == ["id", "claim", "expected", "observed", "holds"]
    assert [r["holds"] for r in rows] == ["False"] * 4


def test_paired_comparison_uses_the_paired_standard_error(tmp_path):
    # b - a = 0.01 + N(0, 0.01): paired SE over 6 cells x 200 = 0.01/sqrt(1200) ~ 3e-4, so the
    # difference is ~35 SE. Unpaired, the SE would be ~ 0.5 * sqrt(2/1200) = 0.02 and the claim
    # could not hold: the pairing is what makes it testable.
    claim = Less(id="paired", text="a < b", a=Mean(Sel("fake", "a")), b=Mean(Sel("fake", "b")))
    study = Study("p", "paired", (Experiment("fake", "paired", CELLS, REPS, paired),), (claim,))
    out = runner.run(study, tmp_path, seed=0, jobs=1, progress=False)
    assert out["claims"][0]["holds"] is True
    z = float(out["claims"][0]["observed"].split("= ")[1].split(" SE")[0])
    assert z > 20


def test_overlapping_cells_cannot_be_compared_as_independent(tmp_path):
    claim = Less(id="bad", text="overlap", a=Mean(Sel("fake", "err", L=(100, 400))),
                 b=Mean(Sel("fake", "err", L=(400, 1600))))
    with pytest.raises(InputError, match="disjoint"):
        runner.run(fake_study(extra=(claim,), reps=3), tmp_path, jobs=1, progress=False)


def test_tidy_table_has_declared_columns(tmp_path):
    runner.run(fake_study(reps=4), tmp_path, seed=0, jobs=1, progress=False)
    rows = read_csv(tmp_path / "results.csv")
    assert list(rows[0]) == ["experiment", "L", "group", "rep", "metric", "value"]
    assert len(rows) == len(CELLS) * 4 * 3  # cells x replications x metrics
    assert {r["metric"] for r in rows} == {"err", "flat", "mismatch"}
    assert {r["rep"] for r in rows} == {"0", "1", "2", "3"}


def test_seeding_reproduces_a_cell_whatever_the_schedule(tmp_path):
    one = runner.run(fake_study(reps=5), tmp_path / "one", seed=11, jobs=1, progress=False)
    two = runner.run(fake_study(reps=5), tmp_path / "two", seed=11, jobs=2, progress=False)
    assert one["computed"] == two["computed"] == len(CELLS)
    text1 = (tmp_path / "one" / "results.csv").read_text()
    assert text1 == (tmp_path / "two" / "results.csv").read_text()
    # a cell's draws depend only on (seed, cell, replication): not on the other cells of the grid
    alone = runner.run(replace(fake_study(cells=CELLS[3:4], reps=5), claims=()), tmp_path / "alone", seed=11,
                       jobs=1, progress=False)
    assert alone["computed"] == 1
    lines = [ln for ln in text1.splitlines() if ln.startswith("fake,400,b,")]
    assert (tmp_path / "alone" / "results.csv").read_text().splitlines()[1:] == lines
    # ... and a different seed gives different draws
    runner.run(fake_study(reps=5), tmp_path / "other", seed=12, jobs=1, progress=False)
    assert (tmp_path / "other" / "results.csv").read_text() != text1
    s1 = np.random.default_rng(runner.replication_seed(11, "k", 0)).random()
    assert s1 == np.random.default_rng(runner.replication_seed(11, "k", 0)).random()
    assert s1 != np.random.default_rng(runner.replication_seed(11, "k", 1)).random()


def test_resume_skips_finished_cells(tmp_path):
    first = runner.run(fake_study(reps=5), tmp_path, seed=1, jobs=1, progress=False)
    text = (tmp_path / "results.csv").read_text()
    again = runner.run(fake_study(reps=5), tmp_path, seed=1, jobs=1, progress=False)
    assert (first["computed"], again["computed"], again["resumed"]) == (len(CELLS), 0, len(CELLS))
    assert (tmp_path / "results.csv").read_text() == text
    # a run interrupted after some cells: only the missing ones are computed, results identical
    store = tmp_path / "cells.jsonl"
    lines = store.read_text().splitlines()
    store.write_text("\n".join(lines[:2]) + "\n" + lines[2][:17])  # two cells and a torn line
    resumed = runner.run(fake_study(reps=5), tmp_path, seed=1, jobs=2, progress=False)
    assert (resumed["computed"], resumed["resumed"]) == (len(CELLS) - 2, 2)
    assert (tmp_path / "results.csv").read_text() == text
    # another seed or replication count is another run; fresh recomputes everything
    assert runner.run(fake_study(reps=5), tmp_path, seed=2, jobs=1, progress=False)["computed"] == len(CELLS)
    assert runner.run(fake_study(reps=6), tmp_path, seed=1, jobs=1, progress=False)["computed"] == len(CELLS)
    fresh = runner.run(fake_study(reps=5), tmp_path, seed=1, jobs=1, fresh=True, progress=False)
    assert (fresh["computed"], fresh["resumed"]) == (len(CELLS), 0)
    assert all(json.loads(ln)["seed"] == 1 for ln in store.read_text().splitlines())


def test_missing_data_skips_the_experiment_and_its_claims(tmp_path):
    exp = Experiment("needs_data", "needs data", grid(L=(10, 20)), 3, correct, requires=unavailable)
    claim = Less(id="d", text="on the data", a=Mean(Sel("needs_data", "err", L=20)),
                 b=Mean(Sel("needs_data", "err", L=10)))
    fig = Figure("g", "Data figure", "needs_data", (Panel("err", (Curve("err", "err"),)),))
    base = fake_study(reps=3)
    study = Study("s", "with data", base.experiments + (exp,), base.claims + (claim,), base.figures + (fig,))
    out = runner.run(study, tmp_path, jobs=1, progress=False)
    assert "needs_data" in out["skipped"] and "not available" in out["skipped"]["needs_data"]
    row = [c for c in out["claims"] if c["id"] == "d"][0]
    assert row["holds"] == "skipped" and "not available" in row["observed"]
    assert out["figures"]["g"] == "experiment needs_data skipped"
    assert "skipped" in (tmp_path / "summary.md").read_text()


def test_figures_and_summary(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    out = runner.run(fake_study(reps=3), tmp_path / "with", jobs=1, progress=False)
    assert out["figures"] == {"f": True}
    assert (tmp_path / "with" / "f.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (tmp_path / "with" / "summary.md").read_text()
    assert "![Fake figure](f.png)" in summary and "| slope |" in summary
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # as if matplotlib were not installed
    out = runner.run(fake_study(reps=3), tmp_path / "without", jobs=1, progress=False)
    assert "not installed" in out["figures"]["f"]
    assert not (tmp_path / "without" / "f.png").exists()
    assert "Figure not drawn: matplotlib is not installed" in (tmp_path / "without" / "summary.md").read_text()


def test_observations_are_reported_apart(tmp_path):
    obs = Less(id="o", text="a statement of the paper", required=False,
               a=Mean(Sel("fake", "err", L=100)), b=Mean(Sel("fake", "err", L=1600)))  # false here
    out = runner.run(fake_study(extra=(obs,), reps=20), tmp_path, jobs=1, progress=False)
    assert [c["id"] for c in out["claims"]] == ["slope", "falls", "flat", "same"]
    assert out["observations"][0]["holds"] is False
    assert read_csv(tmp_path / "observations.csv")[0]["id"] == "o"


def peaked(cell, rng):
    """A family of inputs: err ~ L^-1/2 scaled by a bump in c whose peak moves with L; 'zero' is 0."""
    peak = np.log(cell["L"] / 1600) / np.log(4)  # log2 of the worst c: 1/4 at L = 100, 1/2 at 400, 1 at 1600
    bump = np.exp(-4.0 * (np.log2(cell["c"]) - peak) ** 2)
    return {"err": bump * np.exp(rng.normal(0.0, 0.2)) / np.sqrt(cell["L"]), "zero": 0.0}


def test_worst_case_envelope_and_undefined_slopes(tmp_path):
    # The largest mean over c sits at a different c for each L (1/4, 1/2, 1), with bump 1, so the
    # envelope is 1/sqrt(L): slope -1/2 (SE ~0.2/sqrt(200)/sqrt(3.84) ~ 0.007). Fitted per c instead,
    # each curve rises or falls with the moving bump and the common slope is far from -1/2.
    cells = grid(L=(100, 400, 1600), c=(0.25, 0.5, 1.0))
    exp = Experiment("fam", "family", cells, REPS, peaked)
    claims = (
        Within(id="envelope", text="worst case falls like L^-1/2", stat=Slope(Sel("fam", "err", worst="c")),
               lo=-0.55, hi=-0.45),
        Within(id="per-c", text="each c falls like L^-1/2", stat=Slope(Sel("fam", "err")), lo=-0.55, hi=-0.45),
        Less(id="worst-mean", text="worst case below 0.11", a=Mean(Sel("fam", "err", worst="c", L=100)), b=0.11),
        Within(id="zero", text="a slope through zero means", stat=Slope(Sel("fam", "zero")), lo=-1.0),
    )
    out = runner.run(Study("w", "worst", (exp,), claims), tmp_path, seed=0, jobs=1, progress=False)
    holds = {c["id"]: c["holds"] for c in out["claims"]}
    assert holds == {"envelope": True, "per-c": False, "worst-mean": True, "zero": False}, out["claims"]
    assert "worst over c of err" in out["claims"][0]["expected"]
    assert out["claims"][3]["observed"].startswith("undefined: a mean of 0")


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal():
    from privrank.progress import progress_bar
    quiet = io.StringIO()
    bar = progress_bar(4, "run", "cell", stream=quiet)
    bar.update(2)
    bar.close()
    assert quiet.getvalue() == ""
    term = _Terminal()
    bar = progress_bar(4, "run", "cell", stream=term)
    bar.update(2)
    bar.close()
    assert "\r" in term.getvalue() and "2/4" in term.getvalue()
    assert progress_bar(4, "run", "cell", stream=_Terminal(), enabled=False).disable


def test_study_declaration_errors():
    exp = Experiment("e", "e", grid(L=(1, 2)), 2, correct)
    with pytest.raises(InputError, match="unique"):
        Study("s", "s", (exp, exp))
    with pytest.raises(InputError, match="unknown figure"):
        Study("s", "s", (exp,), (Never(id="n", text="t", sel=Sel("e", "err"), figure="nope"),))
    with pytest.raises(InputError, match="unknown study"):
        runner.load_study("no_such_study")
    with pytest.raises(InputError, match="reps"):
        runner.load_study("xu", reps=1)
    assert "xu" in runner.studies()


def linear(cell, rng):
    """Cell means 0.5 + 2 x + 3 / y, replication noise sd 0.1."""
    return {"v": 0.5 + 2.0 * cell["x"] + 3.0 / cell["y"] + rng.normal(0.0, 0.1)}


LINEAR_TERMS = {"1": lambda c: 1.0, "x": lambda c: c["x"], "1/y": lambda c: 1.0 / c["y"]}


def test_coefficient_recovers_a_linear_model_and_widens_its_error_when_the_model_misfits(tmp_path):
    # 9 cells x 100 replications: each cell mean has SE 0.01, and the coefficients have SEs of 0.003 to 0.01
    study = Study("lin", "linear", (Experiment("lin", "linear", grid(x=(0.0, 1.0, 2.0), y=(1.0, 2.0, 4.0)), 100,
                                               linear),))
    res = runner.run_cells(study, tmp_path, seed=3, jobs=1, progress=False)
    sel = (Sel("lin", "v"),)
    for term, true in (("1", 0.5), ("x", 2.0), ("1/y", 3.0)):
        v, se = Coefficient(sel, LINEAR_TERMS, term).value(res)
        assert abs(v - true) < 4 * se and se < 0.02, (term, v, se)
    # without the 1/y term the residuals (~1) dwarf the cell SEs (0.01): chi2/dof ~ 1e4 widens the SE
    # of x a hundredfold instead of reporting a precise but wrong fit
    v, se = Coefficient(sel, {"1": LINEAR_TERMS["1"], "x": LINEAR_TERMS["x"]}, "x").value(res)
    assert se > 0.1
    claim = Within(id="c", text="x has a positive coefficient", stat=Coefficient(sel, LINEAR_TERMS, "x"), lo=0.0)
    assert claim.evaluate(res)["holds"] is True
    with pytest.raises(InputError, match="determine"):
        Coefficient(sel, {"1": LINEAR_TERMS["1"], "one": LINEAR_TERMS["1"]}, "1").value(res)


def blas_threads(cell, rng):
    return {"single": float(os.environ.get("OPENBLAS_NUM_THREADS") == "1")}


def test_parallel_workers_use_a_single_threaded_blas_and_the_environment_is_restored(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "7")
    study = Study("env", "environment", (Experiment("env", "environment", grid(k=(1, 2)), 2, blas_threads),))
    res = runner.run_cells(study, tmp_path, jobs=2, progress=False)
    assert all(np.all(c.values["single"] == 1.0) for c in res.cells["env"])
    assert os.environ["OPENBLAS_NUM_THREADS"] == "7"
