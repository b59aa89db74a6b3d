"""Ending a survey: a closing time in the survey file, ``privrank serve --close`` recorded in the store
and seen by every server on it, 410 for new respondents and answers once closed while the dashboard and
the export go on, and ``privrank serve --export`` writing the export without serving."""
import itertools
import json
import re
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from serve_helpers import key

from privrank.cli import main
from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import Closing, admin_token_hash, closed_text, create_app
from privrank.serve.survey import Survey, load_survey, utc_text

starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "closing-admin-token-0123456789"
ITEMS = ("apple", "banana", "cherry", "date")
SURVEY = 'title = "Fruit"\nquestion = "Which do you prefer?"\nitems = ["apple", "banana", "cherry", "date"]\n' \
         'epsilon = 1.0\nbudget = 3.0\n'


def survey_file(folder, closes: str = "", name="fruit.toml"):
    path = folder / name
    path.write_text(SURVEY + (f"closes = {closes}\n" if closes else ""))
    return path


def client_of(survey, target):
    store = open_store(target)
    app = create_app(survey, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6, dashboard_refresh=0)
    return starlette_testclient.TestClient(app), store


def pair_report(token, a="apple", b="banana", report=1):
    return {"token": token, "key": key(), "item_a": a, "item_b": b, "report": report, "epsilon": 1.0}


# ------------------------------------------------------------------------------- the survey file

def test_closes_reads_an_offset_datetime_from_toml_and_json(tmp_path):
    survey = load_survey(survey_file(tmp_path, "2026-12-31T18:00:00+01:00"))
    assert survey.closes == datetime(2026, 12, 31, 17, tzinfo=timezone.utc)
    assert survey.public()["closes"] == "2026-12-31T17:00:00Z"
    doc = {"title": "T", "question": "Q?", "items": ["a", "b"], "epsilon": 1, "budget": 2,
           "closes": "2026-12-31T18:00:00Z"}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert load_survey(tmp_path / "s.json").public()["closes"] == "2026-12-31T18:00:00Z"
    assert load_survey(survey_file(tmp_path, name="open.toml")).public()["closes"] is None


@pytest.mark.parametrize("closes, refusal", [
    ("2026-12-31T18:00:00", "no UTC offset"),            # TOML's local date-time
    ('"2026-12-31T18:00:00"', "no UTC offset"),
    ("2026-12-31", "not a day alone"),                   # TOML's local date
    ('"next friday"', "ISO 8601 date and time"),
    ("18:00:00", "ISO 8601 date and time"),              # TOML's local time
    ("1735668000", "ISO 8601 date and time"),
    ('"2026-13-01T00:00:00Z"', "ISO 8601 date and time"),
    ('"9999-12-31T23:00:00-05:00"', "out of range"),
])
def test_closes_without_an_offset_or_not_a_time_is_refused(tmp_path, closes, refusal):
    with pytest.raises(InputError, match=refusal) as info:
        load_survey(survey_file(tmp_path, closes))
    assert str(info.value).startswith(str(tmp_path / "fruit.toml")) and "closes" in str(info.value)


def test_closes_is_neither_a_term_nor_a_text():
    """Moving the closing time keeps the survey's identity: its database, reports and respondents."""
    one = Survey(title="T", question="Q?", items=ITEMS, budget=3.0, closes="2026-12-31T18:00:00Z")
    other = Survey(title="T", question="Q?", items=ITEMS, budget=3.0, closes="2027-01-31T18:00:00Z")
    never = Survey(title="T", question="Q?", items=ITEMS, budget=3.0)
    assert one.fingerprint() == other.fingerprint() == never.fingerprint()
    assert one.earlier_fingerprint() == never.earlier_fingerprint()
    assert one.texts() == never.texts() and "closes" not in one.texts()


def test_a_moved_closing_time_keeps_the_database(tmp_path):
    db = tmp_path / "s.sqlite"
    for closes in ("2026-12-31T18:00:00Z", "2027-06-30T18:00:00Z", None):
        client, store = client_of(Survey(title="T", question="Q?", items=ITEMS, budget=3.0, closes=closes), db)
        with client:
            assert client.post("/api/respondents").status_code == 201
        store.close()
    with open_store(db) as store:
        assert store.counts() == (3, 0) and {f for f, _, _ in store.text_history()} == {
            "title", "question", "description", "consent", "contact", "closing"}


# --------------------------------------------------------------------------------- the cache

class CountingStore:
    """A store's closing record alone, counting its reads."""

    def __init__(self):
        self.at, self.reads = None, 0

    def closed_at(self):
        self.reads += 1
        return self.at


def test_the_store_is_read_at_most_once_a_second_and_never_once_closed():
    now = [1_800_000_000.0]
    store = CountingStore()
    closing = Closing(None, store, clock=lambda: now[0])
    assert closing.due() and not closing.due()  # one caller reads; the others use what it read
    closing.read()
    for _ in range(1000):
        now[0] += 0.0005  # 1000 requests in half a second: no read
        assert not closing.due()
    now[0] += 0.51
    assert closing.due() and not closing.due()
    closing.read()
    now[0] -= 60  # the clock went back: read again
    assert closing.due()
    store.at = utc_text(datetime.fromtimestamp(now[0], timezone.utc))
    closing.read()
    assert closing.passed() == closing.at() == datetime.fromtimestamp(int(now[0]), timezone.utc)
    now[0] += 3600
    assert not any(closing.due() for _ in range(10))  # a close is final: never read again
    assert store.reads == 3


def test_the_earlier_closing_time_counts():
    now = [datetime(2026, 6, 1, tzinfo=timezone.utc).timestamp()]
    store = CountingStore()
    closing = Closing(datetime(2026, 7, 1, tzinfo=timezone.utc), store, clock=lambda: now[0])
    closing.read()
    assert closing.at() == datetime(2026, 7, 1, tzinfo=timezone.utc) and closing.passed() is None
    now[0] = datetime(2026, 7, 1, tzinfo=timezone.utc).timestamp()  # the file's time has come
    assert closing.passed() == datetime(2026, 7, 1, tzinfo=timezone.utc)
    store.at = "2026-06-15T12:00:00Z"
    closing.read()
    assert closing.at() == closing.passed() == datetime(2026, 6, 15, 12, tzinfo=timezone.utc)


# ------------------------------------------------------------------------- a closed survey

def closed_as(at: datetime) -> dict:
    return {"error": f"this survey closed on {closed_text(at)}: it accepts no more answers", "reason": "closed"}


def test_close_is_seen_by_a_running_server_and_refuses_answers(tmp_path, target, capsys, monkeypatch):
    """SQLite and PostgreSQL: ``--close`` from another store on the database; the server refuses new
    respondents and reports with 410, while its dashboard and export go on."""
    monkeypatch.setattr(Closing, "REFRESH", 0.0)  # this test does not wait out the cache
    path = survey_file(tmp_path)
    survey = load_survey(path)
    client, store = client_of(survey, target)
    with client:
        token = client.post("/api/respondents").json()["token"]
        assert client.post("/api/reports", json=pair_report(token)).status_code == 201
        assert client.get("/api/survey").json()["closed"] is False
        before = datetime.now(timezone.utc).replace(microsecond=0)
        assert main(["serve", str(path), "--db", str(target), "--close"]) == 0
        at = datetime.fromisoformat(store.closed_at())
        assert before <= at <= datetime.now(timezone.utc)
        assert f"closed on {closed_text(at)}" in capsys.readouterr().err
        for path_, body in (("/api/respondents", {}), ("/api/reports", pair_report(token, "cherry", "date"))):
            r = client.post(path_, json=body)
            assert r.status_code == 410 and r.json() == closed_as(at)
        doc = client.get("/api/survey").json()
        assert doc["closed"] is True and doc["closes"] == utc_text(at)
        page = client.get("/dashboard", params={"token": ADMIN})
        assert page.status_code == 200 and f"Closed on {closed_text(at)}" in page.text
        assert page.text.index('id="closed"') < page.text.index("<h1>")  # at the top
        export = client.get("/export.csv", params={"token": ADMIN})
        assert export.status_code == 200 and len(export.content.decode("utf-8-sig").splitlines()) == 2
        assert main(["serve", str(path), "--db", str(target), "--close"]) == 0  # again: the first time stays
        assert store.closed_at() == utc_text(at) and f"closed on {closed_text(at)}" in capsys.readouterr().err
    assert store.counts() == (1, 1)  # nothing stored after the close
    store.close()


def test_a_closing_time_past_in_the_file_closes_the_survey(tmp_path):
    past = datetime(2020, 1, 1, tzinfo=timezone.utc)
    client, store = client_of(Survey(title="T", question="Q?", items=ITEMS, budget=3.0, closes=past), tmp_path / "s.db")
    with client:
        r = client.post("/api/respondents")
        assert r.status_code == 410 and r.json() == closed_as(past)
        assert client.post("/api/reports", json=pair_report(key() + key()[:10])).status_code == 410
        doc = client.get("/api/survey").json()
        assert (doc["closed"], doc["closes"]) == (True, "2020-01-01T00:00:00Z")
        assert "Closed on 2020-01-01 00:00:00 UTC" in client.get("/dashboard", params={"token": ADMIN}).text
    assert store.closed_at() is None and store.counts() == (0, 0)  # the file's time is not recorded
    store.close()


def test_a_report_stored_before_the_close_is_answered_as_a_duplicate_after_it(tmp_path, target, monkeypatch):
    """SQLite and PostgreSQL: a report stored whose reply was lost, resent after the close with its token and
    key, gets 200 ``duplicate`` as while open (the page may stop keeping it); the same key with other content,
    a new key, an unknown token and a malformed body get the 410, and nothing more is stored."""
    monkeypatch.setattr(Closing, "REFRESH", 0.0)
    client, store = client_of(load_survey(survey_file(tmp_path)), target)
    with client:
        token = client.post("/api/respondents").json()["token"]
        stored = pair_report(token)
        assert client.post("/api/reports", json=stored).status_code == 201
        store.close_survey(utc_text(datetime.now(timezone.utc)))
        at = datetime.fromisoformat(store.closed_at())
        r = client.post("/api/reports", json=stored)
        assert r.status_code == 200 and r.json() == {"remaining": 0, "duplicate": True}
        for body in ({**stored, "report": -1}, pair_report(token, "cherry", "date"), pair_report(key() + key()[:10]),
                     {**stored, "answer": "apple"}):
            r = client.post("/api/reports", json=body)
            assert r.status_code == 410 and r.json() == closed_as(at)
        assert client.post("/api/reports", content=b"not json").status_code == 410
    assert store.counts() == (1, 1)
    store.close()


def test_a_closing_time_ahead_leaves_the_survey_open(tmp_path):
    ahead = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=30)
    client, store = client_of(Survey(title="T", question="Q?", items=ITEMS, budget=3.0, closes=ahead),
                              tmp_path / "s.db")
    with client:
        doc = client.get("/api/survey").json()
        assert (doc["closed"], doc["closes"]) == (False, utc_text(ahead))
        assert client.post("/api/respondents").status_code == 201
        assert 'id="closed"' not in client.get("/dashboard", params={"token": ADMIN}).text
    store.close()


def test_close_refuses_a_missing_database_another_survey_and_serving_options(tmp_path, capsys):
    path = survey_file(tmp_path)
    assert main(["serve", str(path), "--close"]) == 2
    assert "no such database" in capsys.readouterr().err and not (tmp_path / "fruit.sqlite").exists()
    assert main(["serve", str(path), "--close", "--new-db"]) == 2
    assert "serve nothing: give them without --new-db" in capsys.readouterr().err
    with open_store(tmp_path / "fruit.sqlite") as store:
        store.claim(Survey(title="T", question="Q?", items=("x", "y"), budget=1.0).fingerprint())
    assert main(["serve", str(path), "--close"]) == 2
    assert "a different survey" in capsys.readouterr().err
    with open_store(tmp_path / "fruit.sqlite") as store:
        assert store.closed_at() is None


# ------------------------------------------------------------------------------------ --export

@pytest.fixture
def answered(tmp_path):
    """A pairs survey file and its SQLite database, with 40 respondents' randomized reports."""
    path = survey_file(tmp_path)
    survey = load_survey(path)
    client, store = client_of(survey, tmp_path / "fruit.sqlite")
    rng = np.random.default_rng(3)
    pairs = list(itertools.combinations(ITEMS, 2))
    with client:
        for _ in range(40):
            token = client.post("/api/respondents").json()["token"]
            for p in rng.choice(len(pairs), 3, replace=False):
                r = client.post("/api/reports", json=pair_report(token, *pairs[p], int(rng.choice([1, -1]))))
                assert r.status_code == 201
        served = client.get("/export.csv", params={"token": ADMIN}).content
    store.close()
    return path, served


def test_export_writes_the_served_csv_which_privrank_rank_reads(answered, tmp_path, capsys):
    path, served = answered
    out = tmp_path / "results.csv"
    assert main(["serve", str(path), "--export", str(out)]) == 0
    assert out.read_bytes() == served and served.startswith(b"\xef\xbb\xbfuser,item_a,item_b,outcome")
    assert f"privrank rank {out} --epsilon 1" in capsys.readouterr().err
    assert main(["rank", str(out), "--epsilon", "1", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(row["item"] for row in doc["ranking"]) == sorted(ITEMS)
    assert "the declared epsilon" in doc["guarantee"]["note"]
    assert main(["serve", str(path), "--export", str(out)]) == 2  # never overwritten
    assert "never overwritten" in capsys.readouterr().err and out.read_bytes() == served


def test_export_to_stdout_and_after_a_close(answered, tmp_path, capsysbinary):
    path, served = answered
    assert main(["serve", str(path), "--export", "-"]) == 0
    assert capsysbinary.readouterr().out == served
    assert main(["serve", str(path), "--close", "--export", "-"]) == 0  # closes, then exports
    done = capsysbinary.readouterr()
    assert done.out == served and re.search(rb"closed on \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", done.err)
    with open_store(tmp_path / "fruit.sqlite") as store:
        assert store.closed_at() is not None


def test_help_describes_closing_and_exporting(capsys):
    with pytest.raises(SystemExit):
        main(["serve", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "closing and exporting (without serving):" in help_text
    assert "--close" in help_text and "--export FILE" in help_text and "no admin token is needed" in help_text
    assert "privrank serve survey.toml --close --export results.csv" in help_text


def test_serving_says_when_the_survey_closes(tmp_path, capsys, monkeypatch):
    uvicorn = pytest.importorskip("uvicorn")
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: None)
    monkeypatch.delenv("PRIVRANK_ADMIN_TOKEN", raising=False)
    path = survey_file(tmp_path, "2099-12-31T18:00:00-05:00")
    assert main(["serve", str(path), "--new-db", "--port", "0"]) == 0
    assert "  closes on 2099-12-31 23:00:00 UTC (privrank serve --close closes it now)" in capsys.readouterr().err
    assert main(["serve", str(path), "--close"]) == 0
    capsys.readouterr()
    assert main(["serve", str(path), "--port", "0"]) == 0
    assert re.search(r"  closed on \S+ \S+ UTC: no new respondents or answers are taken", capsys.readouterr().err)


def test_a_database_of_before_closing_gains_the_table(target):
    from serve_helpers import execute

    with open_store(target):
        pass
    execute(target, "DROP TABLE closed")  # as a database served before surveys could close
    with open_store(target) as store:
        assert store.closed_at() is None
        store.close_survey("2026-12-02T10:00:00Z")
        store.close_survey("2026-12-02T11:00:00Z")
        assert store.closed_at() == "2026-12-02T10:00:00Z"
