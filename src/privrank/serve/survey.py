"""The survey a server asks: its items, its design, its declared privacy parameters and its texts.

Everything here is public: the item list, the epsilon of one answer and the budget of one
respondent are declared in the survey file before any answer arrives (the rule "public
parameters are declared, never read off the data"), shown to respondents, and used by the
store to refuse answers past a respondent's budget.

A survey has two kinds of keys. Its *terms* (:data:`TERMS`: the items and their order, the
design, epsilon, budget and mechanism) fix what a report means and how each respondent is
protected: they are the survey's identity (:meth:`Survey.fingerprint`), and a database that
holds a survey's reports refuses a survey of other terms. Its *texts* (:data:`TEXTS`: title,
question, description, consent, contact, closing) are what respondents read: they may be
corrected on a running survey (save the corrected file: a running server takes it up,
:mod:`privrank.serve.corrections`; or restart with it and the same ``--db``) -- in their
wording, not their meaning, which the store cannot check (a question turned from "better" to
"worse" would reverse every earlier report) -- and the store records each text with the UTC day
it was first served (:meth:`privrank.serve.store.Store.text_history`). Its optional closing time,
``closes``, is neither: it fixes when answers stop, not what one means nor how a respondent is
protected, so it is left out of the identity and a team may move it (extend a deadline) on a running
survey as it corrects a text. So is the optional ``redirect``, the address respondents go on to once they
are done (a panel's completion page): it changes neither what a report means nor how a respondent is
protected, and it is not a text respondents read (no history of it is kept). ``privrank serve --init FILE`` writes :data:`TEMPLATE`, a commented
survey file.
"""
from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InputError

DESIGNS = {"pairs": "randomized-response", "ranking": "duchi-l2"}
#: the epsilon of one answer: below, an answer is noise without signal; above, no protection
EPSILON_RANGE = (0.01, 10.0)
#: items of a ranking survey: a ballot is a vector of m(m-1)/2 floats, which must fit in one request
MAX_RANKING_ITEMS = 40
#: relative tolerance of a randomized ballot's norm against :meth:`Survey.duchi_scale` (a report's, an export's)
NORM_TOLERANCE = 1e-6
MAX_PAIRS_ITEMS = 1000
MAX_LABEL_CHARS = 200
#: the longest each text may be, in characters
TEXT_LIMITS = {"title": 2000, "question": 2000, "description": 2000, "consent": 4000, "contact": 500,
               "closing": 2000}
#: who one respondent is, by whether the survey is invitation-only: the unit of every per-respondent text
RESPONDENT_UNITS = {True: "invited respondent", False: "browser"}
#: the keys that fix what a report means and what protects respondents: the survey's identity
TERMS = ("items", "design", "epsilon", "budget", "mechanism")
#: the keys respondents read, which may be corrected on a running survey (all but title and question optional)
TEXTS = tuple(TEXT_LIMITS)
FIELDS = TEXTS[:2] + TERMS + TEXTS[2:] + ("closes", "redirect")
#: the longest redirect address, in characters
MAX_REDIRECT_CHARS = 2000
#: the hosts a redirect may name over plain http: this machine only (a survey tried out locally)
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
#: labels that spreadsheet and data-frame readers turn into a missing value by default, so that a
#: report about the item would lose it: pandas.read_csv's default na_values (pandas 2.x,
#: pandas._libs.parsers.STR_NA_VALUES, which also lists the empty string), pyarrow.csv's default
#: ConvertOptions.null_values (the reader behind privrank's CSV input; a subset of pandas'), and
#: R's read.csv na.strings = "NA" (readr::read_csv: c("", "NA")). Matched exactly, as they do.
MISSING_VALUE_LABELS = frozenset({"#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND",
                                  "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "None", "n/a", "nan", "null"})
#: labels privrank's own comparison and ranking readers take for a missing value, in any case (so ``Na``
#: too): an export holding them would not rank unchanged
READER_MISSING_LABELS = frozenset({"na", "nan"})
#: first characters that make a spreadsheet (Excel, LibreOffice) read a CSV cell as a formula
FORMULA_STARTS = ("=", "+", "@")


@dataclass(frozen=True)
class Survey:
    """A survey: what respondents are asked, and how each answer is protected.

    The terms (``items``, ``design``, ``epsilon``, ``budget``, ``mechanism``) are the survey's identity
    and may not change once a database holds its reports; the texts may be corrected at any time.

    Attributes
    ----------
    title, question : str
        Shown to respondents (a text: may be corrected).
    items : tuple of str
        The declared item universe, in a fixed order (at least two unique labels, none with leading
        or trailing whitespace, none that a CSV reader takes for a missing value:
        :data:`MISSING_VALUE_LABELS`). A term: neither a label nor the order may change.
    design : {"pairs", "ranking"}
        ``pairs``: each answer compares two items, randomized in the browser by randomized response.
        ``ranking``: each respondent ranks all items once, randomized in the browser by the Duchi
        et al. l2 randomizer of the pairwise vector.
    epsilon : float
        Local-DP epsilon of one answer (one comparison, or one whole ranking), in ``EPSILON_RANGE``.
    budget : float
        Epsilon of all of one respondent's answers together (basic composition); at least
        ``epsilon``. A ranking survey asks one ballot, so its budget is its epsilon.
    mechanism : str
        ``"randomized-response"`` (pairs) or ``"duchi-l2"`` (ranking).
    description, consent, contact, closing : str
        Optional plain text ("" when absent; no markup: the page shows it as it is, a blank line
        starting a new paragraph). ``description`` is shown above the questions; ``consent`` before
        the first question, with a button "I agree — start" (nothing is registered before it is
        pressed); ``contact`` (e.g. a mail address) on every page; ``closing`` once all answers are
        sent. Limits: :data:`TEXT_LIMITS`.
    closes : datetime or str, optional
        When the survey stops taking answers: an ISO 8601 date and time with a UTC offset
        (``"2026-12-31T18:00:00Z"``, or TOML's offset date-time), kept as an aware datetime in UTC;
        None (the default) for no closing time. Neither a term nor a text: left out of
        :meth:`fingerprint` (moving it, e.g. to extend a deadline, keeps the survey's database, its
        reports and its respondents) and of :meth:`texts` (the store records no history of it).
        ``privrank serve --close`` closes a survey at once; the earlier of the two counts.
    redirect : str, optional
        Where respondents go once they are done (e.g. a panel's completion page): an ``https://`` address
        (``http://`` only for this machine, :data:`LOCAL_HOSTS`), at most :data:`MAX_REDIRECT_CHARS`
        characters. The page's thank-you shows a link "Continue" to it and goes there by itself a few
        seconds later. None (the default): no redirect. Like ``closes``, neither a term nor a text: it may
        be changed on a running survey, and no history of it is kept.
    """

    title: str
    question: str
    items: tuple
    design: str = "pairs"
    epsilon: float = 1.0
    budget: float | None = None
    mechanism: str | None = None
    description: str = ""
    consent: str = ""
    contact: str = ""
    closing: str = ""
    closes: datetime | None = None
    redirect: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "closes", None if self.closes is None else closing_time(self.closes))
        if self.redirect is not None:
            check_redirect(self.redirect)
        for name, limit in TEXT_LIMITS.items():
            value = getattr(self, name)
            optional = name not in ("title", "question")
            if not (optional and value == "") and (not _text(value) or len(value) > limit):
                raise InputError(f"the survey's {name} must be {'' if optional else 'non-empty '}text of at most "
                                 f"{limit} characters")
        if self.design not in DESIGNS:
            raise InputError(f"the survey's design must be {' or '.join(map(repr, DESIGNS))}")
        object.__setattr__(self, "items", _items(self.items, self.design))
        eps = _number(self.epsilon, "epsilon")
        lo, hi = EPSILON_RANGE
        if not lo <= eps <= hi:
            raise InputError(f"the survey's epsilon (per answer) must lie in [{lo:g}, {hi:g}]: smaller is noise "
                             "without signal, larger is no protection")
        object.__setattr__(self, "epsilon", eps)
        budget = eps if self.budget is None and self.design == "ranking" else self.budget
        if budget is None:
            raise InputError("a pairs survey needs a budget: the epsilon of all of one respondent's answers "
                             "(e.g. budget = 10 with epsilon = 1 asks at most 10 answers)")
        budget = _number(budget, "budget")
        if budget < eps * (1 - 1e-9):
            raise InputError("the survey's budget (per respondent) must be at least its epsilon (per answer)")
        if self.design == "ranking" and not math.isclose(budget, eps, rel_tol=1e-9):
            raise InputError("a ranking survey asks one ballot per respondent: its budget is its epsilon "
                             "(leave budget out)")
        object.__setattr__(self, "budget", budget)
        mechanism = DESIGNS[self.design] if self.mechanism is None else self.mechanism
        if mechanism != DESIGNS[self.design]:
            raise InputError(f"a {self.design} survey uses the mechanism {DESIGNS[self.design]!r}")
        object.__setattr__(self, "mechanism", mechanism)

    @property
    def max_answers(self) -> int:
        """Most answers one respondent may send: ``floor(budget / epsilon)`` (1 for a ranking)."""
        if self.design == "ranking":
            return 1
        assert self.budget is not None  # a pairs survey has one (refused without it)
        return math.floor(self.budget / self.epsilon + 1e-9)

    @property
    def dimension(self) -> int:
        """``M = m(m-1)/2``: the length of a ranking ballot's vector (one entry per pair ``i < j``)."""
        m = len(self.items)
        return m * (m - 1) // 2

    @property
    def radius(self) -> float:
        """``sqrt(M)/2``: the norm of every ballot's centred pair vector, before randomization."""
        return math.sqrt(self.dimension) / 2.0

    def duchi_scale(self) -> float:
        """Norm of every randomized ballot (ranking design): the Duchi et al. unbiasedness constant."""
        from ..mechanisms.local_vectors import duchi_l2_scale

        return duchi_l2_scale(self.dimension, self.radius, self.epsilon)

    def protection(self, invitation_only: bool = False) -> str:
        """The respondent's protection in plain words, as the page composes it (``respondent.js``): the
        factor ``e^epsilon`` as a number rounded up (never a formula), and the answers asked of one
        respondent (a browser, or an invitation)."""
        factor = times_as_likely(self.epsilon)
        where = "with your invitation" if invitation_only else "in this browser"
        if self.design == "ranking":
            return ("Your browser adds random noise to your ranking before sending it: whatever order you choose, "
                    f"the report we receive is at most {factor} times as likely as it would be for any other order. "
                    f"You are asked for one ranking {where}.")
        k = self.max_answers
        return ("Your browser flips a coin before sending each answer and may send the opposite of your choice: "
                f"whatever you answer, the report we receive is at most {factor} times as likely as it would be had "
                f"you answered differently. You are asked at most {k} answer{'s' * (k != 1)} {where}.")

    def public(self, invitation_only: bool = False) -> dict:
        """The survey as ``GET /api/survey`` serves it (the respondent's page reads it); every text is
        present, "" when the survey has none, ``closes`` is :func:`utc_text` of the closing time (None
        without one) and ``redirect`` the address respondents go on to (None without one)."""
        doc = {"title": self.title, "question": self.question, "items": list(self.items), "design": self.design,
               "epsilon": self.epsilon, "budget": self.budget, "max_answers": self.max_answers,
               "mechanism": self.mechanism, "protection": self.protection(invitation_only),
               **{name: getattr(self, name) for name in TEXTS[2:]},
               "closes": None if self.closes is None else utc_text(self.closes), "redirect": self.redirect}
        if self.design == "ranking":
            doc["duchi_scale"] = self.duchi_scale()
        return doc

    def texts(self) -> dict:
        """``{name: text}`` of every text of :data:`TEXTS` ("" when absent): what the store records."""
        return {name: getattr(self, name) for name in TEXTS}

    def fingerprint(self) -> str:
        """The survey's identity: the hex SHA-256 of its terms (:data:`TERMS`: the items in their order,
        design, epsilon, budget, mechanism), the keys that fix what a report means and what protects a
        respondent. The texts are left out, so a corrected question, title or consent keeps the
        survey's reports and its respondents. A store holds the reports of one survey only."""
        return _digest({name: getattr(self, name) for name in TERMS})

    def earlier_fingerprint(self) -> str:
        """The identity earlier versions of ``privrank serve`` gave the survey: the terms and the
        question. A store claimed with it keeps it as the id its page keys by
        (:meth:`privrank.serve.store.Store.claim`)."""
        return _digest({name: getattr(self, name) for name in ("question",) + TERMS})


def closing_time(value) -> datetime:
    """A survey's closing time as an aware datetime in UTC, from a datetime or ISO 8601 text; both must
    name a date, a time and a UTC offset (a time without one would close the survey at an hour that
    depends on the server's time zone).

    Raises
    ------
    InputError
        Not a date and time, or one without a UTC offset.
    """
    example = 'e.g. closes = "2026-12-31T18:00:00Z" (or +01:00 for an offset from UTC)'
    if isinstance(value, str) and len(value) <= 64:
        for parse in (date.fromisoformat, datetime.fromisoformat):  # a day alone first: a datetime reads it too
            try:
                value = parse(value.strip())
                break
            except ValueError:
                pass
    if isinstance(value, date) and not isinstance(value, datetime):
        raise InputError(f"the survey's closes must be a date with a time and a UTC offset, not a day alone: "
                         f"{example}")
    if not isinstance(value, datetime):
        raise InputError(f"the survey's closes must be an ISO 8601 date and time with a UTC offset: {example}")
    if value.utcoffset() is None:
        raise InputError(f"the survey's closes has no UTC offset, so the hour it names would depend on the "
                         f"server's time zone: add one ('Z' for UTC), {example}")
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # an offset that takes the first or last representable day out of range
        raise InputError(f"the survey's closes is out of range: {example}") from None


def check_redirect(url) -> None:
    """Refuse a redirect address other than an absolute ``https://`` URL with a host (``http://`` only for
    :data:`LOCAL_HOSTS`), without credentials, spaces, backslashes or control characters, of at most
    :data:`MAX_REDIRECT_CHARS` characters.

    Raises
    ------
    InputError
        As said, naming what is wrong (the address itself is the survey's, public: it may be quoted).
    """
    example = 'e.g. redirect = "https://panel.example.org/complete?code=ABC123"'
    if not isinstance(url, str) or not url or len(url) > MAX_REDIRECT_CHARS or \
            any(c.isspace() or not c.isprintable() or c == "\\" for c in url):
        raise InputError(f"the survey's redirect must be a web address of at most {MAX_REDIRECT_CHARS} characters, "
                         f"without spaces or backslashes: {example}")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        if parts.port == 0:  # .port itself raises ValueError for a port that is not a number up to 65535
            raise ValueError
    except ValueError:  # a malformed host or port
        raise InputError(f"the survey's redirect is not a valid web address: {example}") from None
    if parts.scheme not in ("https", "http") or not host:
        raise InputError(f"the survey's redirect must be an https:// address with a host: {example}")
    if parts.scheme == "http" and host not in LOCAL_HOSTS:
        raise InputError(f"the survey's redirect must be an https:// address (http:// only for localhost, to try "
                         f"a survey on this machine): {example}")
    if parts.username is not None or parts.password is not None:
        raise InputError("the survey's redirect must not hold a user name or password (user@host): every "
                         "respondent's browser would be shown it")


def utc_text(moment: datetime) -> str:
    """``moment`` as ISO 8601 text in UTC to the second, ``YYYY-MM-DDTHH:MM:SSZ``: how a closing time is
    served and stored."""
    return f"{moment.astimezone(timezone.utc):%Y-%m-%dT%H:%M:%SZ}"


def times_as_likely(epsilon: float) -> str:
    """``e^epsilon`` rounded up, so that "at most" stays true: three significant digits below 100, else a
    whole number with thousands separators (``respondent.js``'s ``timesAsLikely``)."""
    factor = math.exp(epsilon)
    if factor >= 100:
        return f"{math.ceil(factor):,}"
    digits = 2 - math.floor(math.log10(factor))
    return f"{math.ceil(factor * 10 ** digits) / 10 ** digits:.{digits}f}"


def _digest(fields: dict) -> str:
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def _number(value, name: str) -> float:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise OverflowError
    except OverflowError:  # also an integer too large for a float
        raise InputError(f"the survey's {name} must be a finite number") from None
    return float(value)


def _text(value) -> bool:
    """Non-blank text that any store can hold: valid Unicode (no lone surrogate), no NUL character."""
    if not isinstance(value, str) or not value.strip() or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _items(items, design: str) -> tuple:
    if isinstance(items, str) or not isinstance(items, (list, tuple)):
        raise InputError("the survey's items must be a list of labels")
    if not all(_text(x) and len(x) <= MAX_LABEL_CHARS for x in items):
        raise InputError(f"every item label must be non-empty text of at most {MAX_LABEL_CHARS} characters")
    for label in items:
        if label != label.strip():
            raise InputError("an item label starts or ends with whitespace, which CSV readers and the ranking of "
                             "the export drop (' a' and 'a' would be one item): remove it")
        if label in MISSING_VALUE_LABELS or label.lower() in READER_MISSING_LABELS:
            raise InputError(f"the item label {label!r} is read as a missing value by pandas, R, Arrow or privrank, "
                             "so its reports would be lost in the export: choose another label (e.g. 'Not "
                             "applicable' or 'None of these')")
        if label.startswith(FORMULA_STARTS):
            raise InputError(f"the item label {label!r} starts with {label[0]!r}, which a spreadsheet opening the "
                             "export reads as a formula: choose another label")
    if len(set(items)) != len(items):
        raise InputError("the survey's item labels must be unique")
    most = MAX_RANKING_ITEMS if design == "ranking" else MAX_PAIRS_ITEMS
    if not 2 <= len(items) <= most:
        raise InputError(f"a {design} survey needs between 2 and {most} items")
    return tuple(items)


def _once(pairs) -> dict:
    """A JSON object's keys and values, refusing a repeated key (as TOML does) rather than keeping its last value."""
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]  # add: None
        raise InputError(f"the key {json.dumps(twice)} is given twice; give each key once")
    return doc


def load_survey(path) -> Survey:
    """Read a survey from a TOML or JSON file (by its suffix) with the keys of :class:`Survey`.

    Raises
    ------
    InputError
        On a missing or unreadable file, a file that is not UTF-8 text, a syntax error, a key given
        twice, nesting too deep, an unknown or missing key, or a value :class:`Survey` refuses.
    """
    path = Path(path)
    if path.suffix.lower() not in (".toml", ".json"):
        raise InputError(f"{path}: a survey file is .toml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such survey file (privrank serve --init {path} writes a commented "
                         "template to start from)") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: the survey file is not UTF-8 text (saved as UTF-16 or another encoding?); "
                         "save it as UTF-8") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read the survey file ({exc.strerror or type(exc).__name__})") from None
    try:
        doc = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text, object_pairs_hook=_once)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{path}: the survey nests tables or lists too deeply; a survey is one table of "
                         f"keys ({', '.join(FIELDS)})") from None
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: the survey must be a table of keys ({', '.join(FIELDS)})")
    unknown = sorted(set(doc) - set(FIELDS))
    if unknown:
        raise InputError(f"{path}: unknown key {unknown[0]!r}; a survey has the keys {', '.join(FIELDS)}")
    missing = [k for k in ("title", "question", "items") if k not in doc]
    if missing:
        raise InputError(f"{path}: the survey needs the key {missing[0]!r}")
    try:
        return Survey(**doc)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None


TEMPLATE = '''\
# A privrank serve survey. Start it with:  privrank serve survey.toml
#
# Two kinds of keys. The TERMS (items, design, epsilon, budget) fix what every report means and how
# each respondent is protected: once the survey has a database (--db), they can never change -- a
# survey with other terms needs a new database. The TEXTS (title, question, description, consent,
# contact, closing) may be corrected at any time: fix the file and save it, and the running server
# serves the new text within a second or two; the reports and the respondents are kept, and the
# store records the day each text changed. Correct the wording, never the meaning: a question that asked "better" must not come to
# ask "worse" (the earlier reports would then mean the opposite) -- a new question needs a new
# database. Texts are plain text (no HTML); in a text, a blank line starts a new paragraph.

# -- texts ---------------------------------------------------------------------------------------

# The page's heading.
title = "Dessert survey"

# What each answer is about: shown above every pair (or above the list to rank). The page itself
# says how to answer (two buttons and "No preference" for a pair, "Best at the top" above a list),
# so a question worded as this one fits either design.
question = "Which of our desserts do you prefer?"

# Optional: shown above the questions; like the question, it need not say how to answer.
description = """
We are comparing the desserts of our canteen's menu, to know which ones to keep. There are no right
or wrong answers: go by your own taste.
"""

# Optional: shown before the first question with a button "I agree — start". Nothing is sent to
# the server, and no respondent is registered, until it is pressed; a browser that agreed is not
# asked again.
consent = """
Taking part is voluntary and you can stop at any time. Before an answer leaves your browser, the
browser randomizes it, so nobody -- not even us -- receives your true answers. We store only the
randomized answers and the day they arrived: no name, no address, no IP address.
"""

# Optional: shown on every page, e.g. a mail address for questions about the survey.
contact = "dessert-survey@example.org"

# Optional: shown once all of a respondent's answers are sent.
closing = "Thank you! The ranking of the desserts will be on the canteen's notice board next month."

# -- closing time: may be moved at any time ------------------------------------------------------

# Optional: when the survey stops taking answers, a date and time WITH its offset from UTC ("Z" for
# UTC, or e.g. +01:00). From then on the page says that the survey has closed and the server stores
# no more answers; the dashboard and the export go on. It may be moved (restart with the same --db),
# e.g. to extend a deadline. "privrank serve survey.toml --close" closes the survey at once, for good.
# Remove the "#" to set it:
# closes = 2026-12-31T18:00:00Z

# Optional: where respondents go once they are done, e.g. a panel's completion page: the thank-you
# page shows a link "Continue" to it and goes there by itself a few seconds later. An https://
# address (http:// only for localhost). It may be changed at any time (restart with the same --db).
# Remove the "#" to set it:
# redirect = "https://panel.example.org/complete?code=ABC123"

# -- terms: fixed for good once the survey has a database ----------------------------------------

# The items, in a fixed order: the order and every label are part of the survey. A label may not
# start or end with a space, nor be one that spreadsheets read as a missing value (NA, N/A, null,
# None, NaN, ...).
items = ["Apple pie", "Brownie", "Crème brûlée", "Doughnut", "Eclair", "Flan", "Gelato"]

# "pairs": each answer compares two items (a random pair, never the same pair twice);
# "ranking": each respondent ranks all the items once (at most 40 items). For a ranking, write
# "ranking" here and remove the budget below; the texts above fit either design.
design = "pairs"

# Epsilon of ONE answer (one comparison, or one whole ranking), between 0.01 and 10: the respondent's
# browser randomizes the answer so that any report is at most e^epsilon times as likely under one
# answer as under any other (epsilon-local differential privacy). 1 means at most 2.72 times as
# likely; smaller protects more and needs more respondents for the same accuracy.
epsilon = 1.0

# Epsilon of ALL of one respondent's answers together (pairs design only; a ranking survey asks one
# ranking, so leave this out there): a respondent answers at most budget / epsilon questions
# (here 10), and all their answers together are budget-local differentially private.
budget = 10.0

# A respondent is one browser (one person using two browsers counts as two), or, with
# privrank serve --invitations N, one invitation: epsilon and budget are per respondent in that sense.
'''
"""A commented survey file (a pairs survey of seven desserts): what ``privrank serve --init FILE``
writes, and ``docs/survey.toml`` (kept identical by the tests)."""


def write_template(path) -> Path:
    """Write :data:`TEMPLATE` to ``path`` (a new ``.toml`` file); returns the path.

    Raises
    ------
    InputError
        ``path`` exists (it is never overwritten), is not a ``.toml`` file, or cannot be written.
    """
    path = Path(path)
    if path.suffix.lower() != ".toml":
        raise InputError(f"{path}: the template is TOML: give a file name ending in .toml")
    try:
        with open(path, "x", encoding="utf-8") as fh:
            fh.write(TEMPLATE)
    except FileExistsError:
        raise InputError(f"{path} exists: it is not overwritten (give another file name)") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot write the template ({exc.strerror or type(exc).__name__}): give a file "
                         "name in a folder you can write to") from None
    return path


def demo_survey() -> Survey:
    """The LLMs of the shipped LLMFAO data set, compared in pairs: epsilon 1 per answer, 10 per respondent."""
    from ..data.datasets import load_llmfao

    return Survey(title="Which language model answers better?",
                  question="Which of these two language models gives the better answers?",
                  items=tuple(load_llmfao().items), design="pairs", epsilon=1.0, budget=10.0)
