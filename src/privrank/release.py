"""The release contract: every private function charges its spend before it draws any noise.

Every private function of the public API (and so every command of the CLI) is a *release*,
marked with :func:`private_release`. A release

1. validates its input and computes its :class:`~privrank.guarantees.Guarantee` from declared
   public parameters only (epsilon, the item universe, declared bounds), never from a statistic
   of the raw data;
2. calls :func:`charge` with that guarantee: the spend is recorded in the ledger and/or spent
   from the accountant the release was given -- atomically, and refused with
   :class:`~privrank.errors.BudgetExceededError` before anything is drawn when it does not fit;
3. only then draws its noise. The noise primitives of :mod:`privrank.mechanisms` check this
   (:func:`privrank.draws.before_draw`): a release that draws before it has charged
   raises :class:`~privrank.draws.UnchargedDrawError`, so a crash or an exception
   after the draw can never leave privacy spent and unrecorded.

Who pays
--------
Each release declares three keyword arguments, which :func:`private_release` takes from the call
(the body never reads them; declared, they are in the release's signature for people and for type
checkers):

``ledger``
    A :class:`~privrank.ledger.Ledger`, or the path of a ledger file. Default ``None``: no
    ledger -- a library call records nothing unless it is given one (or runs inside
    :func:`charging`); the CLI always records, in ``--ledger`` or its default ledger. The data
    set is identified by :func:`privrank.ledger.identify` of the release's first argument
    (comparisons, rankings or a file path).
``accountant``
    An :class:`~privrank.guarantees.Accountant` to spend the guarantee from (in memory).
``new_data``
    With ``ledger``: the curator's reason, in words, for releasing data that shares most of its
    records with a budgeted data set (rows appended, dropped or doubled) as new data; without
    it such a release is refused before it draws (:meth:`privrank.ledger.Ledger.key`). The
    reason is recorded with the release.

The CLI opens one :func:`charging` context around the release it runs, naming the ledger, the
data set's identity (of the file, computed before anything is drawn) and where the output
goes; every release inside it pays there.

A release called inside another release (a private building block of a larger algorithm) is
part of the outer one: its own :func:`charge` is ignored, and the outer release must have
charged before the inner one draws.

An audit's negative control (:mod:`privrank.audit`) runs releases drawing less noise than they
state: such a release is refused by any ledger or accountant (:meth:`Payer.pay`), and its result's
guarantee is marked not private.

Seeded runs
-----------
A release given a seed (``rng=`` an int or a Generator) is reproducible research output, not a
private release; its guarantee says so (:attr:`Guarantee.seeded`). It is charged all the same.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from ._rng import is_seeded
from .errors import WEAK_EPSILON, InputError, WeakPrivacyWarning
from .draws import mark_charged, noise_factor, open_release, paying

if TYPE_CHECKING:
    from .fingerprints import Identity
    from .guarantees import Accountant, Guarantee
    from .ledger import Ledger


@dataclass
class Payer:
    """Where a release's spend goes: a ledger (with the data set's identity) and/or an accountant."""

    ledger: Ledger | str | os.PathLike[str] | None = None
    accountant: Accountant | None = None
    fingerprint: Identity | str | None = None
    dataset: str = ""
    output: str = ""
    command: str = ""
    new_data: str | None = None
    before: Callable[[], None] | None = None
    charged: list[Guarantee] = field(default_factory=list)

    def pay(self, guarantee: Guarantee, data: object) -> None:
        """Charge ``guarantee`` (a non-private output is recorded in the ledger, and refused under a budget).

        A release drawn under an audit's noise factor (:func:`~privrank.draws.noise_factor`
        other than 1) delivers no stated guarantee: it is refused, and nothing is recorded or spent.
        """
        if noise_factor() != 1.0:
            raise InputError(f"this release would draw {noise_factor():g} x the noise its guarantee states (an "
                             "audit's negative control): it is not private, and is not charged to a ledger or "
                             "accountant; nothing was spent")
        accountant = self.accountant if guarantee.private else None
        if accountant is not None and not accountant.can_spend(guarantee):
            accountant.spend(guarantee)  # raises BudgetExceededError, spending nothing
        if self.before is not None:
            self.before()
        if self.ledger is not None:
            from .ledger import Ledger, identify

            identity = self.fingerprint or identify(data)
            with nullcontext(self.ledger) if isinstance(self.ledger, Ledger) else Ledger(self.ledger) as ledger:
                ledger.record(identity, guarantee, dataset=self.dataset, output=self.output, command=self.command,
                              new_data=self.new_data)
        if accountant is not None:
            accountant.spend(guarantee, self.command or guarantee.mechanism)
        self.charged.append(guarantee)


_AMBIENT: ContextVar[Payer | None] = ContextVar("privrank_payer", default=None)
_OPEN: ContextVar[tuple | None] = ContextVar("privrank_open_release", default=None)


@contextmanager
def charging(ledger: Ledger | str | os.PathLike[str] | None = None, *, accountant: Accountant | None = None,
             fingerprint: Identity | str | None = None, dataset: str = "", output: str = "", command: str = "",
             new_data: str | None = None, before: Callable[[], None] | None = None) -> Iterator[Payer]:
    """Every release inside this block pays ``ledger``/``accountant`` (the CLI's one place of payment).

    ``fingerprint`` identifies the data set when the caller computed it: its
    :class:`~privrank.fingerprints.Identity` (:func:`~privrank.ledger.identify`), or a name.
    ``new_data``: the curator's reason to call data new that resembles a budgeted data set
    (:meth:`~privrank.ledger.Ledger.key`), recorded with each release. ``before``: called (without
    arguments) before each spend is recorded; the CLI holds SIGINT and SIGTERM from there until the
    output is written. Yields the :class:`Payer`; its ``charged`` list holds the guarantees charged
    inside.
    """
    payer = Payer(ledger, accountant, fingerprint, dataset, output, command, new_data, before)
    token = _AMBIENT.set(payer)
    try:
        with paying():  # a noise primitive called outside a release here would go unrecorded: refused
            yield payer
    finally:
        _AMBIENT.reset(token)


def inside_charging() -> bool:
    """True inside a :func:`charging` block (the CLI's): a release made there is recorded."""
    return _AMBIENT.get() is not None


def _payer(ledger, accountant, new_data) -> Payer | None:
    if new_data is not None and ledger is None:
        raise InputError("new_data= is the reason recorded in a ledger for calling data new: give ledger= too")
    if ledger is not None or accountant is not None:
        return Payer(ledger, accountant, new_data=new_data)
    return _AMBIENT.get()


def reads(data) -> None:
    """Name ``data`` as the data set of the open release, which its ledger record identifies, when the
    release builds it from its arguments (evalica's ``xs, ys, winners``,
    :func:`privrank.pairwise.arena.release_arguments`); call it before :func:`charge`."""
    state = _OPEN.get()
    if state is not None:
        _OPEN.set((state[0], data, state[2]))


def charge(guarantee) -> None:
    """Record the spend of the open release (its guarantee) before it draws; see the module docstring.

    A no-op outside a release, for a release nested in another, and after the first charge.
    """
    state = _OPEN.get()
    if state is None:
        return
    payer, data, depth_state = state
    if depth_state["charged"]:
        return
    if payer is not None:
        payer.pay(guarantee, data)
    depth_state["charged"] = True
    mark_charged()
    _warn_if_weak(guarantee)


def _warn_if_weak(guarantee) -> None:
    """:class:`~privrank.errors.WeakPrivacyWarning` when the guarantee states an epsilon above
    :data:`~privrank.errors.WEAK_EPSILON` (per protected unit, or per user by composition)."""
    if not getattr(guarantee, "private", False):
        return
    per_user = guarantee.epsilon_per_user
    why = (f"above {WEAK_EPSILON:g}, e^epsilon > {math.exp(WEAK_EPSILON):,.0f}, so an observer's odds on any one "
           "protected answer can move by more than that factor: the output may reveal it")
    if guarantee.epsilon > WEAK_EPSILON:
        warnings.warn(f"epsilon {guarantee.epsilon:g} protects {guarantee.unit} only weakly: {why}; lower "
                      "epsilon", WeakPrivacyWarning, stacklevel=4)
    elif per_user is not None and per_user > WEAK_EPSILON:
        warnings.warn(f"each {guarantee.user} is protected at epsilon {per_user:g} by composition (their answers "
                      f"together): {why}; lower epsilon or max_answers", WeakPrivacyWarning, stacklevel=4)


_P = ParamSpec("_P")
_R = TypeVar("_R")
#: the keyword arguments every release declares and :func:`private_release` takes from the call
PAYMENT = ("ledger", "accountant", "new_data")


def private_release(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """Mark ``fn`` as a release: it declares ``ledger=``, ``accountant=`` and ``new_data=``
    (keyword-only, default None; taken from the call here, never passed to ``fn``) and must
    :func:`charge` before drawing."""
    sig = inspect.signature(fn)
    first = next(iter(sig.parameters))
    if any(name not in sig.parameters or sig.parameters[name].kind is not inspect.Parameter.KEYWORD_ONLY
           for name in PAYMENT):
        raise TypeError(f"release {fn.__name__} must declare the keyword-only arguments {', '.join(PAYMENT)}")

    @functools.wraps(fn)
    def release(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        ledger, accountant, new_data = (kwargs.pop(name, None) for name in PAYMENT)
        if _OPEN.get() is not None:  # a building block of an open release: the outer one pays
            if ledger is not None or accountant is not None or new_data is not None:
                raise InputError("ledger=, accountant= and new_data= belong to the outermost release")
            return fn(*args, **kwargs)
        data = args[0] if args else kwargs.get(first)
        state = {"charged": False}
        token = _OPEN.set((_payer(ledger, accountant, new_data), data, state))
        try:
            with open_release():
                result = fn(*args, **kwargs)
        finally:
            _OPEN.reset(token)
        return _mark_seeded(_mark_noise_factor(result), kwargs.get("rng"))

    release.__signature__ = sig  # type: ignore[attr-defined]  # inspect.signature reads it (__wrapped__ is gone)
    release.is_release = True  # type: ignore[attr-defined]  # the mark tests/test_release_contract.py looks for
    del release.__wrapped__  # the unwrapped body would draw without charging
    return release


def _mark_noise_factor(result):
    """Mark the guarantee of a release drawn under an audit's noise factor not private: the epsilon it
    states is the calibration's, not what the drawn noise delivers."""
    factor = noise_factor()
    g = getattr(result, "guarantee", None)
    if factor == 1.0 or g is None or not dataclasses.is_dataclass(result) or isinstance(result, type) or not g.private:
        return result
    return dataclasses.replace(result, guarantee=g.without_privacy(
        f"Drawn with {factor:g} x the noise its calibration states (an audit's negative control): the "
        "calibrated guarantee is not delivered."))


def _mark_seeded(result, rng):
    """Say in the result's guarantee that a seeded run is research output, not a private release."""
    if not is_seeded(rng):
        return result
    g = getattr(result, "guarantee", None)
    if g is None or not dataclasses.is_dataclass(result) or isinstance(result, type) or getattr(g, "seeded", True):
        return result
    return dataclasses.replace(result, guarantee=dataclasses.replace(g, seeded=True))
