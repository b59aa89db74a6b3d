"""Every registered mechanism passes its audit as calibrated and fails it with its controls;
every private algorithm of the library is registered."""
from __future__ import annotations

import importlib

import numpy as np
import pytest

from privrank.audit import mechanisms, private_algorithms, register, run_audit
from privrank.audit import local as local_catalog
from privrank.audit.footrule import BatchMismatch
from privrank.audit.registry import NOT_MECHANISMS, Mechanism
from privrank.data.comparisons import PairwiseComparisons
from privrank.errors import InputError
from privrank.pairwise.local import randomized_response

MECHS = mechanisms()
EPSILON = 1.0
#: runs per input of the as-calibrated audits: a passing audit needs no power, only validity
NOMINAL_TRIALS = 1000
#: the as-calibrated audits that run a whole ranking algorithm per trial (5 to 30 s each, four
#: minutes together): make test-all runs them, make test does not
MONTE_CARLO_RANKERS = {"dp-kwiksort/gaussian", "dp-kwiksort/laplace", "dp-ptas/buckets/gaussian",
                       "dp-ptas/buckets/laplace", "dp-ptas/lopsided/gaussian", "dp-ptas/lopsided/laplace",
                       "dp-ptas/one-release/gaussian", "dp-ptas/one-release/laplace", "hay-quicksort/gaussian",
                       "hay-quicksort/laplace", "ldp-kwiksort", "noisy-copeland", "noisy-copeland/per-respondent",
                       "perturbed-mle", "perturbed-mle/per-respondent", "private-kemeny/gaussian",
                       "private-kemeny/laplace"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in MONTE_CARLO_RANKERS else n
                                  for n in sorted(MECHS)])
def test_mechanism_passes_its_audit_as_calibrated(name):
    res = run_audit(name, epsilon=EPSILON, trials=min(MECHS[name].trials, NOMINAL_TRIALS), seed=11)
    assert not res.violation, "\n".join(res.report())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MECHS))
def test_declared_control_is_caught(name):
    res = run_audit(name, epsilon=EPSILON, control=True, seed=12)
    assert res.violation, "\n".join(res.report())
    control = MECHS[name].control
    if control != 0.5:  # a declared exception says why
        assert MECHS[name].note


@pytest.mark.parametrize("name,control", [(n, c) for n, m in sorted(MECHS.items()) for c in m.controls])
def test_named_controls_are_caught(name, control):
    assert run_audit(name, epsilon=EPSILON, control=control, seed=13).violation


def test_every_private_algorithm_is_registered():
    covered = {f for m in MECHS.values() for f in m.covers}
    missing = set(private_algorithms()) - covered - set(NOT_MECHANISMS)
    assert not missing, f"private algorithms without an audit registration: {sorted(missing)}"


def test_registrations_name_real_functions():
    for name in {f for m in MECHS.values() for f in m.covers} | set(NOT_MECHANISMS):
        module, attr = name.rsplit(".", 1)
        assert callable(getattr(importlib.import_module(module), attr)), name
    assert set(private_algorithms()) >= {f for m in MECHS.values() for f in m.covers}


def test_the_rule_catches_an_unregistered_private_function(monkeypatch):
    import privrank.pairwise.local as mod

    def noisy_wins(comps, epsilon, rng=None):
        return comps

    noisy_wins.__module__ = mod.__name__
    monkeypatch.setattr(mod, "noisy_wins", noisy_wins, raising=False)
    assert "privrank.pairwise.local.noisy_wins" in private_algorithms()


def test_list_names_every_mechanism_once():
    assert len(MECHS) == len(set(MECHS)) >= 20
    for m in MECHS.values():
        assert m.description and "\n" not in m.description and "\t" not in m.description
        assert m.unit and m.covers


@pytest.mark.parametrize("kind", ["plain", "personalised", "user-budget"])
def test_randomized_response_samples_follow_the_audited_report_probabilities(kind):
    # The exact audits of randomized response take P(report | answer) from flip_probability and
    # record_epsilons; the reports randomized_response actually draws must follow them. Every
    # audited record has epsilon 0.7 here. Frequency of report +1 per answer within 4.5
    # standard errors sqrt(p(1-p)/n). Broken variant: the same check on reports drawn with
    # twice the budget (half the noise) must fail.
    n = 60_000
    answers = np.tile([1, -1, 0], n)
    if kind == "plain":
        user, budget = None, {"epsilon": 0.7}
    elif kind == "personalised":
        user, budget = np.tile([0, 0, 0, 1, 1, 1], n // 2), {"epsilon": {0: 0.7, 1: 2.1}}
    else:  # three comparisons per user, budget 2.1 split evenly
        user, budget = np.repeat(np.arange(n), 3), {"user_epsilon": 2.1}
    comps = PairwiseComparisons.from_indices((0, 1), np.zeros(answers.size, int),
                                             np.ones(answers.size, int), answers, user=user)
    audited = np.ones(comps.n_records, bool) if kind != "personalised" else comps.user == 0

    def follows_the_audited_probabilities(reports):
        ok = []
        for a in (1, -1):
            sel = audited & (comps.outcome == a)
            p = local_catalog._report_pmf(a, 0.7)[0]
            freq = np.mean(reports.outcome[sel] == 1)
            ok.append(abs(freq - p) <= 4.5 * np.sqrt(p * (1 - p) / sel.sum()))
        return all(ok)

    rep = randomized_response(comps, rng=np.random.default_rng(5), **budget)
    assert np.allclose(rep.epsilon[audited], 0.7)
    assert follows_the_audited_probabilities(rep)
    ties = audited & (comps.outcome == 0)
    assert abs(np.mean(rep.outcome[ties] == 1) - 0.5) <= 4.5 * np.sqrt(0.25 / ties.sum())
    doubled = {k: ({u: 2 * e for u, e in v.items()} if isinstance(v, dict) else 2 * v)
               for k, v in budget.items()}
    assert not follows_the_audited_probabilities(
        randomized_response(comps, rng=np.random.default_rng(6), **doubled))


def test_batched_releases_must_reproduce_the_public_function(monkeypatch):
    # broken variant: a public function that spends twice its epsilon no longer matches the
    # batch the audit samples, and the audit refuses to report rather than audit the wrong thing
    import privrank.mechanisms.tree as tree

    honest = tree.approximate_median

    def overspending(values, m, *, epsilon, **kw):
        return honest(values, m, epsilon=2 * epsilon, **kw)

    monkeypatch.setattr(tree, "approximate_median", overspending)
    with pytest.raises(BatchMismatch):
        run_audit("binary-tree/laplace", epsilon=1.0, trials=200, seed=0)


def test_register_and_run_audit_validate():
    with pytest.raises(InputError, match="already registered"):
        register(MECHS["duchi-l2"])
    with pytest.raises(InputError):
        register(Mechanism("x", "d", "u", (), lambda *a: None, control="missing"))
    with pytest.raises(InputError):
        register(Mechanism("x", "d", "u", (), lambda *a: None, control=1.5))
    with pytest.raises(InputError):
        register("duchi-l2")
    with pytest.raises(InputError, match="no mechanism"):
        run_audit("nope", epsilon=1.0)
    with pytest.raises(InputError, match="pure"):
        run_audit("duchi-l2", epsilon=1.0, delta=1e-6)
    with pytest.raises(InputError, match="delta > 0"):
        run_audit("footrule/gaussian", epsilon=1.0, delta=0.0)
    with pytest.raises(InputError, match="not both"):
        run_audit("duchi-l2", epsilon=1.0, factor=0.5, control=True)
    with pytest.raises(InputError, match="no control named"):
        run_audit("duchi-l2", epsilon=1.0, control="paper-scale")
    with pytest.raises(InputError, match="100 trials"):
        run_audit("duchi-l2", epsilon=1.0, trials=10)
    with pytest.raises(InputError):
        run_audit("duchi-l2", epsilon=1.0, factor=0.0)


def test_the_documented_registration_example_works():
    import privrank.audit as audit
    from privrank.audit import registry

    doc = audit.__doc__
    block = doc[doc.index("    import numpy as np"):doc.index("``run`` gets")]
    exec("\n".join(line[4:] for line in block.splitlines()), {})
    try:
        assert not run_audit("win-counts", epsilon=1.0, seed=0).violation
        assert run_audit("win-counts", epsilon=1.0, control=True, seed=0).violation
    finally:
        del registry._REGISTRY["win-counts"]


@pytest.mark.parametrize("name,factor", [pytest.param("perturbed-mle", 0.1, marks=pytest.mark.slow),  # 10 to 40 s
                                         ("discrete-laplace-counts", 0.5), ("randomized-response", 0.5),
                                         ("exponential-kemeny", 0.5)])
def test_an_audit_sees_the_noise_drawn_not_the_scale_reported(name, factor):
    # regression (issue 15, finding 9): perturbed_mle drawing a tenth of its noise, and discrete
    # Laplace counts at half scale, passed their exact audits, which read the reported scale
    from privrank.audit.registry import run_audit

    assert not run_audit(name, epsilon=1.0, seed=5, trials=2000).violation
    broken = run_audit(name, epsilon=1.0, seed=5, trials=2000, factor=factor)
    assert broken.violation and broken.drawn_mismatch
