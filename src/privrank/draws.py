"""The one gate every draw of privacy noise passes: charge before you draw, and the audits' noise factor.

Every primitive of :mod:`privrank.mechanisms` that draws privacy noise calls
:func:`before_draw` first, and calibrates the noise it draws with :func:`noise_factor`. The gate
is part of the release contract and lives beside it (:mod:`privrank.release`): the primitives
import the gate, and the gate and the contract import nothing from the primitives.

* **Charge before you draw.** A release run under :func:`privrank.release.charged` (every
  private function of the public API, and so every command of the CLI) must record its spend
  -- in the ledger or accountant it was given -- before its first draw. :func:`before_draw`
  raises :class:`UnchargedDrawError` when a release draws noise before it has charged: a bug,
  never a user error, caught by the test suite for every registered mechanism.
* **Negative controls of the audits.** Inside ``with _drawn_noise_factor(f):`` (private to
  :mod:`privrank.audit`, which alone imports it) every primitive draws the noise of scale ``f``
  times the scale it reports (epsilon-parametrised randomizers randomize at ``epsilon / f``).
  The audits run the mechanisms as released and compare what they show with the epsilon the
  audit was asked to check, and under ``_drawn_noise_factor(0.5)`` ("draws half the noise it
  claims") they must report a violation. A release made under a factor other than 1 is not
  private: :mod:`privrank.release` refuses to charge it to a ledger or accountant, and marks its
  guarantee not private.
"""
from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar

_FACTOR: ContextVar[float] = ContextVar("privrank_noise_factor", default=1.0)
#: the open release of this context: None outside releases, else a mutable [charged: bool]
_RELEASE: ContextVar[list | None] = ContextVar("privrank_release", default=None)
#: inside a block whose spends a ledger or accountant records
_PAYING: ContextVar[bool] = ContextVar("privrank_paying", default=False)


class UnchargedDrawError(RuntimeError):
    """A release drew privacy noise before recording its spend (a bug in privrank)."""


def noise_factor() -> float:
    """The factor by which drawn noise is scaled (1 except inside an audit's :func:`_drawn_noise_factor`)."""
    return _FACTOR.get()


@contextmanager
def _drawn_noise_factor(factor: float):
    """Draw ``factor`` times the noise every mechanism reports (the audits' negative controls only)."""
    factor = float(factor)
    if not factor > 0:
        raise ValueError("the noise factor must be > 0")
    token = _FACTOR.set(factor)
    try:
        yield factor
    finally:
        _FACTOR.reset(token)


def before_draw() -> None:
    """Called by every primitive before it draws privacy noise: inside a release, the spend must be
    recorded; inside :func:`paying` (a ledger's or accountant's block), noise is drawn by releases only."""
    state = _RELEASE.get()
    if state is not None and not state[0]:
        raise UnchargedDrawError("privacy noise was drawn before the release was charged")
    if state is None and _PAYING.get():
        raise UnchargedDrawError("privacy noise was drawn outside a release inside a charging() block, where "
                                 "every spend must be recorded: call the public release functions, which charge "
                                 "before they draw")


@contextmanager
def simulating():
    """Draws on released or synthetic values (bootstrap replicates of a release, the planner's
    simulations): they spend no privacy, so :func:`paying` lets them through."""
    token = _PAYING.set(False)
    try:
        yield
    finally:
        _PAYING.reset(token)


@contextmanager
def paying():
    """Mark the current context as one whose spends are recorded (:func:`privrank.release.charging`)."""
    token = _PAYING.set(True)
    try:
        yield
    finally:
        _PAYING.reset(token)


@contextmanager
def open_release():
    """Mark the current context as inside one release; yields the state that :func:`mark_charged` sets."""
    state = [False]
    token = _RELEASE.set(state)
    try:
        yield state
    finally:
        _RELEASE.reset(token)


def mark_charged() -> bool:
    """Record that the open release has charged its spend; False when no release is open."""
    state = _RELEASE.get()
    if state is None:
        return False
    state[0] = True
    return True
