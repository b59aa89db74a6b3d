"""One respondent on two devices, in two Chromium profiles against the real server: the second device
finishes the survey the first started, never asked a pair the first answered, within one budget --
with the invitation's link, or on an open survey with the page's "Continue on another device" link.
A server that gives the second device a fresh token (a second budget) is caught."""
import pytest
from test_browser import (DESSERTS, chromium, console_problems, declared_survey, driver,  # noqa: F401 (a fixture)
                          give_answer, real_server, state, text, wait_for, wait_state)
from test_resume import fresh_token_on_resume

pytestmark = pytest.mark.slow  # end to end, in two real browsers

CAP = 4  # of the 6 pairs of 4 items


@pytest.fixture(scope="module")
def other_device():
    drv = chromium()
    yield drv
    drv.quit()


def answer(drv, n) -> list[frozenset]:
    """Answer ``n`` pairs (or until the page is done); returns the pairs shown."""
    shown = []
    for _ in range(n):
        wait_state(drv, "question", "done")
        if state(drv) == "done":
            break
        shown.append(frozenset((text(drv, "choose-left"), text(drv, "choose-right"))))
        give_answer(drv, "click-left")
        wait_state(drv, "question", "done", "sending")
        wait_for(drv, lambda d: state(d) != "sending")
    return shown


def resume_link(drv) -> str:
    """The page's "Continue on another device" link, read as a person would: after opening the note."""
    link = drv.find_element("id", "elsewhere-link")
    assert not link.is_displayed()  # folded away until asked for: the token is not on screen
    drv.find_element("css selector", "#elsewhere summary").click()
    wait_for(drv, lambda d: link.is_displayed())
    assert "Keep it to yourself" in text(drv, "elsewhere-text")
    return link.get_attribute("href")


def two_devices(first, second, tmp_path, invited: bool):
    """The first device answers two pairs, the second opens the same invitation (or the first's resume link)
    and finishes: the second is asked only the pairs the first was not, the server holds one respondent
    with CAP reports, and the first, reloaded, is done too."""
    survey = declared_survey(DESSERTS[:4], budget=float(CAP))
    with real_server(survey, tmp_path / f"survey-{invited}.sqlite") as (recorder, base, store):
        link = f"{base}/#invite={store.add_invitations(1)[0]}" if invited else f"{base}/"
        first.get(link)
        before = answer(first, 2)
        if invited:
            assert "Open the link of your invitation" in text(first, "elsewhere-text")
            assert not first.find_element("id", "elsewhere-link").is_displayed()
        else:
            link = resume_link(first)
            assert link.startswith(f"{base}/#resume=")
        second.get(link)
        wait_state(second, "question")
        assert second.current_url == f"{base}/"  # the code left the address bar
        assert text(second, "progress") == f"Answer 3 of {CAP}"
        after = answer(second, CAP)
        assert state(second) == "done" and "all the answers this survey asks for" in text(second, "status")
        assert len(before) == 2 and len(after) == CAP - 2 and not set(before) & set(after)
        assert store.counts() == (1, CAP)
        assert set(recorder.statuses("/api/reports")) == {201}  # no pair sent twice, no answer past the budget
        assert len({body["token"] for body in recorder.posts("/api/reports")}) == 1
        first.refresh()
        wait_state(first, "done")
        assert "all the answers this survey asks for" in text(first, "status")
        assert console_problems(first) == [] and console_problems(second) == []


@pytest.mark.parametrize("invited", [True, False], ids=["invitation", "resume-link"])
def test_a_second_device_finishes_what_the_first_started(driver, other_device, tmp_path, invited):  # noqa: F811
    two_devices(driver, other_device, tmp_path, invited)


def test_a_second_device_given_a_fresh_token_is_caught(driver, other_device, tmp_path, monkeypatch):  # noqa: F811
    """The control: a server that registers the invitation's second device as a new respondent."""
    fresh_token_on_resume(monkeypatch)
    with pytest.raises(AssertionError):
        two_devices(driver, other_device, tmp_path, invited=True)
