"""The manipulation margin on the dashboard, attacked through the HTTP API: the attack it found, sent
by that many fake respondents, changes the dashboard's top item; one fewer does not; and the proven
end is stated beside it."""
import html
import re

import numpy as np
import pytest
from test_server import ADMIN, ballot, dashboard_order, key, make_client, respondent

import privrank as pr
from privrank.data.io import read_comparisons
from privrank.inference.manipulation import ballot_margin
from privrank.serve.survey import NORM_TOLERANCE, Survey

ITEMS = ("ant", "bee", "cat", "dog", "eel", "fox")
MARGIN = re.compile(r'<p id="margin"><strong>Manipulation margin:</strong> (exactly )?([\d,]+) fake '
                    r'(?:respondent|browser)s? can change the top item; fewer (?:than ([\d,]+) )?cannot \(proven\)')


def margin(client) -> tuple[int, int]:
    """The dashboard's margin: (fakes found, proven at least)."""
    page = html.unescape(client.get("/dashboard", params={"token": ADMIN}).text)
    found = MARGIN.search(page)
    assert found, page
    fakes = int(found.group(2).replace(",", ""))
    return fakes, fakes if found.group(1) else int(found.group(3).replace(",", ""))


def exported_margin(client, max_answers: int, path):
    """The margin of the survey's export, as the library computes it."""
    path.write_bytes(client.get("/export.csv", params={"token": ADMIN}).content)
    return pr.manipulation_margin(read_comparisons(path), max_answers=max_answers).top


def pairs_survey(tmp_path, name: str):
    """A pairs survey (quota 3) with the same honest reports every time: 100 respondents, each
    answering 3 pairs by randomized response on the true order of ITEMS (enough for the dashboard
    to rank)."""
    survey = Survey(title="Animals", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    client, store = make_client(survey, tmp_path / name)
    rng = np.random.default_rng(5)
    pairs = [(a, b) for a in range(6) for b in range(a + 1, 6)]
    keep = np.exp(1.0) / (1 + np.exp(1.0))
    for _ in range(100):
        token = respondent(client)
        for k in rng.choice(len(pairs), 3, replace=False):
            a, b = pairs[k]
            value = 1 if rng.random() < keep else -1  # item a (earlier in ITEMS) is truly preferred
            r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": ITEMS[a],
                                                  "item_b": ITEMS[b], "report": value, "epsilon": 1.0})
            assert r.status_code == 201
    return client, store


def fake_pairs(client, n: int, reports) -> None:
    """n fake respondents, each sending ``reports`` (winner, loser) unrandomized."""
    for _ in range(n):
        token = respondent(client)
        for winner, loser in reports:
            r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": winner,
                                                  "item_b": loser, "report": 1, "epsilon": 1.0})
            assert r.status_code == 201


@pytest.mark.slow
@pytest.mark.parametrize("fakes_less", [0, 1], ids=["margin", "one fewer"])
def test_the_pairs_margin_is_reached_by_fake_respondents(tmp_path, fakes_less):
    client, store = pairs_survey(tmp_path, "reports.sqlite")
    with client:
        released = dashboard_order(client)
        n, at_least = margin(client)
        expected = exported_margin(client, 3, tmp_path / "export.csv")
        assert (n, at_least) == (expected.fakes, expected.at_least) and 1 <= at_least <= n
        assert n >= 2  # else "one fewer" would be no attack at all
        fake_pairs(client, n - fakes_less, expected.reports)
        top = dashboard_order(client)[0]
    store.close()
    assert (top != released[0]) == (fakes_less == 0)


@pytest.mark.slow
def test_fakes_below_the_proven_end_do_not_change_the_top(tmp_path):
    """at_least - 1 fakes of the attack found leave the top item, as the bound says."""
    client, store = pairs_survey(tmp_path, "reports.sqlite")
    with client:
        released = dashboard_order(client)
        _, at_least = margin(client)
        fake_pairs(client, at_least - 1, exported_margin(client, 3, tmp_path / "export.csv").reports)
        assert dashboard_order(client)[0] == released[0]
    store.close()


@pytest.mark.parametrize("fakes_less", [0, 1], ids=["margin", "one fewer"])
def test_the_ranking_margin_is_reached_by_fake_ballots(tmp_path, fakes_less):
    survey = Survey(title="Rank", question="Order them", items=ITEMS[:5], design="ranking", epsilon=2.0)
    client, store = make_client(survey, tmp_path / "ballots.sqlite")
    rng = np.random.default_rng(11)
    total = np.zeros(10)
    with client:
        for _ in range(220):  # enough ballots for the dashboard to rank
            vector = ballot(survey, np.arange(5), rng)
            total += vector
            r = client.post("/api/reports", json={"token": respondent(client), "key": key(), "epsilon": 2.0,
                                                  "vector": vector})
            assert r.status_code == 201
        released = dashboard_order(client)
        n, at_least = margin(client)
        expected = ballot_margin(total, 220, survey.items, survey.duchi_scale() * (1 + NORM_TOLERANCE), "kemeny")
        assert (n, at_least) == (expected.fakes, expected.at_least) and 1 <= at_least <= n
        assert n >= 2
        for _ in range(n - fakes_less):
            r = client.post("/api/reports", json={"token": respondent(client), "key": key(), "epsilon": 2.0,
                                                  "vector": list(expected.ballot)})
            assert r.status_code == 201
        top = dashboard_order(client)[0]
    store.close()
    assert (top != released[0]) == (fakes_less == 0)
