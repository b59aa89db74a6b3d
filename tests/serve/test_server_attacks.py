"""The survey server against attacks that once got through: a ballot whose norm overflows a float's
square, bad invitation codes in flight keeping invited people out of the registration limit, an
admin token replaced by a second server still opening the first, and clients that hang up mid-upload
logged as internal errors."""
import asyncio
import logging
import threading

import pytest
from serve_helpers import key

from privrank.serve import open_store
from privrank.serve.admins import OWNER, AdminTokens
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.survey import Survey

starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "admin-token-for-the-tests-0123456789"
ITEMS = ("alpha", "beta", "gamma", "delta")


@pytest.fixture
def store(tmp_path):
    with open_store(tmp_path / "reports.sqlite") as s:
        yield s


def client_of(survey, store, registrations_per_minute=10 ** 6):
    app = create_app(survey, store, admin_token_hash(ADMIN), registrations_per_minute=registrations_per_minute)
    return starlette_testclient.TestClient(app, raise_server_exceptions=False)


def test_a_ballot_whose_squares_overflow_gets_400_not_500(store):
    """Entries of 1.3e154 are finite, and so are their squares, but the sum of two squares is not: the
    norm used to be summed with math.fsum, which raised OverflowError (HTTP 500)."""
    survey = Survey(title="T", question="Rank them", items=ITEMS, design="ranking", epsilon=1.0)
    with client_of(survey, store) as client:
        token = client.post("/api/respondents").json()["token"]
        for vector in ([1.3e154] * 6, [1e308] * 6, [1e-300] * 6):
            r = client.post("/api/reports", json={"token": token, "key": key(), "vector": vector, "epsilon": 1.0})
            assert r.status_code == 400 and "norm" in r.json()["error"], r.text
        honest = [survey.duchi_scale() / 6 ** 0.5] * 6
        r = client.post("/api/reports", json={"token": token, "key": key(), "vector": honest, "epsilon": 1.0})
        assert r.status_code == 201
    assert store.counts() == (1, 1)


def test_bad_invitation_codes_in_flight_do_not_keep_invited_people_out(store, monkeypatch):
    """Two registrations with made-up codes are held inside the store while an invited person registers,
    with a limit of two a minute: the codes are an invitation-only survey's limit, so the invited person
    gets 201. The bucket used to be taken before the store refused a code, so bad codes in flight (a
    flood of them, sent in parallel) emptied it and invited people got 429."""
    codes = store.add_invitations(1)
    held, release = threading.Semaphore(0), threading.Event()
    register = store.register

    def slow_for_bad_codes(invitation=None, per_minute=None):
        if invitation not in codes:
            held.release()
            assert release.wait(timeout=30)
        return register(invitation, per_minute)
    monkeypatch.setattr(store, "register", slow_for_bad_codes)
    survey = Survey(title="T", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    with client_of(survey, store, registrations_per_minute=2) as client:
        bad = []
        flood = [threading.Thread(target=lambda: bad.append(client.post("/api/respondents",
                                                                         json={"invitation": key()})))
                 for _ in range(2)]
        for t in flood:
            t.start()
        try:
            for _ in flood:
                assert held.acquire(timeout=30), "the bad codes did not reach the store"
            r = client.post("/api/respondents", json={"invitation": codes[0]})
        finally:
            release.set()
            for t in flood:
                t.join(timeout=30)
        assert r.status_code == 201, r.text
        assert [x.status_code for x in bad] == [403, 403]
    assert store.counts() == (1, 0)


def test_an_open_survey_is_still_rate_limited(store):
    """The limit is lifted for invitation-only surveys only: on an open one, a made-up code is ignored and
    counts against the rate like any registration."""
    survey = Survey(title="T", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    with client_of(survey, store, registrations_per_minute=2) as client:
        replies = [client.post("/api/respondents", json={"invitation": key()}) for _ in range(3)]
        assert [r.status_code for r in replies] == [201, 201, 429]


def test_a_replaced_admin_token_opens_nothing_in_a_server_still_running(store, monkeypatch):
    """A second server started on the same database with a new admin token replaces the stored hash; the
    first server, still running, used to keep accepting the old token (the one being retired, perhaps
    because it leaked) for its dashboard and its export. The new token opens them at once, without a restart."""
    monkeypatch.setattr(AdminTokens, "REFRESH", 0.0)  # the admins read at every request
    survey = Survey(title="T", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    store.add_admin(OWNER, admin_token_hash(ADMIN))
    with client_of(survey, store) as client:
        assert client.get("/export.csv", params={"token": ADMIN}).status_code == 200
        new = "a-new-admin-token-0123456789"
        store.add_admin(OWNER, admin_token_hash(new), replace=True)  # as the second server does
        for r in (client.get("/dashboard", params={"token": ADMIN}),
                  client.get("/export.csv", headers={"authorization": f"Bearer {ADMIN}"})):
            assert r.status_code == 403 and "revoked or replaced" in r.json()["error"]
            assert "user" not in r.text and ADMIN not in r.text
        assert client.get("/export.csv", params={"token": new}).status_code == 200


def test_a_client_that_hangs_up_mid_upload_logs_no_internal_error(store, caplog):
    """A report's body cut off by the client's disconnect (any client can do it, as often as it likes) used
    to be logged as an internal error, with a 500 sent to no one."""
    survey = Survey(title="T", question="Which is better?", items=ITEMS, epsilon=1.0, budget=3.0)
    app = create_app(survey, store, admin_token_hash(ADMIN))
    received = iter([{"type": "http.request", "body": b'{"token": ', "more_body": True}, {"type": "http.disconnect"}])
    sent = []

    async def receive():
        return next(received)

    async def send(message):
        sent.append(message)
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/api/reports", "raw_path": b"/api/reports", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"), (b"content-length", b"100")],
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    with caplog.at_level(logging.INFO, logger="privrank.serve"):
        asyncio.run(app(scope, receive, send))
    assert [r.getMessage() for r in caplog.records if r.name == "privrank.serve"] == []
    assert sent == [] and store.counts() == (0, 0)
