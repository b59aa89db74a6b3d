"""The manipulation margin on the dashboard, attacked through the HTTP API: that many fake
respondents, each sending its whole quota for one item, change the dashboard's top item; one
fewer does not."""
import html
import re

import numpy as np
import pytest
from test_server import ADMIN, ballot, dashboard_order, key, make_client, respondent

from privrank.serve.survey import Survey

ITEMS = ("ant", "bee", "cat", "dog", "eel", "fox")
MARGIN = re.compile(r'<p id="margin"><strong>Manipulation margin:</strong> (more than )?([\d,]+) fake '
                    r'(?:respondent|browser)s? promoting (.+?) (?:changes|change|do not change) the top item')


def margin(client) -> tuple[int, str]:
    page = client.get("/dashboard", params={"token": ADMIN}).text
    found = MARGIN.search(page)
    assert found and not found.group(1), page
    return int(found.group(2).replace(",", "")), html.unescape(found.group(3))


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


def fake_pairs(client, n: int, promoted: str, released: list) -> None:
    """n fake respondents, each reporting ``promoted`` over the top item, then over the next items of
    the released ranking, unrandomized, up to the quota of 3."""
    opponents = [released[0]] + [x for x in released if x not in (released[0], promoted)][:2]
    for _ in range(n):
        token = respondent(client)
        for other in opponents:
            r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": promoted,
                                                  "item_b": other, "report": 1, "epsilon": 1.0})
            assert r.status_code == 201


@pytest.mark.parametrize("fakes_less", [0, 1], ids=["margin", "one fewer"])
def test_the_pairs_margin_is_exact_against_fake_respondents(tmp_path, fakes_less):
    client, store = pairs_survey(tmp_path, "reports.sqlite")
    with client:
        released = dashboard_order(client)
        n, promoted = margin(client)
        assert n >= 2  # else "one fewer" would be no attack at all
        fake_pairs(client, n - fakes_less, promoted, released)
        top = dashboard_order(client)[0]
    store.close()
    assert (top != released[0]) == (fakes_less == 0)


def test_a_margin_that_ignores_the_quota_is_caught(tmp_path):
    """Broken variant: fakes sending one report each (the quota ignored) at the stated margin do not
    change the top, so a margin computed that way would be wrong."""
    client, store = pairs_survey(tmp_path, "reports.sqlite")
    with client:
        released = dashboard_order(client)
        n, promoted = margin(client)
        for _ in range(n):
            token = respondent(client)
            r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": promoted,
                                                  "item_b": released[0], "report": 1, "epsilon": 1.0})
            assert r.status_code == 201
        assert dashboard_order(client)[0] == released[0]
    store.close()


@pytest.mark.parametrize("fakes_less", [0, 1], ids=["margin", "one fewer"])
def test_the_ranking_margin_is_exact_against_fake_ballots(tmp_path, fakes_less):
    survey = Survey(title="Rank", question="Order them", items=ITEMS[:5], design="ranking", epsilon=2.0)
    client, store = make_client(survey, tmp_path / "ballots.sqlite")
    rng = np.random.default_rng(11)
    scale = survey.duchi_scale()
    with client:
        for _ in range(220):  # enough ballots for the dashboard to rank
            r = client.post("/api/reports", json={"token": respondent(client), "key": key(), "epsilon": 2.0,
                                                  "vector": ballot(survey, np.arange(5), rng)})
            assert r.status_code == 201
        released = dashboard_order(client)
        n, promoted = margin(client)
        assert n >= 2
        c, t = ITEMS.index(promoted), ITEMS.index(released[0])
        rows, cols = np.triu_indices(5, 1)
        # the ballot most in favour of c over t: the gradient of the Borda-share gap, at the accepted norm
        d = (rows == c) * 1.0 - (cols == c) - (rows == t) + (cols == t)
        fake = (scale * d / np.linalg.norm(d)).tolist()
        for _ in range(n - fakes_less):
            r = client.post("/api/reports", json={"token": respondent(client), "key": key(), "epsilon": 2.0,
                                                  "vector": fake})
            assert r.status_code == 201
        top = dashboard_order(client)[0]
    store.close()
    assert (top != released[0]) == (fakes_less == 0)
