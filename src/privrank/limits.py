"""Size and time limits of the computations that could otherwise run for hours or exhaust memory.

Every limit is a named default here, read again at each use, and overridable by an environment
variable (an integer or a number such as ``1e9``; ``0`` or a negative value is refused). Work
above a limit is refused *before* it starts (and, for the private methods, before any privacy is
spent wherever the size is public), with an :class:`~privrank.errors.InputError` that names the
limit, the variable that raises it, and a cheaper alternative. Raising a limit is how to insist;
the defaults keep each refused computation to about a minute and a few GiB on a 2-core machine.

==============================  ==============================  ===================================================
variable                        default                         bounds
==============================  ==============================  ===================================================
``PRIVRANK_MAX_EXACT_ITEMS``    25                              items of the largest cyclic group (strongly
                                                                connected component of the pairwise-majority graph)
                                                                that the exact Kemeny solver takes on; near-tie
                                                                groups of 28 items already take seconds, of 50
                                                                minutes, of 100 hours
``PRIVRANK_MAX_EXACT_SECONDS``  60                              wall time of one exact Kemeny integer program;
                                                                past it the solve is stopped, not proven optimal
``PRIVRANK_MAX_BEST_OF``        1000                            KwikSort runs of ``best_of`` / ``--best-of``
``PRIVRANK_MAX_BOOTSTRAP``      100000                          bootstrap replicates (``n_bootstrap``)
``PRIVRANK_MAX_BOOTSTRAP_WORK`` 2e9                             replicates x items^2 of a rank-aggregation
                                                                bootstrap (each replicate re-solves an
                                                                items x items matrix), and of the "ahead"
                                                                comparisons of a score bootstrap
``PRIVRANK_MAX_MEMORY_MB``      4096                            estimated peak memory (MiB) of confidence
                                                                intervals, of one planner prediction and of the
                                                                comparisons a count column stands for, read in
                                                                memory
``PRIVRANK_MAX_PLAN_CELLS``     5e7                             planner simulation size: replications x items^2,
                                                                summed over the epsilons simulated (one for
                                                                ``--epsilon``, 19 for ``--target``, 15 with
                                                                ``--epsilon --plot``)
``PRIVRANK_MAX_PLAN_PAIR_COUNT`` 1e7                            comparisons of one pair the planner simulates
                                                                (its sampler draws per comparison)
``PRIVRANK_MAX_AUDIT_TRIALS``   2e7                             runs per input of one audit (``--trials``)
``PRIVRANK_MAX_FOOTRULE_ITEMS`` 1000                            items of a footrule aggregation (its tree release
                                                                and assignment grow as items^3: 1,000 items take
                                                                about half a minute and 0.7 GB)
``PRIVRANK_MAX_COUNTED_RECORDS`` 3e8                           comparisons a file's count column stands for in
                                                                all (each is read as a record: the stream engine
                                                                reads about 5 million a second, so 3e8 take a
                                                                minute)
==============================  ==============================  ===================================================

Privacy never depends on a limit: limits only decide whether, and by which solver, post-processing
runs.
"""
from __future__ import annotations

import math
import os

from .errors import InputError

DEFAULTS = {
    "EXACT_ITEMS": 25,
    "EXACT_SECONDS": 60,
    "BEST_OF": 1000,
    "BOOTSTRAP": 100_000,
    "BOOTSTRAP_WORK": 2_000_000_000,
    "MEMORY_MB": 4096,
    "PLAN_CELLS": 50_000_000,
    "PLAN_PAIR_COUNT": 10_000_000,
    "AUDIT_TRIALS": 20_000_000,
    "FOOTRULE_ITEMS": 1000,
    "COUNTED_RECORDS": 300_000_000,
}


def variable(name: str) -> str:
    """The environment variable of limit ``name`` (``"BEST_OF"`` -> ``"PRIVRANK_MAX_BEST_OF"``)."""
    return f"PRIVRANK_MAX_{name}"


def limit(name: str) -> float:
    """The current value of limit ``name``: its environment variable if set, else its default."""
    if name not in DEFAULTS:
        raise KeyError(name)
    text = os.environ.get(variable(name), "").strip()
    if not text:
        return DEFAULTS[name]
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0):  # NaN and non-positive values alike
        raise InputError(f"{variable(name)}={text!r} must be a positive number (default {DEFAULTS[name]:g})")
    return int(value) if value.is_integer() and value < 2 ** 62 else value


def describe(name: str) -> str:
    """``"PRIVRANK_MAX_X = value"``: how a refusal names the limit it applied."""
    return f"{variable(name)} = {limit(name):g}"


def check(name: str, value: float, what: str, advice: str = "") -> None:
    """Refuse ``value`` above limit ``name`` with a message saying what, the limit, and how to insist."""
    cap = limit(name)
    if value > cap:
        raise InputError(f"{what} is {value:.4g}, above the limit {variable(name)} = {cap:g}"
                         + (f"; {advice}" if advice else "")
                         + f" (to insist, raise the limit: {variable(name)}=... in the environment)")
