"""The audit registry: every private algorithm, its worst-case neighbours and its controls.

See the package docstring (:mod:`privrank.audit`) for how to register a mechanism.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np

from .. import limits
from ..errors import InputError, check_delta, check_epsilon, check_positive
from ..draws import _drawn_noise_factor
from .core import (DEFAULT_CONFIDENCE, AuditResult, audit_exact, audit_laplace_release, audit_losses,
                   audit_samples, drawn_law_mismatch, drawn_scale_mismatch)

#: approximate-DP mechanisms are audited at this delta unless told otherwise
DEFAULT_DELTA = 1e-6
#: modules holding registrations; a new family adds its module here
CATALOGS = ("privrank.audit.local", "privrank.audit.footrule", "privrank.audit.counts",
            "privrank.audit.kemeny", "privrank.audit.central")

#: largest epsilon an audit takes: a sampled audit resolves losses up to about log(trials) (< 20
#: here), and beyond about 36 the exact ones would compare probabilities below double precision
MAX_AUDIT_EPSILON = 20.0


@dataclass(frozen=True)
class Samples:
    """Outputs on the two neighbouring inputs: ``(trials,)`` numbers or ``(trials, D)`` vectors."""

    first: np.ndarray
    second: np.ndarray


@dataclass(frozen=True)
class Exact:
    """The exact output distribution on each input: ``pmfs[i, k] = P(output k | input i)``.

    ``draws`` maps an input's index to outcome indices the public function actually drew on it:
    they must follow its row of ``pmfs`` (:func:`~privrank.audit.core.drawn_law_mismatch`), so a
    mechanism that draws less noise than its law is caught even though the law is exact.
    """

    pmfs: np.ndarray
    inputs: tuple
    outcomes: tuple
    draws: dict = field(default_factory=dict)


@dataclass(frozen=True)
class LaplaceRelease:
    """Laplace noise of ``scales[c]`` on coordinate ``c``; ``differences[i, c] = |f(x_i) - f(x_i')|``."""

    differences: np.ndarray
    scales: np.ndarray
    pairs: tuple


@dataclass(frozen=True)
class Losses:
    """Exact privacy losses ``ln p(y | x) - ln p(y | x')`` at sampled outputs ``y`` (both directions).

    ``noise`` is the Laplace noise recovered from those outputs, drawn at the stated ``scale``
    (:func:`~privrank.audit.core.drawn_scale_mismatch`).
    """

    values: np.ndarray
    noise: np.ndarray | None = None
    scale: float | None = None


@dataclass(frozen=True)
class Mechanism:
    """A registered private algorithm.

    Attributes
    ----------
    name
        Command-line name, e.g. ``"randomized-response"``.
    description
        One line for ``privrank audit --list``.
    unit
        The neighbouring relation: what the two inputs differ in (the protected unit).
    covers
        Dotted names (``"privrank.pairwise.local.local_laplace"``) of the public functions whose
        privacy this audit checks.
    run
        ``run(epsilon, delta, trials, rng) -> Samples | Exact | LaplaceRelease | Losses``: runs the mechanism
        *calibrated for* ``(epsilon, delta)`` on its worst-case neighbouring inputs, ``trials``
        times per input (ignored by exact audits).
    approximate
        True for (epsilon, delta)-DP mechanisms (audited at :data:`DEFAULT_DELTA` by default).
    trials
        Default runs per input: enough to catch the declared control within about a minute.
    control
        The declared negative control: a drawn-noise factor (0.5 = half the noise: the
        mechanism claims its calibration while every primitive draws half the noise) or the
        name of an entry of ``controls``.
    controls
        Named broken variants, each ``run``-like, calibrated with a known wrong constant while
        still claiming the nominal guarantee.
    note
        Where the analysis is looser than what any neighbouring pair exhibits: the exact or
        estimated worst-case loss, and why the declared control differs from 0.5.
    """

    name: str
    description: str
    unit: str
    covers: tuple
    run: Callable
    approximate: bool = False
    trials: int = 20_000
    control: float | str = 0.5
    controls: Mapping[str, Callable] = field(default_factory=dict)
    note: str = ""


_REGISTRY: dict[str, Mechanism] = {}
_LOADED = False


def register(mechanism: Mechanism) -> Mechanism:
    """Add a mechanism to the registry (names are unique)."""
    if not isinstance(mechanism, Mechanism):
        raise InputError("register takes a privrank.audit.Mechanism")
    if mechanism.name in _REGISTRY:
        raise InputError(f"a mechanism named {mechanism.name!r} is already registered")
    if isinstance(mechanism.control, str) and mechanism.control not in mechanism.controls:
        raise InputError(f"{mechanism.name}: the declared control {mechanism.control!r} is not "
                         "among its controls")
    if not isinstance(mechanism.control, str) and not 0 < float(mechanism.control) < 1:
        raise InputError(f"{mechanism.name}: a control factor must lie in (0, 1)")
    _REGISTRY[mechanism.name] = mechanism
    return mechanism


def _load() -> None:
    global _LOADED
    if not _LOADED:
        _LOADED = True
        for module in CATALOGS:
            importlib.import_module(module)


def mechanisms() -> dict[str, Mechanism]:
    """All registered mechanisms by name (sorted)."""
    _load()
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> Mechanism:
    """The registered mechanism ``name``."""
    reg = mechanisms()
    if name not in reg:
        raise InputError(f"no mechanism named {name!r}; privrank.audit.registry.mechanisms() lists them "
                         "all (CLI: privrank audit --list)")
    return reg[name]


def run_audit(name: str, *, epsilon, delta=None, factor: float = 1.0, control=None,
              trials: int | None = None, seed=None,
              confidence: float = DEFAULT_CONFIDENCE) -> AuditResult:
    """Audit the registered mechanism ``name`` against the claim (epsilon, delta).

    Parameters
    ----------
    epsilon, delta
        The claimed guarantee; ``delta`` defaults to :data:`DEFAULT_DELTA` for approximate-DP
        mechanisms and to 0 otherwise.
    factor
        Drawn-noise factor ``F``: the mechanism runs calibrated for ``epsilon`` while every noise
        primitive draws ``F`` times the noise it states (randomizers randomize at
        ``epsilon / F``; :func:`~privrank.draws._drawn_noise_factor`). ``F = 0.5``:
        half the noise. 1 audits the mechanism as it is.
    control
        ``True`` runs the mechanism's declared control, a string one of its named controls
        (calibrated with its wrong constant for the claimed ``epsilon``). Exclusive with
        ``factor``.
    trials
        Runs per input (default: the mechanism's).
    seed
        Seed of all randomness (None: fresh OS entropy).
    """
    mech = get(name)
    eps = check_epsilon(epsilon)
    if eps > MAX_AUDIT_EPSILON:
        raise InputError(f"an audit resolves privacy losses up to about the log of its trial count; epsilon = {eps:g} "
                         f"is above what any audit here can test (at most {MAX_AUDIT_EPSILON:g})")
    if delta is None:
        dlt = DEFAULT_DELTA if mech.approximate else 0.0
    else:
        dlt = check_delta(delta)
    if mech.approximate and dlt == 0:
        raise InputError(f"{name} is (epsilon, delta)-DP: give a delta > 0")
    if not mech.approximate and dlt > 0:
        raise InputError(f"{name} is pure epsilon-DP: audit it without a delta")
    factor = check_positive(factor, name="drawn-noise factor")
    n = mech.trials if trials is None else int(trials)
    if n < 100:
        raise InputError("an audit needs at least 100 trials per input")
    limits.check("AUDIT_TRIALS", n, "trials per input", "the declared trials of each mechanism resolve its claim")
    runner, what = mech.run, "as calibrated" if factor == 1.0 else f"drawn-noise factor {factor:g}"
    if control is not None:
        if factor != 1.0:
            raise InputError("give a drawn-noise factor or a control, not both")
        control = mech.control if control is True else control
        if isinstance(control, str):
            if control not in mech.controls:
                raise InputError(f"{name} has no control named {control!r} "
                                 f"(it has: {', '.join(mech.controls) or 'none'})")
            runner, what = mech.controls[control], f"control {control!r}"
        else:
            factor, what = float(control), f"control: drawn-noise factor {float(control):g}"
    rng = np.random.default_rng(seed)
    with _drawn_noise_factor(factor):  # the noise is drawn at factor x its stated scale
        obs = runner(eps, dlt, n, rng)
    details = {"mechanism": name, "protects": mech.unit,
               "run": f"{what}, calibrated for epsilon={eps:.6g}" + (f", delta={dlt:g}" if dlt else "")
               + (f", drawing {factor:g} x the noise it states" if factor != 1.0 else "")}
    if mech.note:
        details["note"] = mech.note
    if isinstance(obs, Exact):
        result = audit_exact(obs.pmfs, epsilon=eps, delta=dlt, inputs=obs.inputs,
                             outcomes=obs.outcomes, details=details)
        mismatch = next((m for m in (drawn_law_mismatch(d, obs.pmfs[i], obs.inputs[i])
                                     for i, d in obs.draws.items()) if m), "")
        return replace(result, drawn_mismatch=mismatch)
    if isinstance(obs, Losses):
        result = audit_losses(obs.values, epsilon=eps, details=details)
        if obs.noise is None or obs.scale is None:  # the noise comes with the scale it was drawn at
            return result
        return replace(result, drawn_mismatch=drawn_scale_mismatch(obs.noise, obs.scale, "the noise vector"))
    if isinstance(obs, LaplaceRelease):
        return audit_laplace_release(obs.differences, obs.scales, epsilon=eps, pairs=obs.pairs,
                                     details=details)
    return audit_samples(obs.first, obs.second, epsilon=eps, delta=dlt, confidence=confidence,
                         details=details)


# --------------------------------------------------------------------------------------------
# which public functions are private algorithms
# --------------------------------------------------------------------------------------------

#: parameters that mark a privacy budget in a signature
PRIVACY_PARAMETERS = ("epsilon", "user_epsilon", "rho", "budget")
#: packages that drive the library (command line, reproductions, the auditor itself)
DRIVER_PACKAGES = ("privrank.cli", "privrank.experiments", "privrank.audit")
#: public functions that take a budget and randomness but are not private algorithms
NOT_MECHANISMS = {
    "privrank.simulate.sample_debiased_release":
        "simulation: samples the distribution of the debiased randomized-response release of "
        "synthetic data (the real mechanism is audited as randomized-response)",
    "privrank.simulate.sample_local_releases":
        "simulation: local releases of synthetic BTL answers (the real mechanisms are audited as "
        "randomized-response/counts and local-laplace)",
    "privrank.plan.predict":
        "simulation: predicts the error of a planned study from synthetic data; reads no data",
    "privrank.plan.choose_mechanism":
        "simulation: compares the predicted errors of the central mechanisms on synthetic data; reads no data",
    "privrank.aggregation.auto.private_aggregate":
        "dispatch: runs the registered aggregation method it chooses from public parameters",
    "privrank.aggregation.auto.run_method":
        "dispatch: runs a registered aggregation method by its name",
}


def _takes_budget_and_randomness(obj) -> bool:
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return False
    return "rng" in params and any(p in params for p in PRIVACY_PARAMETERS)


def private_algorithms() -> list[str]:
    """Dotted names of every public function or class of privrank that looks private.

    The rule (DESIGN: every randomized function takes ``rng=``; a private algorithm takes a
    budget): a public callable defined in a privrank module, outside the driver packages,
    whose signature has ``rng`` and one of ``epsilon``, ``user_epsilon``, ``rho``, ``budget``
    (class constructors included). Every such
    callable must be covered by a registered mechanism or listed in :data:`NOT_MECHANISMS`.
    """
    import privrank

    found = set()
    for info in pkgutil.walk_packages(privrank.__path__, "privrank."):
        if info.name.startswith(DRIVER_PACKAGES):
            continue
        module = importlib.import_module(info.name)
        for attr, obj in vars(module).items():
            if attr.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            if inspect.isfunction(obj) or inspect.isclass(obj):
                if _takes_budget_and_randomness(obj):
                    found.add(f"{info.name}.{attr}")
    return sorted(found)
