"""``privrank serve``: a local-differential-privacy survey server with a live private ranking.

Privacy model (local DP)
------------------------
The server never sees a true answer. The respondent's browser randomizes each answer before
sending it and sends only the report and its epsilon:

* ``pairs`` design -- randomized response: the true preference between ``item_a`` and ``item_b``
  is kept with probability ``e^eps/(1+e^eps)`` and flipped otherwise; "no preference" is first a
  fair coin. The report is 1 (item_a) or -1 (item_b): eps-local DP for that answer, and at most
  ``max_answers = floor(budget/eps)`` answers per respondent give ``budget``-local DP for all of
  a respondent's answers (basic composition). The pair asked is chosen by the page, not by
  the respondent's preferences, and is sent as it is.
* ``ranking`` design -- one ballot per respondent: with the items indexed in the survey's order
  and ``M = m(m-1)/2``, the browser forms the centred pair vector ``v`` with one entry per pair
  ``i < j`` in row-major order ((0,1), (0,2), ..., (0,m-1), (1,2), ...), ``v = 1[i ranked before
  j] - 1/2`` (norm ``sqrt(M)/2``), and sends the Duchi et al. l2 report of it
  (:func:`privrank.mechanisms.local_vectors.duchi_l2`): a vector of norm ``duchi_scale``,
  eps-local DP for the whole ranking.

Every privacy parameter (items, epsilon, budget) is declared in the survey file
(:mod:`privrank.serve.survey`) before any answer arrives.

What is stored (:mod:`privrank.serve.store`): the SHA-256 of respondents' random tokens (never a
token) and their randomized reports, append-only, in SQLite or PostgreSQL, with the UTC day only;
no true answer, no IP address, no user agent. A report is acknowledged only after it is
committed, never past the respondent's budget, once per idempotency key and once per pair per
respondent. A respondent is a browser (a token, which the page's "Continue on another device" link
carries to another browser), or on an invitation-only survey an invited respondent (codes, kept
hashed, each registering one respondent, on any device), and every text says which.

The contract (:mod:`privrank.serve.app`)
----------------------------------------
``GET /``
    The respondent's page (``static/index.html``); ``/static/{file}`` its files.
``GET /api/survey``
    ``{"id", "title", "question", "items", "design", "epsilon", "budget", "max_answers", "mechanism",
    "protection", "invitations", "respondent_unit", "description", "consent", "contact", "closing", "closes",
    "redirect", "closed"}`` (the four texts plain text, "" when absent; ``closes`` the closing time as
    ``YYYY-MM-DDTHH:MM:SSZ`` or null, ``redirect`` where the thank-you page goes on to or null, ``closed``
    whether it has come), plus ``"duchi_scale"`` for the ranking design.
    ``id`` is the survey's identity, the fingerprint of its terms (items and their order, design,
    epsilon, budget, mechanism; no text, so a corrected text keeps it), or the id a store was first
    claimed with: the page keys what it keeps by it.
``POST /api/respondents``
    Body ``{}`` or ``{"invitation": CODE}``. 201 ``{"token": "..."}``; 200 ``{"token": "..."}`` for an
    invitation used before, whose respondent this is again (on another device: the token is derived from
    the code, :mod:`privrank.serve.invitations`); 403 on an invitation-only survey without a usable
    invitation (unknown, or used by an earlier privrank, whose token was random); 429 with ``Retry-After`` past the registration rate (an
    open survey's: an invitation-only survey is limited by its one-time codes); 410 ``{"error", "reason":
    "closed"}`` once the survey has closed (its file's ``closes``, or ``privrank serve --close``: the
    earlier counts), as for reports.
``POST /api/reports`` (``Content-Type: application/json``, at most 64 KB)
    Pairs: ``{"token", "key", "item_a", "item_b", "report": 1 or -1, "epsilon"}``; ranking:
    ``{"token", "key", "vector": [M numbers], "epsilon"}``; ``key`` is 22 characters of base64url
    drawn when the answer was randomized. 201 ``{"remaining": k}`` once stored; 200 ``{"remaining":
    k, "duplicate": true}`` for a resend already stored; 400 ``{"error"}`` for anything else (any
    other field, a true answer included; a token or key of another shape; unknown or equal items; an
    epsilon other than the survey's; a vector of the wrong length or norm; non-finite numbers); 404
    for an unknown token; 409 ``{"error", "reason"}`` when the pair was already reported
    (``pair-answered``), the key was used for other content (``key-reused``) or the answers are
    used up (``exhausted``); 410 ``{"error", "reason": "closed"}`` once the survey has closed (but for
    the resend of a report stored before the close, still answered 200 ``duplicate``). 503
    ``{"error", "reason"}`` with ``Retry-After`` when the database is locked by another process
    (``busy``) or cannot be reached (``unavailable``): nothing was stored, and a resend under the same
    key is safe (as for registrations, and for every request that reads the store). Any other failure
    is 500 ``{"error"}``, never a traceback.
``POST /api/progress``
    Body ``{"token": TOKEN}``. 200 ``{"answered", "remaining", "pairs": [[item_a, item_b], ...]}`` (pairs
    design, each pair as reported) or ``{"answered", "remaining", "ballot": true/false}`` (ranking): what
    the server holds of the respondent, which the page on another device marks as answered
    (:mod:`privrank.serve.progress`); never a report. 400 for a body of another shape, 404 for an unknown
    token.
``GET /dashboard``, ``GET /export.csv`` (an admin's token as ``?token=`` or ``Authorization: Bearer``; 403 for a
token the store no longer holds, revoked or replaced: :mod:`privrank.serve.admins`)
    The private ranking (:mod:`privrank.serve.dashboard`): no ranked table until the privacy
    planner's number of reports for the survey is reached (it says how many more), then scores
    with 95% intervals and 95% rank intervals, a plot, the manipulation margin, the guarantee,
    when it was last updated (running tallies, refitted at most every few seconds), the
    registrations per day and the texts corrected; the
    pairs reports as ``user,item_a,item_b,outcome,epsilon,max_answers`` CSV for ``privrank rank``,
    or a ranking survey's ballots as ``user``, one column ``A > B`` per pair and ``epsilon``, which
    :func:`privrank.serve.ballots.rank_ballots` ranks. Both in UTF-8 with a byte order mark (for
    Excel); ``user`` is a pseudonym (never a token) that no spreadsheet or CSV reader takes for a
    number. The server keeps only the SHA-256 of each admin's token. Both go on once the survey has
    closed (the dashboard says "Closed on ..." at its top), and ``privrank serve --export FILE`` writes
    the same export from the database, without a server or the token.

Every response carries ``Content-Security-Policy: default-src 'self'`` (no inline script),
``X-Content-Type-Options: nosniff`` and ``Referrer-Policy: no-referrer``; every response but the
static files ``Cache-Control: no-store``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InputError

if TYPE_CHECKING:
    from .store import Store


def open_store(target) -> Store:
    """The store at ``target``: a ``postgresql://`` URL, or else the path of a SQLite file (created if absent)."""
    from .postgres_store import PostgresStore
    from .sqlite_store import SqliteStore

    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        return PostgresStore(text)
    if text == ":memory:" or text.startswith("file:"):
        raise InputError(f"--db {text}: a survey's reports must outlive the server (an in-memory or URI database "
                         "would lose every acknowledged report): give a file path or a postgresql:// URL")
    return SqliteStore(text)
