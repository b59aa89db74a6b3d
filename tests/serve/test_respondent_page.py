"""The respondent's page when things do not go to plan, and around the questions, in a real headless Chromium:
the server's own words for a refusal (a plain sentence without any), a busy server tried again by itself, a
progress bar, declining to take part, the survey's redirect after the thank-you, a report stored before the
close resent after it, a 390 x 844 phone, the keyboard focus on the question, and the arrow keys' hint only
where a mouse points. The fixtures and helpers are ``test_browser.py``'s."""
from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime, timezone

import pytest
from test_browser import driver, site  # noqa: F401 (fixtures)
from test_browser import (
    CHROMEDRIVER,
    CHROMIUM,
    CONSENT,
    DESSERTS,
    answer_all,
    console_problems,
    declared_survey,
    fake_only,
    give_answer,
    real_server,
    serving,
    state,
    storage,
    survey_of,
    text,
    wait_for,
    wait_state,
)

from privrank.serve.health import StoreUnavailable

KEPT = "Your randomized answer is saved on this device and will be sent when you reload the page."
BUSY = "the database is busy (another process holds its lock): try again in a moment"


def test_a_refusal_says_the_servers_words_or_a_plain_sentence(driver, site):  # noqa: F811
    """A JSON refusal shows its "error" (never a status code); a reply that is not JSON (a proxy's page) and no
    reply at all (offline) get a sentence of the page's own. The report is kept, and sent on reload."""
    recorder = site(survey_of(DESSERTS[:4], max_answers=6))
    wait_state(driver, "question")
    driver.execute_script("localStorage.clear()")
    recorder.refusals.append(("/api/respondents", 500))
    driver.refresh()
    wait_state(driver, "error")
    assert text(driver, "status") == ("Sorry, this page could not join the survey: refused by the test. Please "
                                      "reload the page to try again.")
    driver.refresh()
    wait_state(driver, "question")
    recorder.refusals.append(("/api/reports", 500))
    give_answer(driver, "click-left")
    wait_state(driver, "error")
    assert text(driver, "status") == f"Sorry, your answer could not be sent: refused by the test. {KEPT}"
    driver.refresh()
    wait_state(driver, "question")
    recorder.outages = 1  # a proxy's 502 in plain text
    give_answer(driver, "click-left")
    wait_state(driver, "error")
    assert text(driver, "status") == ("Sorry, your answer could not be sent: the survey's server is not answering "
                                      f"properly right now. {KEPT}")
    driver.refresh()
    wait_state(driver, "question")
    assert text(driver, "progress") == "Answer 3 of 6"
    offline = {"offline": True, "latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}
    driver.execute_cdp_cmd("Network.enable", {})
    try:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", offline)
        give_answer(driver, "click-left")
        wait_state(driver, "error")
    finally:
        driver.execute_cdp_cmd("Network.emulateNetworkConditions", {**offline, "offline": False})
        driver.execute_cdp_cmd("Network.disable", {})
    assert text(driver, "status") == f"Sorry, something went wrong: could not reach the server. {KEPT}"
    assert not any(str(code) in text(driver, "status") for code in (500, 502))
    driver.refresh()
    wait_state(driver, "question")
    assert recorder.statuses("/api/reports") == [500, 201, 502, 201, 201]
    assert [v["sent"] for v in storage(driver)["pairs"].values()] == [True] * 3


def test_a_busy_server_is_tried_again_by_itself(driver, tmp_path, monkeypatch):  # noqa: F811
    """The real server answers 503 with ``Retry-After: 1`` three times (its store raises StoreUnavailable): the
    page says it will try again in 1 second, keeps the report meanwhile, and sends it by itself without a
    reload, once stored; the same for a registration refused with 429."""
    with real_server(declared_survey(DESSERTS[:4]), tmp_path / "survey.sqlite") as (recorder, base, store):
        submit, busy = store.submit_report, [3]

        def flaky(*args, **kwargs):
            if busy[0]:
                busy[0] -= 1
                raise StoreUnavailable(BUSY, "busy", retry_after=1)
            return submit(*args, **kwargs)
        monkeypatch.setattr(store, "submit_report", flaky)
        recorder.refusals.append(("/api/respondents", 429))  # with Retry-After: 1
        driver.get(base + "/")
        wait_for(driver, lambda d: "try again by itself in 1 second." in text(d, "status"))
        wait_state(driver, "question")
        assert recorder.statuses("/api/respondents") == [429, 201]
        driver.execute_script("window.notReloaded = true")
        give_answer(driver, "click-left")
        wait_state(driver, "waiting")
        assert driver.find_element("id", "app").get_attribute("aria-busy") == "true"
        assert text(driver, "status") == (f"The survey's server cannot take this right now ({BUSY}). This page will "
                                          "try again by itself in 1 second. Your randomized answer is kept on this "
                                          "device meanwhile.")
        assert [v["sent"] for v in storage(driver)["pairs"].values()] == [False]
        wait_state(driver, "question")
        assert driver.execute_script("return window.notReloaded") is True
        assert recorder.statuses("/api/reports") == [503, 503, 503, 201]
        first, *again = recorder.posts("/api/reports")
        assert again == [first] * 3  # the same report, key and all
        assert store.pair_reports().num_rows == 1 and text(driver, "progress") == "Answer 2 of 6"
        assert text(driver, "status") == "Sent." and text(driver, "coin")
        assert [v["sent"] for v in storage(driver)["pairs"].values()] == [True]


def test_a_progress_bar_counts_the_answers_sent(driver, site):  # noqa: F811
    """"Answer k of K" names a <progress> of the answers sent, K the answers asked (the page's own cap, or
    every pair when fewer), updated as each is sent; it goes once all are."""
    site(survey_of(DESSERTS[:4], max_answers=3))
    for k in range(3):
        wait_state(driver, "question")
        bar = driver.find_element("id", "progress-bar")
        assert bar.tag_name == "progress" and bar.is_displayed()
        assert (bar.get_attribute("max"), bar.get_attribute("value")) == ("3", str(k))
        assert bar.accessible_name == text(driver, "progress") == f"Answer {k + 1} of 3"
        give_answer(driver, "click-right")
        wait_state(driver, "question", "done")
    wait_state(driver, "done")
    assert not driver.find_element("id", "progress").is_displayed()
    site(survey_of(DESSERTS[:3], max_answers=20))  # 3 pairs: K = 3
    wait_state(driver, "question")
    assert text(driver, "progress") == "Answer 1 of 3"
    site(survey_of(DESSERTS[:4], design="ranking", max_answers=1))
    wait_state(driver, "ranking")
    assert not driver.find_element("id", "progress").is_displayed()  # one ballot: nothing to count


def test_declining_records_nothing(driver, site):  # noqa: F811
    """"I do not want to take part" thanks the person and says nothing was recorded: no registration, no
    report, nothing kept in the browser; a reload asks again."""
    recorder = site(survey_of(DESSERTS[:4], max_answers=6, consent=CONSENT, description="About desserts."))
    wait_state(driver, "consent")
    decline = driver.find_element("id", "decline")
    assert decline.is_displayed() and decline.text == "I do not want to take part"
    decline.click()
    wait_state(driver, "declined")
    assert text(driver, "status") == ("Thank you. You chose not to take part, so nothing was recorded: no answer "
                                      "was sent and you were not registered.")
    for hidden in ("consent", "description", "protection", "pairs", "progress", "closing", "onward"):
        assert not driver.find_element("id", hidden).is_displayed(), hidden
    time.sleep(0.5)
    assert [r for r in recorder.requests if r["method"] == "POST"] == []
    assert recorder.posts("/api/respondents") == [] and driver.execute_script("return localStorage.length") == 0
    driver.refresh()
    wait_state(driver, "consent")
    assert console_problems(driver) == []


def test_a_redirect_the_page_refuses(driver, site):  # noqa: F811
    """A served redirect the server would refuse (not https, nor http on this machine) stops the page."""
    fake_only()
    for bad in ("javascript:alert(1)", "http://panel.example.org/", "https://user:pw@panel.example.org/", 42):
        survey = survey_of(DESSERTS[:3], max_answers=3)
        survey["redirect"] = bad
        site(survey)
        wait_state(driver, "refused")
        assert "(its redirect)" in text(driver, "status")


@pytest.fixture
def phone(driver):  # noqa: F811
    """A 390 x 844 touch screen."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    try:
        yield driver
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})


def fits(drv) -> bool:
    """Nothing wider than the 390 px screen: no sideways scrolling."""
    return drv.execute_script("return document.documentElement.scrollWidth") <= 390


def test_on_a_phone_the_thank_you_goes_on_to_the_redirect(phone, tmp_path):
    """At 390 x 844, consent, questions with the progress bar, a busy server's note and the thank-you with its
    link "Continue" all fit the width (a screenshot of each is written); the page then goes on to the survey's
    redirect, on another origin (the page's CSP, default-src 'self', governs loads, not navigation)."""
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    async def next_page(request):
        return HTMLResponse('<!doctype html><title>Panel</title><p id="panel">Completed</p>')
    long = "Crème brûlée with a very long name that no phone shows on one line"
    with serving(Starlette(routes=[Route("/next", next_page)])) as onward:
        target = onward.replace("127.0.0.1", "localhost") + "/next?code=ABC123"
        survey = replace(declared_survey([*DESSERTS[:2], long], budget=2.0), consent=CONSENT, closing="Thanks!",
                         redirect=target)
        with real_server(survey, tmp_path / "survey.sqlite") as (recorder, base, store):
            phone.get(base + "/")
            wait_state(phone, "consent")
            assert fits(phone) and phone.find_element("id", "decline").is_displayed()
            phone.save_screenshot(str(tmp_path / "phone-consent.png"))
            phone.find_element("id", "agree").click()
            wait_state(phone, "question")
            assert fits(phone) and text(phone, "progress") == "Answer 1 of 2"
            phone.save_screenshot(str(tmp_path / "phone-question.png"))
            recorder.refusals.append(("/api/reports", 503))
            give_answer(phone, "click-left")
            wait_state(phone, "waiting")
            assert fits(phone)
            phone.save_screenshot(str(tmp_path / "phone-waiting.png"))
            answer_all(phone)
            assert fits(phone) and state(phone) == "done" and text(phone, "closing") == "Thanks!"
            link = phone.find_element("id", "continue")
            assert link.is_displayed() and link.text == "Continue" and link.get_attribute("href") == target
            assert text(phone, "onward-note") == "This page will take you on in 5 seconds."
            assert link.rect["x"] + link.rect["width"] <= 390
            phone.save_screenshot(str(tmp_path / "phone-done.png"))
            assert console_problems(phone) == []
            wait_for(phone, lambda d: d.current_url == target, timeout=12, message="no redirect")
            assert text(phone, "panel") == "Completed"
            assert store.pair_reports().num_rows == 2


@pytest.mark.parametrize("design", ["pairs", "ranking"])
def test_a_report_stored_before_the_close_is_resent_after_it(driver, tmp_path, monkeypatch, design):  # noqa: F811
    """A report stored whose reply was lost (a proxy's 502), resent on a reload after the survey closed: the
    server answers it as a duplicate, so the page stops keeping it and says only that the survey closed."""
    from privrank.serve.app import Closing
    from privrank.serve.survey import Survey, utc_text
    monkeypatch.setattr(Closing, "REFRESH", 0.0)
    survey = declared_survey(DESSERTS[:4]) if design == "pairs" else \
        Survey(title="Dessert survey", question="Rank the desserts", items=tuple(DESSERTS[:4]), design="ranking")

    def kept() -> list:
        """What the page keeps of its reports: each pair's entry, or the ballot's."""
        memo = storage(driver)
        return list(memo["pairs"].values()) if design == "pairs" else [memo["ballot"]]
    with real_server(survey, tmp_path / "survey.sqlite") as (recorder, base, store):
        driver.get(base + "/")
        wait_state(driver, "question", "ranking")
        recorder.lost_replies = 1
        if design == "pairs":
            give_answer(driver, "click-left")
        else:
            driver.find_element("id", "submit-ranking").click()
        wait_state(driver, "error")
        assert [v["sent"] for v in kept()] == [False]
        at = utc_text(datetime.now(timezone.utc))
        store.close_survey(at)
        driver.refresh()
        wait_state(driver, "closed")
        assert text(driver, "status") == (f"This survey has closed on {at[:10]} at {at[11:16]} UTC: it accepts no "
                                          "more answers.")
        assert [r.get("app_status", r["status"]) for r in recorder.requests if r["path"] == "/api/reports"] == \
            [201, 200]
        assert kept() == [{"sent": True}]  # the report itself is no longer kept
        assert "done" not in storage(driver)  # were the survey reopened (closes moved later), it would ask on
        assert store.counts() == (1, 1)
        assert console_problems(driver) == []


def focused(drv) -> str:
    """The id of the element that has the keyboard focus ("" for none)."""
    return drv.execute_script("return document.activeElement.id")


@pytest.mark.parametrize("design", ["pairs", "ranking"])
def test_the_question_takes_the_focus_after_i_agree_and_after_each_answer(driver, site, design):  # noqa: F811
    """"I agree" goes with the consent text: its question's heading takes the keyboard focus, so that a keyboard
    or screen-reader user goes on from there (Tab: the first answer); after each answer, the next pair's."""
    site(survey_of(DESSERTS[:4], design=design, max_answers=4, consent=CONSENT))
    wait_state(driver, "consent")
    driver.find_element("id", "agree").click()
    wait_state(driver, "question", "ranking")
    heading = "question" if design == "pairs" else "rank-question"
    assert focused(driver) == heading
    if design == "ranking":
        return
    for how in ("click-left", "key-right", "tab-enter"):  # Tab from the heading reaches the first answer
        give_answer(driver, how)
        wait_state(driver, "question", "sending")
        wait_for(driver, lambda d: state(d) != "sending")
        assert (state(driver), focused(driver)) == ("question", heading)
    assert console_problems(driver) == []


@pytest.fixture
def mouse():
    """A headless Chromium that has a mouse: hover and a fine pointer (without a pointing device by default)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,800",
                "--blink-settings=primaryPointerType=4,primaryHoverType=2,availablePointerTypes=4,availableHoverTypes=2"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield drv
    drv.quit()


def test_the_keys_hint_shows_only_where_a_mouse_points(mouse, tmp_path):
    """The arrow keys' hint shows with a mouse (hover, a fine pointer), not on a 390 x 844 touch screen (no hover,
    a coarse pointer), where the answer buttons, which are named, are all there is to it."""
    with real_server(declared_survey(DESSERTS[:4]), tmp_path / "survey.sqlite") as (recorder, base, store):
        mouse.get(base + "/")
        wait_state(mouse, "question")
        hint = mouse.find_element("css selector", "#pairs .hint.keys")
        assert mouse.execute_script("return matchMedia('(hover: hover) and (pointer: fine)').matches")
        assert hint.is_displayed() and hint.text == "Keys: ← the first item, → the second, ↓ no preference."
        mouse.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                              {"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": True})
        mouse.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
        mouse.refresh()
        wait_state(mouse, "question")
        hint = mouse.find_element("css selector", "#pairs .hint.keys")
        assert mouse.execute_script("return matchMedia('(hover: none) and (pointer: coarse)').matches")
        assert not hint.is_displayed() and fits(mouse)
        assert all(mouse.find_element("id", b).is_displayed() for b in ("choose-left", "choose-none", "choose-right"))
        assert console_problems(mouse) == []
