"""The dashboard cannot mislead and costs milliseconds: no ranked table before the planner's
threshold, rank intervals, scores at the precision their intervals allow, a "last updated" line,
incremental tallies that give exactly the full refit's ranking, one refit per refresh however many
requests, labels shown as the items they are, and round axis ticks."""
import html
import itertools
import math
import re
import threading
import time

import numpy as np
import pytest
from serve_helpers import key
from test_serve_cli import served  # noqa: F401 (a fixture)
from test_server import ADMIN, ballot, dashboard_order, make_client, respondent, starlette_testclient

import privrank as pr
from privrank.serve import open_store
from privrank.serve.survey import Survey

pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ITEMS = ("ant", "bee", "cat", "dog", "eel", "fox")
#: labels a CSV or dataframe reader would take for missing values, or would strip
#: labels a survey accepts (those read as missing values are refused) that a careless reader could still
#: mangle: quotes, inner spaces, punctuation alone
#: a survey file of 4 items at epsilon 1, 6 answers per respondent
FRUIT = 'title = "Fruit"\nquestion = "Which do you prefer?"\nitems = ["apple", "banana", "cherry", "date"]\nepsilon = 1.0\nbudget = 6.0\n'
AWKWARD = ("two  spaces", '""', "n.a.", "-", "0", "1e5", "a=b", "#")


def fill(store, survey, respondents: int, seed: int = 0, theta=None):
    """``respondents`` respondents, each reporting ``max_answers`` random pairs of a BTL model by
    randomized response, written straight to the store."""
    gen = np.random.default_rng(seed)
    m = len(survey.items)
    theta = np.linspace(1.5, -1.5, m) if theta is None else theta
    pairs = list(itertools.combinations(range(m), 2))
    for _ in range(respondents):
        token = store.new_respondent()
        for k in gen.choice(len(pairs), min(survey.max_answers, len(pairs)), replace=False):
            i, j = pairs[k] if gen.random() < 0.5 else pairs[k][::-1]
            truth = 1 if gen.random() < 1 / (1 + math.exp(theta[j] - theta[i])) else -1
            store.add_report(token, key=key(), epsilon=survey.epsilon, max_answers=survey.max_answers,
                             item_a=survey.items[i], item_b=survey.items[j],
                             report=int(pr.randomize_answer(truth, survey.epsilon, rng=gen)))


def page_of(client) -> str:
    r = client.get("/dashboard", params={"token": ADMIN})
    assert r.status_code == 200, r.text
    return r.text


# ------------------------------------------------------------------------------ the threshold

def test_nine_reports_from_four_respondents_show_no_ranked_table(tmp_path):
    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    client, store = make_client(survey, tmp_path / "r.sqlite")
    with client:
        for k, token in enumerate(respondent(client) for _ in range(4)):
            for a, b in list(itertools.combinations(ITEMS, 2))[3 * k:3 * k + (3 if k < 3 else 0)]:
                r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": a, "item_b": b,
                                                      "report": 1, "epsilon": 1.0})
                assert r.status_code == 201
        page = page_of(client)
    store.close()
    assert "Reports: 9." in page and 'id="ranking"' not in page and "<svg" not in page
    from privrank.serve.dashboard import reports_needed

    more = reports_needed("pairs", 6, 1.0, 3) - 9
    assert (f"Not enough data yet: about {more:,} more reports (roughly {math.ceil(more / 3):,} more browsers at "
            "the survey&#x27;s 3 answers each) are needed before the top items are told apart.") in page
    assert "privacy planner predicts" in page


def test_the_threshold_is_where_the_planner_tells_the_top_items_apart():
    from privrank.plan import Design, predict
    from privrank.serve.dashboard import TOP_K_ERROR, Helper, reports_needed, survey_threshold

    needed = reports_needed("pairs", 6, 1.0, 3)
    users = needed // 3
    assert predict(Design(6, users, 3), 1.0).predicted["topk_hamming"] <= TOP_K_ERROR
    assert predict(Design(6, int(users * 0.85), 3), 1.0).predicted["topk_hamming"] > TOP_K_ERROR
    survey = Survey(title="T", question="Q", items=tuple("abcdef"), epsilon=1.0, budget=3.0)
    with Helper() as helper:
        assert survey_threshold(survey, helper) == needed  # the helper process finds the same
    t = time.perf_counter()
    assert survey_threshold(survey) == needed and time.perf_counter() - t < 0.01  # kept
    # more noise, more reports; a larger quota asks fewer respondents for about as many reports
    assert reports_needed("pairs", 6, 0.5, 3) > needed
    assert reports_needed("ranking", 5, 1.0, 1) > reports_needed("ranking", 5, 2.0, 1) > 1


def test_a_ranking_survey_waits_for_its_ballots(tmp_path):
    from privrank.serve.dashboard import reports_needed

    survey = Survey(title="R", question="Order", items=ITEMS[:5], design="ranking", epsilon=2.0)
    needed = reports_needed("ranking", 5, 2.0, 1)
    client, store = make_client(survey, tmp_path / "b.sqlite")
    rng = np.random.default_rng(1)
    with client:
        def send(n):
            for _ in range(n):
                r = client.post("/api/reports", json={"token": respondent(client), "key": key(), "epsilon": 2.0,
                                                      "vector": ballot(survey, np.arange(5), rng)})
                assert r.status_code == 201
        send(needed - 1)
        page = page_of(client)
        assert 'id="ranking"' not in page and "about 1 more report (roughly 1 more browser at one ballot each)" in page
        send(1)
        page = page_of(client)
    store.close()
    assert 'id="ranking"' in page and "95% rank interval" in page and page.count("<circle") == 5
    assert f"Ranking of {needed:,} reports, computed " in page
    # what a Borda share is, and why it can be below 0, beside the table (a pairs survey's BTL score has no such note)
    assert "Borda share: the fraction of the other items an item is ranked above" in page
    assert "can come out below 0 (or one near 1 above 1) by noise alone; its 95% interval" in page


# ------------------------------------------------------------------------------ what the table shows

def test_rank_intervals_and_scores_at_the_precision_of_their_intervals(tmp_path):
    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    client, store = make_client(survey, tmp_path / "r.sqlite")
    fill(store, survey, 400)
    with client:
        page = page_of(client)
    fit = pr.fit_btl(pr.read_comparisons(store.pair_reports()))
    ci = pr.confidence_intervals(fit, bias_corrected=True)
    store.close()
    rows = re.findall(r'<tr><td>(\d+)</td><td class="item">(.*?)</td><td>(.*?)</td><td>\[(.*?), (.*?)\]</td>'
                      r'<td>(.*?)</td></tr>', page)
    assert [html.unescape(r[1]) for r in rows] == fit.ranking
    for _, item, score, lo, hi, ranks in rows:
        k = fit.items.index(html.unescape(item))
        assert re.fullmatch(r"-?\d+\.\d{1,3}", score)  # two significant digits of a half-width ~0.3: 2 decimals
        assert float(score) == pytest.approx(ci.estimate[k], abs=0.006)  # the intervals' (bias-corrected) centre
        assert float(lo) == pytest.approx(ci.lower[k], abs=0.006) and float(hi) == pytest.approx(ci.upper[k], abs=0.006)
        lo_rank, hi_rank = ci.rank_lower[k], ci.rank_upper[k]
        assert ranks == (f"{lo_rank}" if lo_rank == hi_rank else f"{lo_rank}–{hi_rank}")
    assert "95% rank interval" in page and any("–" in r[5] for r in rows)


def test_last_updated_says_when_and_on_how_many_reports(tmp_path):
    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    client, store = make_client(survey, tmp_path / "r.sqlite")
    fill(store, survey, 110)
    with client:
        page = page_of(client)
    store.close()
    found = re.search(r'<p id="updated">Ranking of 330 reports, computed (\d\d:\d\d:\d\d) UTC on (\d{4}-\d\d-\d\d)'
                      r'\.</p>', page)
    assert found
    shown = time.mktime(time.strptime(f"{found.group(2)} {found.group(1)}", "%Y-%m-%d %H:%M:%S")) \
        - time.mktime(time.gmtime(0))
    assert abs(shown - time.time()) < 60


# ------------------------------------------------------------------------------ incremental = full refit

def full_refit(survey, store):
    """The dashboard's ranking as a full refit over every stored report computes it: the fit, its
    bias-corrected intervals and its manipulation margin."""
    reports = pr.read_comparisons(store.pair_reports())
    fit = pr.fit_btl(reports)
    ci = pr.confidence_intervals(fit, bias_corrected=True)
    return fit, ci, pr.manipulation_margin(reports, max_answers=survey.max_answers).top


def test_the_incremental_ranking_is_the_full_refit(store):
    from privrank.serve.dashboard import LiveRanking

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    store.claim(survey.fingerprint())
    live = LiveRanking(survey, store, refresh=0)
    for batch in range(3):
        fill(store, survey, 60 if batch else 100, seed=batch)
        view = live.view(False)
        fit, ci, margin = full_refit(survey, store)
        assert [r[0] for r in view["rows"]] == fit.ranking
        assert np.array_equal([r[1:4] for r in view["rows"]],
                              np.c_[ci.estimate, ci.lower, ci.upper][fit.order])  # float for float
        assert view["margin"] == margin.to_dict() and view["reports"] == store.counts()[1]


def test_the_incremental_ballot_ranking_is_the_full_refit(tmp_path):
    from privrank.aggregation.kemeny_exact import exact_kemeny
    from privrank.inference.manipulation import ballot_margin
    from privrank.mechanisms.pairwise_matrix import matrix_from_upper
    from privrank.serve.dashboard import LiveRanking
    from privrank.serve.survey import NORM_TOLERANCE

    survey = Survey(title="R", question="Order", items=ITEMS[:5], design="ranking", epsilon=2.0)
    rng = np.random.default_rng(3)
    with open_store(tmp_path / "b.sqlite") as store:
        store.claim(survey.fingerprint())
        live = LiveRanking(survey, store, refresh=0)
        for n in (250, 40, 40):
            for _ in range(n):
                store.add_report(store.new_respondent(), key=key(), epsilon=2.0, max_answers=1,
                                 vector=ballot(survey, rng.permutation(5) if rng.random() < 0.5 else np.arange(5), rng))
            view = live.view(False)
            V = store.vectors()
            W = matrix_from_upper(0.5 + V.mean(axis=0), 5)
            assert [r[0] for r in view["rows"]] == [survey.items[k] for k in exact_kemeny(W)]
            assert np.allclose([r[1] for r in view["rows"]], W.sum(axis=1)[exact_kemeny(W)] / 4, rtol=0, atol=1e-12)
            full = ballot_margin(V.sum(axis=0), len(V), survey.items, survey.duchi_scale() * (1 + NORM_TOLERANCE),
                                 "kemeny").to_dict()
            assert {k: view["margin"][k] for k in ("fakes", "at_least", "item", "attack")} == {
                k: full[k] for k in ("fakes", "at_least", "item", "attack")}


def test_a_view_reads_only_the_reports_stored_since_the_last(tmp_path, monkeypatch):
    from privrank.serve.dashboard import LiveRanking

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    with open_store(tmp_path / "r.sqlite") as store:
        store.claim(survey.fingerprint())
        fill(store, survey, 100)
        reads = []
        original = store.pair_reports_after
        monkeypatch.setattr(store, "pair_reports_after", lambda after: reads.append(after) or original(after))
        monkeypatch.setattr(store, "pair_reports", lambda: pytest.fail("a view read every report"))
        live = LiveRanking(survey, store, refresh=0)
        live.view(False)
        fill(store, survey, 5, seed=1)
        view = live.view(False)
        assert reads == [0, 300] and view["reports"] == 315


def test_a_row_committed_after_a_later_one_is_still_counted():
    """PostgreSQL hands out ids when a report is inserted and commits in any order: the tally looks
    again for an id it skipped (for GAP_SECONDS), then gives up on it (a rolled-back insert)."""
    from privrank.serve.dashboard import GAP_SECONDS, PairTally

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    rows = {1: ("ant", "bee", 1), 2: ("bee", "cat", -1), 4: ("cat", "dog", 1), 7: ("dog", "eel", 1)}
    visible = {1, 2, 4}

    class Store:
        def pair_reports_after(self, after):
            return [(k, *rows[k]) for k in sorted(visible) if k > after]
    now = [0.0]
    tally = PairTally(survey, clock=lambda: now[0])
    assert tally.update(Store()) == 3 and set(tally.gaps) == {3}
    visible.add(7)
    assert tally.update(Store()) == 1 and set(tally.gaps) == {3, 5, 6}
    rows[3] = ("eel", "fox", -1)
    visible.add(3)
    now[0] = GAP_SECONDS / 2
    assert tally.update(Store()) == 1 and set(tally.gaps) == {5, 6} and tally.count == 5
    assert tally.update(Store()) == 0 and tally.count == 5  # nothing counted twice
    now[0] = GAP_SECONDS + 1
    assert tally.update(Store()) == 0 and not tally.gaps and tally.tally().n_records == 5


def test_one_refit_per_refresh_however_many_requests(tmp_path, monkeypatch):
    from privrank.serve import dashboard

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    dashboard.survey_threshold(survey)  # known from the start: the views below change with the reports only
    calls = []
    real = dashboard.pairs_view

    def slow_view(*args):
        calls.append(1)
        time.sleep(0.2)  # long enough for every request to arrive while it runs
        return real(*args)
    monkeypatch.setattr(dashboard, "pairs_view", slow_view)
    now = [100.0]
    with open_store(tmp_path / "r.sqlite") as store:
        store.claim(survey.fingerprint())
        fill(store, survey, 100)
        live = dashboard.LiveRanking(survey, store, refresh=5.0, clock=lambda: now[0])
        views = []
        threads = [threading.Thread(target=lambda: views.append(live.view(False))) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(calls) == 1 and len(views) == 8 and all(v is views[0] for v in views)
        fill(store, survey, 10, seed=1)
        now[0] += 4.9
        assert live.view(False)["reports"] == 300 and len(calls) == 1  # a few seconds old, and says so
        now[0] += 0.1
        assert live.view(False)["reports"] == 300  # answered at once; the refit runs in the background
        deadline = time.monotonic() + 30
        while live.view(False)["reports"] != 330:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert len(calls) == 2
        before = live.view(False)["updated"]
        now[0] += 60
        deadline = time.monotonic() + 30
        while live.view(False)["updated"] == before:  # the view is replaced once the store was read again
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert len(calls) == 2  # nothing new: no refit


def test_the_dashboard_answers_while_the_planner_works(tmp_path, monkeypatch):
    """A survey of many items takes the planner minutes: views say so meanwhile, then rank."""
    from privrank.serve import dashboard

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    planned = threading.Event()
    real = dashboard.survey_threshold
    monkeypatch.setattr(dashboard, "_THRESHOLDS", {})  # not found yet in this process
    monkeypatch.setattr(dashboard, "survey_threshold", lambda s, *a: planned.wait(30) and real(s, *a))
    now = [0.0]
    with open_store(tmp_path / "r.sqlite") as store:
        store.claim(survey.fingerprint())
        fill(store, survey, 100)
        live = dashboard.LiveRanking(survey, store, refresh=2.0, clock=lambda: now[0])
        view = live.view(False)
        assert "still working out how many reports are needed" in view["waiting"] and view["reports"] == 300
        planned.set()
        deadline = time.monotonic() + 30
        while "rows" not in live.view(False):  # a refit every refresh, until one finds the threshold known
            assert time.monotonic() < deadline
            now[0] += 2
            time.sleep(0.05)
        assert live.view(False)["needed"] == real(survey) <= 300


SERVER_IMPORTS = """
import itertools, sys, time
from privrank.serve import dashboard, open_store
from privrank.serve.survey import Survey

survey = Survey(title="T", question="Q", items=("ant", "bee", "cat"), epsilon=1.0, budget=3.0)
dashboard._THRESHOLDS[dashboard._threshold_key(survey)] = 90  # as found by an earlier view
with open_store(sys.argv[1]) as store:
    store.claim(survey.fingerprint())
    live = dashboard.LiveRanking(survey, store, refresh=0.01, helper=True)
    views = [live.view(False)]  # waiting for reports
    for r in range(40):
        token = store.new_respondent()
        for k, (a, b) in enumerate(itertools.combinations(survey.items, 2)):
            store.add_report(token, key=f"{r:011d}{k:011d}", epsilon=1.0, max_answers=3, item_a=a, item_b=b,
                             report=1 if (r + k) % 3 else -1)
    deadline = time.monotonic() + 60
    while "rows" not in views[-1] and time.monotonic() < deadline:  # refitted in the background: a ranking
        time.sleep(0.05)
        views.append(live.view(False))
    assert "waiting" in views[0] and "rows" in views[-1], views[-1]
    print(sorted(m for m in ("scipy", "privrank.inference", "privrank.pairwise") if m in sys.modules))
"""


@pytest.mark.slow
def test_with_its_helper_the_server_never_imports_the_fitting_code(tmp_path):
    """Every view, a waiting one too, is made in the helper process, and comes back as built-in types:
    importing the fitting code (scipy) would hold the server's GIL for a second or more while reports
    wait."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", SERVER_IMPORTS, str(tmp_path / "r.sqlite")], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "[]"


# ------------------------------------------------------------------------------ labels

@pytest.mark.parametrize("design", ["pairs", pytest.param("ranking", marks=pytest.mark.slow)])
def test_labels_that_look_missing_are_items_like_any_other(tmp_path, design):
    survey = Survey(title="T", question="Q", items=AWKWARD, epsilon=2.0, design=design,
                    budget=2.0 * (3 if design == "pairs" else 1))
    client, store = make_client(survey, tmp_path / "r.sqlite")
    if design == "pairs":
        fill(store, survey, 600, theta=np.linspace(2, -2, len(AWKWARD)))
    else:
        rng = np.random.default_rng(0)
        for _ in range(3000):
            store.add_report(store.new_respondent(), key=key(), epsilon=2.0, max_answers=1,
                             vector=ballot(survey, np.arange(len(AWKWARD)), rng))
    with client:
        page = page_of(client)
        shown = dashboard_order(client)
    store.close()
    assert sorted(shown) == sorted(AWKWARD) and 'id="waiting"' not in page
    assert '<td class="item">two  spaces</td>' in page


# ------------------------------------------------------------------------------ the plot's axis

def test_the_axis_ticks_are_round_numbers():
    from privrank.serve.dashboard_html import interval_svg, nice_ticks

    for lo, hi in [(-0.4237, 1.913), (0.4712, 0.5391), (-1234.5, 5678.9), (1e-4, 3e-4), (-3, 3), (0.2, 0.2)]:
        ticks = nice_ticks(lo, hi)
        assert 2 <= len(ticks) <= 7 and ticks[0] <= lo and ticks[-1] >= hi
        step = ticks[1] - ticks[0]
        mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
        assert min(abs(mantissa - f) for f in (1, 2, 5)) < 1e-6
        assert np.allclose(np.diff(ticks), step)
    rows = [("a", 0.31, -0.4237, 1.0, 1, 2), ("b", -0.2, -0.9, 0.5, 1, 2)]
    svg = interval_svg(rows, "BTL score")
    labels = re.findall(r'class="tick">(.*?)</text>', svg)
    assert labels == ["-1.0", "-0.5", "0.0", "0.5", "1.0"]
    assert 'viewBox="0 0 360 ' in svg and ' width="' not in svg.split(">")[0]


def plot_rows(svg: str) -> list[tuple[str, float, float, float]]:
    """Each row of the interval plot: its label's text, the label's y, its interval's y and its dot's y."""
    labels = re.findall(r'<text x="[^"]*" y="([^"]*)" dominant-baseline="central" class="label"><title>'
                        r'([^<]*)</title>', svg)
    lines = re.findall(r'<line x1="[^"]*" y1="([^"]*)" x2="[^"]*" y2="([^"]*)" stroke="#4477aa"', svg)
    dots = re.findall(r'<circle cx="[^"]*" cy="([^"]*)"', svg)
    assert len(labels) == len(lines) == len(dots) and all(a == b for a, b in lines)
    return [(name, float(y), float(line[0]), float(dot)) for (y, name), line, dot in zip(labels, lines, dots)]


def test_each_plot_label_is_centred_on_its_own_dot():
    """A label on its row's line (centred on it: ``dominant-baseline="central"``), never half a row off
    between two dots; the browser check is in test_dashboard_browser.py."""
    from privrank.serve.dashboard_html import interval_svg

    rows = [(f"item {k}", 1.0 - 0.3 * k, 0.7 - 0.3 * k, 1.3 - 0.3 * k, k + 1, k + 1) for k in range(5)]
    shown = plot_rows(interval_svg(rows, "BTL score"))
    assert [name for name, *_ in shown] == [f"item {k}" for k in range(5)]
    assert all(label == line == dot for _, label, line, dot in shown), shown
    steps = np.diff([dot for *_, dot in shown])
    assert np.all(steps == steps[0]) and steps[0] >= 20  # rows evenly spaced, a line of text apart


def test_a_closed_survey_does_not_promise_refits_as_reports_arrive(tmp_path):
    """Open, the dashboard says how often it refits when reports arrive; closed (no report arrives any
    more, the ranking is final) it does not; large counts are written with thousands separators."""
    from datetime import datetime, timezone

    from privrank.serve.dashboard import LiveRanking, survey_threshold
    from privrank.serve.dashboard_html import dashboard_page

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    survey_threshold(survey)
    with open_store(tmp_path / "r.sqlite") as store:
        fill(store, survey, 1200)
        live = LiveRanking(survey, store, refresh=2.0)
        page = dashboard_page(survey, store, live=live)
        closed = dashboard_page(survey, store, live=live, closed=datetime(2020, 1, 1, tzinfo=timezone.utc))
    assert "(refitted every 2 seconds when reports arrive)" in page and "Reports: 3,600." in page
    assert re.search(r"Registrations per day \(UTC\): \d{4}-\d\d-\d\d: 1,200\.", page)
    assert "Closed on 2020-01-01 00:00:00 UTC" in closed and "refitted" not in closed


def test_long_plot_labels_alike_but_for_their_end_stay_apart():
    """Labels too long for the plot's column keep their end after the ellipsis, so that items alike up to
    a suffix (LLMFAO's "Code Llama Instruct (13B)", "(34B)" and "(7B)") are told apart; a short one is whole."""
    from privrank.serve.dashboard_html import PLOT_LABEL_CHARS, interval_svg

    names = ["Code Llama Instruct (13B)", "Code Llama Instruct (34B)", "Code Llama Instruct (7B)", "Claude v1"]
    rows = [(name, 1.0 - k, 0.5 - k, 1.5 - k, k + 1, k + 1) for k, name in enumerate(names)]
    drawn = re.findall(r'class="label"><title>[^<]*</title>\d+\. ([^<]*)</text>', interval_svg(rows, "BTL score"))
    assert drawn[:3] == ["Code Llama Instr…(13B)", "Code Llama Instr…(34B)", "Code Llama Instr… (7B)"]
    assert all(len(label) == PLOT_LABEL_CHARS for label in drawn[:3]) and drawn[3] == "Claude v1"


# ------------------------------------------------------------------------------ corrections and export

def test_a_corrected_question_is_listed_with_its_day(tmp_path):
    """A reader of the ranking learns that the question was reworded (reports before it answered the
    earlier wording); an uncorrected survey lists nothing."""
    from dataclasses import replace

    from privrank.serve.dashboard_html import dashboard_page

    survey = Survey(title="T", question="Wich is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    with open_store(tmp_path / "r.sqlite") as store:
        store.claim(survey.fingerprint(), texts=survey.texts())
        assert 'id="corrections"' not in dashboard_page(survey, store)
        fixed = replace(survey, question="Which is better?")
        store.claim(fixed.fingerprint(), texts=fixed.texts())
        page = dashboard_page(fixed, store)
    assert 'id="corrections"' in page
    assert re.search(r"<li>\d{4}-\d\d-\d\d: the question now reads \u201cWhich is better\?\u201d</li>", page)
    assert "Wich" not in page


def test_a_ranking_survey_links_its_export(tmp_path):
    client, store = make_client(Survey(title="T", question="Q", items=ITEMS[:4], design="ranking", epsilon=1.0),
                                tmp_path / "r.sqlite")
    with client:
        page = page_of(client)
    store.close()
    assert f'<a href="export.csv?token={ADMIN}">Export the randomized ballots' in page


# ------------------------------------------------------------------------------ a fit of its own reports

def test_the_ranking_shown_is_of_every_report_once_a_refresh_period_passed(tmp_path):
    """Reports arrive (300, in batches) while the dashboard is viewed: every page names the reports
    its ranking is of, and the reports stored since; once they stop, the server refits within a
    refresh period (0.5 s, plus 5 s for a refit on a loaded machine) with no request asking for it,
    so the next page's ranking is of every stored report."""
    from privrank.serve.app import admin_token_hash, create_app
    from privrank.serve.dashboard import survey_threshold

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    survey_threshold(survey)
    store = open_store(tmp_path / "r.sqlite")
    fill(store, survey, 200)
    client = starlette_testclient.TestClient(create_app(survey, store, admin_token_hash(ADMIN),
                                                        dashboard_refresh=0.5))
    writer = threading.Thread(target=lambda: [fill(store, survey, 20, seed=k) for k in range(1, 6)])
    shown = re.compile(r"Reports: ([\d,]+)\..*Ranking of ([\d,]+) reports, computed \d\d:\d\d:\d\d UTC on "
                       r"\d{4}-\d\d-\d\d \(refitted every 0\.5 seconds when reports arrive\)\.( The ([\d,]+) reports? "
                       r"stored since (?:are|is) in the next refit\.)?</p>", re.S)
    with client:
        writer.start()
        while writer.is_alive():
            stored, fitted, _, later = shown.search(page_of(client)).groups()
            assert int(stored) - int(fitted.replace(",", "")) == int((later or "0").replace(",", ""))
            time.sleep(0.2)
        writer.join()
        time.sleep(0.5 + 5)
        stored, fitted, since, _ = shown.search(page_of(client)).groups()
    store.close()
    assert int(stored) == 900 and fitted == "900" and since is None


# ------------------------------------------------------------------------------ invitations and sample size

def test_the_invitations_left_are_shown_beside_the_respondents_needed(tmp_path):
    from privrank.serve.dashboard import reports_needed

    survey = Survey(title="T", question="Q", items=ITEMS, epsilon=1.0, budget=3.0)
    needed = reports_needed("pairs", 6, 1.0, 3)
    more = math.ceil((needed - 30) / 3)
    for issued, warned in ((more + 20, False), (more + 9, True)):
        client, store = make_client(survey, tmp_path / f"{issued}.sqlite")
        codes = store.add_invitations(issued)
        for code in codes[:10]:
            token = store.new_respondent(invitation=code)
            for a, b in list(itertools.combinations(ITEMS, 2))[:3]:
                store.add_report(token, key=key(), epsilon=1.0, max_answers=3, item_a=a, item_b=b, report=1)
        with client:
            page = page_of(client)
        store.close()
        left = issued - 10
        text = (f"Invitations left: {left:,} of {issued:,}; the ranking needs about {more:,} more invited "
                "respondents (at 3 reports each).")
        assert text in html.unescape(page)
        assert ("Too few invitations left:" in page) == warned


# ------------------------------------------------------------------------------ under a path prefix

@pytest.mark.parametrize("design", ["pairs", "ranking"])
def test_every_link_and_asset_of_the_dashboard_works_under_a_path_prefix(tmp_path, design):
    """Served at /survey/ (as behind a proxy that strips the prefix): every href and src of the
    dashboard, resolved against the dashboard's own URL, is found there."""
    from urllib.parse import urljoin

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from privrank.serve.app import admin_token_hash, create_app

    survey = Survey(title="T", question="Q", items=ITEMS[:4], design=design, epsilon=1.0,
                    budget=3.0 if design == "pairs" else None)
    store = open_store(tmp_path / "r.sqlite")
    outer = Starlette(routes=[Mount("/survey", app=create_app(survey, store, admin_token_hash(ADMIN),
                                                              dashboard_refresh=0))])
    with starlette_testclient.TestClient(outer) as client:
        page_url = f"http://testserver/survey/dashboard?token={ADMIN}"
        page = client.get(page_url)
        links = [html.unescape(x) for x in re.findall(r'\b(?:href|src)="([^"]*)"', page.text)]
        assert page.status_code == 200 and len(links) == 3  # the stylesheet, the survey's preview and the export
        assert urljoin(page_url, links[1]) == "http://testserver/survey/#preview"  # the page, without the token
        for link in links:
            assert not link.startswith("/") and "://" not in link
            target = urljoin(page_url, link)
            assert target.startswith("http://testserver/survey/")
            assert client.get(target).status_code == 200, target
    store.close()


def test_start_up_says_how_many_respondents_the_ranking_needs(tmp_path, served, cli, monkeypatch):  # noqa: F811
    """``privrank serve`` prints the planner's sample size once the planner is done, while it serves
    (kept for the dashboard, which then never waits for the planner), and warns when fewer invitations
    are left than respondents needed. Here serving waits for the planner's thread, which it does not do."""
    import threading

    import uvicorn

    from privrank.serve.dashboard import reports_needed

    def serve_until_planned(server, sockets):
        served.append(server.config)
        for thread in threading.enumerate():
            if thread.name == "privrank-sample-size":
                thread.join(timeout=120)
    monkeypatch.setattr(uvicorn.Server, "run", serve_until_planned)

    (tmp_path / "fruit.toml").write_text(FRUIT)
    needed = reports_needed("pairs", 4, 1.0, 6)
    code, _, err = cli("serve", tmp_path / "fruit.toml", "--db", tmp_path / "open.sqlite", "--port", "0", "--new-db")
    assert code == 0 and (f"  sample size: the ranking needs about {needed:,} reports (about {math.ceil(needed / 6):,} "
                          "browsers at 6 answers each) to tell the top items apart (privacy planner); 0 stored") in err
    assert "warning" not in err
    few = math.ceil(needed / 6) - 1
    code, _, err = cli("serve", tmp_path / "fruit.toml", "--db", tmp_path / "invited.sqlite", "--port", "0", "--new-db",
                       "--invitations", few)
    assert code == 0 and f"about {math.ceil(needed / 6):,} invited respondents at 6 answers each" in err
    assert (f"  warning: {few:,} invitation(s) left, fewer than the about {math.ceil(needed / 6):,} more invited "
            "respondents the ranking needs: issue more with --invitations N") in err
    assert len(served) == 2
