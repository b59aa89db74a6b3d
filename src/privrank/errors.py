"""Input validation shared by every public function.

All errors raised for bad input are :class:`InputError`, a :class:`ValueError` subclass. Messages
say what is wrong and how to fix it, and never echo an individual's raw preferences.
"""
from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: the command line's parsers import this module
    import numpy as np


class InputError(ValueError):
    """Bad input to a privrank function (a ``ValueError``).

    Examples
    --------
    Every refusal of bad input is an InputError, a ``ValueError`` that says what is wrong without
    echoing anyone's data:

    >>> import privrank as pr
    >>> try:
    ...     pr.PairwiseComparisons.from_labels(["a", "b"], ["b", "b"], [1, -1])
    ... except pr.InputError as exc:
    ...     print(exc)
    record 1 compares an item with itself
    >>> issubclass(pr.InputError, ValueError)
    True
    """


class DisconnectedError(InputError):
    """The comparison graph is too disconnected to estimate the requested quantity.

    Examples
    --------
    An item in no comparison cannot be ranked:

    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "b"], ["b", "a"], [1, 1], items=["a", "b", "c"])
    >>> try:
    ...     pr.fit_btl(comps)
    ... except pr.DisconnectedError as exc:
    ...     print(exc)
    1 item(s) appear in no comparison and cannot be ranked; drop them from the item list
    >>> issubclass(pr.DisconnectedError, pr.InputError)
    True
    """


class BudgetExceededError(InputError):
    """A release would spend more privacy budget than remains.

    Examples
    --------
    >>> import privrank as pr
    >>> acct = pr.Accountant(pr.PureDP(1.0))
    >>> acct.spend(pr.PureDP(0.75))
    >>> try:
    ...     acct.spend(pr.PureDP(0.5))
    ... except pr.BudgetExceededError as exc:
    ...     print(exc)
    spending 0.5-DP would exceed the remaining 0.25-DP (total 1-DP); nothing was spent
    >>> acct.remaining
    PureDP(epsilon=0.25)
    """


class PrivacyWarning(RuntimeWarning):
    """A release protects less than its headline number suggests.

    For example, a large per-user epsilon by composition. The CLI prints it as
    ``privrank: warning: ...``.

    Examples
    --------
    A per-comparison epsilon that composes to a large per-user epsilon warns (200 simulated users,
    10 comparisons each):

    >>> import warnings
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rel = pr.debiased_randomized_response(comps, epsilon=2.0, max_answers=10, rng=0)
    >>> caught[0].category.__name__, issubclass(caught[0].category, pr.PrivacyWarning)
    ('WeakPrivacyWarning', True)
    >>> rel.guarantee.epsilon_per_comparison, rel.guarantee.epsilon_per_user
    (2.0, 20.0)
    """


class WeakPrivacyWarning(PrivacyWarning, UserWarning):
    """A release states an epsilon above :data:`WEAK_EPSILON`: a guarantee in name only.

    Also a :class:`PrivacyWarning` (the CLI prints it) and a ``UserWarning`` (a notebook shows
    it).

    Examples
    --------
    >>> import warnings
    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, 1, -1])
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rel = pr.debiased_randomized_response(comps, epsilon=12.0, rng=0)
    >>> print(caught[0].message)
    epsilon 12 protects one comparison only weakly: above 10, e^epsilon > 22,026, so an observer's odds on any
    one protected answer can move by more than that factor: the output may reveal it; lower epsilon
    >>> issubclass(pr.WeakPrivacyWarning, UserWarning)
    True
    """


#: an epsilon above which a guarantee means little: ``e^10 > 22,000``, so an observer's odds on any
#: one protected answer can move by more than that factor (randomized response at this epsilon
#: reports the true answer with probability above 0.99995)
WEAK_EPSILON = 10.0


class UtilityWarning(RuntimeWarning):
    """A result says less than it seems to.

    A release that cannot tell the items apart, intervals that under-cover, a fit or a solver
    that did not finish. The CLI prints it.

    Examples
    --------
    Intervals around the theory ridge of the perturbed MLE would under-cover, and say so:

    >>> import warnings
    >>> import privrank as pr
    >>> from privrank.simulate import btl_complete_design
    >>> comps = btl_complete_design([1.0, 0.5, 0.0, -0.5, -1.0], L=200, rng=0)
    >>> est = pr.perturbed_mle(comps, epsilon=1.0, rng=0)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     ci = pr.confidence_intervals(est)
    >>> print(caught[0].message)
    the ridge shrinks some scores by about 3.5 standard errors, so plain intervals under-cover theta*; use
    bias_corrected=True (CLI: --bias-corrected)
    >>> issubclass(pr.UtilityWarning, RuntimeWarning)
    True
    """


#: the epsilons a release takes on the command line, and of randomized reports in a file: below, a
#: release is noise without signal at any data size and its variance overflows; above, it is no
#: privacy (and exp(epsilon) overflows)
EPSILON_RANGE = (1e-6, 100.0)


def epsilons_out_of_range(epsilon) -> tuple[np.ndarray, str]:
    """Positions of the epsilons of randomized reports outside the range of a release's epsilon
    (NaN and infinity included), and why they are refused (never saying their values)."""
    import numpy as np

    lo, hi = EPSILON_RANGE
    eps = np.asarray(epsilon, dtype=float)
    return np.flatnonzero(~((eps >= lo) & (eps <= hi))), (
        f"epsilon must be finite and > 0, in [{lo:g}, {hi:g}] like a release's epsilon: a randomized report with "
        "a smaller one is noise without signal, with a larger one it has no privacy")


def _not_a_number(value) -> bool:
    """True for a truth value or text, which ``float`` would take as a number (``True`` as 1, ``"1"`` as 1.0)."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)  # numpy's bools and strings
    return isinstance(value, (bool, str, bytes)) or kind in ("b", "S", "U")


#: the smallest epsilon any mechanism of the library takes (the audits go down to 1e-10): below it, a
#: mechanism's arithmetic under- or overflows (1 / expm1(5e-324) is infinite)
EPSILON_FLOOR = 1e-12

#: the smallest rho (zero-concentrated DP) a mechanism takes: the rho of :data:`EPSILON_FLOOR`
RHO_MINIMUM = EPSILON_FLOOR ** 2 / 2


def _real(value, name: str, what: str) -> float:
    """``value`` as a float, refusing a bool, text, a complex number or an integer too large for a float."""
    try:
        if _not_a_number(value) or isinstance(value, complex):
            raise TypeError
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be {what}, got {type(value).__name__}") from None
    except OverflowError:
        raise InputError(f"{name} must be {what}: an integer too large for a floating-point number") from None


def check_epsilon(epsilon, *, name: str = "epsilon", allow_inf: bool = False,
                  minimum: float = EPSILON_FLOOR) -> float:
    """Validate a privacy parameter: a real number >= ``minimum`` (by default :data:`EPSILON_FLOOR`,
    below which a mechanism's arithmetic under- or overflows; ``inf`` only
    where ``allow_inf``); a bool or a string is refused, not read as a number."""
    eps = _real(epsilon, name, "a number > 0")
    if math.isnan(eps) or eps <= 0:
        raise InputError(f"{name} must be > 0 (got {eps!r}); smaller epsilon means stronger privacy")
    if eps < minimum:
        raise InputError(f"{name} must be at least {minimum:g}: a smaller one is noise without signal at any data "
                         "size, and its arithmetic under- or overflows")
    if math.isinf(eps) and not allow_inf:
        raise InputError(f"{name} must be finite; use the non-private method for no privacy")
    return eps


def check_epsilons(epsilons, *, name: str = "epsilon") -> np.ndarray:
    """Validate an array of per-record or per-user epsilons (all finite and at least
    :data:`EPSILON_FLOOR`)."""
    import numpy as np

    arr = real_array(epsilons, name=name, what="a number > 0 or an array of them")
    if arr.size == 0:
        raise InputError(f"{name} is empty")
    if not np.all(np.isfinite(arr)) or np.any(arr < EPSILON_FLOOR):
        raise InputError(f"every {name} must be finite and at least {EPSILON_FLOOR:g}")
    return arr


def real_array(values, *, name: str, what: str = "an array of numbers", ndim: int | None = None) -> np.ndarray:
    """``values`` as a float array (of ``ndim`` dimensions when given): text, complex numbers, ragged
    lists, objects and integers too large for a float are refused (NaN and infinity are the caller's
    to check)."""
    import numpy as np

    kind = getattr(getattr(values, "dtype", None), "kind", None)
    try:
        if kind in ("c", "S", "U", "O", "V", "M", "m") or isinstance(values, (str, bytes, complex)):
            raise TypeError
        arr = np.asarray(values, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{name} must be {what} (real, of one shape)") from None
    if ndim is not None and arr.ndim != ndim:
        raise InputError(f"{name} must be {what} of {ndim} dimension(s), got {arr.ndim}")
    return arr


def index_array(values, *, name: str, what: str = "whole-number indices") -> np.ndarray:
    """``values`` as an int64 array of whole numbers (``0.9`` is refused, not truncated to 0)."""
    import numpy as np

    if isinstance(values, np.ndarray) and values.dtype.kind == "i":
        return values.astype(np.int64, copy=False)
    arr = real_array(values, name=name, what=what)
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)) or np.any(np.abs(arr) > MAX_WHOLE):
        raise InputError(f"{name} must be {what}: whole numbers, not fractions, NaN or infinity")
    return arr.astype(np.int64)


def check_labels(labels, *, name: str = "item") -> tuple:
    """``labels`` as a tuple of hashable labels whose text is valid Unicode (a lone surrogate cannot be
    written to a file or a terminal); the message never shows a label."""
    if isinstance(labels, bytes) or not hasattr(labels, "__iter__"):  # a str is its characters' list
        raise InputError(f"the {name} labels must be a list of labels, got {type(labels).__name__}")
    labels = tuple(labels)
    try:
        hash(labels)
    except TypeError:
        raise InputError(f"an {name} label is not hashable (a list or a dict?): labels are text or numbers") from None
    try:
        "".join(x for x in labels if type(x) is str).encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"an {name} label is not valid Unicode text (it holds a lone surrogate)") from None
    return labels


def check_delta(delta, *, name: str = "delta") -> float:
    """Validate delta in [0, 1) (a bool or a string is refused)."""
    d = _real(delta, name, "a number in [0, 1)")
    if not (0.0 <= d < 1.0):
        raise InputError(f"{name} must lie in [0, 1) (got {d!r}); typical values are 1e-6 or smaller")
    return d


#: the largest whole number :func:`check_whole` takes: every integer up to it is exact as a float
MAX_WHOLE = 2 ** 53


def check_whole(value, *, name: str, minimum: int = 1) -> int:
    """Validate a whole number >= ``minimum`` (a count, a size, a cap); a float is taken only when whole."""
    # numbers' classes hold numpy's integers and floats too, without importing numpy (numpy's bool is not Real)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a whole number >= {minimum}, got {type(value).__name__}")
    if not isinstance(value, numbers.Integral) and not (math.isfinite(value) and float(value).is_integer()):
        raise InputError(f"{name} must be a whole number >= {minimum} (got {float(value)!r})")
    v = int(value)  # type: ignore[call-overload]  # int() takes every Real; typeshed's Real has no __int__
    if v < minimum:
        raise InputError(f"{name} must be a whole number >= {minimum} (got {v})")
    if v > MAX_WHOLE:
        raise InputError(f"{name} must be a whole number at most 2^53 (larger ones are not exact as floats)")
    return v


def check_fraction(value, *, name: str) -> float:
    """Validate a number strictly between 0 and 1 (a probability, a share of a budget)."""
    v = _real(value, name, "a number strictly between 0 and 1")
    if not 0.0 < v < 1.0:
        raise InputError(f"{name} must lie strictly between 0 and 1")
    return v


def check_flag(value, *, name: str) -> bool:
    """Validate a switch: True or False (numpy's bool too); anything else, 1 and "yes" included, is refused."""
    if type(value).__name__ not in ("bool", "bool_"):
        raise InputError(f"{name} must be True or False")
    return bool(value)


def check_positive(value, *, name: str, allow_zero: bool = False) -> float:
    """Validate a finite positive real (regularisation strengths, scales); a bool or a string is refused."""
    v = _real(value, name, "a number")
    if not math.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise InputError(f"{name} must be finite and {bound} (got {v!r})")
    return v
