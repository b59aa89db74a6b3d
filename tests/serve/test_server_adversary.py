"""The survey server against an adversary: a stable survey id across retitling, idempotent reports,
invitations, a bounded registration rate, hostile requests that never fail honest ones, JSON
errors for every request, and the served files' hashes."""
import base64
import csv
import hashlib
import json
import re
import secrets
import stat
import threading
import time
from collections import Counter

import pytest
from serve_helpers import key

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.integrity import static_dir, static_hashes
from privrank.serve.ratelimit import RegistrationsLimited, check_rate, draw
from privrank.serve.survey import Survey, load_survey

starlette_testclient = pytest.importorskip("starlette.testclient")
httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "admin-token-for-the-tests-0123456789"
ITEMS = ("alpha", "beta", "gamma", "delta")
SURVEY = Survey(title="First title", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)


def client_of(survey, store, **options):
    options.setdefault("registrations_per_minute", 10 ** 6)
    app = create_app(survey, store, admin_token_hash(ADMIN), **options)
    return starlette_testclient.TestClient(app, raise_server_exceptions=False)


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "reports.sqlite") as s:
        yield s


def body(token, a="alpha", b="beta", value=1, k=None):
    return {"token": token, "key": k or key(), "item_a": a, "item_b": b, "report": value, "epsilon": 1.0}


# ------------------------------------------------------------------------------------ the survey id

def test_a_retitled_survey_keeps_its_id_and_its_respondents_budgets(tmp_path):
    """The page keys what it keeps by the served id: retitling the survey (same database) must not change
    it, and the server keeps counting the respondent's answers against the same budget."""
    path = tmp_path / "r.sqlite"
    with open_store(path) as store, client_of(SURVEY, store) as client:
        first = client.get("/api/survey").json()
        token = client.post("/api/respondents", json={}).json()["token"]
        assert client.post("/api/reports", json=body(token)).json() == {"remaining": 2}
    retitled = Survey(title="A new title", question=SURVEY.question, items=ITEMS, epsilon=1.0, budget=3.0)
    with open_store(path) as store, client_of(retitled, store) as client:
        doc = client.get("/api/survey").json()
        assert doc["title"] == "A new title" and doc["id"] == first["id"] == SURVEY.fingerprint()
        assert re.fullmatch(r"[0-9a-f]{64}", doc["id"])
        assert client.post("/api/reports", json=body(token, "gamma", "delta")).json() == {"remaining": 1}
    reordered = Survey(title="First title", question=SURVEY.question, items=ITEMS[::-1], epsilon=1.0, budget=3.0)
    assert reordered.fingerprint() != SURVEY.fingerprint()  # what a report means is part of the id


# ------------------------------------------------------------------------------------ once per pair

def test_five_sends_of_one_pair_store_one_report(store):
    with client_of(SURVEY, store) as client:
        token = client.post("/api/respondents").json()["token"]
        sent = body(token)
        replies = [client.post("/api/reports", json=sent) for _ in range(3)]  # resends after lost replies
        assert [r.status_code for r in replies] == [201, 200, 200]
        assert replies[1].json() == {"remaining": 2, "duplicate": True}
        for other in (body(token, value=-1), body(token, "beta", "alpha")):  # the same pair, a new draw
            r = client.post("/api/reports", json=other)
            assert r.status_code == 409 and r.json()["reason"] == "pair-answered"
            assert set(r.json()) == {"error", "reason"}
        r = client.post("/api/reports", json={**sent, "report": -1})
        assert r.status_code == 409 and r.json()["reason"] == "key-reused"
    assert store.counts() == (1, 1)


# ------------------------------------------------------------------------------------- invitations

def test_registration_by_invitation_only(store):
    codes = store.add_invitations(2)
    with client_of(SURVEY, store) as client:
        doc = client.get("/api/survey").json()
        assert doc["invitations"] is True and doc["respondent_unit"] == "invited respondent"
        refusals = [client.post("/api/respondents", json={}), client.post("/api/respondents"),
                    client.post("/api/respondents", json={"invitation": "A" * 22}),
                    client.post("/api/respondents", json={"invitation": "short"})]
        r = client.post("/api/respondents", json={"invitation": codes[0]})
        assert r.status_code == 201 and re.fullmatch(r"[A-Za-z0-9_-]{32}", r.json()["token"])
        again = client.post("/api/respondents", json={"invitation": codes[0]})  # used: the same respondent, resumed
        assert again.status_code == 200 and again.json() == r.json()
        assert {x.status_code for x in refusals} == {403}
        assert len({x.json()["error"] for x in refusals}) == 1  # every refusal reads the same
        assert client.post("/api/respondents", json={"invitation": codes[1], "name": "x"}).status_code == 400
        page = client.get("/dashboard", params={"token": ADMIN}).text
        assert "per invited respondent" in page and "per browser" not in page
        assert "Invitations: 2 issued, 1 used." in page and "(invited respondents)" in page


# ------------------------------------------------------------------------------------ the rate limit

def test_token_minting_is_rate_limited(store):
    with client_of(SURVEY, store, registrations_per_minute=5) as client:
        replies = [client.post("/api/respondents") for _ in range(7)]
        assert [r.status_code for r in replies] == [201] * 5 + [429] * 2
        late = replies[-1]
        assert late.json()["reason"] == "rate-limited" and 1 <= int(late.headers["retry-after"]) <= 12
        page = client.get("/dashboard", params={"token": ADMIN}).text
        assert re.search(r"Registrations per day \(UTC\): \d{4}-\d\d-\d\d: 5\. Since start-up 0 minutes ago: 5\.", page)
    assert store.counts() == (5, 0)


def test_bad_invitation_codes_do_not_keep_invited_people_out(store):
    codes = store.add_invitations(1)
    with client_of(SURVEY, store, registrations_per_minute=2) as client:
        bad = [client.post("/api/respondents", json={"invitation": secrets.token_urlsafe(16)}) for _ in range(10)]
        assert {r.status_code for r in bad} == {403}
        assert client.post("/api/respondents", json={"invitation": codes[0]}).status_code == 201


def test_the_token_bucket_refills_at_its_rate():
    bucket, took = (None, None), []  # one every 10 s, bursts of 6; a new bucket is full

    def take(now):
        nonlocal bucket
        try:
            bucket = draw(*bucket, 6, now)
            took.append(0.0)
        except RegistrationsLimited as exc:
            took.append(exc.retry_after)
    for _ in range(6):
        take(1000.0)
    take(1000.0)
    assert took == [0.0] * 6 + [pytest.approx(10.0)]
    took.clear()
    for _ in range(3):
        take(1025.0)
    assert took == [0.0, 0.0, pytest.approx(5.0)]
    took.clear()
    take(900.0)  # a clock that went back refills nothing (half a token is left)
    assert took == [pytest.approx(5.0)]
    for bad in (0, -1, float("nan"), float("inf"), True, "6"):
        with pytest.raises(InputError, match="positive"):
            check_rate(bad)


# ------------------------------------------------------------------------------ hostile requests

def test_every_error_is_json_without_a_traceback(store, monkeypatch):
    with client_of(SURVEY, store) as client:
        for r in (client.get("/no/such/page"), client.post("/api/survey"), client.get("/static/none.js")):
            assert r.status_code in (404, 405) and set(r.json()) == {"error"}
        monkeypatch.setattr(store, "counts", lambda: 1 / 0)
        r = client.get("/dashboard", params={"token": ADMIN})
        assert r.status_code == 500 and set(r.json()) == {"error"}
        assert "Traceback" not in r.text and "ZeroDivision" not in r.text
        assert r.headers["content-security-policy"].startswith("default-src 'self'")


@pytest.fixture
def live(store):
    """The app served by uvicorn on a free loopback port in this process (threads hit it for real)."""
    uvicorn = pytest.importorskip("uvicorn")
    from serve_helpers import free_port

    port = free_port()
    app = create_app(SURVEY, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=20)


HOSTILE = [  # raw bodies; each must get a 4xx with a JSON reason and never fail an honest report
    '{"token": "\\ud800", "key": "%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": 1}',
    '{"token": "%s", "key": "%%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": 1%s}'
    % ("\\ud800" * 32, "0" * 400),
    '{"token": "%s\\u0000", "key": "%%s", "item_a": "alpha", "item_b": "beta", "report": 1, "epsilon": 1}' % ("A" * 31),
    '{"token": "' + "A" * 32 + '", "key": "%s", "item_a": "\\ud800", "item_b": "beta", "report": 1, "epsilon": 1}',
]


def test_hostile_reports_never_fail_honest_ones(store, live):
    """160 honest reports race with 160 hostile ones (lone surrogates, a NUL, a 400-digit epsilon): every
    honest report is stored with 201, every hostile one gets 400 with a JSON reason. A lone surrogate in
    the token used to roll back the SQLite group commit: about half the honest reports got HTTP 500."""
    tokens = [store.new_respondent() for _ in range(160)]
    statuses, errors = Counter(), []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def worker(w):
        start.wait(timeout=30)
        with httpx.Client(base_url=live, timeout=30) as client:
            for n in range(w, 320, 8):
                if n < 160:
                    r = client.post("/api/reports", json=body(tokens[n]))
                    kind = "honest"
                else:
                    raw = HOSTILE[n % len(HOSTILE)] % key()
                    r = client.post("/api/reports", content=raw.encode(), headers={"content-type": "application/json"})
                    kind = "hostile"
                with lock:
                    statuses[kind, r.status_code] += 1
                    if r.status_code != 201 and not isinstance(r.json().get("error"), str):
                        errors.append(r.text)
    pool = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in pool) and errors == []
    assert statuses == Counter({("honest", 201): 160, ("hostile", 400): 160})
    assert store.counts() == (160, 160)


def test_survey_files_with_unstorable_text_or_huge_numbers_are_refused(tmp_path):
    path = tmp_path / "s.json"
    for doc, message in (({"items": ["a", "\ud800"]}, "every item label"), ({"items": ["a", "b\x00"]}, "every item"),
                         ({"question": "Q\ud800"}, "question"), ({"epsilon": 10 ** 400}, "finite")):
        path.write_text(json.dumps({"title": "T", "question": "Q", "items": ["a", "b"], "budget": 2, **doc}))
        with pytest.raises(InputError, match=message):
            load_survey(path)


# -------------------------------------------------------------------------------------- integrity

def test_static_hashes_are_what_openssl_prints():
    hashes = static_hashes()
    assert set(hashes) == {f.name for f in static_dir().iterdir() if f.is_file()}
    for name, value in hashes.items():  # openssl dgst -sha384 -binary | base64
        digest = base64.b64encode(hashlib.sha384((static_dir() / name).read_bytes()).digest()).decode()
        assert value == f"sha384-{digest}"


# ------------------------------------------------------------------------------------------ the CLI

@pytest.fixture
def served(monkeypatch):
    uvicorn = pytest.importorskip("uvicorn")
    calls = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: calls.append(server.config.app))  # never serve
    return calls


def test_serve_issues_invitations_and_stays_invitation_only(cli, tmp_path, served):
    db = tmp_path / "r.sqlite"
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", db, "--invitations", "3",
                       "--url", "https://survey.example.org/")
    assert code == 0, err
    links = tmp_path / "r-invitations.csv"
    assert str(links) in err and "by invitation only (3 issued, 0 used)" in err and "per invited respondent" in err
    assert stat.S_IMODE(links.stat().st_mode) == 0o600
    rows = list(csv.DictReader(links.open()))
    assert len(rows) == 3 and all(r["link"] == f"https://survey.example.org/#invite={r['invitation']}" for r in rows)
    assert all(r["invitation"] not in db.read_bytes().decode("latin-1") for r in rows)  # only hashes are stored
    before = links.read_bytes()
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", db, "--invitations", "2")  # the default file exists
    assert code == 2 and "never overwritten" in err and links.read_bytes() == before
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", db)  # a restart without invitations
    assert code == 0 and "by invitation only (3 issued, 0 used)" in err
    more = tmp_path / "more.csv"
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", db, "--invitations", "2", "--invitations-file", more)
    assert code == 0 and "by invitation only (5 issued" in err
    # the links name the served address (--port 0: a free port the server chose)
    assert all(re.fullmatch(r"http://127\.0\.0\.1:\d+/#invite=[\w-]+", r["link"]) for r in csv.DictReader(more.open()))


def test_serve_refuses_invitations_on_an_open_survey_with_respondents(cli, tmp_path, served):
    db = tmp_path / "r.sqlite"
    with open_store(db) as s:
        s.new_respondent()
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", db, "--invitations", "3")
    assert code == 2 and "without an invitation" in err and "Traceback" not in err
    assert not (tmp_path / "r-invitations.csv").exists() and not served
    for argv, message in ((["--invitations", "0"], "from 1"), (["--invitations-file", "x.csv"], "goes with --invitations"),
                          (["--invitations", "1", "--url", "ftp://x"], "--url"),
                          (["--registrations-per-minute", "0"], "positive")):
        code, _, err = cli("serve", "--demo", "--port", "0", "--db", tmp_path / "other.sqlite", *argv)
        assert code == 2 and message in err, err


def test_serve_refuses_a_memory_database_and_a_short_admin_token_before_creating_anything(cli, tmp_path, served,
                                                                                          monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv, message in (([], "outlive the server"), (["--admin-token", "short"], "at least 16 characters")):
        db = ":memory:" if not argv else tmp_path / "r.sqlite"
        code, _, err = cli("serve", "--demo", "--port", "0", "--db", db, *argv)
        assert code == 2 and message in err and "Traceback" not in err, err
    assert not served and list(tmp_path.iterdir()) == []


def test_serve_prints_the_public_links_of_url_and_the_address_it_serves(cli, tmp_path, served):
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", tmp_path / "r.sqlite", "--url",
                       "https://example.org/survey/")
    assert code == 0 and len(served) == 1
    assert "respondents: https://example.org/survey/\n" in err and "dashboard:   https://example.org/survey/dashboard?" in err
    assert "served at:   http://127.0.0.1:" in err


def test_serve_says_per_browser_and_prints_the_hashes_of_its_files(cli, tmp_path, served):
    code, _, err = cli("serve", "--demo", "--port", "0", "--db", tmp_path / "r.sqlite",
                       "--registrations-per-minute", "12")
    assert code == 0 and len(served) == 1
    assert "at most 10 answer(s) per browser" in err and "a respondent is a browser" in err
    assert "at most 12 new respondents per minute" in err and "per respondent" not in err
    for name, value in static_hashes().items():
        assert re.search(rf"{re.escape(name)}\s+{re.escape(value)}", err)
