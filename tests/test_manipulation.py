"""The manipulation margin of a ranking of randomized reports, checked by attacking real data.

The attacks add fake respondents as literal report rows (user, item_a, item_b, outcome, epsilon)
and refit through the public reader and fit: the margin must be exactly the number of fakes
that changes the ranking.
"""
import collections
import time
import warnings

import numpy as np
import pyarrow as pa
import pytest

import privrank as pr
from privrank.data.datasets import load_llmfao
from privrank.errors import InputError


QUOTA = 60


@pytest.fixture(scope="module")
def llmfao():
    return load_llmfao()


@pytest.fixture(scope="module")
def reports(llmfao):
    """LLMFAO randomized at epsilon 1 with a fixed seed; no quota declared."""
    return pr.randomized_response(llmfao, 1.0, rng=7)


@pytest.fixture(scope="module")
def quota_reports(llmfao):
    """Each worker's first QUOTA answers, randomized at epsilon 1: the reports carry the quota."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.PrivacyWarning)
        return pr.randomized_response(llmfao, 1.0, max_answers=QUOTA, rng=0)


def ranking_after(reports, promoted, above, fakes, per_fake):
    """The ranking of ``reports`` plus ``fakes`` fake respondents, each sending ``per_fake``
    unrandomized reports "promoted preferred": first against ``above``, then against the other
    items in the released ranking's order from the top -- literal rows through the reader."""
    released = pr.fit_btl(reports).ranking
    opponents = [above] + [x for x in released if x not in (promoted, above)][:per_fake - 1]
    items = list(reports.items)
    # a worker who compared one pair twice gave two answers, each randomized once; the reader takes one
    # report per respondent and pair, so each further answer of a pair is sent under a name of its own
    seen = collections.Counter()
    names = []
    for u, a, b in zip(reports.user.tolist(), reports.item_a.tolist(), reports.item_b.tolist()):
        seen[u, min(a, b), max(a, b)] += 1
        names.append(f"u{reports.users[u]}/{seen[u, min(a, b), max(a, b)]}")
    rows = {"user": names,
            "item_a": [items[k] for k in reports.item_a], "item_b": [items[k] for k in reports.item_b],
            "outcome": reports.outcome.astype(int).tolist(), "epsilon": reports.epsilon.tolist()}
    eps = float(reports.epsilon.min())
    for f in range(fakes):
        for opp in opponents:
            for name, value in (("user", f"fake{f}"), ("item_a", promoted), ("item_b", opp), ("outcome", 1),
                                ("epsilon", eps)):
                rows[name].append(value)
    table = pa.table(rows)
    if reports.max_answers is not None:
        table = table.append_column("max_answers", pa.array([reports.max_answers] * table.num_rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.PrivacyWarning)
        return pr.fit_btl(pr.read_comparisons(table)).ranking


def margin_holds(reports, margin, per_fake) -> bool:
    """The attack test: ``margin.fakes`` fakes change the top item, one fewer does not."""
    top = pr.fit_btl(reports).ranking[0]
    n, c = margin.fakes, margin.item
    return (ranking_after(reports, c, top, n, per_fake)[0] != top
            and (n == 1 or ranking_after(reports, c, top, n - 1, per_fake)[0] == top))


def pair_holds(reports, pair, per_fake) -> bool:
    """``pair.fakes`` fakes lift ``pair.item`` above ``pair.above``; one fewer does not."""
    def ahead(n):
        order = ranking_after(reports, pair.item, pair.above, n, per_fake)
        return order.index(pair.item) < order.index(pair.above)
    return ahead(pair.fakes) and not ahead(pair.fakes - 1)


def test_top_item_margin_is_exact_on_llmfao(reports):
    m = pr.manipulation_margin(reports)
    assert m.max_answers is None and m.reports_per_fake == 1 and m.unit == "fake report"
    assert not m.top.more_than and m.top.fakes >= 2  # n - 1 > 0 fakes: the check below has teeth
    assert margin_holds(reports, m.top, 1)
    assert "no quota" in m.describe() and f"{m.top.fakes} fake reports" in m.describe()


def test_top_item_margin_is_the_worst_case_over_items(reports):
    """No other item changes the top item with fewer fakes."""
    m = pr.manipulation_margin(reports)
    released = pr.fit_btl(reports).ranking
    for c in released[1:]:
        assert ranking_after(reports, c, released[0], m.top.fakes - 1, 1)[0] == released[0]


def test_adjacent_pair_margin_is_exact_on_llmfao(reports):
    m = pr.manipulation_margin(reports, pairs=True)
    released = pr.fit_btl(reports).ranking
    assert len(m.pairs) == len(released) - 1
    assert [(p.above, p.item) for p in m.pairs] == list(zip(released, released[1:]))
    assert m.pairs[0].fakes == m.top.fakes or m.top.item != released[1]
    deep = [p for p in m.pairs if p.fakes >= 3]
    assert deep  # pairs whose n - 1 is a real attack
    for p in deep[:2] + [m.pairs[0]]:
        assert pair_holds(reports, p, 1), p


def test_margin_with_a_quota_counts_respondents(quota_reports):
    assert quota_reports.max_answers == QUOTA
    m = pr.manipulation_margin(quota_reports)
    per_fake = len(quota_reports.items) - 1  # min(K, m - 1): distinct opponents
    assert m.max_answers == QUOTA and m.reports_per_fake == per_fake and m.unit == "fake respondent"
    assert margin_holds(quota_reports, m.top, per_fake)
    assert f"{per_fake} unrandomized reports" in m.describe()
    pair = pr.manipulation_margin(quota_reports, pairs=2).pairs[0]
    assert pair_holds(quota_reports, pair, per_fake)


def test_broken_margin_that_ignores_the_quota_is_caught(quota_reports):
    """A margin computed for fake reports (K = 1) while each fake sends K reports overstates how many
    fakes it takes: the attack test fails it."""
    broken = pr.manipulation_margin(quota_reports.tally())  # the tally carries no quota: K = 1
    assert broken.max_answers is None and broken.top.fakes > 1
    per_fake = len(quota_reports.items) - 1
    assert not margin_holds(quota_reports, broken.top, per_fake)
    assert margin_holds(quota_reports, pr.manipulation_margin(quota_reports).top, per_fake)


def test_margin_of_the_tally_equals_the_margin_of_the_reports(reports):
    a = pr.manipulation_margin(reports, pairs=5)
    b = pr.manipulation_margin(reports.tally(), pairs=5)
    assert a == b and len(a.pairs) == 4


def test_cap_is_reported_as_more_than(reports):
    m = pr.manipulation_margin(reports, max_fakes=1)
    assert m.top.more_than and m.top.fakes == 1 and m.top.shown == ">1"
    assert "more than 1 fake reports" in m.describe() and "do not change" in m.describe()


def test_fakes_carry_the_smallest_epsilon_with_uniform_weights(llmfao):
    eps = {u: (0.5 if k % 2 else 2.0) for k, u in enumerate(llmfao.users)}
    reps = pr.randomized_response(llmfao, eps, rng=3)
    assert pr.manipulation_margin(reps).epsilon == 0.5
    assert pr.manipulation_margin(reps, weights="inverse_variance").epsilon == 2.0


def test_fast_enough_for_a_dashboard():
    rng = np.random.default_rng(0)
    m, n = 30, 5000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    theta = np.linspace(1, -1, m)
    outcome = np.where(rng.random(n) < 1 / (1 + np.exp(theta[b] - theta[a])), 1, -1)
    comps = pr.PairwiseComparisons.from_indices(range(m), a, b, outcome, user=np.arange(n) // 5)
    reps = pr.randomized_response(comps, 1.0, max_answers=5, rng=1)
    start = time.perf_counter()
    pr.manipulation_margin(reps, pairs=True)
    assert time.perf_counter() - start < 2.0


def test_refusals(llmfao, reports):
    with pytest.raises(InputError, match="randomized reports"):
        pr.manipulation_margin(llmfao)
    with pytest.raises(InputError, match="more reports than the declared quota"):
        pr.manipulation_margin(reports, max_answers=2)
    for bad in ({"max_fakes": 0}, {"pairs": 0}, {"weights": "x"}, {"max_answers": 0}):
        with pytest.raises(InputError):
            pr.manipulation_margin(reports, **bad)
