"""The survey a server asks: its items, its design and its declared privacy parameters.

Everything here is public: the item list, the epsilon of one answer and the budget of one
respondent are declared in the survey file before any answer arrives (the rule "public
parameters are declared, never read off the data"), shown to respondents, and used by the
store to refuse answers past a respondent's budget.
"""
from __future__ import annotations

import hashlib
import json
import math
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import InputError

DESIGNS = {"pairs": "randomized-response", "ranking": "duchi-l2"}
#: the epsilon of one answer: below, an answer is noise without signal; above, no protection
EPSILON_RANGE = (0.01, 10.0)
#: items of a ranking survey: a ballot is a vector of m(m-1)/2 floats, which must fit in one request
MAX_RANKING_ITEMS = 40
MAX_PAIRS_ITEMS = 1000
MAX_LABEL_CHARS = 200
MAX_TEXT_CHARS = 2000
#: who one respondent is, by whether the survey is invitation-only: the unit of every per-respondent text
RESPONDENT_UNITS = {True: "invited respondent", False: "browser"}
FIELDS = ("title", "question", "items", "design", "epsilon", "budget", "mechanism")


@dataclass(frozen=True)
class Survey:
    """A survey: what respondents are asked, and how each answer is protected.

    Attributes
    ----------
    title, question : str
        Shown to respondents.
    items : tuple of str
        The declared item universe (at least two, unique labels).
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
    """

    title: str
    question: str
    items: tuple
    design: str = "pairs"
    epsilon: float = 1.0
    budget: float | None = None
    mechanism: str | None = None

    def __post_init__(self):
        for name, limit in (("title", MAX_TEXT_CHARS), ("question", MAX_TEXT_CHARS)):
            value = getattr(self, name)
            if not _text(value) or len(value) > limit:
                raise InputError(f"the survey's {name} must be non-empty text of at most {limit} characters")
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
        return 1 if self.design == "ranking" else math.floor(self.budget / self.epsilon + 1e-9)

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

    def protection(self) -> str:
        """One plain sentence for the respondent: what the browser does and how strongly it protects."""
        factor = f"{math.exp(self.epsilon):.3g} (e^{self.epsilon:g})"
        if self.design == "ranking":
            return ("Your browser adds random noise to your ranking before sending it: whatever order you "
                    f"choose, the chance of what we receive changes by at most a factor of {factor}, and you "
                    "are asked for one ranking.")
        k = self.max_answers
        return ("Your browser flips a coin before sending each answer: whatever you answer, the chance of what "
                f"we receive changes by at most a factor of {factor}, and at most {k} answer{'s' * (k != 1)} "
                f"{'are' if k != 1 else 'is'} asked of you.")

    def public(self) -> dict:
        """The survey as ``GET /api/survey`` serves it (the respondent's page reads it)."""
        doc = {"title": self.title, "question": self.question, "items": list(self.items), "design": self.design,
               "epsilon": self.epsilon, "budget": self.budget, "max_answers": self.max_answers,
               "mechanism": self.mechanism, "protection": self.protection()}
        if self.design == "ranking":
            doc["duchi_scale"] = self.duchi_scale()
        return doc

    def fingerprint(self) -> str:
        """The survey's identity: the hex SHA-256 of every field that fixes what a report means (items,
        design, epsilon, budget, mechanism, question), leaving the title (display-only text) out. A
        store holds the reports of one survey only, and the page keys everything it keeps (token,
        memo of randomized reports) by it, so retitling a survey resets no respondent's budget."""
        text = json.dumps({k: v for k, v in asdict(self).items() if k != "title"}, sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()


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
    if len(set(items)) != len(items):
        raise InputError("the survey's item labels must be unique")
    most = MAX_RANKING_ITEMS if design == "ranking" else MAX_PAIRS_ITEMS
    if not 2 <= len(items) <= most:
        raise InputError(f"a {design} survey needs between 2 and {most} items")
    return tuple(items)


def load_survey(path) -> Survey:
    """Read a survey from a TOML or JSON file (by its suffix) with the keys of :class:`Survey`.

    Raises
    ------
    InputError
        On a missing or unreadable file, a syntax error, an unknown or missing key, or a value
        :class:`Survey` refuses.
    """
    path = Path(path)
    if path.suffix.lower() not in (".toml", ".json"):
        raise InputError(f"{path}: a survey file is .toml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no such survey file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read the survey file ({type(exc).__name__})") from None
    try:
        doc = tomllib.loads(text) if path.suffix.lower() == ".toml" else json.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{path}: not valid TOML ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno})") from None
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


def demo_survey() -> Survey:
    """The LLMs of the shipped LLMFAO data set, compared in pairs: epsilon 1 per answer, 10 per respondent."""
    from ..data.datasets import load_llmfao

    return Survey(title="Which language model answers better?",
                  question="Which of these two language models gives the better answers?",
                  items=tuple(load_llmfao().items), design="pairs", epsilon=1.0, budget=10.0)
