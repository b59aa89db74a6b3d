"""The survey server's web application: the respondent's page, the report API, the dashboard, the export.

The server only ever receives randomized reports (the respondent's browser randomizes each
answer before sending it) and refuses anything else: a request body with any field beyond those
of a report -- in particular a true answer -- is refused, and so is a report whose epsilon is not
the survey's declared one. Refusals never echo the request body. The dashboard and the export
are post-processing of the stored reports (no privacy cost) and need the admin token. Nothing is
logged: no request body, no client address.

Against an adversary: a token, a key and an invitation code are accepted only in the exact shape
the server or the page issues them (anything else is refused with 400 before the store is
asked), one client's failing request never fails another's (the store isolates each report),
registrations on an open survey are rate-limited by a token bucket kept in the store, which every
server process on the database shares (429 with ``Retry-After``; :mod:`privrank.serve.ratelimit`; on an
invitation-only survey the one-time codes are the limit), and every request ends with a status and a JSON ``{"error"}``, never a
traceback.

A survey closes at the earlier of its file's ``closes`` and the time ``privrank serve --close`` recorded in
the store (:class:`Closing`): from then on it registers no respondent and stores no report (410, reason
``closed``; a resend of a report stored before the close is still answered as a duplicate), while the
dashboard and the export go on.
"""
from __future__ import annotations

import asyncio
import json
import logging
import math
import threading
import time
from collections import deque
from datetime import datetime

from ..errors import InputError
from .admins import ADMIN_TOKEN_HASH, AdminTokens, admin_token_hash
from .corrections import SurveyFile
from .dashboard import REFRESH_SECONDS, LiveRanking
from .dashboard_html import dashboard_page
from .integrity import static_dir
from .health import StoreUnavailable
from .progress import progress_document
from .ratelimit import RegistrationsLimited, check_rate
from .store import (INVITATION_BYTES, KEY_BYTES, TOKEN_BYTES, AnswersExhausted, InvitationRefused, ReportConflict,
                    UnknownRespondent, is_urlsafe_token)
from .survey import NORM_TOLERANCE, RESPONDENT_UNITS, closing_time, utc_text
from .throttle import Throttle

MAX_BODY_BYTES = 64 * 1024
#: new respondents per minute the server registers by default (a token bucket of as many)
REGISTRATIONS_PER_MINUTE = 30
REPORT_FIELDS = {"pairs": ("token", "key", "item_a", "item_b", "report", "epsilon"),
                 "ranking": ("token", "key", "vector", "epsilon")}
SECURITY_HEADERS = {"content-security-policy": "default-src 'self'; base-uri 'none'; frame-ancestors 'none'",
                    "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}


class Refused(Exception):
    """A request the server refuses with 400; the message never quotes the request."""


class RecentRegistrations:
    """When this process registered respondents in the last hour (monotonic clock, in memory only,
    never stored): the dashboard's rate since start-up."""

    WINDOW = 3600.0

    def __init__(self, clock=time.monotonic):
        self._clock = clock
        self.started = clock()
        self._times: deque = deque()
        self._lock = threading.Lock()

    def add(self) -> None:
        with self._lock:
            self._times.append(self._clock())
            self._prune()

    def last_hour(self) -> tuple[int, float]:
        """``(registrations, minutes covered)``: the last hour, or the time since start-up if shorter."""
        with self._lock:
            self._prune()
            return len(self._times), min(self.WINDOW, self._clock() - self.started) / 60.0

    def _prune(self) -> None:
        horizon = self._clock() - self.WINDOW
        while self._times and self._times[0] < horizon:
            self._times.popleft()


class Closing:
    """When the survey closes: the earlier of the survey file's ``closes`` (:attr:`file`, which a corrected
    survey file may move) and the time ``privrank serve --close`` recorded in the store, which another
    process may record at any moment.

    The store is read by one caller at a time, at most once per :attr:`REFRESH` seconds (:meth:`due`;
    the others use the time read last), so no report pays a query for it: a server sees a ``--close``
    within about that long. Once the store holds a closing time it is not read again (a close is final:
    ``privrank serve --close`` keeps the first time it recorded). ``clock`` gives the time in seconds
    since the epoch."""

    REFRESH = 1.0

    def __init__(self, closes: datetime | None, store, clock=time.time):
        self.file, self._store, self._clock = closes, store, clock
        self._stored: datetime | None = None
        self._throttle = Throttle(self.REFRESH, clock)

    def due(self) -> bool:
        """Whether this caller must :meth:`read` the store now: True for one caller per :attr:`REFRESH`
        seconds (or after the clock went back), until the store holds a closing time."""
        return self._stored is None and self._throttle.due()

    def read(self) -> None:
        """Read the closing time the store holds (a query: blocking)."""
        at = self._store.closed_at()
        self._stored = None if at is None else closing_time(at)

    def at(self) -> datetime | None:
        """The closing time as last read (the earlier of the file's and the store's), or None."""
        file, stored = self.file, self._stored
        return stored if file is None else file if stored is None else min(file, stored)

    def passed(self) -> datetime | None:
        """The closing time if it has come, else None."""
        at = self.at()
        return at if at is not None and at.timestamp() <= self._clock() else None


def closed_text(at: datetime) -> str:
    """A closing time as people read it: ``YYYY-MM-DD HH:MM:SS UTC``."""
    return f"{at:%Y-%m-%d %H:%M:%S} UTC"


def survey_document(survey, invitation_only: bool, survey_id: str | None = None, closes: datetime | None = None,
                    closed: bool = False) -> dict:
    """``GET /api/survey``: the survey's public parameters and texts, its ``id`` (the page keys everything
    it keeps by it: the id :meth:`~privrank.serve.store.Store.claim` returned, by default the survey's
    fingerprint, which leaves every correctable text out), whether registration needs an invitation,
    who one respondent is, when the survey closes (``closes``: the survey's own, or the earlier time
    given, :meth:`Closing.at`) and whether it has closed."""
    doc = {**survey.public(invitation_only), "id": survey.fingerprint() if survey_id is None else survey_id,
           "invitations": invitation_only, "respondent_unit": RESPONDENT_UNITS[invitation_only], "closed": closed}
    return doc if closes is None else {**doc, "closes": utc_text(closes)}


def create_app(survey, store, admin_hash: str, *, registrations_per_minute: float = REGISTRATIONS_PER_MINUTE,
               dashboard_refresh: float = REFRESH_SECONDS, survey_file=None):
    """The Starlette application serving ``survey`` from ``store`` (see :mod:`privrank.serve`).

    The dashboard and the export open to the token of any admin the store holds
    (:mod:`privrank.serve.admins`, read at most once a second: a revoked token opens nothing within about
    that long); ``admin_hash``, the :func:`admin_token_hash` of a token, opens them while the store holds
    no admin. The application never holds a token itself. The store is bound to the survey
    (:meth:`~privrank.serve.store.Store.claim`): one database holds one survey's reports.
    ``registrations_per_minute`` bounds token minting (a token bucket in the store, shared by every
    process on the database); ``dashboard_refresh`` is the most seconds the dashboard's ranking may lag
    the reports. With ``survey_file`` (the path ``survey`` was read from), corrections of its texts are
    served without a restart (:mod:`privrank.serve.corrections`).
    """
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.responses import FileResponse, HTMLResponse, JSONResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    if not isinstance(admin_hash, str) or ADMIN_TOKEN_HASH.fullmatch(admin_hash) is None:
        raise InputError("create_app takes the admin token's hash, admin_token_hash(token): 64 hex digits")
    per_minute = check_rate(registrations_per_minute)
    survey_id = store.claim(survey.fingerprint(), earlier=survey.earlier_fingerprint(), texts=survey.texts())
    static = static_dir()
    recent = RecentRegistrations()
    live = LiveRanking(survey, store, refresh=dashboard_refresh, helper=dashboard_refresh > 0,
                       follow=dashboard_refresh > 0)
    closing = Closing(survey.closes, store)
    admins = AdminTokens(store, admin_hash)
    corrections = SurveyFile(survey, survey_file, store)

    def error(status: int, message: str, reason: str | None = None, headers=None):
        body = {"error": message} if reason is None else {"error": message, "reason": reason}
        return JSONResponse(body, status_code=status, headers=headers)

    async def http_error(request, exc):
        return error(exc.status_code, exc.detail if isinstance(exc.detail, str) else "request refused",
                     headers=getattr(exc, "headers", None))

    async def unavailable(request, exc):
        return error(503, str(exc), exc.reason, headers={"retry-after": str(exc.retry_after)})

    def matches(given: str) -> bool:
        return bool(given) and admins.holds(admin_token_hash(given))

    def is_admin(request) -> bool:
        scheme, _, credential = request.headers.get("authorization", "").partition(" ")
        return matches(request.query_params.get("token", "")) or (scheme.lower() == "bearer"
                                                                   and matches(credential.strip()))

    async def admin_refusal(request, what: str):
        """None for an admin, else the 403 reply. A token the store no longer holds (revoked, or replaced by
        another privrank serve on this database) opens nothing once the admins were read again."""
        if admins.due():
            await run_in_threadpool(admins.read)
        if not is_admin(request):
            return error(403, f"the {what} needs an admin's token (?token=... or Authorization: Bearer ...); a "
                              "revoked or replaced token opens nothing")
        return None

    async def served():
        """The survey as served now: its file looked at (a stat) at most once a second, a correction of its
        texts taken up, and with it a moved closing time."""
        if corrections.due():
            await run_in_threadpool(corrections.read)
            closing.file = corrections.survey.closes
        return corrections.survey

    async def closed_at():
        """The closing time if it has come (the store read at most once per second), else None."""
        await served()
        if closing.due():
            await run_in_threadpool(closing.read)
        return closing.passed()

    async def closed_refusal():
        """None while the survey is open, else the 410 reply to an answer or a registration."""
        at = await closed_at()
        return None if at is None else error(410, f"this survey closed on {closed_text(at)}: it accepts no more "
                                                  "answers", "closed")

    async def index(request):
        page = static / "index.html"
        if not page.is_file():
            return error(404, "the respondent page is not installed (privrank/serve/static/index.html)")
        return FileResponse(page, media_type="text/html; charset=utf-8")

    async def survey_json(request):
        issued, _ = await run_in_threadpool(store.invitations)
        closed = await closed_at() is not None
        return JSONResponse(survey_document(await served(), bool(issued), survey_id, closing.at(), closed))

    async def new_respondent(request):
        refused = await closed_refusal()
        if refused is not None:
            return refused
        try:
            invitation = registration_fields(await json_body(request, empty_ok=True))
        except Refused as exc:
            return error(400, str(exc))
        # on an invitation-only survey the codes are the limit (each registers one respondent, once, and 128-bit
        # codes cannot be guessed): the store takes no token of the bucket there, so bad codes cannot keep invited
        # people out. A refused registration stores nothing and takes no token.
        try:
            token, new = await run_in_threadpool(store.register, invitation, per_minute)
        except RegistrationsLimited as exc:
            return error(429, str(exc), "rate-limited", headers={"retry-after": str(max(1, math.ceil(exc.retry_after)))})
        except InvitationRefused as exc:
            return error(403, str(exc), "invitation")
        if not new:  # an invitation's respondent again, on another device: no one registered
            return JSONResponse({"token": token}, status_code=200)
        recent.add()
        return JSONResponse({"token": token}, status_code=201)

    async def progress(request):
        try:
            doc = await json_body(request)
            if not isinstance(doc, dict) or set(doc) != {"token"} or not is_urlsafe_token(doc["token"], TOKEN_BYTES):
                raise Refused('a request for progress is {"token": TOKEN}, the token POST /api/respondents returned')
        except Refused as exc:
            return error(400, str(exc))
        answered = await run_in_threadpool(store.progress, doc["token"])
        if answered is None:
            return error(404, "unknown respondent token: ask for a new one (POST /api/respondents)")
        return JSONResponse(progress_document(survey, answered))

    async def new_report(request):
        # once closed, a respondent's quota is no answer: the store's write stores nothing, yet answers the resend
        # of a report it holds (stored before the close, its reply lost) as a duplicate, as while open, so that the
        # page stops keeping it; anything else gets the 410
        refused = await closed_refusal()
        try:
            fields = report_fields(survey, await json_body(request))
            receipt = await asyncio.wrap_future(store.submit_report(
                **fields, max_answers=survey.max_answers if refused is None else 0))
        except (Refused, UnknownRespondent, AnswersExhausted, ReportConflict) as exc:
            if refused is not None:
                return refused
            if isinstance(exc, Refused):
                return error(400, str(exc))
            if isinstance(exc, UnknownRespondent):
                return error(404, str(exc))
            return error(409, str(exc), exc.reason)
        if receipt.duplicate:
            return JSONResponse({"remaining": receipt.remaining, "duplicate": True}, status_code=200)
        return JSONResponse({"remaining": receipt.remaining}, status_code=201)

    async def dashboard(request):
        refused = await admin_refusal(request, "dashboard")
        if refused is not None:
            return refused
        query = request.query_params.get("token", "")
        closed = await closed_at()
        return HTMLResponse(await run_in_threadpool(dashboard_page, await served(), store,
                                                    query if matches(query) else None, recent, live, closed))

    async def export(request):
        refused = await admin_refusal(request, "export")
        if refused is not None:
            return refused
        return Response(await run_in_threadpool(export_file, survey, store), media_type="text/csv; charset=utf-8",
                        headers={"content-disposition": 'attachment; filename="export.csv"'})

    routes = [Route("/", index), Route("/api/survey", survey_json), Route("/dashboard", dashboard),
              Route("/export.csv", export), Route("/api/respondents", new_respondent, methods=["POST"]),
              Route("/api/reports", new_report, methods=["POST"]), Route("/api/progress", progress, methods=["POST"]),
              Mount("/static", app=StaticFiles(directory=static, check_dir=False), name="static")]
    return Starlette(routes=routes, middleware=[Middleware(SecurityHeaders), Middleware(CatchAll)],
                     exception_handlers={HTTPException: http_error, StoreUnavailable: unavailable})


class CatchAll:
    """ASGI middleware: a request that fails unexpectedly ends with 500 and a JSON ``{"error"}``, never a
    traceback; only the exception's type is logged (its message could quote a request). A client that hung
    up before its request was read is no failure: nothing is logged, and there is no one to answer."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def watch(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)
        try:
            await self.app(scope, receive, watch)
        except Exception as exc:
            from starlette.requests import ClientDisconnect

            if isinstance(exc, ClientDisconnect):  # else any client could fill the log with "internal error"
                return
            logging.getLogger("privrank.serve").error("internal error (%s)", type(exc).__name__)
            if started:  # too late for a status: the connection is closed by the server
                raise
            from starlette.responses import JSONResponse

            await JSONResponse({"error": "internal error: the request was not completed"},
                               status_code=500)(scope, receive, send)


def json_http_protocol():
    """uvicorn's HTTP/1.1 protocol class (``http=`` of :class:`uvicorn.Config`), whose answer to a request it
    cannot parse (an unknown method, a malformed request line or header) is a JSON ``{"error", "reason"}``
    with the security headers, not uvicorn's plain text: the server's every answer is JSON."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    body = json.dumps({"error": "the request is not valid HTTP/1.1 (its method, request line or a header)",
                       "reason": "malformed-request"}).encode()
    headers = {**SECURITY_HEADERS, "cache-control": "no-store", "content-type": "application/json",
               "content-length": str(len(body)), "connection": "close"}
    answer = b"HTTP/1.1 400 Bad Request\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()).encode() + \
        b"\r\n" + body

    class JsonHTTPProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]  # uvicorn picks it at import
        def send_400_response(self, msg: str) -> None:  # the connection ends here: no parser state matters
            self.transport.write(answer)
            self.transport.close()
    return JsonHTTPProtocol


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response, ``Cache-Control: no-store``
    on everything but the static files."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from starlette.datastructures import MutableHeaders

        cacheable = scope["path"].startswith("/static/")

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers[name] = value
                if not cacheable:
                    headers["cache-control"] = "no-store"
            await send(message)
        await self.app(scope, receive, send_with_headers)


# ---------------------------------------------------------------------------------------- reports

async def json_body(request, *, empty_ok: bool = False):
    """The request's JSON body, at most ``MAX_BODY_BYTES``; refuses NaN, Infinity and repeated keys.
    With ``empty_ok``, an empty body (and no content type) reads as ``{}``."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise Refused(f"the request body is larger than {MAX_BODY_BYTES // 1024} KB")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise Refused(f"the request body is larger than {MAX_BODY_BYTES // 1024} KB")
    if empty_ok and not body.strip():
        return {}
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise Refused("send the request body as JSON (Content-Type: application/json)")

    def unique(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise Refused("a field appears more than once in the request")
        return dict(pairs)

    def constant(name):
        raise Refused("numbers in a report must be finite")
    try:
        return json.loads(bytes(body), object_pairs_hook=unique, parse_constant=constant)
    except (ValueError, RecursionError):
        raise Refused("the request body is not valid JSON") from None


def _number(value, name: str) -> float:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise OverflowError
    except OverflowError:  # also an integer too large for a float
        raise Refused(f"{name} must be a finite number") from None
    return float(value)


def registration_fields(doc) -> str | None:
    """The invitation code of a registration body (``{}`` or ``{"invitation": CODE}``), or :class:`Refused`.
    A code of another shape is passed on as None: the store answers it as it answers an unknown code."""
    if not isinstance(doc, dict) or set(doc) - {"invitation"}:
        raise Refused('a registration is {} or {"invitation": CODE}')
    code = doc.get("invitation")
    return code if is_urlsafe_token(code, INVITATION_BYTES) else None


def report_fields(survey, doc) -> dict:
    """The keyword arguments of :meth:`Store.add_report` for a report body, or :class:`Refused`.

    A report has exactly the fields of :data:`REPORT_FIELDS` for the survey's design: never a
    true answer. Messages name the field at fault, never its value.
    """
    expected = REPORT_FIELDS[survey.design]
    if not isinstance(doc, dict):
        raise Refused("the report must be a JSON object")
    if set(doc) - set(expected):
        raise Refused(f"a report has exactly the fields {', '.join(expected)}: the server accepts only randomized "
                      "reports, never a true answer")
    missing = [k for k in expected if k not in doc]
    if missing:
        raise Refused(f"the report lacks the field {missing[0]}")
    token, key = doc["token"], doc["key"]
    if not is_urlsafe_token(token, TOKEN_BYTES):
        raise Refused("token must be the text POST /api/respondents returned")
    if not is_urlsafe_token(key, KEY_BYTES):
        raise Refused("key must be 22 characters of base64url (16 random bytes), drawn when the answer is randomized")
    if not math.isclose(_number(doc["epsilon"], "epsilon"), survey.epsilon, rel_tol=1e-9):
        raise Refused(f"epsilon must be the survey's epsilon per answer, {survey.epsilon:g}")
    if survey.design == "pairs":
        a, b, report = doc["item_a"], doc["item_b"], doc["report"]
        for name, item in (("item_a", a), ("item_b", b)):
            if not isinstance(item, str) or item not in survey.items:
                raise Refused(f"{name} must be one of the survey's items")
        if a == b:
            raise Refused("item_a and item_b must be two different items")
        if isinstance(report, bool) or not isinstance(report, int) or report not in (1, -1):
            raise Refused("report must be 1 (item_a preferred) or -1 (item_b preferred)")
        return {"token": token, "key": key, "item_a": a, "item_b": b, "report": report, "epsilon": survey.epsilon}
    vector = doc["vector"]
    if not isinstance(vector, list) or len(vector) != survey.dimension:
        raise Refused(f"vector must be a list of {survey.dimension} numbers (one per pair of items)")
    values = [_number(v, "every entry of vector") for v in vector]
    scale = survey.duchi_scale()
    # hypot scales before it squares: entries whose squares overflow a float get a norm, not an OverflowError
    if not math.isclose(math.hypot(*values), scale, rel_tol=NORM_TOLERANCE):
        raise Refused(f"vector must have the norm of a randomized ballot, {scale:.12g}")
    return {"token": token, "key": key, "vector": values, "epsilon": survey.epsilon}


def pseudonym(token_hash: str) -> str:
    """A respondent's name in the export: ``r`` and the first 16 hex digits of the SHA-256 of their token,
    ``token_hash`` (what the store keeps of it, :func:`~privrank.serve.store.credential_hash`). It groups a
    respondent's reports without revealing the token (a credential) or the whole hash the store looks it
    up by, and its letter keeps every spreadsheet and CSV reader from taking it for a number
    (``1234e567...`` would be read as one)."""
    return "r" + token_hash[:16]


def export_file(survey, store) -> str:
    """:func:`export_csv` as ``GET /export.csv`` and ``privrank serve --export`` write it: after a byte order
    mark, without which Excel reads a UTF-8 file in the machine's legacy code page (Crème -> CrÃ¨me);
    pandas, Arrow and privrank's readers skip it."""
    return "\ufeff" + export_csv(survey, store)


def export_csv(survey, store) -> str:
    """The survey's randomized reports as CSV, ordered by pseudonym and pair, never by arrival (the order of
    arrival could be joined with a proxy's log).

    Pairs design: ``user,item_a,item_b,outcome,epsilon,max_answers``, which ``privrank rank`` reads as
    randomized reports under the survey's declared per-respondent quota, one per respondent and pair, all at
    the survey's epsilon, which they thus declare (``--epsilon`` states it; written by
    :func:`~privrank.data.io.comparisons_to_csv`, the one writer of that layout), with ``user`` a
    :func:`pseudonym`. Ranking design: the ballots, ``user``, one column ``A > B`` per pair and
    ``epsilon`` (:mod:`privrank.serve.ballots`, whose :func:`~privrank.serve.ballots.rank_ballots`
    ranks them). Both read back unchanged in a spreadsheet and in ``pandas.read_csv``."""
    if survey.design == "ranking":
        from .ballots import ballots_to_csv

        return ballots_to_csv(survey.items, store.vectors(), survey.epsilon)
    import pyarrow as pa

    from ..data.io import comparisons_to_csv, read_comparisons

    table = store.pair_reports()
    if not table.num_rows:
        return ",".join([*table.column_names, "max_answers"]) + "\n"
    pseudonyms = pa.array([pseudonym(t) for t in table["user"].to_pylist()])
    table = table.set_column(table.column_names.index("user"), "user", pseudonyms)
    reports = read_comparisons(table.sort_by([("user", "ascending"), ("item_a", "ascending"),
                                              ("item_b", "ascending")]))
    return comparisons_to_csv(reports, max_answers=survey.max_answers)
