"""One respondent on two devices, and who has answered: an invitation opened again registers as the same
respondent with the same budget (SQLite and PostgreSQL), ``POST /api/progress`` says what the server
holds of a respondent, and ``privrank serve --invitation-status`` reads the team's invitations file.
The browser side (two Chromium profiles) is ``test_resume_browser.py``."""
import base64
import csv
import hashlib
import hmac
import io
import secrets

import pytest
from serve_helpers import execute, key

from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.invitations import invitation_token
from privrank.serve.store import (AnswersExhausted, InvitationRefused, ReportConflict, Store, credential_hash,
                                  is_urlsafe_token, utc_day)
from privrank.serve.survey import Survey

starlette_testclient = pytest.importorskip("starlette.testclient")

ITEMS = ("apple", "banana", "cherry", "date")
SURVEY = Survey(title="Fruit", question="Which do you prefer?", items=ITEMS, epsilon=1.0, budget=3.0)
SURVEY_FILE = ('title = "Fruit"\nquestion = "Which do you prefer?"\nitems = ["apple", "banana", "cherry", "date"]\n'
               'epsilon = 1.0\nbudget = 3.0\n')


def report(store, token, a, b, max_answers=3):
    return store.add_report(token, key=key(), item_a=a, item_b=b, report=1, epsilon=1.0, max_answers=max_answers)


def fresh_token_on_resume(monkeypatch):
    """The broken variant: a used invitation registers a new respondent with a fresh token (a second budget)."""
    register = Store.register

    def broken(self, invitation=None, per_minute=None):
        token, new = register(self, invitation, per_minute)
        if new:
            return token, new
        fresh = secrets.token_urlsafe(24)
        self._write(lambda cur: cur.execute(self._sql("new"), (credential_hash(fresh), utc_day())))
        return fresh, True
    monkeypatch.setattr(Store, "register", broken)


# ------------------------------------------------------------------------------------------ the store

def second_device(store):
    """An invitation used on one device, then opened on a second: the same token, no new respondent, and
    one budget for both (the third report of three is the last, whichever device sends it)."""
    code, other = store.add_invitations(2)
    token, new = store.register(code)
    assert new and token == invitation_token(code)
    assert report(store, token, "apple", "banana").remaining == 2
    assert report(store, token, "apple", "cherry").remaining == 1
    assert store.register(code) == (token, False)  # the second device
    assert store.counts() == (1, 2) and store.invitations() == (2, 1)
    with pytest.raises(ReportConflict):  # a pair the first device reported is not reported again
        report(store, token, "banana", "apple")
    assert report(store, token, "cherry", "date").remaining == 0
    with pytest.raises(AnswersExhausted):  # no second budget
        report(store, token, "banana", "date")
    assert sorted(store.progress(token)) == [("apple", "banana"), ("apple", "cherry"), ("cherry", "date")]
    assert store.register(other)[0] != token


def test_an_invitation_opened_on_a_second_device_is_the_same_respondent(store):
    second_device(store)


def test_a_second_device_given_a_fresh_token_is_caught(store, monkeypatch):
    """The control: a store that gives the second device a token of its own (a second budget) fails the test."""
    fresh_token_on_resume(monkeypatch)
    with pytest.raises(AssertionError):
        second_device(store)


def test_racing_devices_of_one_invitation_get_one_token(store):
    from test_store_rules import race

    code, = store.add_invitations(1)
    results = race(8, lambda n: store.register(code))
    assert {token for token, _ in results} == {invitation_token(code)} and sum(new for _, new in results) == 1
    assert store.counts() == (1, 0)


def test_the_token_is_the_codes_hmac_and_the_store_holds_no_link(store, target):
    code, = store.add_invitations(1)
    token = store.new_respondent(code)
    # base64url(HMAC-SHA256(key=code, msg="privrank respondent token"))[:32]: the shape of token_urlsafe(24)
    expected = base64.urlsafe_b64encode(hmac.new(code.encode(), b"privrank respondent token", "sha256").digest())
    assert token == expected.decode()[:32] and is_urlsafe_token(token, 24)
    import sqlite3
    from pathlib import Path

    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            dump = "\n".join(conn.iterdump())
    else:
        import psycopg
        with psycopg.connect(target, autocommit=True) as conn:
            dump = str(conn.execute("SELECT * FROM invitations").fetchall() +
                       conn.execute("SELECT * FROM respondents").fetchall())
    assert code not in dump and token not in dump  # only the two hashes, which nothing joins without the code
    assert hashlib.sha256(code.encode()).hexdigest() in dump and hashlib.sha256(token.encode()).hexdigest() in dump


def test_an_invitation_used_by_an_earlier_privrank_cannot_resume(store, target):
    """Before tokens were derived from codes, a used invitation's token was random: it is refused on a second
    device, as every used invitation was."""
    code, = store.add_invitations(1)
    execute(target, f"UPDATE invitations SET used = 1 WHERE code_hash = '{credential_hash(code)}'",
            f"INSERT INTO respondents (token_hash, created) VALUES ('{credential_hash(secrets.token_urlsafe(24))}', "
            "'2026-01-01')")
    with pytest.raises(InvitationRefused, match="unknown or already used .*earlier privrank"):
        store.register(code)
    assert store.counts() == (1, 0)


def test_progress_of_pairs_ballots_and_unknown_tokens(store):
    token = store.new_respondent()
    assert store.progress(token) == [] and store.progress(secrets.token_urlsafe(24)) is None
    report(store, token, "date", "apple")
    store.add_report(token, key=key(), vector=[1.0, -1.0], epsilon=1.0, max_answers=3)
    assert sorted(store.progress(token), key=str) == [("date", "apple"), (None, None)]


# ------------------------------------------------------------------------------------------ the server

def test_post_progress_says_what_the_server_holds(tmp_path):
    with open_store(tmp_path / "r.sqlite") as store:
        code, = store.add_invitations(1)
        app = create_app(SURVEY, store, admin_token_hash("admin-token-for-the-tests-0123456789"))
        with starlette_testclient.TestClient(app) as client:
            first = client.post("/api/respondents", json={"invitation": code})
            assert first.status_code == 201
            token = first.json()["token"]
            assert client.post("/api/progress", json={"token": token}).json() == {
                "answered": 0, "remaining": 3, "pairs": []}
            sent = {"token": token, "key": key(), "item_a": "cherry", "item_b": "apple", "report": -1, "epsilon": 1.0}
            assert client.post("/api/reports", json=sent).status_code == 201
            again = client.post("/api/respondents", json={"invitation": code})  # the second device
            assert again.status_code == 200 and again.json() == {"token": token}
            reply = client.post("/api/progress", json={"token": token})
            assert reply.status_code == 200 and reply.headers["cache-control"] == "no-store"
            assert reply.json() == {"answered": 1, "remaining": 2, "pairs": [["cherry", "apple"]]}
            unknown = client.post("/api/progress", json={"token": secrets.token_urlsafe(24)})
            assert unknown.status_code == 404 and "unknown respondent token" in unknown.json()["error"]
            for bad in ({}, {"token": "short"}, {"token": token, "key": key()}, [token]):
                r = client.post("/api/progress", json=bad)
                assert r.status_code == 400 and token not in r.text
            assert client.get("/api/progress").status_code == 405
        assert store.counts() == (1, 1)


def test_post_progress_of_a_ranking_ballot(tmp_path):
    ranking = Survey(title="Fruit", question="Rank them", items=ITEMS[:3], design="ranking", epsilon=1.0)
    with open_store(tmp_path / "r.sqlite") as store:
        app = create_app(ranking, store, admin_token_hash("admin-token-for-the-tests-0123456789"))
        with starlette_testclient.TestClient(app) as client:
            token = client.post("/api/respondents").json()["token"]
            assert client.post("/api/progress", json={"token": token}).json() == {
                "answered": 0, "remaining": 1, "ballot": False}
            store.add_report(token, key=key(), vector=[0.0] * 3, epsilon=1.0, max_answers=1)
            assert client.post("/api/progress", json={"token": token}).json() == {
                "answered": 1, "remaining": 0, "ballot": True}


# ------------------------------------------------------------------------------------------ the status

@pytest.fixture
def invited(tmp_path, cli, monkeypatch):
    """A survey file, its database with 5 invitations (issued by privrank serve, without serving) and their file."""
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: None)
    monkeypatch.delenv("PRIVRANK_ADMIN_TOKEN", raising=False)
    (tmp_path / "fruit.toml").write_text(SURVEY_FILE)
    code, _, err = cli("serve", tmp_path / "fruit.toml", "--new-db", "--port", "0", "--invitations", "5",
                       "--url", "https://survey.example.org")
    assert code == 0, err
    links = tmp_path / "fruit-invitations.csv"
    return tmp_path / "fruit.toml", tmp_path / "fruit.sqlite", links, [r["invitation"] for r in csv.DictReader(
        links.open())]


def status_rows(out: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(out)))


def test_invitation_status_says_who_has_answered(invited, cli):
    survey, db, links, codes = invited
    with open_store(db) as store:
        started = store.new_respondent(codes[1])
        report(store, started, "apple", "banana")
        finished = store.new_respondent(codes[2])
        for a, b in (("apple", "banana"), ("apple", "cherry"), ("apple", "date")):
            report(store, finished, a, b)
        store.new_respondent(codes[3])  # opened, nothing answered yet
    code, out, err = cli("serve", survey, "--invitation-status")  # the default file: beside the database
    assert code == 0, err
    rows = status_rows(out)
    assert list(rows[0]) == ["invitation", "link", "status", "reports"]
    assert [(r["invitation"], r["status"], r["reports"]) for r in rows] == [
        (codes[0], "unused", "0"), (codes[1], "started", "1"), (codes[2], "finished", "3"),
        (codes[3], "started", "0"), (codes[4], "unused", "0")]
    assert f"{links}: 2 unused, 2 started, 1 finished" in err and "keep this output as private" in err
    # a file of the team's own: links only, a column of its own, a code of another database, a row without a link
    own = links.with_name("mailing.csv")
    own.write_text("email,link\nann@example.org,https://survey.example.org/#invite=" + codes[2] +
                   "\nbob@example.org,https://survey.example.org/#invite=" + secrets.token_urlsafe(16) +
                   "\ncy@example.org,\n", encoding="utf-8")
    code, out, err = cli("serve", survey, "--invitation-status", own)
    assert code == 0, err
    assert [(r["email"], r["status"], r["reports"]) for r in status_rows(out)] == [
        ("ann@example.org", "finished", "3"), ("bob@example.org", "unknown", ""), ("cy@example.org", "unknown", "")]


def test_invitation_status_of_an_invitation_used_by_an_earlier_privrank(invited, cli):
    survey, db, links, codes = invited
    execute(db, f"UPDATE invitations SET used = 1 WHERE code_hash = '{credential_hash(codes[0])}'")
    code, out, err = cli("serve", survey, "--invitation-status", links)
    assert code == 0, err
    assert [(r["status"], r["reports"]) for r in status_rows(out)][0] == ("started", "")  # its reports are not known


def test_invitation_status_refusals(invited, cli, tmp_path):
    survey, db, links, codes = invited
    for argv, message in ((["--invitation-status", tmp_path / "none.csv"], "no such file"),
                          (["--invitation-status", survey], "no column invitation or link"),
                          (["--invitation-status", "--close"], "give it without --close"),
                          (["--invitation-status", "--export", "-"], "give it without --export"),
                          (["--invitation-status", "--url", "https://x.org"], "give it without --url")):
        code, out, err = cli("serve", survey, *argv)
        assert code == 2 and message in err and out == "", (argv, err)
    code, out, err = cli("serve", survey, "--db", tmp_path / "other.sqlite", "--invitation-status")
    assert code == 2 and "no such database" in err
