"""The dashboard in real Chromium, for a pairs survey and a ranking survey: it fits a 390 x 844 phone
(no sideways scrolling of the page, a table reflowed to show its rank intervals, readable text, a
plot scaled to the width with round axis ticks) and a desktop window."""
import math
import re

import numpy as np
import pytest
from serve_helpers import key
from test_browser import driver, serving  # noqa: F401 (driver is a fixture)
from test_dashboard import fill
from test_server import ballot

from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app
from privrank.serve.dashboard import reports_needed, survey_threshold
from privrank.serve.survey import Survey

pytestmark = pytest.mark.slow  # end to end, in a real browser

ADMIN = "dashboard-browser-admin-token-0123"
ITEMS = ("Apple pie", "Brownie", "n.a.", "two  spaces", "Crème brûlée",
         ("A very long dessert name that no phone can show on one line " * 3).strip(),
         "Supercalifragilisticexpialidociousness" * 2, "Flan")

METRICS = """
const root = document.documentElement, svg = document.querySelector('svg');
const box = svg.getBoundingClientRect();
const size = el => parseFloat(getComputedStyle(el).fontSize);
return {
  innerWidth: window.innerWidth, scrollWidth: root.scrollWidth, bodyScrollWidth: document.body.scrollWidth,
  textSizes: [...document.querySelectorAll('p, li, td, th')].map(size),
  svgLeft: box.left, svgRight: box.right, svgWidth: box.width,
  ticks: [...svg.querySelectorAll('text.tick')].map(t => [t.textContent, t.getBoundingClientRect().height,
                                                          t.getBoundingClientRect().left, t.getBoundingClientRect().right]),
  labels: [...svg.querySelectorAll('text.label')].map(t => [t.getBoundingClientRect().left,
                                                            t.getBoundingClientRect().right]),
  // each label's and its dot's vertical centre, the label's right edge, and the plot's left edge (its axis)
  rows: [...svg.querySelectorAll('text.label')].map((t, k) => {
    const label = t.getBoundingClientRect(), dot = svg.querySelectorAll('circle')[k].getBoundingClientRect();
    return [(label.top + label.bottom) / 2, (dot.top + dot.bottom) / 2, label.right]; }),
  plotLeft: svg.querySelector('line.axis').getBoundingClientRect().left,
  items: [...document.querySelectorAll('td.item')].map(td => td.textContent),
  numberLines: [...document.querySelectorAll('td:not(.item)')].map(td => {
    const range = document.createRange(); range.selectNodeContents(td); return range.getClientRects().length; }),
  tableBox: (document.querySelector('.scroll') || document.getElementById('ranking'))
    .getBoundingClientRect().right,
};
"""

#: the rank-interval column (the table's last) as the page opens: whether the table's box must scroll
#: sideways to show it, and each of its cells' left and right edges in the window
RANK_COLUMN = """
const box = document.querySelector('.scroll');
const cells = [...document.querySelectorAll('#ranking tr > :last-child')];
return {scrolls: box.scrollWidth > box.clientWidth, header: cells[0].textContent,
        edges: cells.map(c => [c.getBoundingClientRect().left, c.getBoundingClientRect().right])};
"""


@pytest.fixture(scope="module", params=["pairs", "ranking"])
def dashboard_url(request, tmp_path_factory):
    """The dashboard of a survey of ITEMS with enough reports to rank: pairs (epsilon 1, 5 answers
    each) or ranking ballots (epsilon 2)."""
    pairs = request.param == "pairs"
    survey = Survey(title="Dessert survey", question="Which dessert do you prefer?", items=ITEMS,
                    design=request.param, epsilon=1.0 if pairs else 2.0, budget=5.0 if pairs else None)
    store = open_store(tmp_path_factory.mktemp("dash") / "survey.sqlite")
    store.claim(survey.fingerprint())
    survey_threshold(survey)  # known when the server starts, as on a server that has run a while
    if pairs:
        fill(store, survey, 900, theta=np.linspace(1.5, -1.5, len(ITEMS)))
    else:
        rng = np.random.default_rng(0)
        for _ in range(reports_needed("ranking", len(ITEMS), 2.0, 1)):
            store.add_report(store.new_respondent(), key=key(), epsilon=2.0, max_answers=1,
                             vector=ballot(survey, np.arange(len(ITEMS)), rng))
    with serving(create_app(survey, store, admin_token_hash(ADMIN))) as base:
        yield f"{base}/dashboard?token={ADMIN}"
    store.close()


def metrics(drv, url) -> dict:
    drv.get(url)
    assert drv.find_element("id", "ranking")
    return drv.execute_script(METRICS)


def check_ticks(ticks) -> None:
    """Tick labels are round numbers: equally spaced multiples of 1, 2 or 5 times a power of ten."""
    values = [float(t[0]) for t in ticks]
    assert 2 <= len(values) <= 7 and all(re.fullmatch(r"-?\d+(\.\d{1,3})?", t[0]) for t in ticks), ticks
    step = values[1] - values[0]
    assert np.allclose(np.diff(values), step)
    mantissa = step / 10 ** math.floor(math.log10(step) + 1e-9)
    assert min(abs(mantissa - f) for f in (1, 2, 5)) < 1e-6


def check_rows(m) -> None:
    """Every plot label is centred on its own dot's line (within 1.5 px, a row being about 24) and ends
    before the plot begins."""
    assert len(m["rows"]) == len(ITEMS)
    assert all(abs(label - dot) <= 1.5 for label, dot, _ in m["rows"]), m["rows"]
    assert all(right <= m["plotLeft"] for *_, right in m["rows"]), (m["rows"], m["plotLeft"])


def test_the_dashboard_fits_a_phone(driver, dashboard_url):  # noqa: F811
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
    try:
        m = metrics(driver, dashboard_url)
        column = driver.execute_script(RANK_COLUMN)
        wide = driver.execute_script("return document.documentElement.scrollWidth")
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    # the table reflows to the phone's width: the rank intervals are on screen as the page opens, no
    # sideways scrolling of the page or of the table's box
    assert column["header"] == "95% rank interval" and wide <= 390 and not column["scrolls"], column
    assert all(0 <= left < right <= 390 for left, right in column["edges"]), column
    assert m["innerWidth"] == 390  # the viewport is the phone's, not a zoomed-out desktop page
    assert m["scrollWidth"] <= m["innerWidth"] and m["bodyScrollWidth"] <= m["innerWidth"]
    assert min(m["textSizes"]) >= 14
    assert 0 <= m["svgLeft"] and m["svgRight"] <= 390 and m["svgWidth"] >= 300  # scaled to the width
    check_ticks(m["ticks"])
    assert all(h >= 10 and 0 <= left and right <= 390 for _, h, left, right in m["ticks"])  # readable, on screen
    check_rows(m)
    assert all(m["svgLeft"] <= left and right <= m["svgRight"] for left, right in m["labels"])
    assert m["tableBox"] <= 390 and set(m["numberLines"]) == {1}  # the table scrolls in its box; no number breaks
    assert sorted(m["items"]) == sorted(ITEMS)  # every label as it is, its spaces kept


def test_the_dashboard_at_desktop_width(driver, dashboard_url):  # noqa: F811
    driver.set_window_size(1280, 900)
    try:
        m = metrics(driver, dashboard_url)
    finally:
        driver.set_window_size(1000, 800)
    assert m["scrollWidth"] <= m["innerWidth"]
    assert min(m["textSizes"]) >= 14
    assert 360 <= m["svgWidth"] <= 520  # scaled up, but not to the whole window
    check_ticks(m["ticks"])
    assert all(10 <= h <= 24 for _, h, _, _ in m["ticks"])
    check_rows(m)
    assert all(m["svgLeft"] <= left and right <= m["svgRight"] for left, right in m["labels"])
