"""Privacy guarantees carried by every private output, and their composition.

A :class:`Guarantee` states exactly what a release protects: the privacy parameters
(epsilon, delta), the trust model (``local`` or ``central``), the *unit* whose presence or
value is protected (one comparison, all comparisons of one user, one ranking, ...), and the
mechanism. For per-comparison DP the guarantee also reports the per-user epsilon implied over
a declared bound on each user's answers (basic composition in the local model, group privacy in
the central model), or the formula ``k x epsilon`` when no bound was declared, so a
per-comparison epsilon is never mistaken for a per-person one. Every number in a guarantee is a
declared public parameter: none is read off the data.

Budgets are typed: :class:`PureDP` (epsilon), :class:`ApproxDP` (epsilon, delta) and
:class:`ZCDP` (rho, zero-concentrated DP). They compose sequentially by
:func:`compose_budgets`, convert where a conversion is valid (pure epsilon-DP is
``epsilon^2/2``-zCDP; rho-zCDP is ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP, Bun and Steinke
2016, Prop. 1.3 and 1.4) and are spent by an :class:`Accountant`, which refuses to overspend.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import overload

from .errors import BudgetExceededError, InputError, check_delta, check_epsilon, check_flag
from .html_cards import Rows, Shown

# Budgets are bookkeeping, not a mechanism's arithmetic: any epsilon > 0 is taken (a remainder may be tiny),
# without the floor a release's epsilon has (``minimum=0.0``).

UNIT_COMPARISON = "one comparison"
UNIT_USER = "all comparisons of one user"
UNIT_RANKING = "one ranking"
UNIT_EDGE = "one comparison (one outcome on one edge of the comparison graph)"


@dataclass(frozen=True)
class Guarantee(Shown):
    """What a release protects.

    Attributes
    ----------
    epsilon, delta
        Privacy parameters for ``unit``. ``epsilon = inf`` with ``private=False`` means no
        protection at all.
    model
        ``"local"`` (each record randomized before anyone else sees it), ``"central"``
        (a trusted curator adds noise to a statistic) or ``"none"``.
    unit
        The protected unit: neighbouring data sets differ in one such unit.
    mechanism
        Name of the mechanism that produced the release.
    epsilon_per_comparison, epsilon_per_user
        For per-comparison mechanisms: the per-comparison epsilon and the per-user epsilon it
        implies over a *declared* bound ``K`` on the answers of one user (``K * epsilon``: basic
        composition in the local model, group privacy in the central model). ``None`` where they
        do not apply, and ``epsilon_per_user`` is ``None`` when no bound was declared: a
        statistic of the data (such as the busiest user's count) is never printed as a
        guarantee, so the text then states the per-user protection as a formula in ``k``.
    private
        False for non-private outputs, and for outputs that include non-private diagnostics.
    note
        Free text: assumptions a reader needs (e.g. "ties randomized as a fair coin").
    rho
        For releases that are rho-zCDP (discrete Gaussian noise): ``rho``; ``epsilon`` is then
        the (epsilon, delta) statement at ``delta`` that the zCDP conversion gives.
    seeded
        The run was given a seed: reproducible research output, not a private release (anyone
        who knows the seed can subtract the noise). Set by :func:`privrank.release.private_release`.
    user
        What one "user" of ``epsilon_per_user`` is, in words: ``"user"`` (one person) by default,
        or what a deployment can actually tell apart (``"browser"``, ``"invited respondent"``).

    Examples
    --------
    >>> import privrank as pr
    >>> g = pr.Guarantee(1.0, "local", "one comparison", "randomized response")
    >>> print(g.describe())
    1-DP, local model, protecting one comparison [randomized response].
    >>> print(g.plain())
    Changing any one comparison changes the probability of any output by at most a factor of 2.72 (e^1); every
    answer was randomized before it left its owner, so this holds against everyone, the data holder included.
    >>> g.private, g.delta
    (True, 0.0)
    """

    epsilon: float
    model: str
    unit: str
    mechanism: str
    delta: float = 0.0
    epsilon_per_comparison: float | None = None
    epsilon_per_user: float | None = None
    private: bool = True
    note: str = ""
    rho: float | None = None
    seeded: bool = False
    user: str = "user"

    def __post_init__(self):
        if not isinstance(self.model, str) or self.model not in ("local", "central", "none"):
            raise InputError("model must be 'local', 'central' or 'none'")
        object.__setattr__(self, "private", check_flag(self.private, name="private"))
        if self.private:
            check_epsilon(self.epsilon, minimum=0.0)
        check_delta(self.delta)
        for name in ("rho", "epsilon_per_comparison", "epsilon_per_user"):
            if getattr(self, name) is not None:
                check_epsilon(getattr(self, name), name=name, minimum=0.0)

    @classmethod
    def non_private(cls, mechanism: str = "none", note: str = "") -> "Guarantee":
        """The guarantee of an output computed from raw data without noise: none."""
        return cls(epsilon=math.inf, model="none", unit="none", mechanism=mechanism,
                   private=False, note=note)

    def without_privacy(self, reason: str) -> "Guarantee":
        """Mark an output as not private (e.g. it carries exact diagnostics of the raw data)."""
        return replace(self, private=False, note=(self.note + " " if self.note else "") + reason)

    def to_dict(self) -> dict:
        """The fields as JSON values: numbers are numbers, and not one is infinite. An output that is
        not private has ``private: False`` and every privacy parameter None (an underlying release's
        are in :meth:`describe`), so that no reader takes them for a guarantee."""
        d = asdict(self)
        for k in _PARAMETERS:
            if not self.private or (d[k] is not None and math.isinf(d[k])):
                d[k] = None
        return d

    def describe(self) -> str:
        """The guarantee in words."""
        if not self.private:
            base = "NOT PRIVATE: no differential-privacy guarantee"
            if self.model != "none":
                base += f" (the underlying {self.mechanism} release alone would be {self._dp_words()})"
            return base + (f". {self.note}" if self.note else ".") + (" " + SEEDED_NOTE if self.seeded else "")
        text = self._dp_words()
        if self.epsilon_per_comparison is not None and self.unit in (UNIT_COMPARISON, UNIT_EDGE):
            if self.epsilon_per_user is not None:
                how = "basic composition" if self.model == "local" else "group privacy"
                text += (f"; by {how} over at most the declared number of answers per {self.user}, "
                         f"{_fmt(self.epsilon_per_user)}-DP per {self.user}")
            else:
                text += (f"; a user who made k comparisons is protected at k x {_fmt(self.epsilon)} "
                         "(declare a bound on answers per user, max_answers, to state one per-user number)")
        text += f". {self.note}" if self.note else "."
        return text + (" " + SEEDED_NOTE if self.seeded else "")

    def plain(self) -> str:
        """The guarantee in one sentence for a reader who is not a privacy researcher: who is
        protected, against whom, and how strongly."""
        if not self.private:
            text = ("Not private: this output was computed from the raw data without a privacy guarantee, so "
                    "it can reveal what any one person answered.")
            return text + (" It comes from a seeded run." if self.seeded else "")
        who = _PLAIN_UNITS.get(self.unit, self.unit)
        text = f"Changing {who} changes the probability of any output by at most a factor of {_factor(self.epsilon)}"
        if self.delta > 0:
            text += f", plus at most {self.delta:g} in absolute probability"
        if self.unit in (UNIT_COMPARISON, UNIT_EDGE) and self.epsilon_per_comparison is not None:
            if self.epsilon_per_user is not None:
                who = "person" if self.user == "user" else self.user
                text += (f" (for all the answers of one {who}, up to the declared number per {who}, at most "
                         f"{_factor(self.epsilon_per_user)})")
            else:
                text += f" (for a person who answered k times, up to e^(k x {_fmt(self.epsilon)}))"
        if self.model == "local":
            text += ("; every answer was randomized before it left its owner, so this holds against everyone, "
                     "the data holder included.")
        else:
            text += ("; this holds against anyone who sees the output, while the data holder, who added the "
                     "noise, is trusted with the raw data.")
        return text + (" SEEDED RUN: not a private release." if self.seeded else "")

    def _card(self) -> dict:
        d = self.to_dict()
        facts = [(name, d[key]) for name, key in (("epsilon", "epsilon"), ("delta", "delta"), ("rho (zCDP)", "rho"),
                                                   ("epsilon per comparison", "epsilon_per_comparison"),
                                                   (f"epsilon per {self.user}", "epsilon_per_user"))]
        facts += [("model", self.model), ("protects", self.unit), ("mechanism", self.mechanism),
                  ("seeded run", "yes: not a private release" if self.seeded else None)]
        return {"summary": "private" if self.private else "NOT PRIVATE", "facts": facts, "guarantee": self}

    def _dp_words(self) -> str:
        params = f"({_fmt(self.epsilon)}, {self.delta:g})" if self.delta > 0 else _fmt(self.epsilon)
        zcdp = f" (from {_fmt(self.rho)}-zCDP)" if self.rho is not None else ""
        return f"{params}-DP{zcdp}, {self.model} model, protecting {self.unit} [{self.mechanism}]"


#: the privacy parameters of a Guarantee (None in :meth:`Guarantee.to_dict` of an output that is not private)
_PARAMETERS = ("epsilon", "delta", "epsilon_per_comparison", "epsilon_per_user", "rho")

SEEDED_NOTE = ("SEEDED RUN: reproducible research output, not a private release (whoever knows the seed "
               "can remove the noise); leave the seed out for a real release.")


_PLAIN_UNITS = {
    UNIT_COMPARISON: "any one comparison",
    UNIT_EDGE: "any one comparison",
    UNIT_USER: "everything one person answered",
    UNIT_RANKING: "any one person's ranking",
}


def _factor(epsilon: float) -> str:
    """``e^epsilon`` in words: the bound on the likelihood ratio."""
    if epsilon > 700:
        return f"e^{_fmt(epsilon)} (no meaningful protection)"
    words = ", weak protection" if epsilon > 5 else ""
    return f"{math.exp(epsilon):.3g} (e^{_fmt(epsilon)}{words})"


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def compose(*guarantees: Guarantee) -> Guarantee:
    """Basic sequential composition: epsilons and deltas add.

    All guarantees must protect the same unit in the same model; composing across different
    units has no meaning and raises.

    Examples
    --------
    >>> import privrank as pr
    >>> first = pr.Guarantee(0.5, "local", "one comparison", "randomized response")
    >>> second = pr.Guarantee(0.25, "local", "one comparison", "randomized response")
    >>> print(pr.compose(first, second).describe())
    0.75-DP, local model, protecting one comparison [randomized response+randomized response].
    """
    if not guarantees:
        raise InputError("compose needs at least one guarantee")
    if not all(isinstance(g, Guarantee) for g in guarantees):
        raise InputError("compose takes Guarantee objects (a release's .guarantee)")
    first = guarantees[0]
    for g in guarantees[1:]:
        if (g.unit, g.model) != (first.unit, first.model):
            raise InputError("can only compose guarantees with the same unit and model")
    if not all(g.private for g in guarantees):
        return Guarantee.non_private("+".join(g.mechanism for g in guarantees))
    delta = sum(g.delta for g in guarantees)
    if delta >= 1:
        raise InputError("composed delta reaches 1: the composition protects nothing")
    epsilon = sum(g.epsilon for g in guarantees)
    rho = None
    rhos = [g.rho for g in guarantees if g.rho is not None]
    if len(rhos) == len(guarantees):
        # zCDP composes by adding rho; its conversion may beat the sum of the epsilons
        rho = sum(rhos)
        epsilon = min(epsilon, zcdp_epsilon(rho, delta))
    return Guarantee(
        epsilon=epsilon, delta=delta, model=first.model, unit=first.unit,
        mechanism="+".join(g.mechanism for g in guarantees), rho=rho,
    )


# --------------------------------------------------------------------------------------------
# typed budgets
# --------------------------------------------------------------------------------------------

def _log_inverse(delta: float) -> float:
    """``ln(1/delta)``, also for a subnormal ``delta`` (below 5.6e-309), whose inverse overflows."""
    inverse = 1.0 / delta
    return math.log(inverse) if math.isfinite(inverse) else -math.log(delta)


def zcdp_epsilon(rho: float, delta: float) -> float:
    """Epsilon of the ``(epsilon, delta)``-DP statement implied by rho-zCDP.

    ``epsilon = rho + 2 sqrt(rho ln(1/delta))`` (Bun and Steinke 2016, Prop. 1.3). Hillebrand
    et al. Thm B.2 prints it without the factor 2, which understates epsilon; do not use it.

    Examples
    --------
    >>> import privrank as pr
    >>> round(pr.zcdp_epsilon(0.1, 1e-6), 4)
    2.4508
    """
    r = check_epsilon(rho, name="rho", minimum=0.0)
    d = check_delta(delta)
    if d == 0:
        raise InputError("rho-zCDP implies no pure epsilon-DP statement: give delta > 0")
    return r + 2.0 * math.sqrt(r * _log_inverse(d))


def zcdp_rho(epsilon: float, delta: float) -> float:
    """Largest rho whose zCDP conversion (:func:`zcdp_epsilon`) stays within (epsilon, delta).

    The exact inverse of the Bun-Steinke conversion: with ``L = ln(1/delta)``,
    ``rho = (sqrt(L + epsilon) - sqrt(L))^2``.

    Examples
    --------
    >>> import privrank as pr
    >>> rho = pr.zcdp_rho(1.0, 1e-6)
    >>> round(rho, 6), round(pr.zcdp_epsilon(rho, 1e-6), 6)
    (0.017469, 1.0)
    """
    e = check_epsilon(epsilon, minimum=0.0)
    d = check_delta(delta)
    if d == 0:
        raise InputError("a zCDP calibration needs delta > 0")
    L = _log_inverse(d)
    return e * e / (math.sqrt(L + e) + math.sqrt(L)) ** 2  # (sqrt(L+e) - sqrt(L))^2, stably


class _Budget(Shown):
    """A privacy budget's card: its statement and its parameters."""

    def _card(self) -> dict:
        fields = asdict(self)  # type: ignore[call-overload]  # every budget class is a dataclass
        return {"summary": str(self), "facts": [(k, v) for k, v in fields.items()]}


@dataclass(frozen=True)
class PureDP(_Budget):
    """A pure epsilon-DP budget.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.PureDP(0.5)
    PureDP(epsilon=0.5)
    >>> pr.PureDP(0.5).to_zcdp()
    ZCDP(rho=0.125)
    >>> pr.compose_budgets(pr.PureDP(0.5), pr.PureDP(0.25))
    PureDP(epsilon=0.75)
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, minimum=0.0))

    def to_zcdp(self) -> "ZCDP":
        """Pure epsilon-DP implies ``epsilon^2/2``-zCDP (Bun and Steinke 2016, Prop. 1.4)."""
        return ZCDP(self.epsilon ** 2 / 2.0)

    def __str__(self) -> str:
        return f"{_fmt(self.epsilon)}-DP"


@dataclass(frozen=True)
class ApproxDP(_Budget):
    """An approximate ``(epsilon, delta)``-DP budget (``delta`` may be 0).

    Examples
    --------
    >>> import privrank as pr
    >>> budget = pr.ApproxDP(1.0, 1e-6)
    >>> budget
    ApproxDP(epsilon=1.0, delta=1e-06)
    >>> pr.compose_budgets(budget, pr.PureDP(0.5))
    ApproxDP(epsilon=1.5, delta=1e-06)
    """

    epsilon: float
    delta: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon, minimum=0.0))
        object.__setattr__(self, "delta", check_delta(self.delta))

    def __str__(self) -> str:
        return f"({_fmt(self.epsilon)}, {self.delta:g})-DP"


@dataclass(frozen=True)
class ZCDP(_Budget):
    """A rho-zero-concentrated-DP budget (Bun and Steinke 2016).

    Examples
    --------
    >>> import privrank as pr
    >>> budget = pr.ZCDP(0.1)
    >>> budget
    ZCDP(rho=0.1)
    >>> approx = budget.to_approx(1e-6)
    >>> round(approx.epsilon, 4), approx.delta
    (2.4508, 1e-06)
    """

    rho: float

    def __post_init__(self):
        object.__setattr__(self, "rho", check_epsilon(self.rho, name="rho", minimum=0.0))

    def to_approx(self, delta: float) -> ApproxDP:
        """The ``(rho + 2 sqrt(rho ln(1/delta)), delta)``-DP statement it implies."""
        return ApproxDP(zcdp_epsilon(self.rho, delta), delta)

    def __str__(self) -> str:
        return f"{_fmt(self.rho)}-zCDP"


_BUDGETS = (PureDP, ApproxDP, ZCDP)


def cost_in_unit(unit: str, release_unit: str, epsilon: float, delta: float,
                 epsilon_per_user: float | None = None) -> PureDP | ApproxDP | None:
    """What a private release protecting ``release_unit`` at ``(epsilon, delta)`` costs a budget
    protecting ``unit``: PureDP, ApproxDP, or None when its unit does not convert.

    Its own epsilon when it protects that unit (one comparison of the comparison graph counts as
    one comparison); its per-user epsilon when the budget protects users and a pure-DP release
    protects single comparisons with a declared bound on each user's answers; its epsilon when
    the budget protects comparisons and the release protects users (a user's data include each
    of their comparisons). Its delta is charged as it is.
    """
    r_unit = UNIT_COMPARISON if release_unit == UNIT_EDGE else release_unit
    unit = UNIT_COMPARISON if unit == UNIT_EDGE else unit
    if r_unit == unit or (unit == UNIT_COMPARISON and r_unit == UNIT_USER):
        eps = epsilon
    elif unit == UNIT_USER and r_unit == UNIT_COMPARISON and epsilon_per_user is not None and delta == 0:
        eps = epsilon_per_user
    else:
        return None
    return ApproxDP(eps, delta) if delta > 0 else PureDP(eps)


def _as_kind(cost, kind: type):
    """Convert a budget or a private guarantee to ``kind`` where that conversion is valid."""
    if isinstance(cost, Guarantee):
        if kind is ZCDP and cost.rho is not None:
            return ZCDP(cost.rho)
        cost = ApproxDP(cost.epsilon, cost.delta) if cost.delta > 0 else PureDP(cost.epsilon)
    if not isinstance(cost, _BUDGETS):
        raise InputError("a privacy cost must be PureDP, ApproxDP, ZCDP or a Guarantee")
    if isinstance(cost, kind):
        return cost
    if kind is ApproxDP and isinstance(cost, PureDP):
        return ApproxDP(cost.epsilon, 0.0)
    if kind is PureDP and isinstance(cost, ApproxDP) and cost.delta == 0:
        return PureDP(cost.epsilon)
    if kind is ZCDP and isinstance(cost, PureDP):
        return cost.to_zcdp()
    if kind is ZCDP and isinstance(cost, ApproxDP) and cost.delta == 0:
        return PureDP(cost.epsilon).to_zcdp()
    if isinstance(cost, ZCDP):
        raise InputError(f"a {cost} cost has no {kind.__name__} form without a chosen delta: "
                         "convert it first with ZCDP.to_approx(delta)")
    raise InputError(f"a {cost} cost cannot be accounted as {kind.__name__}: approximate DP "
                     "does not convert to pure DP or zCDP (zCDP converts the other way, with "
                     "ZCDP.to_approx(delta))")


@overload
def compose_budgets(*budgets: PureDP) -> PureDP: ...
@overload
def compose_budgets(*budgets: PureDP | ApproxDP) -> PureDP | ApproxDP: ...
@overload
def compose_budgets(*budgets: PureDP | ApproxDP | ZCDP) -> PureDP | ApproxDP | ZCDP: ...
def compose_budgets(*budgets: PureDP | ApproxDP | ZCDP) -> PureDP | ApproxDP | ZCDP:
    """Sequential composition: epsilons add, deltas add, rhos add.

    All budgets are first converted to the weakest kind present (pure < zCDP; pure < approximate);
    zCDP and approximate DP do not mix without an explicit :meth:`ZCDP.to_approx`.

    Examples
    --------
    >>> import privrank as pr
    >>> pr.compose_budgets(pr.PureDP(1.0), pr.PureDP(0.5))
    PureDP(epsilon=1.5)
    >>> pr.compose_budgets(pr.PureDP(1.0), pr.ApproxDP(0.5, 1e-6))
    ApproxDP(epsilon=1.5, delta=1e-06)
    >>> pr.compose_budgets(pr.PureDP(1.0), pr.ZCDP(0.1))
    ZCDP(rho=0.6)
    """
    if not budgets:
        raise InputError("compose_budgets needs at least one budget")
    items = list(budgets)
    if not all(isinstance(b, _BUDGETS) for b in items):
        raise InputError("compose_budgets takes PureDP, ApproxDP or ZCDP budgets "
                         "(use compose for guarantees)")
    kinds = {type(b) for b in items}
    kind = ZCDP if ZCDP in kinds else (ApproxDP if ApproxDP in kinds else PureDP)
    same = [_as_kind(b, kind) for b in items]
    if kind is PureDP:
        return PureDP(sum(b.epsilon for b in same))
    if kind is ZCDP:
        return ZCDP(sum(b.rho for b in same))
    delta = sum(b.delta for b in same)
    if delta >= 1:
        raise InputError("composed delta reaches 1: the composition protects nothing")
    return ApproxDP(sum(b.epsilon for b in same), delta)


def _parts(b) -> tuple[float, ...]:
    return (b.rho,) if isinstance(b, ZCDP) else \
        ((b.epsilon, b.delta) if isinstance(b, ApproxDP) else (b.epsilon,))


class Accountant(Shown):
    """Spends a total privacy budget by sequential composition and refuses to overspend.

    Parameters
    ----------
    total
        A :class:`PureDP`, :class:`ApproxDP` or :class:`ZCDP` budget. Costs are converted to its
        kind where valid (pure costs count as ``(epsilon, 0)`` against an approximate total and as
        ``epsilon^2/2`` against a zCDP total); other mixtures raise.
    unit, model
        Optional: when given, every :class:`Guarantee` spent must protect this unit in this
        model. Without ``unit``, the accountant takes the unit of the first Guarantee it spends
        (or finds in ``history``): budgets for different units do not add up to anything
        meaningful. A per-comparison Guarantee that states a per-user epsilon (over a declared
        bound on each user's answers) fixes the unit to one user and is charged its per-user
        epsilon: the statement about a whole person, never the smaller per-comparison number.
        A later Guarantee of another unit is charged in the accountant's unit by
        :func:`cost_in_unit` (the conversion the ledger makes), or refused when it does not
        convert. Bare budgets (:class:`PureDP`, ...) are counted as given, in the
        accountant's unit.
    history
        Costs already spent, as ``(label, cost)`` pairs (e.g. the releases a persistent ledger
        recorded): they are converted like any cost and counted as they are, even when they
        exceed the total (then nothing remains).

    Examples
    --------
    >>> acct = Accountant(PureDP(1.0))
    >>> acct.spend(PureDP(0.4), "first release")
    >>> acct.remaining
    PureDP(epsilon=0.6)
    >>> acct.spend(PureDP(0.7))
    Traceback (most recent call last):
    ...
    privrank.errors.BudgetExceededError: spending 0.7-DP would exceed the remaining 0.6-DP (total 1-DP); nothing was spent

    A release of 0.5-DP per comparison, declared at most 4 answers per user, is charged per user:

    >>> acct = Accountant(PureDP(3.0))
    >>> acct.spend(Guarantee(0.5, "local", UNIT_COMPARISON, "m", epsilon_per_comparison=0.5,
    ...                      epsilon_per_user=2.0))
    >>> acct.unit == UNIT_USER, acct.remaining
    (True, PureDP(epsilon=1.0))
    """

    # relative slack for floating-point sums of budget parts
    _SLACK = 1e-12

    def __init__(self, total: PureDP | ApproxDP | ZCDP, *, unit: str | None = None, model: str | None = None,
                 history: Iterable[tuple[str, Guarantee | PureDP | ApproxDP | ZCDP]] = ()) -> None:
        if not isinstance(total, _BUDGETS):
            raise InputError("the total budget must be PureDP, ApproxDP or ZCDP")
        self.total = total
        self.unit = unit
        self.model = model
        self._history: list = []
        if isinstance(history, (str, bytes)) or not hasattr(history, "__iter__"):
            raise InputError("history must be a list of (label, cost) pairs")
        for entry in history:
            if not isinstance(entry, (tuple, list)) or len(entry) != 2:
                raise InputError("every entry of history must be a (label, cost) pair")
            label, cost = entry
            self._history.append((str(label), self._cost(cost)))
            self._take_unit(cost)

    def __repr__(self) -> str:
        unit = "" if self.unit is None else f", unit={self.unit!r}"
        model = "" if self.model is None else f", model={self.model!r}"
        return (f"Accountant(total={self.total}, spent={self.spent or 'nothing'}, remaining={self.remaining or 'nothing'}, "
                f"spends={len(self._history)}{unit}{model})")

    def _card(self) -> dict:
        spends = self._history
        return {"summary": f"{len(spends)} spend{'' if len(spends) == 1 else 's'}",
                "facts": [("total", self.total), ("spent", self.spent or "nothing"),
                          ("remaining", self.remaining or "nothing"), ("unit", self.unit), ("model", self.model)],
                "rows": Rows(len(spends), lambda k: {"spend": k + 1, "label": spends[k][0], "cost": str(spends[k][1])}),
                "more": "all of them: .history"}

    @property
    def history(self) -> tuple:
        """Every spend so far: ``(label, cost in the total's kind)``."""
        return tuple(self._history)

    def _sum(self, extra=()) -> tuple[float, ...]:
        parts = [_parts(c) for _, c in self._history] + [_parts(c) for c in extra]
        return tuple(math.fsum(p[k] for p in parts) for k in range(len(_parts(self.total))))

    @property
    def spent(self):
        """The composition of everything spent so far (None before the first spend)."""
        return compose_budgets(*(c for _, c in self._history)) if self._history else None

    @property
    def remaining(self):
        """What can still be spent, in the total's kind; None when nothing remains."""
        left = [max(t - s, 0.0) for t, s in zip(_parts(self.total), self._sum())]
        if left[0] <= self._SLACK * _parts(self.total)[0]:
            return None
        kind = type(self.total)
        return kind(*left)

    def _cost(self, cost):
        if isinstance(cost, Guarantee):
            if not cost.private:
                raise InputError("a non-private output cannot be accounted: it has no guarantee")
            if self.model is not None and cost.model != self.model:
                raise InputError(f"this accountant is for the {self.model} model; the release "
                                 f"is {cost.model}")
            unit = self.unit or _stated_unit(cost)
            if cost.unit != unit:
                converted = cost_in_unit(unit, cost.unit, cost.epsilon, cost.delta, cost.epsilon_per_user)
                if converted is None:
                    if self.unit is None:  # a per-user epsilon beside a delta: no one per-user cost
                        raise InputError("the release states a per-user epsilon with a delta > 0, which this "
                                         "accountant cannot charge per user; give the accountant a unit "
                                         "(Accountant(total, unit=...))")
                    raise InputError(f"this accountant protects {self.unit}; the release protects "
                                     f"{cost.unit}" + (" and states no per-user epsilon (declare a bound on "
                                                       "each user's answers)" if unit == UNIT_USER else ""))
                cost = converted
        return _as_kind(cost, type(self.total))

    def _take_unit(self, cost) -> None:
        """Without a unit, take the unit of the first Guarantee spent (:func:`_stated_unit`)."""
        if self.unit is None and isinstance(cost, Guarantee):
            self.unit = _stated_unit(cost)

    def can_spend(self, cost) -> bool:
        """Whether ``cost`` fits in what remains."""
        c = self._cost(cost)
        return all(s <= t * (1 + self._SLACK) for s, t in zip(self._sum([c]), _parts(self.total)))

    def spend(self, cost, label: str = "") -> None:
        """Record ``cost`` (a budget or a release's :class:`Guarantee`).

        Raises
        ------
        BudgetExceededError
            If the cost does not fit in what remains; nothing is recorded then.
        """
        c = self._cost(cost)
        if not self.can_spend(c):
            left = self.remaining
            raise BudgetExceededError(
                f"spending {c} would exceed the remaining {left if left else 'nothing'} "
                f"(total {self.total}); nothing was spent")
        self._history.append((str(label), c))
        self._take_unit(cost)


def _stated_unit(guarantee: Guarantee) -> str:
    """The unit a Guarantee makes its strongest statement about: one user when a per-comparison
    release states a per-user epsilon, else its own unit."""
    if guarantee.unit in (UNIT_COMPARISON, UNIT_EDGE) and guarantee.epsilon_per_user is not None:
        return UNIT_USER
    return guarantee.unit
