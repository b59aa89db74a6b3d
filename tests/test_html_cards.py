"""Every object a user holds shows an HTML card in a notebook: escaped (labels are user data),
bounded whatever its size (first and last rows around an ellipsis row), never raw preferences."""
import inspect
import re

import numpy as np

import privrank as pr
from privrank.html_cards import HEAD_ROWS, TAIL_ROWS, card
from privrank.ledger import fingerprint
from privrank.simulate import btl_complete_design

EVIL = "<script>alert(1)</script>"
ITEMS = [EVIL, "b&c", 'say "hi"', "d", "e"]


def comparisons(items=ITEMS, L=40, rng=0):
    design = btl_complete_design(np.linspace(1, -1, len(items)), L=L, rng=rng)
    return pr.PairwiseComparisons.from_indices(items, design.item_a, design.item_b, design.outcome, user=design.user,
                                               users=design.users)


def results(tmp_path, monkeypatch):
    """One of every object a user holds, named by its type (labels with markup in them)."""
    monkeypatch.setenv("PRIVRANK_STATE", str(tmp_path))
    comps = comparisons()
    release = pr.debiased_randomized_response(comps, epsilon=1.0, rng=1)
    fit = pr.fit_btl(release)
    ci = pr.confidence_intervals(fit)
    rankings = pr.Rankings.from_orders(np.array([[0, 1, 2, 3, 4], [1, 0, 2, 4, 3]] * 20), items=ITEMS)
    agg = pr.private_kemeny(rankings, epsilon=1.0, rng=2)
    accountant = pr.Accountant(pr.PureDP(2.0))
    accountant.spend(pr.PureDP(0.5), label=EVIL)
    ledger = pr.Ledger(tmp_path / "ledger.sqlite")
    ledger.set_budget(fingerprint(comps), "comparison", 1.0, dataset=EVIL)
    objects = [comps, comps.tally(), comps.pair_counts(), release, fit, ci, pr.perturbed_mle(comps, epsilon=1.0, rng=3),
               rankings, pr.sufficient_statistics(rankings, kind="rankings"),
               agg, agg.release, pr.aggregate_intervals(agg, n_bootstrap=100, rng=4),
               pr.dp_footrule(rankings, epsilon=1.0, rng=5).release,
               pr.noisy_counts(np.arange(5), epsilon=1.0, unit="one count", rng=6),
               pr.manipulation_margin(pr.randomized_response(comps, epsilon=1.0, max_answers=10, rng=7), pairs=True),
               release.guarantee, pr.PureDP(1.0), pr.ApproxDP(1.0, 1e-6), pr.ZCDP(0.5), accountant, ledger]
    return {type(o).__name__: o for o in objects}


def test_every_type_a_user_holds_shows_an_escaped_html_card(tmp_path, monkeypatch):
    shown = results(tmp_path, monkeypatch)
    exported = {name for name in pr.__all__ if inspect.isclass(getattr(pr, name))
                and not issubclass(getattr(pr, name), (Exception, Warning))}
    assert exported - set(shown) == {"ScoredRanking"}  # the base of BTLFit and CentralRanking
    for name, obj in shown.items():
        page = obj._repr_html_()
        assert page.startswith(f"<div><p><b>{name}</b>") and len(page) < 10_000, name
        assert "<script>" not in page and "alert(1)</script>" not in page, name  # labels are escaped
    for name in ("BTLFit", "ConfidenceIntervals", "CentralRanking", "AggregateResult", "RankIntervals"):
        page = shown[name]._repr_html_()
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "b&amp;c" in page and "<table>" in page, name
        assert "<b>Guarantee:</b>" in page, name
    for name in ("Accountant", "Ledger", "ManipulationMargin"):
        assert "<table>" in shown[name]._repr_html_(), name
    assert "&lt;script&gt;" in shown["Accountant"]._repr_html_() and "&lt;script&gt;" in shown["Ledger"]._repr_html_()
    shown["Ledger"].close()
    assert "closed" in shown["Ledger"]._repr_html_()


def test_cards_of_data_say_what_their_reprs_say_and_never_the_preferences(tmp_path, monkeypatch):
    shown = results(tmp_path, monkeypatch)
    for name in ("PairwiseComparisons", "ComparisonTally", "PairCounts", "Rankings", "RankingTally"):
        page = shown[name]._repr_html_()
        assert "<table>" not in page and "script" not in page and "b&amp;c" not in page, name  # no labels, no rows
    assert "400 comparisons" in shown["PairwiseComparisons"]._repr_html_()
    assert "40 rankings of 5 items" in shown["Rankings"]._repr_html_()
    guarantee = shown["Guarantee"]._repr_html_()
    assert "local" in guarantee and "one comparison" in guarantee and "factor of 2.72" in guarantee
    assert "NOT PRIVATE" in pr.Guarantee.non_private()._repr_html_()
    assert "<b>PureDP</b>, 1-DP" in shown["PureDP"]._repr_html_() and "1e-06" in shown["ApproxDP"]._repr_html_()


def test_a_large_result_shows_its_first_and_last_rows_around_an_ellipsis():
    m = 3000
    items = [f"item {k} <i>" for k in range(m)]
    chain = np.arange(m - 1)
    outcome = np.random.default_rng(1).choice([-1, 1], size=3 * (m - 1))
    fit = pr.fit_btl(pr.PairwiseComparisons.from_indices(items, np.tile(chain, 3), np.tile(chain + 1, 3), outcome),
                     lam=1.0)
    page = fit._repr_html_()
    rows = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td>", page)
    ranks = [int(r) for r, _ in rows]
    assert ranks == list(range(1, HEAD_ROWS + 1)) + list(range(m - TAIL_ROWS + 1, m + 1))
    assert rows[-1][1] == f"{fit.ranking[-1]}".replace("<", "&lt;").replace(">", "&gt;")
    assert f"{m - HEAD_ROWS - TAIL_ROWS:,} more rows" in page and ".to_pandas()" in page
    assert len(page) < 10_000
    counts = pr.noisy_counts(np.arange(10 ** 6), epsilon=1.0, unit="one count", rng=0)._repr_html_()
    assert len(counts) < 5_000 and "999,987 more rows" in counts


def test_card_escapes_and_clips_everything():
    page = card("<k>", "<s>", facts=[("<f>", "x" * 5000), ("gone", None)], rows=[{"<c>": "<v>" * 50, "n": 0.123456}])
    assert "<k>" not in page and "<s>" not in page and "<f>" not in page and "<c>" not in page and "<v>" not in page
    assert "gone" not in page and len(page) < 1_500 and "0.1235" in page
