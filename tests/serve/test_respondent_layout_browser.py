"""The respondent's page as a phone shows it, in real Chromium (390 x 844, touch): the three buttons of a
pair and what the page says of the answer just sent fit on the screen under a survey's description and
the protection sentence, and that is said right under the buttons, above "Continue on another device"; the
button tapped does not leave the next pair's button in its place marked;
after a ranking, the page says a random report was sent, never that the ranking was kept."""
import re

import pytest
from test_browser import DESSERTS, driver, site, survey_of, tap, text, wait_state  # noqa: F401 (fixtures)

pytestmark = pytest.mark.slow  # end to end, in a real browser

#: the demo survey's long title, question and item names, with a description of two lines on a phone
TEXTS = {"title": "Which language model answers better?",
         "description": "We compare language models for our team's assistant. It takes about two minutes."}
ITEMS = ["Platypus-2 Instruct (70B)", "GPT-NeoXT-Chat-Base (20B)", "Chronos Hermes (13B)", "Qwen-Chat (7B)"]

#: each element's top and bottom in the window, and the window's height
BOXES = """
const box = (el) => { const r = el.getBoundingClientRect(); return [r.top, r.bottom]; };
return {height: innerHeight, width: document.documentElement.scrollWidth,
        buttons: ['choose-left', 'choose-none', 'choose-right'].map((id) => box(document.getElementById(id))),
        status: box(document.getElementById('status')), coin: box(document.getElementById('coin')),
        elsewhere: box(document.getElementById('elsewhere'))};
"""


@pytest.fixture
def phone(driver):  # noqa: F811
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    yield driver
    driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})


def test_a_phone_shows_the_pair_and_what_became_of_the_answer(phone, site):  # noqa: F811
    site(survey_of(ITEMS, max_answers=5, **TEXTS))
    wait_state(phone, "question")
    first = phone.execute_script(BOXES)
    assert first["width"] <= 390
    assert all(bottom - top >= 44 and bottom <= first["height"] for top, bottom in first["buttons"]), first
    tap(phone, phone.find_element("id", "choose-left"))
    wait_state(phone, "question")
    # the spot tapped keeps :hover on a touch screen: the next pair's button there looks like the others
    borders = phone.execute_script("return ['choose-left', 'choose-none', 'choose-right'].map((id) => "
                                   "getComputedStyle(document.getElementById(id)).borderTopColor)")
    assert len(set(borders)) == 1, borders
    tap(phone, phone.find_element("css selector", "#elsewhere summary"))  # the note opened
    after = phone.execute_script(BOXES)
    # "Sent." and the coin right under the buttons, on screen; the note on another device below them
    assert after["buttons"][-1][1] <= after["status"][0] < after["coin"][0] < after["elsewhere"][0], after
    assert after["coin"][1] <= after["height"], after


def test_a_ranking_is_never_said_to_be_kept(phone, site):  # noqa: F811
    """A ballot is a random report drawn on one side of the ranking: the note after it says so, not that the
    browser "kept your answer" (which reads as if the ranking itself was sent)."""
    site(survey_of(DESSERTS[:4], design="ranking", max_answers=1))
    wait_state(phone, "ranking")
    tap(phone, phone.find_element("id", "submit-ranking"))
    wait_state(phone, "done")
    assert re.fullmatch(r"Your browser sent a random report instead of your ranking, drawn on the "
                        r"(same side as|side opposite to) your ranking\.", text(phone, "coin")), text(phone, "coin")
