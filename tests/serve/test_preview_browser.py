"""The survey's preview (BASE_URL/#preview, linked from the dashboard) in real Chromium: every screen a
respondent sees, under a banner, and nothing sent or kept. Against the real server on SQLite, a preview
taken to its end leaves the store empty and the server without a single POST, and a respondent's
token and answers in the same browser untouched; a page whose preview sends is caught."""
import json
import time

import pytest
from test_browser import (  # noqa: F401 (driver is a fixture)
    DESSERTS, Recorder, answer_all, console_problems, contract_app, driver, patched_page, real_server, serving,
    state, survey_of, text, wait_state)

from privrank.serve.survey import Survey

BANNER = "Preview: your answers are not sent or kept."
REDIRECT = "http://localhost:9/next"  # a port nothing listens on: the preview must never go there
#: 4 items, 3 answers per browser, with every text a respondent reads and a redirect
SURVEY = Survey(title="Dessert survey", question="Which dessert do you prefer?", items=tuple(DESSERTS[:4]),
                design="pairs", epsilon=1.0, budget=3.0, description="A short survey.",
                consent="Your answers are randomized in your browser.", closing="See you next time.",
                redirect=REDIRECT)


def banner_shown(drv) -> bool:
    banner = drv.find_element("id", "preview-banner")
    return banner.is_displayed() and banner.text == BANNER


def posts(recorder) -> list[dict]:
    return [r for r in recorder.requests if r["method"] == "POST"]


def local_storage(drv) -> dict:
    return dict(drv.execute_script("return Object.entries(localStorage)"))


def preview(drv, base) -> None:
    """Take the preview of SURVEY at ``base`` from its consent to its thank-you, the banner on every
    screen; the redirect is shown, and still not followed a second after a respondent's page would go."""
    drv.get(base + "/#preview")
    wait_state(drv, "consent")
    assert banner_shown(drv) and text(drv, "consent-text") == SURVEY.consent
    drv.find_element("id", "agree").click()
    wait_state(drv, "question")
    assert banner_shown(drv) and text(drv, "progress") == "Answer 1 of 3"
    assert drv.find_element("id", "elsewhere").get_attribute("hidden") is None  # "Continue on another device"
    answer_all(drv)
    assert banner_shown(drv) and text(drv, "closing") == SURVEY.closing
    assert "You have given all the answers this survey asks for" in text(drv, "status")
    assert drv.find_element("id", "continue").get_attribute("href") == REDIRECT
    assert text(drv, "onward-note") == ("A respondent's page goes on there by itself after a few seconds; the "
                                        "preview does not.")
    time.sleep(6)  # a respondent's page goes on after 5 seconds
    assert drv.current_url == base + "/#preview" and state(drv) == "done"


def test_a_preview_sends_and_keeps_nothing_and_leaves_a_respondent_alone(driver, tmp_path):  # noqa: F811
    with real_server(SURVEY, tmp_path / "survey.sqlite") as (recorder, base, store):
        driver.get_log("browser")
        preview(driver, base)
        assert posts(recorder) == [] and store.counts() == (0, 0) and local_storage(driver) == {}
        # a respondent in the same browser then takes part as if there had been no preview
        driver.get(base + "/")
        wait_state(driver, "consent")
        assert not driver.find_element("id", "preview-banner").is_displayed()
        driver.find_element("id", "agree").click()
        wait_state(driver, "question")
        assert text(driver, "progress") == "Answer 1 of 3"
        driver.find_element("id", "choose-left").click()
        wait_state(driver, "question")
        assert store.counts() == (1, 1)
        kept = local_storage(driver)
        assert list(kept) == [f"privrank:{SURVEY.fingerprint()}"] and json.loads(*kept.values())["token"]
        # a second preview, halfway through: asked from the consent on again, it leaves the respondent's memo as it was
        before = len(recorder.requests)
        preview(driver, base)
        assert {r["method"] for r in recorder.requests[before:]} == {"GET"}  # the page, its files and the survey
        assert local_storage(driver) == kept and store.counts() == (1, 1)
        # the respondent goes on where they were, under the same token
        driver.get(base + "/")
        wait_state(driver, "question")
        assert text(driver, "progress") == "Answer 2 of 3"
        answer_all(driver)
        reports = recorder.posts("/api/reports", 201)
        assert len(recorder.posts("/api/respondents")) == 1 and len(reports) == 3
        assert len({r["token"] for r in reports}) == 1 and store.counts() == (1, 3)
        assert console_problems(driver) == []


@pytest.mark.slow  # the controls of the test above, 7 s each
@pytest.mark.parametrize("broken", ["sends", "sends-and-keeps"])
def test_a_preview_that_sends_is_caught(driver, tmp_path, broken):  # noqa: F811
    """Negative controls: a page whose preview sends its requests as a respondent's page does (the server
    does not know its token, so it registers anew and its reports are stored), and also keeps its memo in
    localStorage: the checks above fail."""
    edits = [("await fetchOrPreview(path,", "await fetch(path,")]
    if broken == "sends-and-keeps":
        edits += [("JSON.parse(memos().getItem(storeKey))", "JSON.parse(localStorage.getItem(storeKey))"),
                  ("memos().setItem(storeKey", "localStorage.setItem(storeKey")]
    page = patched_page(tmp_path / broken, *edits)
    with real_server(SURVEY, tmp_path / "survey.sqlite", page=page) as (recorder, base, store):
        preview(driver, base)
        assert posts(recorder) != [] and store.counts() == (1, 3)
        assert (local_storage(driver) != {}) == (broken == "sends-and-keeps")


@pytest.mark.parametrize("design", ["ranking", "invitations"])
def test_a_ranking_and_an_invitation_only_survey_preview_without_a_request(driver, design):  # noqa: F811
    """A ranking's one ballot, and an invitation-only survey previewed without an invitation: every screen,
    no POST, nothing kept."""
    survey = survey_of(DESSERTS[:4], design="pairs" if design == "invitations" else design, max_answers=2)
    survey["invitations"] = design == "invitations"
    recorder = Recorder(contract_app(survey))
    with serving(recorder) as base:
        driver.get(base + "/#preview")
        if design == "ranking":
            wait_state(driver, "ranking")
            assert banner_shown(driver)
            driver.find_element("id", "submit-ranking").click()
        else:
            wait_state(driver, "question")
            assert banner_shown(driver) and "with your invitation" in text(driver, "protection")
            answer_all(driver)
        wait_state(driver, "done")
        assert banner_shown(driver) and text(driver, "status").endswith("Thank you!")
        assert posts(recorder) == [] and local_storage(driver) == {}
        assert [r["path"] for r in recorder.requests if r["path"].startswith("/api/")] == ["/api/survey"]
