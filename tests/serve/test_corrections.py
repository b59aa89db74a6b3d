"""Corrections of a running survey's file: new texts served from the next page load and recorded in the store's
history, a moved closing time followed; other terms, and a file that cannot be read, leave the survey served as
it was, with one warning per version of the file."""
import logging
import os
import signal
import time

import pytest
from test_admins import wait_for
from test_serve_cli import SURVEY, Server

from privrank.serve import open_store
from privrank.serve.admins import admin_token_hash
from privrank.serve.app import create_app
from privrank.serve.corrections import SurveyFile
from privrank.serve.survey import load_survey

httpx = pytest.importorskip("httpx")
starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "corrections-admin-token-0123456789"
QUESTION = "Which do you prefer?"


def rewrite(path, text: str) -> None:
    """Replace the file's text as an editor that saves in place does, its modification time a moment later."""
    before = path.stat().st_mtime_ns
    path.write_text(text)
    os.utime(path, ns=(before + 10 ** 9, before + 10 ** 9))


@pytest.fixture
def served(tmp_path, monkeypatch):
    """A survey file served by an application that looks at it at every request: ``(path, client, store)``."""
    monkeypatch.setattr(SurveyFile, "REFRESH", 0.0)
    path = tmp_path / "fruit.toml"
    path.write_text(SURVEY)
    store = open_store(tmp_path / "fruit.sqlite")
    app = create_app(load_survey(path), store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6,
                     dashboard_refresh=0, survey_file=path)
    with starlette_testclient.TestClient(app) as client:
        yield path, client, store
    store.close()


def test_a_corrected_text_is_served_and_recorded(served):
    path, client, store = served
    rewrite(path, SURVEY.replace(QUESTION, "Which fruit do you prefer?") + 'consent = "Answers are randomized."\n')
    doc = client.get("/api/survey").json()
    assert doc["question"] == "Which fruit do you prefer?" and doc["consent"] == "Answers are randomized."
    assert [(field, text) for field, text, _ in store.text_history()][-2:] == [
        ("question", "Which fruit do you prefer?"), ("consent", "Answers are randomized.")]
    assert "Which fruit do you prefer?" in client.get("/dashboard", params={"token": ADMIN}).text


def test_a_file_replaced_by_a_new_one_is_followed(served):
    """Editors that save by writing a new file and renaming it over the old one give it a new inode."""
    path, client, _ = served
    new = path.with_name("fruit.toml.new")
    new.write_text(SURVEY.replace(QUESTION, "Which one?"))
    os.replace(new, path)
    assert client.get("/api/survey").json()["question"] == "Which one?"


def test_a_moved_closing_time_and_redirect_are_followed(served):
    path, client, _ = served
    assert client.post("/api/respondents").status_code == 201
    rewrite(path, SURVEY + 'closes = 2020-01-01T00:00:00Z\nredirect = "https://panel.example.org/done"\n')
    doc = client.get("/api/survey").json()
    assert doc["closed"] and doc["closes"] == "2020-01-01T00:00:00Z"
    assert doc["redirect"] == "https://panel.example.org/done"
    assert client.post("/api/respondents").status_code == 410


@pytest.mark.parametrize("change, warning", [
    (lambda text: text.replace("epsilon = 1.0", "epsilon = 2.0"), "its terms changed"),
    (lambda text: text.replace('"date"]', '"date", "elderberry"]'), "its terms changed"),
    (lambda text: text[:len(text) // 2], "not valid TOML"),  # a half-saved file
    (lambda text: text + "colour = 1\n", "unknown key 'colour'"),
])
def test_other_terms_or_a_broken_file_leave_the_survey_as_it_was(served, caplog, change, warning):
    path, client, store = served
    history = store.text_history()
    rewrite(path, change(SURVEY).replace(QUESTION, "Which one?"))
    with caplog.at_level(logging.WARNING, logger="privrank.serve"):
        for _ in range(3):  # one warning for this version of the file, however often it is looked at
            doc = client.get("/api/survey").json()
            assert (doc["question"], doc["epsilon"], doc["items"]) == (QUESTION, 1.0, ["apple", "banana", "cherry",
                                                                                      "date"])
    assert [r.getMessage() for r in caplog.records if warning in r.getMessage()] == \
        [r.getMessage() for r in caplog.records]
    assert len(caplog.records) == 1 and "the survey goes on" in caplog.records[0].getMessage()
    assert store.text_history() == history
    rewrite(path, SURVEY.replace(QUESTION, "Which one?"))  # put right: taken up
    assert client.get("/api/survey").json()["question"] == "Which one?"


def test_the_file_is_looked_at_at_most_once_a_second(tmp_path, monkeypatch):
    path = tmp_path / "fruit.toml"
    path.write_text(SURVEY)
    now = [100.0]
    with open_store(tmp_path / "fruit.sqlite") as store:
        following = SurveyFile(load_survey(path), path, store, clock=lambda: now[0])
        assert following.due() and not following.due()
        now[0] += 0.5
        assert not following.due()
        now[0] += 0.6
        assert following.due()
        assert not SurveyFile(load_survey(path), None, store).due()  # no file: the survey as given


@pytest.mark.slow
def test_a_running_server_serves_a_corrected_question_and_keeps_its_terms(tmp_path):
    survey = tmp_path / "fruit.toml"
    survey.write_text(SURVEY)
    server = Server(tmp_path, "fruit.toml", "--new-db")

    def served():
        return httpx.get(f"{server.base}/api/survey", timeout=30).json()
    try:
        rewrite(survey, SURVEY.replace(QUESTION, "Which fruit do you like best?"))
        assert wait_for(lambda: served()["question"] == "Which fruit do you like best?") < 3
        rewrite(survey, SURVEY.replace(QUESTION, "Which fruit?").replace("epsilon = 1.0", "epsilon = 2.0"))
        time.sleep(2.5)  # looked at again, more than once
        doc = served()
        assert (doc["question"], doc["epsilon"]) == ("Which fruit do you like best?", 1.0)
        token = httpx.post(f"{server.base}/api/respondents", timeout=30).json()["token"]
        report = {"token": token, "key": "k" * 22, "item_a": "apple", "item_b": "banana", "report": 1}
        assert httpx.post(f"{server.base}/api/reports", json={**report, "epsilon": 1.0}, timeout=30).status_code == 201
        assert httpx.post(f"{server.base}/api/reports", json={**report, "key": "q" * 22, "epsilon": 2.0},
                          timeout=30).status_code == 400
    finally:
        code, err = server.stop(signal.SIGINT)
    assert err.count("its terms changed") == 1 and "Traceback" not in err, err
    with open_store(tmp_path / "fruit.sqlite") as store:
        assert [text for field, text, _ in store.text_history() if field == "question"] == [
            QUESTION, "Which fruit do you like best?"]
