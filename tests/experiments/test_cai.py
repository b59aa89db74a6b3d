"""The Cai, Chakraborty, Wang study: its claims on a tiny grid, against broken variants, and missing data."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from privrank.data.pair_counts import PairCounts
from privrank.data.datasets import DatasetNotFound, load_cems
from privrank.experiments import cai, runner
from privrank.pairwise import central

# Sizes at which every solve takes milliseconds. SE arithmetic for the claims (SE of a cell mean =
# sd / sqrt(replications); observed at seed 4, and the margins leave room for any seed):
# * from n = 20 to n = 80, and from p = 0.2 to p = 1 at n = 60, the MLE's log relative errors fall by
#   0.15 to 1.0 with 40 replications per cell: 10 to 30 SE of the difference, against 2 required;
# * the privacy cost at eps = 0.5 is paired on the same data: the log relative l_2 error rises by about
#   0.9 with a paired sd of about 0.14, so 35 SE or more;
# * on the surveys the l_2 change at p = 1 is a tenth to a fifth of that at p = 0.2: about 9 SE with 50
#   replications per cell.
TINY = dict(
    n_sweep=dict(n=(20, 80), p=(1.0,), eps=(0.5, 2.5), reps=40),
    p_sweep=dict(n=(60,), p=(0.2, 1.0), eps=(0.5,), reps=40),
    eps_sweep=dict(n=(60,), p=(0.5,), eps=(0.25, 0.5, 2.0), reps=40),
    surveys=dict(p=(0.2, 1.0), eps=(0.5, 1.0), reps=50),
)
SIMULATED = ("n_sweep", "p_sweep", "eps_sweep")


def _part(experiments, reps=None):
    """The tiny study reduced to some experiments and the claims that draw on them (figures left out)."""
    full = cai.study(TINY, reps)
    names = set(experiments)
    claims = tuple(c for c in full.claims if c.id.split("-")[0] in names)
    return runner.Study("cai", "part", tuple(e for e in full.experiments if e.name in names),
                        tuple(replace(c, figure=None) for c in claims))


def _required(report):
    return {c["id"]: c["holds"] for c in report["claims"]}


@pytest.mark.slow
def test_simulation_claims_hold_and_catch_too_little_noise_and_a_truncated_design(tmp_path, monkeypatch):
    good = runner.run(_part(SIMULATED), tmp_path / "good", seed=4, jobs=1, progress=False)
    assert all(v is True for v in _required(good).values()), good["claims"]
    assert len(good["claims"]) == 13  # errors fall: 2 x (2 eps + non-private) in n, 2 x (1 + 1) in p; 3 costs

    # objective perturbation with a hundredth of the noise: the MLE's error at eps = 0.5 is then that of
    # the non-private MLE up to a second-order term, far below 2 SE of the paired difference
    def underperturbed(data, epsilon, **kw):
        return central.perturbed_mle(data, 100 * epsilon, **kw)

    monkeypatch.setattr(cai, "perturbed_mle", underperturbed)
    weak = _required(runner.run(_part(SIMULATED), tmp_path / "weak", seed=4, jobs=1, progress=False))
    assert [weak[f"{e}-log_l2-eps0.5-above-nonprivate"] for e in SIMULATED] == [False] * 3
    monkeypatch.undo()

    # a design cut off after its first 150 pairs, whatever n and p: the non-private MLE's errors no longer
    # fall along either axis (the private ones still do at these sizes, through the ridge, which grows with
    # n and p and damps the noise)
    def truncated(theta, p, rng):
        pc = sample(theta, p, rng=rng)
        return PairCounts.from_arrays(pc.n_items, pc.i[:150], pc.j[:150], pc.wins[:150], pc.totals[:150])

    sample = cai.erdos_renyi_counts
    monkeypatch.setattr(cai, "erdos_renyi_counts", truncated)
    cut = _required(runner.run(_part(("n_sweep", "p_sweep")), tmp_path / "cut", seed=4, jobs=1, progress=False))
    falls = [v for k, v in cut.items() if k.endswith("-falls-nonprivate")]
    assert len(falls) == 4 and not any(falls), cut


@pytest.mark.slow
def test_survey_claims_hold_catch_an_ignored_subsample_and_are_skipped_without_data(tmp_path, monkeypatch):
    try:
        cai.survey_counts("cems")
        cai.survey_counts("immigration")
    except DatasetNotFound:
        pytest.skip("the CEMS and immigration data are not in the data directory")
    part = _part(cai.SURVEYS)
    good = runner.run(part, tmp_path / "good", seed=4, jobs=1, progress=False)
    assert list(_required(good).values()) == [True] * 2, good["claims"]
    monkeypatch.setattr(cai, "subsample_pairs", lambda counts, p, rng: counts)
    bad = runner.run(part, tmp_path / "bad", seed=4, jobs=1, progress=False)
    assert list(_required(bad).values()) == [False] * 2, bad["claims"]
    monkeypatch.undo()

    monkeypatch.setenv("PRIVRANK_DATA", str(tmp_path / "empty"))
    cai.survey_counts.cache_clear()
    try:
        missing = runner.run(_part(cai.SURVEYS, reps=2), tmp_path / "missing", jobs=1, progress=False)
    finally:
        cai.survey_counts.cache_clear()
    assert set(missing["skipped"]) == {"cems", "immigration"} and "CEMS" in missing["skipped"]["cems"]
    assert all(c["holds"] == "skipped" for c in missing["claims"] + missing["observations"])


def test_pair_subsample_of_counts_is_the_subsample_of_the_comparisons():
    try:
        comps = load_cems()
    except DatasetNotFound:
        pytest.skip("the CEMS data are not in the data directory")
    counts = comps.pair_counts()
    lo, hi = np.minimum(comps.item_a, comps.item_b), np.maximum(comps.item_a, comps.item_b)
    pair = np.searchsorted(counts.i * comps.n_items + counts.j, lo * comps.n_items + hi)
    keep = np.random.default_rng(9).random(counts.n_pairs) < 0.5
    sub = cai.subsample_pairs(counts, 0.5, np.random.default_rng(9))
    assert 0 < sub.n_pairs < counts.n_pairs

    def same(a: PairCounts, b: PairCounts) -> bool:
        return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("i", "j", "wins", "totals"))

    # keeping a pair keeps all its comparisons: the counts of the kept comparisons, exactly
    assert same(sub, PairCounts.from_records(
        comps.n_items, comps.item_a[keep[pair]], comps.item_b[keep[pair]], comps.preference_values()[keep[pair]]))
    # keeping each comparison on its own is a different design, and the check sees it
    each = np.random.default_rng(9).random(comps.n_records) < 0.5
    assert not same(sub, PairCounts.from_records(comps.n_items, comps.item_a[each], comps.item_b[each],
                                                 comps.preference_values()[each]))


def test_replications_and_declarations():
    rng = np.random.default_rng(0)
    out = cai.simulation({"n": 40, "p": 0.5, "eps": 1.0}, rng)
    metrics = {"log_linf", "log_l2", "linf", "topk_mle", "topk_copeland", "exact_mle", "exact_copeland"}
    assert set(out) == metrics | {m + "_np" for m in metrics}
    assert all(0 <= out[m] <= 1 for m in out if m.startswith(("topk", "exact")))
    theta, k = cai.true_scores(40)
    assert k == 10 and theta is cai.true_scores(40)[0]  # drawn once per n
    full, quick = cai.build(), cai.build(quick=True)
    assert sum(c.required for c in full.claims) == 27 and sum(c.required for c in quick.claims) == 23
    assert [f.id for f in full.figures] == ["fig1_n", "fig2_p", "fig3_eps", "fig4_cems_p", "fig5_cems_eps",
                                            "fig6_immigration_p", "fig7_immigration_eps"]
    assert full.experiment("cems").reps == 500 and full.experiment("n_sweep").reps == 100
    assert len(full.experiment("p_sweep").cells) == 13 * 3 and cai.build(reps=7).experiment("cems").reps == 7
