"""The respondent's page and its randomizers, in a real headless Chromium.

* The laws of ``static/randomizer.js`` (randomized response on a comparison, the Duchi et al.
  l2 report of a ranking) are tested on reports drawn in the browser against the exactly known
  laws, with negative controls (the right samples against the half-epsilon law, and a browser
  randomizer run at half epsilon against the claimed law) that must be caught.
* The page is driven end to end against a small fake of the server (:func:`contract_app`, the
  contract of ``privrank serve``) wrapped in a :class:`Recorder` that keeps every request body.
  ``PRIVRANK_BROWSER_SERVER=real`` runs the same tests against the real application
  (:func:`privrank.serve.app.create_app` on a temporary SQLite store) instead; the tests that
  need the fake's failure modes are then skipped.

Needs /usr/bin/chromium and /usr/bin/chromedriver (Debian: ``apt-get install chromium
chromium-driver``); skipped otherwise. ``PRIVRANK_SCREENSHOTS=1`` also writes
docs/img/respondent.png and docs/img/respondent-ranking.png.
"""
from __future__ import annotations

import asyncio
import base64
import hashlib
import http.server
import itertools
import json
import math
import os
import re
import secrets
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from serve_helpers import free_port, key

import privrank
from privrank.mechanisms.local_vectors import duchi_l2, duchi_l2_scale

CHROMIUM = os.environ.get("PRIVRANK_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("PRIVRANK_CHROMEDRIVER", "/usr/bin/chromedriver")
STATIC = Path(privrank.__file__).resolve().parent / "serve" / "static"
DOCS_IMG = Path(__file__).resolve().parents[2] / "docs" / "img"

_missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.access(p, os.X_OK)]
pytestmark = pytest.mark.skipif(
    bool(_missing),
    reason=f"browser tests need headless Chromium: {', '.join(_missing)} not found "
           "(Debian: apt-get install chromium chromium-driver)")

REAL_SERVER = os.environ.get("PRIVRANK_BROWSER_SERVER") == "real"
# The browser's crypto.getRandomValues cannot be seeded, so these tests draw fresh randomness
# every run: the levels keep a correct randomizer's chance of failing the ~20 checks below
# about 1e-6 per run, while every half-epsilon control lands many orders of magnitude lower.
P_OK = 1e-8       # a correct law must not be rejected at this level
P_CAUGHT = 1e-12  # a broken one must be
Z_OK = 6.0        # |z| of a coordinate's mean (two-sided p about 2e-9)


def keep(eps: float) -> float:
    """P(report = truth) of randomized response: e^eps / (1 + e^eps)."""
    return 1.0 / (1.0 + math.exp(-eps))


def binom_p(successes: int, n: int, p: float) -> float:
    return float(stats.binomtest(int(successes), int(n), p).pvalue)


def report_p(name: str, p: float) -> float:
    print(f"\n  p-value {name}: {p:.3g}")
    return p


def chromium():
    """A headless Chromium of a new, empty profile (its own storage: a device of its own)."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1000,800"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    drv.set_script_timeout(300)
    return drv


@pytest.fixture(scope="module")
def driver():
    drv = chromium()
    yield drv
    drv.quit()


# ---- 1, 2. the randomizers' laws ----------------------------------------------------------------

class _StaticHandler(http.server.SimpleHTTPRequestHandler):
    """The package's static directory at /static/, and an empty page at / (modules need http)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=str(STATIC), **kwargs)

    def do_GET(self):
        if self.path == "/":
            page = b'<!doctype html><meta charset="utf-8"><title>randomizer laws</title>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)
        elif self.path.startswith("/static/"):
            self.path = self.path[len("/static"):]
            super().do_GET()
        else:
            self.send_error(404)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def law_page(driver):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _StaticHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    driver.get(f"http://127.0.0.1:{server.server_address[1]}/")
    yield driver
    server.shutdown()
    server.server_close()
    thread.join()


_JS_PRELUDE = """
const done = arguments[arguments.length - 1];
const args = Array.from(arguments).slice(0, -1);
const b64 = (a) => {
  const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  let s = '';
  for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode.apply(null, u.subarray(i, i + 0x8000));
  return btoa(s);
};
import('/static/randomizer.js')
  .then((R) => (%s)(R, ...args))
  .then(done, (e) => done({__error: String(e && e.stack || e)}));
"""


def run_js(drv, function_source: str, *args):
    """Run ``(R, ...args) => result`` in the browser with R the randomizer module."""
    result = drv.execute_async_script(_JS_PRELUDE % function_source, *args)
    if isinstance(result, dict) and "__error" in result:
        raise AssertionError(f"JavaScript error: {result['__error']}")
    return result


def decode(text: str, dtype) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype=dtype)


def draw_comparisons(drv, truth: int, eps: float, n: int):
    out = run_js(drv, """(R, truth, eps, n) => {
        const reports = new Int8Array(n), flipped = new Int8Array(n);
        for (let k = 0; k < n; k++) {
          const d = R.randomizeComparison(truth, eps);
          reports[k] = d.report;
          flipped[k] = d.flipped ? 1 : 0;
        }
        return {reports: b64(reports), flipped: b64(flipped)};
    }""", truth, eps, n)
    return decode(out["reports"], np.int8), decode(out["flipped"], np.int8)


@pytest.mark.slow
def test_uniform_has_53_random_bits(law_page):
    n = 100_000
    u = decode(run_js(law_page, """(R, n) => {
        const u = new Float64Array(n);
        for (let k = 0; k < n; k++) u[k] = R.uniform();
        return b64(u);
    }""", n), "<f8")
    assert u.min() >= 0.0 and u.max() < 1.0
    k = u * 2.0 ** 53
    assert np.all(k == np.floor(k))  # multiples of 2^-53
    report_p("uniform KS", p := stats.kstest(u, "uniform").pvalue)
    assert p > P_OK
    # the lowest of the 53 bits is a fair coin too (so every bit is used)
    assert binom_p(int(np.sum(np.mod(k, 2) == 1)), n, 0.5) > P_OK


def test_comparison_law_and_controls(law_page):
    n, eps = 200_000, 1.0
    t0 = time.perf_counter()
    reports, flipped = draw_comparisons(law_page, 1, eps, n)
    print(f"\n  {n} comparisons drawn in the browser in {time.perf_counter() - t0:.2f} s")
    assert set(np.unique(reports)) <= {1, -1}
    assert np.array_equal(reports, np.where(flipped == 1, -1, 1))  # flipped says what happened
    kept = int(np.sum(reports == 1))
    se = math.sqrt(keep(eps) * (1 - keep(eps)) / n)
    assert abs(kept / n - keep(eps)) < 5 * se
    assert report_p("truth=+1, eps=1", binom_p(kept, n, keep(eps))) > P_OK
    # deliberately broken control: the same samples against the half-epsilon law
    assert report_p("truth=+1 vs eps/2 law (control)", binom_p(kept, n, keep(eps / 2))) < P_CAUGHT
    # a genuinely broken randomizer: run at eps/2 in the browser, tested against the eps law
    broken, _ = draw_comparisons(law_page, 1, eps / 2, n)
    assert report_p("randomizer at eps/2 vs eps law (control)",
                    binom_p(int(np.sum(broken == 1)), n, keep(eps))) < P_CAUGHT

    # truth -1: the mirror image
    reports, flipped = draw_comparisons(law_page, -1, eps, n)
    assert np.array_equal(reports, np.where(flipped == 1, 1, -1))
    assert report_p("truth=-1, eps=1", binom_p(int(np.sum(reports == -1)), n, keep(eps))) > P_OK


@pytest.mark.slow
def test_no_preference_is_a_fair_coin(law_page):
    n, eps = 200_000, 1.0
    reports, flipped = draw_comparisons(law_page, 0, eps, n)
    assert set(np.unique(reports)) <= {1, -1}
    assert report_p("truth=0: P(+1) = 1/2", binom_p(int(np.sum(reports == 1)), n, 0.5)) > P_OK
    assert report_p("truth=0: P(flip) = 1/(1+e^eps)",
                    binom_p(int(np.sum(flipped)), n, 1 - keep(eps))) > P_OK
    # the report is independent of the coin shown to the respondent
    table = np.array([[np.sum((reports == r) & (flipped == f)) for f in (0, 1)] for r in (1, -1)])
    assert report_p("truth=0: report independent of the coin",
                    stats.chi2_contingency(table).pvalue) > P_OK


def test_static_files_are_self_contained():
    """No inline script or style (the server's CSP is default-src 'self'), nothing off-site."""
    html = (STATIC / "index.html").read_text()
    assert re.findall(r"<script\b[^>]*?(?= integrity=)", html) == ['<script type="module" src="static/respondent.js"']
    assert len(re.findall(r"<script\b", html)) == 1  # its integrity: tests/serve/test_page_integrity.py
    assert "<style" not in html and " style=" not in html and " on" + "click=" not in html
    for name in ("index.html", "randomizer.js", "respondent.js", "preview.js", "style.css"):
        source = (STATIC / name).read_text()
        assert not re.search(r"https?://|//cdn|@import|innerHTML|console\.", source), name


def test_randomizers_reject_bad_input(law_page):
    errors = run_js(law_page, """(R) => {
        const bad = [() => R.randomizeComparison(2, 1), () => R.randomizeComparison(1, 0),
                     () => R.randomizeComparison(1, -1), () => R.randomizeComparison(1, NaN),
                     () => R.randomizeComparison(1, Infinity), () => R.keepProbability('1'),
                     () => R.duchiReport([0, 0, 1], 1, 2), () => R.duchiReport([0, 2], 1, 2),
                     () => R.duchiReport([0], 1, 2), () => R.duchiReport([0, 1], 1, 0),
                     // outside EPSILON_RANGE: at 40 the true answer would be kept with probability 1
                     () => R.randomizeComparison(1, 40), () => R.randomizeComparison(1, 0.005),
                     () => R.duchiReport([0, 1], 10.5, 2), () => R.keepProbability(1e300)];
        const edges = [R.keepProbability(0.01), R.keepProbability(10)];
        return [bad.map((f) => { try { f(); return null; } catch (e) { return e.name; } }), edges,
                R.EPSILON_RANGE];
    }""")
    assert errors[0] == ["RangeError"] * 14
    assert errors[1] == pytest.approx([keep(0.01), keep(10.0)])  # the range's ends are accepted
    from privrank.serve.survey import EPSILON_RANGE
    assert tuple(errors[2]) == EPSILON_RANGE  # the page checks the server's range


def python_pair_vector(order) -> np.ndarray:
    """v of privrank.mechanisms.pairwise_matrix.local_pair_reports for one ranking."""
    order = np.asarray(order)
    pos = np.argsort(order)
    iu, ju = np.triu_indices(order.size, 1)
    return (pos[iu] < pos[ju]) - 0.5


def test_pair_vector_matches_python(law_page):
    rng = np.random.default_rng(3)
    orders = [rng.permutation(m).tolist() for m in (2, 3, 4, 5, 7, 9) for _ in range(3)]
    got = run_js(law_page, "(R, orders) => orders.map((o) => R.pairVector(o))", orders)
    for order, v in zip(orders, got):
        np.testing.assert_array_equal(np.array(v), python_pair_vector(order))
    assert run_js(law_page, "(R) => R.pairs(4)") == [[0, 1], [0, 2], [0, 3], [1, 2], [1, 3], [2, 3]]


def draw_duchi(drv, order, eps: float, scale: float, n: int) -> np.ndarray:
    out = run_js(drv, """(R, order, eps, scale, n) => {
        const M = order.length * (order.length - 1) / 2;
        const z = new Float64Array(n * M);
        for (let k = 0; k < n; k++) z.set(R.duchiReport(order, eps, scale), k * M);
        return b64(z);
    }""", order, eps, scale, n)
    m = len(order)
    return decode(out, "<f8").reshape(n, m * (m - 1) // 2)


@pytest.mark.slow
def test_duchi_report_law_and_controls(law_page):
    order, eps, n = [2, 0, 4, 1, 3], 1.0, 50_000
    M = 10
    radius = math.sqrt(M) / 2
    scale = duchi_l2_scale(M, radius, eps)
    v = python_pair_vector(order)
    assert np.linalg.norm(v) == pytest.approx(radius)

    t0 = time.perf_counter()
    Z = draw_duchi(law_page, order, eps, scale, n)
    print(f"\n  {n} Duchi reports (M = {M}) drawn in the browser in {time.perf_counter() - t0:.2f} s")
    assert np.max(np.abs(np.linalg.norm(Z, axis=1) / scale - 1)) < 1e-9

    towards = int(np.sum(Z @ v > 0))
    assert report_p("Duchi P(<Z,v> > 0) = e^eps/(1+e^eps)", binom_p(towards, n, keep(eps))) > P_OK
    assert report_p("Duchi same samples vs eps/2 law (control)",
                    binom_p(towards, n, keep(eps / 2))) < P_CAUGHT
    broken = draw_duchi(law_page, order, eps / 2, scale, n)
    assert report_p("Duchi randomizer at eps/2 vs eps law (control)",
                    binom_p(int(np.sum(broken @ v > 0)), n, keep(eps))) < P_CAUGHT

    # unbiased: E[Z] = v; each coordinate has variance B^2/M - v_k^2 = B^2/M - 1/4
    se = math.sqrt((scale ** 2 / M - 0.25) / n)
    z_scores = (Z.mean(axis=0) - v) / se
    print(f"  Duchi mean: max |z| over the {M} coordinates = {np.max(np.abs(z_scores)):.2f}")
    assert np.all(np.abs(z_scores) < Z_OK)
    assert np.var(Z, axis=0) == pytest.approx(np.full(M, scale ** 2 / M - 0.25), rel=0.05)

    # the same distribution as the Python mechanism for the same v
    python = duchi_l2(np.tile(v, (n, 1)), radius=radius, epsilon=eps, rng=np.random.default_rng(2024))
    assert report_p("Duchi coordinate 0 vs Python duchi_l2 (KS)",
                    stats.ks_2samp(Z[:, 0], python[:, 0]).pvalue) > P_OK
    u = v / radius
    assert report_p("Duchi <Z,u> vs Python duchi_l2 (KS)",
                    stats.ks_2samp(Z @ u, python @ u).pvalue) > P_OK


def test_duchi_two_items(law_page):
    scale = duchi_l2_scale(1, 0.5, 1.0)
    Z = draw_duchi(law_page, [1, 0], 1.0, scale, 20_000)  # v = (-1/2): item 1 first
    assert np.allclose(np.abs(Z), scale, rtol=1e-12)
    assert binom_p(int(np.sum(Z < 0)), Z.shape[0], keep(1.0)) > P_OK


# ---- 3. the page, against a fake server implementing the contract -------------------------------

def contract_app(survey: dict, *, server_limit: int | None = None):
    """A stand-in for ``privrank.serve.app.create_app`` implementing the serve contract.

    ``server_limit`` makes the server accept fewer reports than ``max_answers`` while still
    answering ``remaining`` from ``max_answers`` (as if another tab had used the budget), so
    the page meets a 409. ``app.state.tokens`` maps the tokens it knows to their reports
    (clear it to make the server forget every respondent). Reports carry an idempotency ``key``:
    the same key and content again is a duplicate (200), another key for a pair already reported
    is refused (409 ``pair-answered``), as is a key reused with other content (``key-reused``).
    Swap this function for the real application to run the page tests against it.
    """
    from starlette.applications import Starlette
    from starlette.responses import FileResponse, JSONResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    tokens: dict[str, dict] = {}  # token -> {key: report body without the token}
    items = survey["items"]
    m = len(items)
    limit = survey["max_answers"] if server_limit is None else server_limit
    ranking = survey["design"] == "ranking"
    fields = {"token", "key", "vector", "epsilon"} if ranking else {"token", "key", "item_a", "item_b", "report",
                                                                    "epsilon"}

    def error(status, message, reason=None):
        return JSONResponse({"error": message, **({"reason": reason} if reason else {})}, status_code=status)

    async def page(request):
        return FileResponse(STATIC / "index.html")

    async def get_survey(request):
        return JSONResponse(survey)

    async def respondents(request):
        token = secrets.token_urlsafe(24)
        tokens[token] = {}
        return JSONResponse({"token": token}, status_code=201)

    async def reports(request):
        try:
            body = await request.json()
        except ValueError:
            return error(400, "the body must be JSON")
        if not isinstance(body, dict) or set(body) != fields:
            return error(400, f"expected exactly the fields {sorted(fields)}")
        if body["token"] not in tokens:
            return error(404, "unknown token")
        if not re.fullmatch(r"[A-Za-z0-9_-]{22}", str(body["key"])):
            return error(400, "key must be 22 characters of base64url")
        if body["epsilon"] != survey["epsilon"]:
            return error(400, "epsilon differs from the survey's")
        if ranking:
            vec = body["vector"]
            if (not isinstance(vec, list) or len(vec) != m * (m - 1) // 2
                    or not all(isinstance(x, (int, float)) for x in vec)):
                return error(400, "vector must hold M numbers")
        elif (body["item_a"] not in items or body["item_b"] not in items
              or body["item_a"] == body["item_b"] or body["report"] not in (1, -1)):
            return error(400, "bad comparison")
        held = tokens[body["token"]]
        content = {k: v for k, v in body.items() if k not in ("token", "key")}
        remaining = max(0, survey["max_answers"] - len(held))
        if body["key"] in held:
            if held[body["key"]] != content:
                return error(409, "this key was used for another report", "key-reused")
            return JSONResponse({"remaining": remaining, "duplicate": True}, status_code=200)
        if not ranking and any({r["item_a"], r["item_b"]} == {body["item_a"], body["item_b"]} for r in held.values()):
            return error(409, "this pair was already reported", "pair-answered")
        if len(held) >= limit:
            return error(409, "privacy budget exhausted", "exhausted")
        held[body["key"]] = content
        return JSONResponse({"remaining": remaining - 1}, status_code=201)

    async def progress(request):
        held = tokens.get((await request.json()).get("token"))
        if held is None:
            return error(404, "unknown token")
        doc = {"answered": len(held), "remaining": max(0, survey["max_answers"] - len(held))}
        if ranking:
            return JSONResponse({**doc, "ballot": bool(held)})
        return JSONResponse({**doc, "pairs": [[r["item_a"], r["item_b"]] for r in held.values()]})

    app = Starlette(routes=[
        Route("/", page),
        Route("/api/survey", get_survey),
        Route("/api/respondents", respondents, methods=["POST"]),
        Route("/api/reports", reports, methods=["POST"]),
        Route("/api/progress", progress, methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ])
    app.state.tokens = tokens

    async def with_csp(scope, receive, send):
        async def send_csp(message):
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = list(message["headers"]) + [
                    (b"content-security-policy", b"default-src 'self'")]
            await send(message)
        await app(scope, receive, send_csp if scope["type"] == "http" else send)
    with_csp.state = app.state
    return with_csp


def real_app(survey: dict, directory: Path):
    """The real application for the same survey, on a new SQLite store in ``directory``."""
    from privrank.serve.app import admin_token_hash, create_app
    from privrank.serve.sqlite_store import SqliteStore
    from privrank.serve.survey import Survey

    declared = Survey(title=survey["title"], question=survey["question"], items=tuple(survey["items"]),
                      design=survey["design"], epsilon=survey["epsilon"],
                      budget=survey["budget"] if survey["design"] == "pairs" else None,
                      **{name: survey[name] for name in ("description", "consent", "contact", "closing")})
    from privrank.serve.app import survey_document

    store = SqliteStore(directory / f"{secrets.token_hex(8)}.sqlite")
    app = create_app(declared, store, admin_token_hash(secrets.token_urlsafe(24)))
    return app, survey_document(declared, False), store


def fake_only():
    if REAL_SERVER:
        pytest.skip("needs the fake server's failure modes (PRIVRANK_BROWSER_SERVER=real)")


class Recorder:
    """ASGI wrapper of any app of the contract: records every request; can hold report POSTs."""

    def __init__(self, app):
        self.app = app
        self.requests: list[dict] = []
        self.gate = threading.Event()  # cleared: POST /api/reports waits until it is set
        self.gate.set()
        self.outages = 0  # the next this many POST /api/reports get a proxy's 502 (plain text) without reaching the app
        self.lost_replies = 0  # the next this many POST /api/reports reach the app, whose reply is lost (502)
        # (path, status): the next such request gets it instead, as JSON {"error"} with Retry-After: 1
        self.refusals: list[tuple[str, int]] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        entry = {"method": scope["method"], "path": scope["path"], "body": body, "status": None}
        self.requests.append(entry)
        refusal = next((f for f in self.refusals if f[0] == scope["path"]), None)
        if refusal:
            self.refusals.remove(refusal)
            entry["status"] = refusal[1]
            return await self._reply(send, refusal[1], b'{"error": "refused by the test"}', b"application/json",
                                     [(b"retry-after", b"1")])
        if scope["path"] == "/api/reports":
            await asyncio.to_thread(self.gate.wait, 30)
            if self.outages > 0:
                self.outages -= 1
                entry["status"] = 502
                return await self._reply(send, 502, b"bad gateway")
        lose = scope["path"] == "/api/reports" and self.lost_replies > 0
        if lose:
            self.lost_replies -= 1
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def capture(message):
            if message["type"] == "http.response.start":
                entry["status"] = message["status"]
            if not lose:
                await send(message)

        await self.app(scope, replay, capture)
        if lose:  # the app stored the report and replied; a proxy lost the reply: 502
            entry["app_status"], entry["status"] = entry["status"], 502
            await self._reply(send, 502, b"bad gateway")

    @staticmethod
    async def _reply(send, status, body, content_type=b"text/plain", headers=()):
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", content_type), *headers]})
        await send({"type": "http.response.body", "body": body})

    def posts(self, path: str, status: int | None = None) -> list[dict]:
        return [json.loads(r["body"]) for r in self.requests
                if r["method"] == "POST" and r["path"] == path and (status is None or r["status"] == status)]

    def statuses(self, path: str) -> list[int]:
        return [r["status"] for r in self.requests if r["path"] == path]


@contextmanager
def serving(app, port: int = 0):
    """Serve ``app`` with uvicorn on ``port`` (0: a free one) of 127.0.0.1 in a thread; yields its base
    URL. The same port again is the same origin for the browser: the same localStorage."""
    uvicorn = pytest.importorskip("uvicorn")
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off", access_log=False))
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the test server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@pytest.fixture
def site(driver, tmp_path):
    """``site(survey, **fake_options)`` serves the page (a fresh origin: empty localStorage).

    Returns the :class:`Recorder`; its ``survey`` is the survey as the server publishes it.
    """
    pytest.importorskip("starlette")
    opened, stores = [], []

    def open_site(survey, **options):
        if REAL_SERVER:
            app, survey, store = real_app(survey, tmp_path)
            stores.append(store)
        else:
            app = contract_app(survey, **options)
        recorder = Recorder(app)
        recorder.survey = survey
        cm = serving(recorder)
        base = cm.__enter__()
        opened.append(cm)
        driver.get_log("browser")  # start each page with an empty console
        driver.get(base + "/")
        return recorder
    yield open_site
    for cm in opened:
        cm.__exit__(None, None, None)
    for store in stores:
        store.close()


#: an epsilon at which a flip is (practically) impossible: 4.5e-5 per answer; the page refuses more than 10
SURE_EPS = 10.0
SERVED_PROTECTION = "Your answers are perfectly safe with us."  # what a server says: the page ignores it


def survey_id(survey: dict) -> str:
    """The fake's survey identity, as ``Survey.fingerprint()``: the terms, which fix what a report means."""
    fixed = {k: survey[k] for k in ("items", "design", "epsilon", "budget", "mechanism")}
    return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()


def survey_of(items, *, design="pairs", epsilon=1.0, max_answers=20, title="Dessert survey", **texts) -> dict:
    """A survey document of the contract; ``texts``: description, consent, contact, closing (default "")."""
    survey = {"title": title, "question": "Which dessert do you prefer?",
              "items": list(items), "design": design, "epsilon": epsilon,
              "budget": epsilon * max_answers, "max_answers": max_answers,
              "mechanism": "duchi-l2" if design == "ranking" else "randomized-response",
              "protection": SERVED_PROTECTION, "invitations": False, "respondent_unit": "browser",
              "closes": None, "closed": False, "redirect": None,
              **{name: texts.pop(name, "") for name in ("description", "consent", "contact", "closing")}}
    assert not texts, texts
    if design == "ranking":
        M = len(items) * (len(items) - 1) // 2
        survey["duchi_scale"] = duchi_l2_scale(M, math.sqrt(M) / 2, epsilon)
    survey["id"] = survey_id(survey)
    return survey


def protection(survey: dict) -> str:
    """The sentence the page composes from the epsilon and cap it checked itself (e^1 = 2.718...: 2.72)."""
    f = {1.0: "2.72", 10.0: "22,027", 0.5: "1.65"}[survey["epsilon"]]
    where = "with your invitation" if survey["invitations"] else "in this browser"
    if survey["design"] == "ranking":
        return ("Your browser adds random noise to your ranking before sending it: whatever order you choose, "
                f"the report we receive is at most {f} times as likely as it would be for any other order. "
                f"You are asked for one ranking {where}.")
    k = math.floor(survey["budget"] / survey["epsilon"] + 1e-9)
    return ("Your browser flips a coin before sending each answer and may send the opposite of your choice: "
            f"whatever you answer, the report we receive is at most {f} times as likely as it would be had you "
            f"answered differently. You are asked at most {k} answer{'s' * (k != 1)} {where}.")


DESSERTS = ["Apple pie", "Brownie", "Crème brûlée", "Doughnut", "Eclair", "Flan", "Gelato"]


def wait_for(drv, condition, timeout=15, message=""):
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(drv, timeout).until(lambda d: condition(d), message)


def state(drv) -> str:
    return drv.find_element("id", "app").get_attribute("data-state")


def wait_state(drv, *states, timeout=15):
    wait_for(drv, lambda d: state(d) in states, timeout, f"page state never became {states}")


def text(drv, element_id) -> str:
    return drv.find_element("id", element_id).get_attribute("textContent").strip()


def press(drv, *keys):
    from selenium.webdriver.common.action_chains import ActionChains
    ActionChains(drv).send_keys(*keys).perform()


def give_answer(drv, how: str):
    """Answer the pair on screen by mouse or keyboard; returns the label chosen (None: no preference)."""
    from selenium.webdriver.common.keys import Keys
    left, right = text(drv, "choose-left"), text(drv, "choose-right")
    if how == "click-left":
        drv.find_element("id", "choose-left").click()
    elif how == "click-right":
        drv.find_element("id", "choose-right").click()
    elif how == "click-none":
        drv.find_element("id", "choose-none").click()
    elif how == "key-left":
        press(drv, Keys.ARROW_LEFT)
    elif how == "key-right":
        press(drv, Keys.ARROW_RIGHT)
    elif how == "key-down":
        press(drv, Keys.ARROW_DOWN)
    elif how == "tab-enter":  # Tab reaches the first item's button, with a visible focus ring
        press(drv, Keys.TAB)
        active = drv.switch_to.active_element
        assert active.get_attribute("id") == "choose-left"
        assert active.value_of_css_property("outline-style") == "solid"
        assert active.value_of_css_property("outline-width") == "3px"
        press(drv, Keys.ENTER)
    else:
        raise ValueError(how)
    return {"left": left, "right": right, "none": None}[
        "left" if how.endswith(("left", "enter")) else "right" if how.endswith("right") else "none"]


def storage(drv, survey: dict | None = None) -> dict:
    """What the page keeps: one entry, under ``privrank:<id>`` (``survey``'s id when given)."""
    entries = drv.execute_script("return Object.entries(localStorage)")
    assert len(entries) == 1 and re.fullmatch(r"privrank:[0-9a-f]{64}", entries[0][0])
    if survey is not None:
        assert entries[0][0] == f"privrank:{survey['id']}"
    return json.loads(entries[0][1])


def console_problems(drv) -> list[str]:
    """Console messages other than the network errors Chrome logs for 4xx answers and favicon."""
    return [e["message"] for e in drv.get_log("browser")
            if "favicon.ico" not in e["message"] and "Failed to load resource" not in e["message"]]


def check_report_bodies(recorder, survey):
    bodies = recorder.posts("/api/reports")
    for body in bodies:
        assert set(body) == {"token", "key", "item_a", "item_b", "report", "epsilon"}, body
        assert re.fullmatch(r"[A-Za-z0-9_-]{22}", body["key"])
        assert body["report"] in (1, -1) and type(body["report"]) is int
        assert body["epsilon"] == survey["epsilon"]
        assert body["item_a"] in survey["items"] and body["item_b"] in survey["items"]
        assert body["item_a"] != body["item_b"]
        assert isinstance(body["token"], str)
    assert all(b == {} for b in recorder.posts("/api/respondents"))
    # a key is one randomized report: sent again only as it is (a new token after a 404), never redrawn
    by_key = {}
    for body in bodies:
        content = {k: v for k, v in body.items() if k != "token"}
        assert by_key.setdefault(body["key"], content) == content
    return bodies


def randomized_once(bodies) -> bool:
    """Whether every pair was randomized once per token: all its report bodies carry one key."""
    keys = {}
    for b in bodies:
        keys.setdefault((b["token"], frozenset((b["item_a"], b["item_b"]))), set()).add(b["key"])
    return all(len(k) == 1 for k in keys.values())


HOW = ["click-left", "key-left", "click-right", "tab-enter", "click-none", "key-right", "key-down"]
NO_PREFERENCE = "You chose no preference, so your browser sent a random answer."
COIN = re.compile(r"^Your browser (kept|flipped) your answer before sending it\.$|^" + re.escape(NO_PREFERENCE) + "$")


@pytest.mark.slow
def test_pairs_page_answers_until_max_answers(driver, site):
    survey = survey_of(DESSERTS, epsilon=1.0, max_answers=20)  # 21 pairs, at most 20 answers
    recorder = site(survey)
    wait_state(driver, "question")
    assert text(driver, "title") == survey["title"] and driver.title == survey["title"]
    assert text(driver, "protection") == protection(recorder.survey)
    assert text(driver, "coin") == ""
    t0 = time.perf_counter()
    for k in range(20):
        assert text(driver, "progress") == f"Answer {k + 1} of 20"
        shown = {text(driver, "choose-left"), text(driver, "choose-right")}
        if k == 0:  # hold the first report at the server: no coin before the send
            recorder.gate.clear()
        give_answer(driver, HOW[k % len(HOW)])
        if k == 0:
            wait_for(driver, lambda d: len(recorder.posts("/api/reports")) == 1)
            assert state(driver) == "sending"
            assert text(driver, "coin") == ""
            assert driver.find_element("id", "choose-left").get_attribute("disabled") is not None
            recorder.gate.set()
        wait_state(driver, "question", "done")
        assert COIN.match(text(driver, "coin")), text(driver, "coin")
        # the button that was pressed does not keep the focus
        assert driver.switch_to.active_element.get_attribute("id") not in (
            "choose-left", "choose-right", "choose-none")
        body = recorder.posts("/api/reports")[-1]
        assert {body["item_a"], body["item_b"]} == shown
    print(f"\n  20 answers through the page in {time.perf_counter() - t0:.2f} s")
    wait_state(driver, "done")
    assert driver.find_element("id", "pairs").get_attribute("hidden") is not None
    assert not driver.find_element("id", "progress").is_displayed()
    assert "all the answers this survey asks for" in text(driver, "status")  # 1 pair left unasked

    bodies = check_report_bodies(recorder, survey)
    assert len(bodies) == 20 and recorder.statuses("/api/reports") == [201] * 20
    assert len({frozenset((b["item_a"], b["item_b"])) for b in bodies}) == 20  # no pair twice
    assert len(recorder.posts("/api/respondents")) == 1
    assert len({b["token"] for b in bodies}) == 1

    # the device keeps the token and which pairs were sent -- no report once the server has it
    kept = storage(driver, recorder.survey)
    assert set(kept) <= {"token", "pairs", "done"}
    assert kept["token"] == bodies[0]["token"]
    items = survey["items"]
    sent = {(items.index(b["item_a"]), items.index(b["item_b"])): b["report"] for b in bodies}
    assert all(i < j for i, j in sent)  # item_a is the pair's first item in the survey's order
    assert kept["pairs"] == {f"{i}|{j}": {"sent": True} for (i, j) in sent}
    assert console_problems(driver) == []

    # a reload asks nothing more
    driver.refresh()
    wait_state(driver, "done")
    time.sleep(0.3)
    assert len(recorder.posts("/api/reports")) == 20


def test_pairs_page_sends_what_was_clicked_at_large_epsilon(driver, site):
    """At a large epsilon a flip (almost) never happens: every report is the answer given on screen."""
    survey = survey_of(DESSERTS[:4], epsilon=SURE_EPS, max_answers=6)
    recorder = site(survey)
    for how in ["click-left", "key-right", "key-left", "click-right", "tab-enter", "click-none"]:
        wait_state(driver, "question")
        chosen = give_answer(driver, how)
        wait_state(driver, "question", "done")
        body = recorder.posts("/api/reports")[-1]
        if chosen is not None:
            assert (body["item_a"] if body["report"] == 1 else body["item_b"]) == chosen
            assert text(driver, "coin") == "Your browser kept your answer before sending it."
        else:  # nothing to keep: the report is a fair coin's, and the page says so
            assert text(driver, "coin") == NO_PREFERENCE
    wait_state(driver, "done")
    assert "every pair" in text(driver, "status")
    check_report_bodies(recorder, survey)


@pytest.mark.slow
def test_memoized_pairs_are_never_asked_or_sent_again(driver, site):
    survey = survey_of(DESSERTS[:4], max_answers=10)  # 6 pairs
    recorder = site(survey)
    for how in ["click-left", "key-down", "click-right"]:
        wait_state(driver, "question")
        give_answer(driver, how)
        wait_state(driver, "question")
    before = storage(driver)["pairs"]
    driver.refresh()
    wait_state(driver, "question")
    assert text(driver, "progress") == "Answer 4 of 6"
    shown = sorted(survey["items"].index(text(driver, x)) for x in ("choose-left", "choose-right"))
    assert f"{shown[0]}|{shown[1]}" not in before  # a memoized pair is not asked again
    for how in ["key-left", "click-none", "key-right"]:
        wait_state(driver, "question")
        give_answer(driver, how)
        wait_state(driver, "question", "done")
    wait_state(driver, "done")
    assert "every pair" in text(driver, "status")
    bodies = check_report_bodies(recorder, survey)
    assert len(bodies) == 6 and len({frozenset((b["item_a"], b["item_b"])) for b in bodies}) == 6
    assert len(recorder.posts("/api/respondents")) == 1  # the token survives the reload
    assert all(storage(driver)["pairs"][k] == {"sent": True} for k in before)  # sent: only the mark stays
    driver.refresh()
    wait_state(driver, "done")
    time.sleep(0.3)
    assert len(recorder.posts("/api/reports")) == 6
    assert console_problems(driver) == []


@pytest.mark.slow
def test_server_limit_409_and_forgotten_token_404(driver, site):
    survey = survey_of(DESSERTS[:5], max_answers=10)
    fake_only()
    recorder = site(survey, server_limit=2)
    for k in range(5):
        wait_state(driver, "question")
        if k == 2:
            recorder.app.state.tokens.clear()  # the server forgets this browser: 404, new token
        give_answer(driver, "click-left")
        wait_state(driver, "question", "done")
    wait_state(driver, "done")
    # the third report meets a forgetful server, the fifth the server's limit of 2 per token
    assert recorder.statuses("/api/reports") == [201, 201, 404, 201, 201, 409]
    assert len(recorder.posts("/api/respondents")) == 2
    bodies = recorder.posts("/api/reports")
    assert {k: v for k, v in bodies[2].items() if k != "token"} == \
        {k: v for k, v in bodies[3].items() if k != "token"}  # the same report, re-sent
    assert "all the answers this survey allows" in text(driver, "status")
    assert text(driver, "coin") == ""  # the refused report was not sent: no coin
    check_report_bodies(recorder, survey)
    driver.refresh()
    wait_state(driver, "done")
    time.sleep(0.3)
    assert len(recorder.posts("/api/reports")) == 6
    assert console_problems(driver) == []


def test_a_report_that_failed_is_sent_again_unchanged(driver, site):
    survey = survey_of(DESSERTS[:5], max_answers=10)
    recorder = site(survey)
    wait_state(driver, "question")
    give_answer(driver, "click-left")
    wait_state(driver, "question")
    recorder.outages = 1
    give_answer(driver, "key-right")
    wait_state(driver, "error")
    assert text(driver, "status").startswith("Sorry, your answer could not be sent: the survey's server is not "
                                             "answering properly") and text(driver, "coin") == ""
    assert driver.find_element("id", "pairs").get_attribute("hidden") is not None
    pending = {k: v for k, v in storage(driver)["pairs"].items() if not v["sent"]}
    assert len(pending) == 1
    driver.refresh()  # the memoized report is sent again as it was, before any new question
    wait_state(driver, "question")
    assert recorder.statuses("/api/reports") == [201, 502, 201]
    bodies = recorder.posts("/api/reports")
    assert bodies[1] == bodies[2]
    assert all(storage(driver)["pairs"][k] == {"sent": True} for k in pending)
    assert text(driver, "progress") == "Answer 3 of 10"
    check_report_bodies(recorder, survey)
    assert console_problems(driver) == []


def ranking_order(drv) -> list[str]:
    return [x.get_attribute("textContent") for x in drv.find_elements("css selector", "#rank-list li .label")]


def test_ranking_page_keyboard_drag_and_one_ballot(driver, site):
    from selenium.webdriver.common.keys import Keys
    eps = SURE_EPS  # a flip (almost) never happens: the ballot lies on its ranking's side
    survey = survey_of(DESSERTS[:5], design="ranking", epsilon=eps, max_answers=1)
    recorder = site(survey)
    wait_state(driver, "ranking")
    start = ranking_order(driver)
    assert sorted(start) == sorted(survey["items"])

    # keyboard: Tab reaches the first item's buttons (↑ then ↓); Enter on ↓ twice moves it down twice
    driver.find_element("id", "rank-question").click()
    press(driver, Keys.TAB)
    assert driver.switch_to.active_element.get_attribute("aria-label") == f"Move {start[0]} up"
    press(driver, Keys.ENTER)
    assert ranking_order(driver) == start and text(driver, "status") == f"{start[0]} is already first."
    press(driver, Keys.TAB, Keys.ENTER, Keys.ENTER)
    expected = start[1:3] + start[:1] + start[3:]
    assert ranking_order(driver) == expected
    assert f"{start[0]} moved to position 3 of 5." == text(driver, "status")
    assert driver.switch_to.active_element.get_attribute("aria-label") == f"Move {start[0]} down"  # kept

    # drag and drop (HTML5 events, as a mouse drag fires them): the last item to the top
    driver.execute_script("""
        const [list, dragged] = [arguments[0], arguments[0].lastElementChild];
        const target = list.firstElementChild, box = target.getBoundingClientRect();
        const dt = new DataTransfer();
        const fire = (el, type, y) => el.dispatchEvent(new DragEvent(type,
            {bubbles: true, cancelable: true, dataTransfer: dt, clientY: y}));
        fire(dragged, 'dragstart', 0);
        fire(target, 'dragover', box.top + 1);
        fire(target, 'drop', box.top + 1);
        fire(dragged, 'dragend', 0);
    """, driver.find_element("id", "rank-list"))
    expected = expected[-1:] + expected[:-1]
    assert ranking_order(driver) == expected

    recorder.gate.clear()
    driver.find_element("id", "submit-ranking").click()
    wait_for(driver, lambda d: len(recorder.posts("/api/reports")) == 1)
    assert text(driver, "coin") == "" and ranking_order(driver) == []  # the order left the page
    recorder.gate.set()
    wait_state(driver, "done")
    assert text(driver, "coin") == ("Your browser sent a random report instead of your ranking, drawn on the same "
                                    "side as your ranking.")

    (body,) = recorder.posts("/api/reports")
    assert set(body) == {"token", "key", "vector", "epsilon"} and body["epsilon"] == eps
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", body["key"])
    z = np.array(body["vector"])
    assert z.shape == (10,)
    assert np.linalg.norm(z) == pytest.approx(recorder.survey["duchi_scale"], rel=1e-9)
    order = [survey["items"].index(label) for label in expected]
    assert z @ python_pair_vector(order) > 0
    kept = storage(driver, recorder.survey)
    assert set(kept) == {"token", "ballot"} and kept["ballot"] == {"sent": True}  # the report left the device
    assert console_problems(driver) == []
    driver.refresh()
    wait_state(driver, "done")
    time.sleep(0.3)
    assert len(recorder.posts("/api/reports")) == 1


def paragraphs(drv, element_id) -> list[str]:
    return [p.get_attribute("textContent") for p in drv.find_elements("css selector", f"#{element_id} > p")]


CONSENT = "Taking part is voluntary.\n\nYou may stop at any time: close this page."


@pytest.mark.slow
def test_consent_description_contact_and_closing(driver, site):
    """The survey's texts, as plain text (markup shown as written), a paragraph per block. Nothing is
    registered before the respondent agrees; a browser that agreed is not asked again."""
    survey = survey_of(DESSERTS[:3], max_answers=3, description="Our <b>canteen</b>'s menu.\n\nSecond  part.",
                       consent=CONSENT, contact="team@example.org <script>", closing="Thank you!\n\nResults soon.")
    recorder = site(survey)
    wait_state(driver, "consent")
    assert paragraphs(driver, "consent-text") == ["Taking part is voluntary.",
                                                  "You may stop at any time: close this page."]
    agree = driver.find_element("id", "agree")
    assert agree.is_displayed() and agree.text == "I agree — start"
    assert paragraphs(driver, "description") == ["Our <b>canteen</b>'s menu.", "Second  part."]
    assert driver.find_elements("css selector", "#description b, #contact script") == []  # text, never markup
    assert driver.find_element("id", "contact").text == "Questions about this survey: team@example.org <script>"
    assert not driver.find_element("id", "pairs").is_displayed()
    assert not driver.find_element("id", "closing").is_displayed()
    assert "e^" not in driver.find_element("tag name", "body").text
    driver.refresh()
    wait_state(driver, "consent")
    time.sleep(0.5)
    assert recorder.requests and not [r for r in recorder.requests if r["method"] == "POST"]  # nothing registered
    assert driver.execute_script("return localStorage.length") == 0

    driver.find_element("id", "agree").click()
    wait_state(driver, "question")
    assert not driver.find_element("id", "consent").is_displayed()
    assert len(recorder.posts("/api/respondents")) == 1 and storage(driver, recorder.survey)["agreed"] is True
    give_answer(driver, "click-left")
    wait_state(driver, "question")
    driver.refresh()  # a returning respondent: straight to the next question
    wait_state(driver, "question")
    assert not driver.find_element("id", "consent").is_displayed()
    assert len(recorder.posts("/api/respondents")) == 1
    answer_all(driver)
    assert "Thank you" in text(driver, "status")
    assert paragraphs(driver, "closing") == ["Thank you!", "Results soon."]
    assert driver.find_element("id", "closing").is_displayed() and driver.find_element("id", "contact").is_displayed()
    driver.refresh()
    wait_state(driver, "done")
    assert paragraphs(driver, "closing") == ["Thank you!", "Results soon."]
    assert console_problems(driver) == []


def test_without_texts_the_page_shows_none(driver, site):
    site(survey_of(DESSERTS[:3], max_answers=3))
    wait_state(driver, "question")  # no consent asked
    for element in ("description", "consent", "contact", "closing"):
        assert not driver.find_element("id", element).is_displayed(), element


@pytest.mark.parametrize("invitations", [False, True])
@pytest.mark.parametrize("design, epsilon", [("pairs", 1.0), ("pairs", 10.0), ("ranking", 0.5)])
def test_the_served_sentence_is_the_one_the_page_composes(design, epsilon, invitations):
    """``GET /api/survey``'s protection, which the page does not trust, says what the page says."""
    from privrank.serve.survey import Survey
    doc = survey_of(DESSERTS[:4], design=design, epsilon=epsilon, max_answers=1 if design == "ranking" else 5)
    doc["invitations"] = invitations
    declared = Survey(title="T", question="Q", items=tuple(DESSERTS[:4]), design=design, epsilon=epsilon,
                      budget=doc["budget"] if design == "pairs" else None)
    assert declared.protection(invitations) == protection(doc)


def tap(drv, element):
    """A finger's tap on ``element`` (a touch pointer, as on a phone)."""
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    actions = ActionBuilder(drv, mouse=PointerInput(interaction.POINTER_TOUCH, "finger"))
    actions.pointer_action.move_to(element).pointer_down().pointer_up()
    actions.perform()


@pytest.mark.slow
def test_a_phone_ranks_by_tapping_the_buttons(driver, site):
    """A 390 px wide touch screen: every item has ↑ and ↓ buttons (44 px targets, named after the item),
    nothing is wider than the screen, and tapping them reverses the list; the ballot sent is on the side
    of the reversed order (epsilon 10: a flip has probability 4.5e-5)."""
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": 390, "height": 844, "deviceScaleFactor": 3, "mobile": True})
    driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 5})
    try:
        survey = survey_of(DESSERTS, design="ranking", epsilon=SURE_EPS, max_answers=1)
        recorder = site(survey)
        wait_state(driver, "ranking")
        assert driver.execute_script("return window.innerWidth") == 390
        assert driver.execute_script("return document.documentElement.scrollWidth") <= 390
        start = ranking_order(driver)
        for li, label in zip(driver.find_elements("css selector", "#rank-list li"), start):
            up, down = li.find_elements("css selector", "button.move")
            assert (up.get_attribute("aria-label"), down.get_attribute("aria-label")) == (f"Move {label} up",
                                                                                           f"Move {label} down")
            for button in (up, down):
                assert button.size["width"] >= 44 and button.size["height"] >= 44
                assert button.rect["x"] + button.rect["width"] <= 390
        goal = start[::-1]
        taps = 0
        for k, label in enumerate(goal):  # bring each item up to its place
            while (at := ranking_order(driver).index(label)) > k:
                tap(driver, driver.find_elements("css selector", "#rank-list li")[at].find_element(
                    "css selector", "button.move"))
                taps += 1
        assert ranking_order(driver) == goal and taps == len(goal) * (len(goal) - 1) // 2
        tap(driver, driver.find_element("id", "submit-ranking"))
        wait_state(driver, "done")
        (body,) = recorder.posts("/api/reports")
        z = np.array(body["vector"])
        assert z @ python_pair_vector([survey["items"].index(x) for x in goal]) > 0
    finally:
        driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
        driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": False})


# ---- 4. the page against an adversary: what it checks itself, invitations, randomized once ------

class PageFrom:
    """ASGI wrapper: the page (``/`` and ``/static/``) from ``directory``, everything else from ``app``."""

    def __init__(self, directory: Path, app):
        from starlette.staticfiles import StaticFiles
        self.directory, self.app, self.files = directory, app, StaticFiles(directory=directory)

    async def __call__(self, scope, receive, send):
        from starlette.responses import FileResponse
        path = scope.get("path", "")
        if path == "/":
            return await FileResponse(self.directory / "index.html")(scope, receive, send)
        if path.startswith("/static/"):
            return await self.files({**scope, "path": path[len("/static"):], "root_path": ""}, receive, send)
        return await self.app(scope, receive, send)


def patched_page(directory: Path, *replacements: tuple[str, str]) -> Path:
    """A copy of the page in ``directory`` with ``respondent.js`` edited, and its integrity hash
    recomputed: a deliberately broken page that the browser still runs (the negative controls)."""
    from privrank.serve.integrity import sri_hash
    shutil.copytree(STATIC, directory)
    script = (directory / "respondent.js").read_text()
    for old, new in replacements:
        assert script.count(old) == 1, old
        script = script.replace(old, new)
    (directory / "respondent.js").write_text(script)
    html = (directory / "index.html").read_text()
    html = re.sub(r'(static/respondent\.js" integrity=")[^"]*', lambda m: m.group(1) + sri_hash(script.encode()), html)
    (directory / "index.html").write_text(html)
    return directory


def declared_survey(items, *, title="Dessert survey", question="Which dessert do you prefer?", epsilon=1.0,
                    budget=None):
    """A pairs survey for the real server (budget: every pair, unless given)."""
    from privrank.serve.survey import Survey
    budget = epsilon * len(items) * (len(items) - 1) // 2 if budget is None else budget
    return Survey(title=title, question=question, items=tuple(items), design="pairs", epsilon=epsilon, budget=budget)


@contextmanager
def real_server(survey, db: Path, *, port: int = 0, page: Path | None = None):
    """``privrank serve``'s application for ``survey`` on the SQLite file ``db`` behind a :class:`Recorder`
    (with the page from ``page`` when given); yields ``(recorder, base URL, store)``."""
    pytest.importorskip("starlette")
    from privrank.serve.app import admin_token_hash, create_app
    from privrank.serve.sqlite_store import SqliteStore
    store = SqliteStore(db)
    try:
        app = create_app(survey, store, admin_token_hash(secrets.token_urlsafe(24)))
        recorder = Recorder(app if page is None else PageFrom(page, app))
        with serving(recorder, port) as base:
            yield recorder, base, store
    finally:
        store.close()


def answer_all(drv, how="click-left"):
    while True:
        wait_state(drv, "question", "done")
        if state(drv) == "done":
            return
        give_answer(drv, how)
        wait_state(drv, "question", "done", "sending")
        wait_for(drv, lambda d: state(d) != "sending")


@pytest.mark.parametrize("eps", [40.0, 0.005])
def test_the_page_refuses_an_epsilon_out_of_range(driver, site, eps):
    """At 40 randomized response keeps the true answer with probability 1 - 4e-18: the page does not run."""
    fake_only()  # the real server refuses such a survey at start-up
    recorder = site(survey_of(DESSERTS[:4], epsilon=eps, max_answers=6))
    wait_state(driver, "refused")
    assert f"epsilon = {eps:g} per answer, outside the range 0.01 to 10" in text(driver, "status")
    assert driver.find_element("id", "pairs").get_attribute("hidden") is not None
    time.sleep(0.3)
    assert [r for r in recorder.requests if r["method"] == "POST"] == []  # no registration, no report
    assert driver.execute_script("return localStorage.length") == 0
    assert console_problems(driver) == []


def reports_a_page_sends(driver, app, page=None) -> int:
    recorder = Recorder(app if page is None else PageFrom(page, app))
    with serving(recorder) as base:
        driver.get(base + "/")
        answer_all(driver)
        return len(recorder.posts("/api/reports"))


@pytest.mark.slow
def test_the_page_computes_its_own_cap_and_sentence(driver, tmp_path):
    """A server serving a larger max_answers (and accepting as many) and its own protection sentence:
    the page asks floor(budget / epsilon) answers and says what it computed. Control: a page that
    takes the server's max_answers asks more, and is caught."""
    survey = survey_of(DESSERTS[:4], epsilon=1.0, max_answers=3)
    survey["max_answers"] = 6  # the fake accepts 6 reports per token and says so
    recorder = Recorder(contract_app(survey))
    with serving(recorder) as base:
        driver.get(base + "/")
        wait_state(driver, "question")
        assert text(driver, "protection") == protection(survey)
        assert "at most 2.72 times as likely" in text(driver, "protection") and "at most 3 answers" in \
            text(driver, "protection")
        assert text(driver, "progress") == "Answer 1 of 3"
        answer_all(driver)
        assert "all the answers this survey asks for" in text(driver, "status")
        assert len(recorder.posts("/api/reports")) == 3
    trusting = patched_page(tmp_path / "trusting", (
        "cap: ranking ? 1 : Math.floor(s.budget / s.epsilon + 1e-9)", "cap: s.max_answers"))
    assert reports_a_page_sends(driver, contract_app(survey), trusting) == 6  # the control is caught


@pytest.mark.slow
def test_a_new_survey_id_makes_the_page_start_afresh(driver):
    """What the page's own cap is worth against a server that changes the survey's id: the page keys
    all it keeps by the id, so a second visit served another id registers anew and is asked up to the
    cap again, a pair it answered included (drawn anew, under a new key). PRIVACY.md states the cap
    as holding per survey id, not against such a server."""
    survey = survey_of(DESSERTS[:3], max_answers=2)  # 3 pairs, a cap of 2: a second round repeats a pair
    recorder = Recorder(contract_app(survey))
    with serving(recorder) as base:
        driver.get(base + "/")
        answer_all(driver)
        assert "all the answers this survey asks for" in text(driver, "status")
        first = recorder.posts("/api/reports")
        survey["id"] = hashlib.sha256(b"the same survey under another id").hexdigest()
        driver.get(base + "/")
        wait_state(driver, "question")
        assert text(driver, "progress") == "Answer 1 of 2"
        answer_all(driver)
        reports = recorder.posts("/api/reports")
    assert len(first) == 2 and len(reports) == 4 and len(recorder.posts("/api/respondents")) == 2
    pairs = [frozenset((r["item_a"], r["item_b"])) for r in reports]
    assert len(set(pairs)) < len(pairs) and len({r["key"] for r in reports}) == 4  # a pair drawn and sent twice
    privacy = " ".join((DOCS_IMG.parents[1] / "PRIVACY.md").read_text(encoding="utf-8").split())
    assert "That cap holds per survey id, not against a malicious server." in privacy


@pytest.mark.slow
@pytest.mark.parametrize("tampered", ["randomizer.js", "respondent.js"])
def test_a_tampered_script_does_not_run(driver, tampered):
    """Subresource Integrity: a script whose bytes differ from the released ones (here, randomized
    response at 4 epsilon) is blocked; the page says it did not start instead of "Loading…" forever."""
    app = contract_app(survey_of(DESSERTS[:4], max_answers=6))

    async def tamper(scope, receive, send):
        async def edit(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [(k, v) for k, v in message["headers"]
                                                  if k.lower() not in (b"content-length", b"etag")]}
            elif message.get("body"):
                message = {**message, "body": message["body"].replace(b"Math.exp(-eps)", b"Math.exp(-4 * eps)")
                           .replace(b"let busy = false;", b"let busy = 0;")}
            await send(message)
        await app(scope, receive, edit if scope.get("path") == f"/static/{tampered}" else send)
    recorder = Recorder(tamper)
    with serving(recorder) as base:
        driver.get_log("browser")
        driver.get(base + "/")
        wait_for(driver, lambda d: d.find_element("id", "load-failed").is_displayed(), timeout=12)
        assert not driver.find_element("id", "title").is_displayed()  # no "Loading…" left
        assert "did not match the published ones" in " ".join(text(driver, "load-failed").split())
        assert state(driver) == "loading"
        paths = [r["path"] for r in recorder.requests]
        assert "/api/survey" not in paths and not recorder.posts("/api/respondents")
        assert paths.count("/static/randomizer.js") == 1  # the import used the checked preload
        blocked = [e["message"] for e in driver.get_log("browser") if "integrity" in e["message"]]
        assert blocked and all(tampered in m for m in blocked)


@pytest.mark.slow
def test_without_javascript_the_page_says_so(site):
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
    drv = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    try:
        with serving(contract_app(survey_of(DESSERTS[:4]))) as base:
            drv.get(base + "/")
            note = drv.find_element("css selector", "noscript p")
            assert note.is_displayed() and "needs JavaScript" in note.text
            assert not drv.find_element("id", "title").is_displayed()
            time.sleep(6.5)  # the load-failure note would show by now: without JavaScript it does not
            assert not drv.find_element("id", "load-failed").is_displayed()
    finally:
        drv.quit()


@pytest.mark.slow
def test_invitations(driver, tmp_path):
    """Invitation-only: without a code the page says so and does not try to register; a link's code
    is kept under the survey's id until the registration succeeds (here after a 429) and leaves the
    address bar; the same link in a second profile (storage cleared) is the same respondent, who is not asked
    again the pair answered; an unknown code is refused; another code works."""
    survey = declared_survey(DESSERTS[:4])
    with real_server(survey, tmp_path / "survey.sqlite") as (recorder, base, store):
        codes = store.add_invitations(2)
        driver.get(base + "/")
        wait_state(driver, "closed")
        assert text(driver, "status") == ("This survey is by invitation only. Please open it with the link from "
                                          "your invitation.")
        assert "at most 6 answers with your invitation" in text(driver, "protection")
        time.sleep(0.3)
        assert recorder.posts("/api/respondents") == []

        recorder.refusals.append(("/api/respondents", 429))  # tried again by itself a second later
        driver.get(f"{base}/#invite={codes[0]}")  # only the fragment changes: the page starts again
        wait_for(driver, lambda d: "try again by itself in 1 second" in text(d, "status"))
        assert driver.current_url == base + "/"  # the code left the address bar
        doc = survey_document(survey)
        assert storage(driver, doc) == {"invite": codes[0]}  # kept, under the survey's id
        wait_state(driver, "question")
        assert recorder.posts("/api/respondents", 201) == [{"invitation": codes[0]}]
        assert set(storage(driver, doc)) == {"token"}  # the code is gone once registered
        give_answer(driver, "click-left")
        wait_state(driver, "question")

        driver.execute_script("localStorage.clear()")  # a second browser profile with the same link: the same place
        driver.get(f"{base}/#invite={codes[0]}")
        wait_state(driver, "question")
        assert recorder.statuses("/api/respondents") == [429, 201, 200] and store.counts() == (1, 1)
        assert text(driver, "progress") == "Answer 2 of 6"  # the pair answered is not asked again
        driver.execute_script("localStorage.clear()")
        driver.get(f"{base}/#invite={secrets.token_urlsafe(16)}")  # a code of the right shape, unknown
        wait_state(driver, "closed")
        assert "This invitation link is not valid" in text(driver, "status")
        assert recorder.statuses("/api/respondents") == [429, 201, 200, 403]
        assert driver.execute_script("return localStorage.length") == 0 or storage(driver) == {}
        driver.get(f"{base}/#invite={codes[1]}")  # another person's invitation
        wait_state(driver, "question")
        assert store.counts()[0] == 2
        assert console_problems(driver) == []


def test_an_invitation_is_asked_for_before_the_consent(driver, tmp_path):
    """Invitation-only with a consent text: without a code the page says so (no consent to agree to in
    vain); with one, the consent comes first and the invitation is used only once the person agreed."""
    from dataclasses import replace
    survey = replace(declared_survey(DESSERTS[:4]), consent=CONSENT)
    with real_server(survey, tmp_path / "survey.sqlite") as (recorder, base, store):
        (code,) = store.add_invitations(1)
        driver.get(base + "/")
        wait_state(driver, "closed")
        assert not driver.find_element("id", "consent").is_displayed()
        driver.get(f"{base}/#invite={code}")
        wait_state(driver, "consent")
        time.sleep(0.3)
        assert recorder.posts("/api/respondents") == [] and store.invitations() == (1, 0)
        driver.find_element("id", "agree").click()
        wait_state(driver, "question")
        assert recorder.posts("/api/respondents", 201) == [{"invitation": code}] and store.invitations() == (1, 1)


def survey_document(survey) -> dict:
    from privrank.serve.app import survey_document as document
    return document(survey, True)


TITLE_IN_KEY = ("storeKey = `privrank${PREVIEW ? '-preview' : ''}:${survey.id}`;",
                "storeKey = `privrank${PREVIEW ? '-preview' : ''}:${survey.id}:${survey.title}`;")


@pytest.mark.slow
@pytest.mark.parametrize("page", ["released", "keyed by title (control)"])
def test_a_retitled_survey_does_not_reset_a_returning_respondent(driver, tmp_path, page):
    """privrank serve restarted on the same database with another title and a corrected question: the
    same token, no pair asked twice, the count of sent answers kept. Control: a page keyed by the title
    registers anew."""
    db, port = tmp_path / "survey.sqlite", free_port()
    directory = None if page == "released" else patched_page(tmp_path / "page", TITLE_IN_KEY)
    with real_server(declared_survey(DESSERTS[:4]), db, port=port, page=directory) as (first, base, _):
        driver.get(base + "/")
        for _ in range(2):
            wait_state(driver, "question")
            give_answer(driver, "click-left")
        wait_state(driver, "question")
    retitled = declared_survey(DESSERTS[:4], title="Desserts, second round", question="Which dessert is better?")
    with real_server(retitled, db, port=port, page=directory) as (second, base, store):
        driver.get(base + "/")
        wait_state(driver, "question")
        assert text(driver, "title") == "Desserts, second round" and text(driver, "question") == retitled.question
        reset = bool(second.posts("/api/respondents"))
        if page != "released":
            assert reset  # the control is caught
            return
        assert not reset and text(driver, "progress") == "Answer 3 of 6"
        asked = {frozenset((b["item_a"], b["item_b"])) for b in first.posts("/api/reports")}
        assert frozenset((text(driver, "choose-left"), text(driver, "choose-right"))) not in asked
        answer_all(driver)
        assert "every pair" in text(driver, "status")
        table = store.pair_reports()
        assert table.num_rows == 6 and len(set(table["user"].to_pylist())) == 1
        assert len({frozenset(p) for p in zip(table["item_a"].to_pylist(), table["item_b"].to_pylist())}) == 6


NO_MEMO_CHECK = ("      if (pairs[pairKey]) return null;\n", "")


@pytest.mark.slow
@pytest.mark.parametrize("page", ["released", "no memo check (control)"])
def test_two_tabs_never_randomize_a_pair_twice(driver, tmp_path, page):
    """One pair (two items) on screen in two tabs of one browser, answered in both while the first
    report is in flight: the second tab sends the first tab's memoized report (same key: the server
    answers it as a duplicate) and randomizes nothing. Control: a page that does not re-read the memo
    under the lock randomizes the pair twice, and is caught."""
    directory = None if page == "released" else patched_page(tmp_path / "page", NO_MEMO_CHECK)
    with real_server(declared_survey(DESSERTS[:2]), tmp_path / "survey.sqlite", page=directory) as (
            recorder, base, store):
        driver.get(base + "/")
        wait_state(driver, "question")
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")
        second = driver.current_window_handle
        try:
            driver.get(base + "/")
            wait_state(driver, "question")
            recorder.gate.clear()
            give_answer(driver, "click-left")
            wait_for(driver, lambda d: len(recorder.posts("/api/reports")) == 1)
            driver.switch_to.window(first)
            give_answer(driver, "click-right")
            wait_for(driver, lambda d: len(recorder.posts("/api/reports")) == 2)
            recorder.gate.set()
            wait_state(driver, "done")
            bodies = recorder.posts("/api/reports")
            if page != "released":
                assert not randomized_once(bodies)  # the control is caught
                # its second draw is refused as pair-answered, which moves the page on without an error
                assert sorted(recorder.statuses("/api/reports")) == [201, 409]
                assert state(driver) == "done" and "every pair" in text(driver, "status")
                return
            assert randomized_once(bodies) and bodies[0] == bodies[1]
            assert sorted(recorder.statuses("/api/reports")) == [200, 201]
            assert store.pair_reports().num_rows == 1
            assert text(driver, "coin") == ""  # this tab's click was not randomized: no coin to show
            driver.switch_to.window(second)
            wait_state(driver, "done")
            assert COIN.match(text(driver, "coin"))
        finally:
            recorder.gate.set()
            driver.switch_to.window(second)
            driver.close()
            driver.switch_to.window(first)


def test_a_lost_reply_resent_is_stored_once(driver, tmp_path):
    """The server stores a report but its reply is lost (a proxy answers 502): the page keeps the report
    with its key and resends it unchanged on reload; the server answers it as a duplicate."""
    survey = declared_survey(DESSERTS[:4])
    with real_server(survey, tmp_path / "survey.sqlite") as (recorder, base, store):
        driver.get(base + "/")
        wait_state(driver, "question")
        recorder.lost_replies = 1
        give_answer(driver, "click-left")
        wait_state(driver, "error")
        assert "not answering properly" in text(driver, "status") and "saved on this device" in text(driver, "status")
        assert store.pair_reports().num_rows == 1  # stored, though the page does not know it
        (pending,) = storage(driver)["pairs"].values()
        assert pending["sent"] is False and re.fullmatch(r"[A-Za-z0-9_-]{22}", pending["key"])
        driver.refresh()
        wait_state(driver, "question")
        first, again = recorder.posts("/api/reports")
        assert first == again and first["key"] == pending["key"]
        assert [r.get("app_status", r["status"]) for r in recorder.requests if r["path"] == "/api/reports"] == \
            [201, 200]
        assert store.pair_reports().num_rows == 1 and text(driver, "progress") == "Answer 2 of 6"



def test_a_closed_survey_asks_nothing_and_keeps_what_it_could_not_send(driver, tmp_path, monkeypatch):
    """The survey closes (``privrank serve --close``) while the page is open: the next answer is refused
    (410) and the page says the survey closed and that the answer could not be sent; a reload asks nothing,
    tries the kept report once more (the server would answer it as a duplicate had it stored it: it did not, 410)
    and says so again; a browser that never took part sees only that the survey closed."""
    from privrank.serve.app import Closing
    from privrank.serve.survey import utc_text
    monkeypatch.setattr(Closing, "REFRESH", 0.0)  # the server sees the close at its next request
    with real_server(declared_survey(DESSERTS[:4]), tmp_path / "survey.sqlite") as (recorder, base, store):
        driver.get(base + "/")
        wait_state(driver, "question")
        give_answer(driver, "click-left")
        wait_state(driver, "question")
        at = utc_text(datetime.now(timezone.utc))
        store.close_survey(at)
        give_answer(driver, "click-left")
        wait_state(driver, "closed")
        assert text(driver, "status") == ("This survey has closed: it accepts no more answers. Your randomized "
                                          "answer saved on this device could not be sent, because the survey closed.")
        driver.refresh()
        wait_state(driver, "closed")
        assert text(driver, "status").startswith(f"This survey has closed on {at[:10]} at {at[11:16]} UTC: it "
                                                 "accepts no more answers. Your randomized answer saved")
        assert driver.find_element("id", "pairs").get_attribute("hidden") is not None
        assert recorder.statuses("/api/reports") == [201, 410, 410]  # tried once more on the reload: refused
        assert [v["sent"] for v in storage(driver)["pairs"].values()] == [True, False]  # kept, unsent
        driver.execute_script("localStorage.clear()")
        driver.refresh()
        wait_state(driver, "closed")
        assert text(driver, "status") == (f"This survey has closed on {at[:10]} at {at[11:16]} UTC: it accepts no "
                                          "more answers.")
        assert text(driver, "title") == "Dessert survey" and text(driver, "protection") == ""
        assert recorder.statuses("/api/respondents") == [201] and store.pair_reports().num_rows == 1
        assert console_problems(driver) == []

# ---- 5. screenshots for the documentation ---------------------------------------------------------

@pytest.mark.skipif(os.environ.get("PRIVRANK_SCREENSHOTS") != "1",
                    reason="set PRIVRANK_SCREENSHOTS=1 to write docs/img/respondent*.png")
def test_screenshots(driver, site):
    DOCS_IMG.mkdir(parents=True, exist_ok=True)
    from selenium.webdriver.common.action_chains import ActionChains
    driver.set_window_size(900, 860)
    try:
        site(survey_of(DESSERTS, epsilon=1.0, max_answers=10))
        wait_state(driver, "question")
        give_answer(driver, "click-left")
        wait_state(driver, "question")
        ActionChains(driver).move_to_element(driver.find_element("id", "title")).perform()  # no hover
        driver.save_screenshot(str(DOCS_IMG / "respondent.png"))
        site(survey_of(DESSERTS[:5], design="ranking", epsilon=1.0, max_answers=1))
        wait_state(driver, "ranking")
        driver.save_screenshot(str(DOCS_IMG / "respondent-ranking.png"))
    finally:
        driver.set_window_size(1000, 800)


@pytest.mark.slow
def test_end_to_end_with_the_real_server(driver, tmp_path, capsys):
    """The real application on SQLite: Chromium answers every pair by a hidden order; the request
    bodies the server received hold no answer field; the export read by ``privrank rank`` gives
    the hidden order. With PRIVRANK_SCREENSHOTS=1, also docs/img/dashboard.png."""
    pytest.importorskip("starlette")
    from privrank.cli import main
    from privrank.serve.app import admin_token_hash, create_app
    from privrank.serve.sqlite_store import SqliteStore
    from privrank.serve.survey import Survey

    truth = ["Gelato", "Crème brûlée", "Apple pie", "Flan", "Brownie", "Eclair", "Doughnut"]
    survey = Survey(title="Dessert survey", question="Which dessert do you prefer?", items=tuple(DESSERTS),
                    design="pairs", epsilon=10.0, budget=10.0 * 21)  # a flip has probability 4.5e-5
    admin = secrets.token_urlsafe(24)
    store = SqliteStore(tmp_path / "survey.sqlite")
    recorder = Recorder(create_app(survey, store, admin_token_hash(admin)))
    try:
        with serving(recorder) as base:
            driver.get_log("browser")
            driver.get(base + "/")
            for _ in range(21):
                wait_state(driver, "question")
                left, right = text(driver, "choose-left"), text(driver, "choose-right")
                better = "choose-left" if truth.index(left) < truth.index(right) else "choose-right"
                driver.find_element("id", better).click()
                wait_state(driver, "question", "done")
            wait_state(driver, "done")
            bodies = check_report_bodies(recorder, survey.public())
            assert len(bodies) == 21 and recorder.statuses("/api/reports") == [201] * 21
            import httpx
            export = httpx.get(f"{base}/export.csv", params={"token": admin}, timeout=10)
            assert export.status_code == 200
            if os.environ.get("PRIVRANK_SCREENSHOTS") == "1":
                screenshot_dashboard(driver, tmp_path)
        path = tmp_path / "export.csv"
        path.write_text(export.text)
        capsys.readouterr()
        assert main(["rank", str(path), "--format", "json"]) == 0
        ranking = json.loads(capsys.readouterr().out)["ranking"]
        assert [row["item"] for row in ranking] == truth
        assert console_problems(driver) == []
    finally:
        store.close()


def screenshot_dashboard(driver, tmp_path):
    """docs/img/dashboard.png: the dashboard of the demo survey (LLMFAO's models, epsilon 1 per
    answer, 10 answers each) after 3,000 respondents randomized answers of a BTL model."""
    from privrank.mechanisms.randomized_response import randomize_answer
    from privrank.serve.app import admin_token_hash, create_app
    from privrank.serve.dashboard import survey_threshold
    from privrank.serve.sqlite_store import SqliteStore
    from privrank.serve.survey import Survey, demo_survey

    demo = demo_survey()
    survey = Survey(title=demo.title, question=demo.question, items=demo.items[:12], design="pairs",
                    epsilon=demo.epsilon, budget=demo.budget)
    gen = np.random.default_rng(3)
    theta = np.linspace(1.5, -1.5, len(survey.items))
    admin = secrets.token_urlsafe(24)
    with SqliteStore(tmp_path / "demo.sqlite") as store:
        pairs = list(itertools.combinations(range(len(survey.items)), 2))
        for _ in range(3000):
            token = store.new_respondent()
            for k in gen.choice(len(pairs), survey.max_answers, replace=False):  # a pair once per respondent
                i, j = pairs[k]
                truth = 1 if gen.random() < 1 / (1 + math.exp(theta[j] - theta[i])) else -1
                report = int(randomize_answer(truth, survey.epsilon, rng=gen))
                store.add_report(token, key=key(), epsilon=survey.epsilon, max_answers=survey.max_answers,
                                 item_a=survey.items[i], item_b=survey.items[j], report=report)
        survey_threshold(survey)  # known, as on a server that has run a while
        with serving(create_app(survey, store, admin_token_hash(admin))) as base:
            DOCS_IMG.mkdir(parents=True, exist_ok=True)
            driver.set_window_size(1000, 1400)
            driver.get(f"{base}/dashboard?token={admin}")
            driver.save_screenshot(str(DOCS_IMG / "dashboard.png"))
            driver.set_window_size(1000, 800)
