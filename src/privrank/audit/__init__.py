"""Empirical and exact privacy auditing of every private algorithm in privrank.

An audit runs a mechanism on two neighbouring inputs and computes a lower bound on the privacy
loss it actually exhibits (:mod:`privrank.audit.core`): a Clopper-Pearson lower confidence
bound from an event chosen on one half of the runs and measured on the other, or the exact
loss when the output probabilities are known. A mechanism that claims epsilon but shows a
bound above it is broken. Every mechanism also declares a *negative control* -- the same
mechanism with too little noise (by default half of it: calibrated for ``epsilon / 0.5``) --
which the audit must flag, so an audit that cannot fail never passes silently.

Command line: ``privrank audit --list`` and ``privrank audit NAME --epsilon E [--delta D]
[--noise-scale-factor F | --control [NAME]] [--trials N] [--seed S]``.

Registering a mechanism
-----------------------
Every public function or class that takes a privacy budget (a parameter named ``epsilon``,
``user_epsilon``, ``rho`` or ``budget``) and ``rng`` must be covered by a registered
:class:`Mechanism` (or be declared not a mechanism in
:data:`~privrank.audit.registry.NOT_MECHANISMS` with a reason); ``tests/audit`` fails
otherwise and audits every registered mechanism, as calibrated and with its control. A
registration names the public functions it covers and a ``run(epsilon, delta, trials, rng)``
that runs the mechanism, calibrated for the given budget, on its worst-case neighbouring
inputs and returns :class:`Samples` (outputs on each input), :class:`Exact` (exact output
distributions), :class:`Losses` (exact privacy losses at sampled outputs, for densities known
in closed form) or :class:`LaplaceRelease` (sensitivities and scales of a Laplace release
that never leaves the algorithm). Put it in the catalog module of its family, listed in
:data:`~privrank.audit.registry.CATALOGS` (``local``, ``footrule``, ``kemeny``, ``central``,
``counts``)::

    import numpy as np
    from privrank.audit import Mechanism, Samples, register
    from privrank.guarantees import UNIT_COMPARISON
    from privrank.mechanisms.counts import noisy_counts

    def _run(epsilon, delta, trials, rng):
        # neighbours: one comparison more or less changes one win count by 1; a vector of
        # `trials` equal counts gets independent noise per entry: `trials` runs in one call
        out = [noisy_counts(np.full(trials, c), epsilon=epsilon, unit=UNIT_COMPARISON,
                            rng=rng).counts for c in (0, 1)]
        return Samples(out[0], out[1])

    register(Mechanism(
        name="win-counts",
        description="win counts with discrete Laplace noise (central, one comparison)",
        unit="one comparison added or removed (one win count changes by 1)",
        covers=("privrank.mechanisms.counts.noisy_counts",),
        run=_run))

``run`` gets the claimed budget and must call the public function, which draws its noise as
released: for a control with factor ``F`` the auditor runs it inside
``privrank.draws._drawn_noise_factor(F)``, where every noise primitive draws ``F``
times the noise it states. An audit that reasons from an exact law (``Exact``, ``Losses``)
must also hand back what the function actually drew (``Exact.draws``, ``Losses.noise``): the
draws must follow the law, or the audit is a violation. Choose inputs that attain the
mechanism's sensitivity, and outputs the audit can see the loss in (a released statistic
rather than a heavily post-processed order when both are available). Vectorise: one call on
``trials`` independent records (local mechanisms), or a batched release verified against the
public function for the same seed. If even half the noise stays within epsilon on every
neighbouring pair you can construct, say so in ``note`` with the worst-case loss, and declare
the largest factor the audit does catch as ``control``. Broken published constants go in
``controls`` by name.
"""
from .core import (AuditResult, audit_exact, audit_laplace_release, audit_losses, audit_samples,
                   clopper_pearson)
from .registry import (DEFAULT_DELTA, Exact, LaplaceRelease, Losses, Mechanism, Samples, get,
                       mechanisms, private_algorithms, register, run_audit)

__all__ = [
    "AuditResult", "DEFAULT_DELTA", "Exact", "LaplaceRelease", "Losses", "Mechanism", "Samples",
    "audit_exact", "audit_laplace_release", "audit_losses", "audit_samples", "clopper_pearson",
    "get", "mechanisms", "private_algorithms", "register", "run_audit",
]
