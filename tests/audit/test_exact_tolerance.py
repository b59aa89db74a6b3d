"""Exact audits at tiny epsilon: a correct mechanism never fails on floating-point rounding, a loss
of twice the claim still does, and a claim too small to resolve is refused."""
import numpy as np
import pytest

from privrank.audit import audit_exact, audit_laplace_release, audit_losses, run_audit
from privrank.errors import InputError
from privrank.mechanisms.randomized_response import flip_probability

TINY = [1e-10, 1e-9, 3e-8, 1e-6, 1e-3]


def rr_pmfs(eps: float) -> np.ndarray:
    keep = 1.0 - flip_probability(eps)
    return np.array([[keep, 1.0 - keep], [1.0 - keep, keep]])


@pytest.mark.parametrize("eps", TINY)
def test_correct_randomized_response_passes_at_tiny_epsilon(eps):
    res = audit_exact(rr_pmfs(eps), epsilon=eps)
    assert not res.violation and res.epsilon_lower_bound == pytest.approx(eps, rel=1e-5)
    assert "no violation" in res.report()[-2]


@pytest.mark.parametrize("eps", TINY)
def test_twice_the_loss_is_still_a_violation_at_tiny_epsilon(eps):
    assert audit_exact(rr_pmfs(2 * eps), epsilon=eps).violation
    assert audit_exact(rr_pmfs(1.01 * eps), epsilon=eps).violation
    assert audit_laplace_release([[2.0]], [1.0 / eps], epsilon=eps).violation
    assert audit_losses([2 * eps], epsilon=eps).violation


@pytest.mark.parametrize("name,eps", [("randomized-response", 1e-9), ("randomized-response", 1e-10),
                                      ("randomized-response/user-budget", 1e-9),
                                      ("randomized-response/user-budget", 1e-10),
                                      ("randomized-response/personalised", 1e-10)])
def test_registered_randomized_response_passes_at_tiny_epsilon(name, eps):
    res = run_audit(name, epsilon=eps, seed=5)
    assert not res.violation, res.report()


@pytest.mark.parametrize("name", ["randomized-response", "randomized-response/user-budget"])
def test_half_the_noise_is_still_caught(name):
    assert run_audit(name, epsilon=1.0, factor=0.5, seed=5).violation
    assert run_audit(name, epsilon=1.0, control=True, seed=5).violation


def test_cli_exit_codes_at_tiny_epsilon(cli):
    code, out, _ = cli("audit", "randomized-response", "--epsilon", "1e-9")
    assert code == 0 and "verdict: no violation detected" in out
    code, out, _ = cli("audit", "randomized-response/user-budget", "--epsilon", "1e-10")
    assert code == 0 and "verdict: no violation detected" in out
    code, out, err = cli("audit", "randomized-response", "--epsilon", "1e-12")
    assert code == 2 and out == "" and err.startswith("privrank: error: ") and "Traceback" not in err


def test_a_claim_below_floating_point_resolution_is_refused():
    eps = 1e-11
    for audit in (lambda: audit_exact(rr_pmfs(eps), epsilon=eps),
                  lambda: audit_laplace_release([[1.0]], [1.0 / eps], epsilon=eps),
                  lambda: audit_losses([eps], epsilon=eps)):
        with pytest.raises(InputError, match="floating point"):
            audit()


def test_an_exact_law_too_wide_to_tabulate_is_refused(cli):
    code, out, err = cli("audit", "discrete-laplace-counts", "--epsilon", "1e-8")
    assert code == 2 and "spans more than" in err and "Traceback" not in err
