"""The survey server's contract (privrank.serve): what it serves, what it refuses, what the dashboard
and the export show, and the statistics end to end through the HTTP API."""
import csv
import html
import itertools
import json
import math
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from serve_helpers import key

import privrank as pr
from privrank.data.datasets import load_llmfao
from privrank.errors import InputError
from privrank.mechanisms.local_vectors import duchi_l2, duchi_l2_scale
from privrank.pairwise.release import TIE_NOTE, local_guarantee
from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app, static_dir
from privrank.serve.dashboard import reports_needed, unit_note
from privrank.serve.survey import Survey, demo_survey, load_survey

starlette_testclient = pytest.importorskip("starlette.testclient")
# starlette >= 1.8 prefers httpx2 for its TestClient and warns when it falls back to httpx
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "admin-token-for-the-tests-0123456789"
SECRET = "Secret Label Xyz"
ITEMS = ("alpha", "beta", "gamma, with a comma", "délta", "<img src=x onerror=alert(1)>")


#: the tests register respondents far faster than a deployment's default allows
UNLIMITED = 10 ** 6


def make_client(survey, path):
    store = open_store(path)
    app = create_app(survey, store, admin_token_hash(ADMIN), registrations_per_minute=UNLIMITED, dashboard_refresh=0)
    return starlette_testclient.TestClient(app), store


@pytest.fixture
def pairs(tmp_path):
    survey = Survey(title="Fruit <survey>", question="Which do you prefer?", items=ITEMS, epsilon=1.0, budget=3.0)
    client, store = make_client(survey, tmp_path / "reports.sqlite")
    with client:
        yield client, survey
    store.close()


@pytest.fixture
def ranking(tmp_path):
    survey = Survey(title="Rank them", question="Put them in order", items=tuple("ABCDE"), design="ranking",
                    epsilon=2.0)
    client, store = make_client(survey, tmp_path / "ballots.sqlite")
    with client:
        yield client, survey
    store.close()


def respondent(client) -> str:
    r = client.post("/api/respondents")
    assert r.status_code == 201
    return r.json()["token"]


def report(client, token, a, b, value, eps=1.0):
    return client.post("/api/reports", json={"token": token, "key": key(), "item_a": a, "item_b": b,
                                             "report": value, "epsilon": eps})


def dashboard_order(client) -> list:
    r = client.get("/dashboard", params={"token": ADMIN})
    assert r.status_code == 200
    return [html.unescape(x) for x in re.findall(r'<td class="item">(.*?)</td>', r.text)]


def ballot(survey, order, rng) -> list:
    """A respondent's randomized ballot, as the browser sends it: the Duchi et al. report of the
    centred pair vector (pairs i < j in row-major order)."""
    m = len(survey.items)
    pos = np.argsort(order)
    iu, ju = np.triu_indices(m, 1)
    v = (pos[iu] < pos[ju]) - 0.5
    return duchi_l2(v[None, :], radius=survey.radius, epsilon=survey.epsilon, rng=rng)[0].tolist()


# ----------------------------------------------------------------------------------------- survey

def test_the_survey_document_is_the_contract(pairs):
    client, survey = pairs
    doc = client.get("/api/survey").json()
    assert doc == {"title": "Fruit <survey>", "question": "Which do you prefer?", "items": list(ITEMS),
                   "design": "pairs", "epsilon": 1.0, "budget": 3.0, "max_answers": 3,
                   "mechanism": "randomized-response", "protection": survey.protection(),
                   "id": survey.fingerprint(), "invitations": False, "respondent_unit": "browser",
                   "description": "", "consent": "", "contact": "", "closing": "", "closes": None, "redirect": None,
                   "closed": False}
    assert "at most 2.72 times as likely" in doc["protection"] and "at most 3 answers" in doc["protection"]
    assert "e^" not in doc["protection"]  # a respondent reads a number, not a formula


def test_a_ranking_survey_states_the_norm_of_its_ballots(ranking):
    client, survey = ranking
    doc = client.get("/api/survey").json()
    assert doc["design"] == "ranking" and doc["mechanism"] == "duchi-l2"
    assert doc["max_answers"] == 1 and doc["budget"] == doc["epsilon"] == 2.0
    assert doc["duchi_scale"] == duchi_l2_scale(10, math.sqrt(10) / 2, 2.0)
    assert "one ranking" in doc["protection"]


def test_load_survey_reads_toml_and_json(tmp_path):
    toml = tmp_path / "s.toml"
    toml.write_text('title = "T"\nquestion = "Q?"\nitems = ["a", "b", "c"]\nepsilon = 0.5\nbudget = 2.2\n')
    s = load_survey(toml)
    assert (s.items, s.design, s.mechanism, s.max_answers) == (("a", "b", "c"), "pairs", "randomized-response", 4)
    js = tmp_path / "s.json"
    js.write_text(json.dumps({"title": "T", "question": "Q?", "items": ["a", "b"], "design": "ranking",
                              "epsilon": 1}))
    assert load_survey(js).budget == 1.0 and load_survey(js).max_answers == 1


@pytest.mark.parametrize("text, message", [
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 1\nbudget = 5\ncolour = 1\n', "unknown key"),
    ('title = "T"\nquestion = "Q"\nepsilon = 1\nbudget = 5\n', "needs the key 'items'"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "a"]\nepsilon = 1\nbudget = 5\n', "unique"),
    ('title = "T"\nquestion = "Q"\nitems = ["a"]\nepsilon = 1\nbudget = 5\n', "between 2"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", ""]\nepsilon = 1\nbudget = 5\n', "non-empty"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 20\nbudget = 50\n', "must lie in"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 1\nbudget = 0.5\n', "at least its epsilon"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 1\n', "needs a budget"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 1\nbudget = inf\n', "finite"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\ndesign = "ranking"\nepsilon = 1\nbudget = 3\n',
     "one ballot"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\nepsilon = 1\nbudget = 3\nmechanism = "laplace"\n',
     "uses the mechanism"),
    ('title = "T"\nquestion = "Q"\nitems = ["a", "b"]\ndesign = "poll"\nepsilon = 1\nbudget = 3\n', "design"),
    ('title = "T"\nquestion = \n', "not valid TOML"),
])
def test_bad_survey_files_are_refused(tmp_path, text, message):
    path = tmp_path / "survey.toml"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        load_survey(path)


def test_other_survey_files_are_refused(tmp_path):
    with pytest.raises(InputError, match="no such survey"):
        load_survey(tmp_path / "none.toml")
    (tmp_path / "s.yaml").write_text("title: T\n")
    with pytest.raises(InputError, match=".toml or .json"):
        load_survey(tmp_path / "s.yaml")
    (tmp_path / "s.json").write_text("[1, 2]")
    with pytest.raises(InputError, match="table of keys"):
        load_survey(tmp_path / "s.json")


def test_the_demo_survey_asks_about_the_llmfao_models():
    s = demo_survey()
    assert s.items == load_llmfao().items and len(s.items) == 59
    assert (s.design, s.epsilon, s.budget, s.max_answers) == ("pairs", 1.0, 10.0, 10)


# ------------------------------------------------------------------------------------ the pages

def test_every_response_carries_the_security_headers(pairs):
    client, _ = pairs
    responses = [client.get("/api/survey"), client.post("/api/respondents"), client.get("/dashboard"),
                 client.post("/api/reports", content=b"{}", headers={"content-type": "application/json"}),
                 client.get("/no/such/page"), client.get("/")]
    for r in responses:
        assert r.headers["content-security-policy"].startswith("default-src 'self'")
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["cache-control"] == "no-store"


def test_the_respondent_page_and_its_files_are_served(pairs):
    client, _ = pairs
    page = static_dir() / "index.html"
    r = client.get("/")
    if not page.is_file():
        assert r.status_code == 404
        return
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert r.content == page.read_bytes()
    assert "<script>" not in r.text  # the page's scripts are external modules
    for f in static_dir().iterdir():
        s = client.get(f"/static/{f.name}")
        assert s.status_code == 200 and s.content == f.read_bytes()
        assert "no-store" not in s.headers.get("cache-control", "")
    assert client.get("/static/../app.py").status_code == 404


# ------------------------------------------------------------------------------------ reports

def test_a_respondent_answers_up_to_the_budget(pairs):
    client, _ = pairs
    token = respondent(client)
    assert [report(client, token, "alpha", b, v).json() for b, v in ((ITEMS[1], 1), (ITEMS[2], -1), (ITEMS[3], 1))] \
        == [{"remaining": 2}, {"remaining": 1}, {"remaining": 0}]
    r = report(client, token, "alpha", ITEMS[4], 1)
    assert r.status_code == 409 and "budget" in r.json()["error"] and r.json()["reason"] == "exhausted"
    r = report(client, secrets.token_urlsafe(24), "alpha", "beta", 1)
    assert r.status_code == 404 and "error" in r.json()
    assert report(client, respondent(client), "beta", ITEMS[2], -1).status_code == 201


def _body(who, **change):
    body = {"token": who, "key": key(), "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": 1.0}
    body.update(change)
    return {k: v for k, v in body.items() if v is not ...}


REFUSED_JSON = [  # each a report body (or a function of the token) that must be refused with 400
    lambda t: _body(t, answer=1), lambda t: _body(t, truth=SECRET), lambda t: _body(t, choice=SECRET),
    lambda t: {**_body(t), SECRET: 1}, lambda t: _body(t, report=...), lambda t: _body(t, token=...),
    lambda t: _body(t, item_a=SECRET), lambda t: _body(t, item_b=SECRET), lambda t: _body(t, item_b="alpha"),
    lambda t: _body(t, item_a=["alpha"]), lambda t: _body(t, report=0), lambda t: _body(t, report=2),
    lambda t: _body(t, report=True), lambda t: _body(t, report="1"), lambda t: _body(t, report=0.5),
    lambda t: _body(t, epsilon=2.0), lambda t: _body(t, epsilon="1"), lambda t: _body(t, epsilon=True),
    lambda t: _body(t, epsilon=...), lambda t: _body(t, token=5), lambda t: _body(t, token=""),
    lambda t: _body(t, token=SECRET * 20), lambda t: _body(t, vector=[1.0]), lambda t: [_body(t)],
    lambda t: SECRET, lambda t: 1, lambda t: _body(t, key=...), lambda t: _body(t, key=t), lambda t: _body(t, key=5),
    lambda t: _body(t, key="=" * 22), lambda t: _body(t, token=t[:-1]), lambda t: _body(t, token=t + "A"),
    lambda t: _body(t, token="\ud800" + t[1:]), lambda t: _body(t, token=t[:-1] + "\x00"),
    lambda t: _body(t, token=t[:-1] + "\n"), lambda t: _body(t, token=t[:-1] + "é"),
    lambda t: _body(t, epsilon=10 ** 400), lambda t: _body(t, epsilon=-10 ** 400), lambda t: _body(t, item_a="\ud800"),
]
KEY = "a" * 22
REFUSED_RAW = [  # raw bodies: non-finite numbers, repeated keys, broken JSON, too large
    lambda t: '{"token": "%s", "key": "%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": NaN}'
              % (t, KEY),
    lambda t: '{"token": "%s", "key": "%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": Infinity}'
              % (t, KEY),
    lambda t: '{"token": "%s", "key": "%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": 1e400}'
              % (t, KEY),
    lambda t: '{"token": "%s", "key": "%s", "item_a": "alpha", "item_a": "%s", "item_b": "beta", "report": 1, '
              '"epsilon": 1}' % (t, KEY, SECRET),
    lambda t: '{"token": "%s", "key": "%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": %s}'
              % (t, KEY, "9" * 400),
    lambda t: '{"token": "%s", "item_a": "%s' % (t, SECRET),
    lambda t: "[" * 50_000,
    lambda t: json.dumps(_body(t)) + " " * 70_000,
    lambda t: json.dumps(_body(t, item_a=SECRET * 5000)),
]


@pytest.mark.parametrize("make", REFUSED_JSON + REFUSED_RAW,
                         ids=[f"json{k}" for k in range(len(REFUSED_JSON))] + [f"raw{k}" for k in range(len(REFUSED_RAW))])
def test_anything_but_a_randomized_report_is_refused(pairs, make):
    client, _ = pairs
    token = respondent(client)
    raw = make(token) if make in REFUSED_RAW else json.dumps(make(token))
    r = client.post("/api/reports", content=raw.encode(), headers={"content-type": "application/json"})
    assert r.status_code == 400
    assert set(r.json()) == {"error"}
    assert SECRET not in r.text and "alpha" not in r.text  # never echoes the body
    assert client.post("/api/reports", json=_body(token)).json() == {"remaining": 2}  # nothing was stored


def test_a_report_must_be_sent_as_json(pairs):
    client, _ = pairs
    token = respondent(client)
    r = client.post("/api/reports", content=json.dumps(_body(token)), headers={"content-type": "text/plain"})
    assert r.status_code == 400 and "application/json" in r.json()["error"]
    r = client.post("/api/reports", content=b"x" * 10, headers={"content-type": "application/json",
                                                                "content-length": str(10 ** 9)})
    assert r.status_code == 400


def test_a_ranking_survey_takes_one_ballot_of_the_right_norm(ranking):
    client, survey = ranking
    rng = np.random.default_rng(1)
    token = respondent(client)
    good = ballot(survey, np.arange(5), rng)
    for bad in (good[:-1], good + [0.0], [x * 1.001 for x in good], [float(x) for x in np.zeros(10)],
                good[:-1] + [True]):
        r = client.post("/api/reports", json={"token": token, "key": key(), "vector": bad, "epsilon": 2.0})
        assert r.status_code == 400 and "vector" in r.json()["error"]
    r = client.post("/api/reports", json={"token": token, "key": key(), "vector": good, "epsilon": 2.0,
                                          "order": [0, 1]})
    assert r.status_code == 400
    r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": "A", "item_b": "B", "report": 1,
                                          "epsilon": 2.0})
    assert r.status_code == 400
    sent = {"token": token, "key": key(), "vector": good, "epsilon": 2.0}
    assert client.post("/api/reports", json=sent).json() == {"remaining": 0}
    again = client.post("/api/reports", json=sent)  # a resend after a lost reply
    assert again.status_code == 200 and again.json() == {"remaining": 0, "duplicate": True}
    r = client.post("/api/reports", json={**sent, "key": key()})
    assert r.status_code == 409 and r.json()["reason"] == "exhausted"


# ---------------------------------------------------------------------------- dashboard and export

def test_the_dashboard_and_the_export_need_the_admin_token(pairs):
    client, _ = pairs
    for path in ("/dashboard", "/export.csv"):
        assert client.get(path).status_code == 403
        assert client.get(path, params={"token": "wrong"}).status_code == 403
        assert client.get(path, params={"token": ADMIN[:-1]}).status_code == 403
        assert client.get(path, headers={"authorization": "Basic " + ADMIN}).status_code == 403
    assert client.get("/dashboard", params={"token": ADMIN}).status_code == 200
    assert client.get("/dashboard", headers={"authorization": "Bearer " + ADMIN}).status_code == 200
    with pytest.raises(InputError, match="hash"):
        create_app(Survey(title="T", question="Q", items=("a", "b"), budget=1.0), None, ADMIN)


@pytest.mark.slow
def test_the_dashboard_waits_for_enough_data(pairs):
    client, _ = pairs
    needed = reports_needed("pairs", len(ITEMS), 1.0, 3)
    page = client.get("/dashboard", params={"token": ADMIN}).text
    assert 'id="waiting"' in page and f"about {needed:,} more reports" in page and 'id="ranking"' not in page
    assert "Respondents: 0 (browsers). Reports: 0." in page
    for k in range(needed):  # enough reports, but on two pairs of items never compared with each other
        assert report(client, respondent(client), *(ITEMS[:2] if k % 2 else ITEMS[2:4]), 1).status_code == 201
    page = client.get("/dashboard", params={"token": ADMIN}).text
    assert "never compared with each other" in page and 'id="ranking"' not in page
    report(client, respondent(client), "beta", ITEMS[2], -1)
    page = client.get("/dashboard", params={"token": ADMIN}).text
    assert 'id="ranking"' in page and "Not yet compared" in page
    assert "<img src=x" not in page and html.escape(ITEMS[4]) in page  # labels are escaped
    assert "Fruit &lt;survey&gt;" in page


def test_the_dashboard_states_the_guarantee_and_draws_the_intervals(pairs):
    client, survey = pairs
    rng = np.random.default_rng(2)
    for _ in range(140):
        token = respondent(client)
        pairs_asked = list(itertools.combinations(range(len(ITEMS)), 2))
        for p in rng.choice(len(pairs_asked), 3, replace=False):
            a, b = pairs_asked[p]
            assert report(client, token, ITEMS[a], ITEMS[b], int(rng.choice([1, -1]))).status_code == 201
    page = client.get("/dashboard", params={"token": ADMIN}).text
    g = replace(local_guarantee(1.0, 3.0, "randomized response (in the respondent's browser)",
                                note=f"{TIE_NOTE} {unit_note(False)}"), user="browser")
    assert html.escape(g.describe()) in page and html.escape(g.plain()) in page
    assert "3-DP per browser" in page and "3-DP per user" not in page and "two browsers" in page
    assert "for all the answers of one browser" in page and "answers of one person" not in page
    assert page.count("<svg") == 1 and page.count("<circle") == len(ITEMS)
    assert "<script" not in page and "style=" not in page  # lives under default-src 'self'
    assert "95% intervals" in page and "Respondents: 140 (browsers). Reports: 420." in page


def test_the_dashboard_ranks_ranking_ballots(ranking):
    client, survey = ranking
    rng = np.random.default_rng(4)
    truth = np.array([3, 0, 4, 1, 2])
    for _ in range(300):
        r = client.post("/api/reports", json={"token": respondent(client), "key": key(),
                                              "vector": ballot(survey, truth, rng), "epsilon": 2.0})
        assert r.status_code == 201
    assert dashboard_order(client) == [survey.items[k] for k in truth]
    page = client.get("/dashboard", params={"token": ADMIN}).text
    assert "exact Kemeny" in page and "one ranking" in page and page.count("<circle") == 5


def test_export_is_what_privrank_rank_reads(pairs, tmp_path):
    client, _ = pairs
    tokens = [respondent(client) for _ in range(4)]
    for k, token in enumerate(tokens):
        assert report(client, token, ITEMS[k], ITEMS[k + 1], 1).status_code == 201
        assert report(client, token, ITEMS[(k + 2) % 5], ITEMS[k], -1).status_code == 201
    assert client.get("/export.csv", headers={"authorization": "Bearer " + ADMIN}).status_code == 200
    r = client.get("/export.csv", params={"token": ADMIN})
    assert r.headers["content-type"].startswith("text/csv")
    assert r.content.decode("utf-8-sig").splitlines()[0] == "user,item_a,item_b,outcome,epsilon,max_answers"
    assert {line.rsplit(",", 1)[1] for line in r.text.splitlines()[1:]} == {"3"}  # the survey's declared quota
    assert not any(t in r.text for t in tokens)  # pseudonyms, never the tokens (credentials)
    rows = [row[:3] for row in csv.reader(r.text.splitlines()[1:])]
    assert rows == sorted(rows)  # by pseudonym and pair: the order of arrival is not exported
    path = tmp_path / "export.csv"
    path.write_bytes(r.content)
    comps = pr.read_comparisons(path)
    assert comps.is_randomized and comps.n_records == 8 and len(comps.users) == 4
    assert set(comps.items) == set(ITEMS)


# ------------------------------------------------------------------------- statistics end to end

M_ITEMS, RESPONDENTS, PER_RESPONDENT = 8, 400, 10
THETA = np.linspace(3.0, -3.0, M_ITEMS)  # true BTL scores, best first: adjacent gap 6/7


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """400 respondents answer 10 random pairs each from a BTL model, randomize each answer as the browser
    does (randomized response at epsilon 1) and POST the reports; returns (client, survey). The store
    lives in memory-backed /dev/shm where there is one: this test is about the statistics, and a
    synchronous=FULL commit on disk costs milliseconds per report."""
    shm = Path("/dev/shm")
    where = Path(tempfile.mkdtemp(dir=shm)) if shm.is_dir() and os.access(shm, os.W_OK) else \
        tmp_path_factory.mktemp("e2e")
    labels = tuple(f"item{k}" for k in range(M_ITEMS))
    survey = Survey(title="BTL", question="Which is better?", items=labels, epsilon=1.0, budget=10.0)
    client, store = make_client(survey, where / "reports.sqlite")
    rng = np.random.default_rng(2024)
    try:
        with client:
            pairs_asked = list(itertools.combinations(range(M_ITEMS), 2))
            for _ in range(RESPONDENTS):
                token = respondent(client)
                for p in rng.choice(len(pairs_asked), PER_RESPONDENT, replace=False):  # a pair once per respondent
                    i, j = pairs_asked[p] if rng.random() < 0.5 else pairs_asked[p][::-1]
                    truth = 1 if rng.random() < 1 / (1 + math.exp(THETA[j] - THETA[i])) else -1
                    r = report(client, token, labels[i], labels[j], pr.randomize_answer(truth, 1.0, rng=rng))
                    assert r.status_code == 201
            yield client, survey
    finally:
        store.close()
        shutil.rmtree(where, ignore_errors=True)


@pytest.mark.slow
def test_the_private_ranking_recovers_the_truth(simulated):
    """Tolerance. The expected Fisher information of this design (4,000 reports, each pair about 143
    times; a debiased report at epsilon 1 has variance coth^2(1/2)/4 - (p - 1/2)^2 ~ 1.1 against
    p(1-p) for a true answer) gives each difference theta_i - theta_j a standard error, and summing
    Phi(-(theta_i - theta_j)/se) over the 28 pairs gives 0.034 expected discordant pairs. That
    asymptotic figure is optimistic at this size: 300 simulated studies (fit_btl on the same design,
    no server) averaged 0.087 discordant pairs (275 with none, 24 with one, 1 with two). With
    discordant pairs about Poisson(0.09), more than 2 of 28 has probability ~1e-4: the tolerance."""
    client, survey = simulated
    order = [survey.items.index(x) for x in dashboard_order(client)]
    assert sorted(order) == list(range(M_ITEMS))
    assert pr.kendall_tau_distance(order, np.arange(M_ITEMS)) <= 2
    assert "Respondents: 400 (browsers). Reports: 4,000." in client.get("/dashboard", params={"token": ADMIN}).text


@pytest.mark.slow
def test_privrank_rank_on_the_export_gives_the_dashboard_ranking(simulated, tmp_path, capsys):
    client, _ = simulated
    path = tmp_path / "export.csv"
    path.write_bytes(client.get("/export.csv", headers={"authorization": f"Bearer {ADMIN}"}).content)
    assert pr.read_comparisons(path).is_randomized
    from privrank.cli import main

    capsys.readouterr()
    assert main(["rank", str(path), "--format", "json"]) == 0
    ranked = [row["item"] for row in json.loads(capsys.readouterr().out)["ranking"]]
    assert ranked == dashboard_order(client)


# ---------------------------------------------------------------------------------------- the CLI

def test_serve_refuses_a_public_host_and_missing_arguments(cli, tmp_path):
    code, _, err = cli("serve", "--demo", "--host", "0.0.0.0", "--db", tmp_path / "r.sqlite")
    assert code == 2 and "TLS" in err and "--public" in err
    code, _, err = cli("serve", "--db", tmp_path / "r.sqlite")
    assert code == 2 and "--demo" in err
    assert not (tmp_path / "r.sqlite").exists()


def test_serve_says_how_to_install_the_server(cli, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)
    code, _, err = cli("serve", "--demo", "--db", tmp_path / "r.sqlite")
    assert code == 2 and "pip install 'privrank[serve]'" in err


def test_privrank_help_does_not_import_the_server():
    code = ("import sys; from privrank.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('starlette', 'uvicorn', 'privrank.serve') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True).stdout
    assert out.strip().endswith("[]") and "serve" in out


def test_the_documented_survey_file_loads():
    from privrank.serve.survey import load_survey

    survey = load_survey(Path(__file__).resolve().parents[2] / "docs" / "survey.toml")
    assert survey.design == "pairs" and survey.max_answers == 10 and len(survey.items) == 7
