"""Privacy guarantees carried by every private output, and their composition.

A :class:`Guarantee` states exactly what a release protects: the privacy parameters
(epsilon, delta), the trust model (``local`` or ``central``), the *unit* whose presence or
value is protected (one comparison, all comparisons of one user, one ranking, ...), and the
mechanism. For per-comparison DP the guarantee also reports the per-user epsilon implied over
the comparisons each user actually made (the maximum over users; basic composition in the
local model, group privacy in the central model), so a per-comparison epsilon is never
mistaken for a per-person one.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

from .errors import InputError, check_delta

UNIT_COMPARISON = "one comparison"
UNIT_USER = "all comparisons of one user"
UNIT_RANKING = "one ranking"
UNIT_EDGE = "one comparison (one outcome on one edge of the comparison graph)"


@dataclass(frozen=True)
class Guarantee:
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
        For per-comparison mechanisms: the per-comparison epsilon (max over records) and the
        per-user epsilon it implies (max over users): by basic composition of that user's
        per-comparison epsilons in the local model, by group privacy over that user's
        comparisons in the central model. ``None`` where they do not apply;
        ``epsilon_per_user`` is ``None`` when the data carry no user ids, so no per-user
        statement can be made.
    private
        False for non-private outputs, and for outputs that include non-private diagnostics.
    note
        Free text: assumptions a reader needs (e.g. "ties randomized as a fair coin").
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

    def __post_init__(self):
        if self.model not in ("local", "central", "none"):
            raise InputError("model must be 'local', 'central' or 'none'")
        if self.private and not (self.epsilon > 0 and math.isfinite(self.epsilon)):
            raise InputError("a private guarantee needs a finite epsilon > 0")
        check_delta(self.delta)

    @classmethod
    def non_private(cls, mechanism: str = "none", note: str = "") -> "Guarantee":
        """The guarantee of an output computed from raw data without noise: none."""
        return cls(epsilon=math.inf, model="none", unit="none", mechanism=mechanism,
                   private=False, note=note)

    def without_privacy(self, reason: str) -> "Guarantee":
        """Mark an output as not private (e.g. it carries exact diagnostics of the raw data)."""
        return replace(self, private=False, note=(self.note + " " if self.note else "") + reason)

    def to_dict(self) -> dict:
        d = asdict(self)
        for k, v in d.items():
            if isinstance(v, float) and math.isinf(v):
                d[k] = None if k != "epsilon" else "inf"
        return d

    def describe(self) -> str:
        """The guarantee in words."""
        if not self.private:
            base = "NOT PRIVATE: no differential-privacy guarantee"
            if self.model != "none":
                base += f" (the underlying {self.mechanism} release alone would be {self._dp_words()})"
            return base + (f". {self.note}" if self.note else ".")
        text = self._dp_words()
        if self.epsilon_per_comparison is not None and self.unit in (UNIT_COMPARISON, UNIT_EDGE):
            if self.epsilon_per_user is not None:
                how = "basic composition" if self.model == "local" else "group privacy"
                text += (f"; by {how} over the comparisons each user made, "
                         f"{_fmt(self.epsilon_per_user)}-DP per user (worst user)")
            else:
                text += "; no user ids were given, so no per-user guarantee can be stated"
        return text + (f". {self.note}" if self.note else ".")

    def _dp_words(self) -> str:
        params = f"({_fmt(self.epsilon)}, {self.delta:g})" if self.delta > 0 else _fmt(self.epsilon)
        return f"{params}-DP, {self.model} model, protecting {self.unit} [{self.mechanism}]"


def _fmt(x: float) -> str:
    return "inf" if math.isinf(x) else f"{x:.4g}"


def compose(*guarantees: Guarantee) -> Guarantee:
    """Basic sequential composition: epsilons and deltas add.

    All guarantees must protect the same unit in the same model; composing across different
    units has no meaning and raises.
    """
    if not guarantees:
        raise InputError("compose needs at least one guarantee")
    first = guarantees[0]
    for g in guarantees[1:]:
        if (g.unit, g.model) != (first.unit, first.model):
            raise InputError("can only compose guarantees with the same unit and model")
    if not all(g.private for g in guarantees):
        return Guarantee.non_private("+".join(g.mechanism for g in guarantees))
    delta = sum(g.delta for g in guarantees)
    if delta >= 1:
        raise InputError("composed delta reaches 1: the composition protects nothing")
    return Guarantee(
        epsilon=sum(g.epsilon for g in guarantees), delta=delta, model=first.model,
        unit=first.unit, mechanism="+".join(g.mechanism for g in guarantees),
    )
