"""Typed budgets, conversions, composition and the accountant."""
import math

import numpy as np
import pytest

from privrank.errors import BudgetExceededError, InputError
from privrank.guarantees import (UNIT_COMPARISON, UNIT_RANKING, UNIT_USER, Accountant, ApproxDP, Guarantee,
                                 PureDP, ZCDP, compose, compose_budgets, zcdp_epsilon, zcdp_rho)


def test_zcdp_conversion_is_bun_steinke_with_the_factor_two():
    # rho = 0.5, delta = e^-2: epsilon = 0.5 + 2 sqrt(0.5 * 2) = 2.5 (Hillebrand Thm B.2 would say 1.5)
    assert zcdp_epsilon(0.5, math.exp(-2)) == pytest.approx(2.5)
    approx = ZCDP(0.5).to_approx(math.exp(-2))
    assert (approx.epsilon, approx.delta) == (pytest.approx(2.5), math.exp(-2))


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-6), (1.0, 1e-6), (3.0, 1e-9), (10.0, 0.01)])
def test_zcdp_rho_inverts_the_conversion(eps, delta):
    rho = zcdp_rho(eps, delta)
    assert zcdp_epsilon(rho, delta) == pytest.approx(eps, rel=1e-12)
    L = math.log(1 / delta)
    assert rho == pytest.approx((math.sqrt(L + eps) - math.sqrt(L)) ** 2, rel=1e-9)
    # the printed conversion without the factor 2 would allow a larger rho: less noise
    paper = (math.sqrt(L / 4 + eps) - math.sqrt(L / 4)) ** 2
    assert paper > rho


def test_pure_dp_to_zcdp():
    assert PureDP(2.0).to_zcdp() == ZCDP(2.0)


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf, "x", None])
def test_budgets_reject_bad_values(bad):
    with pytest.raises(InputError):
        PureDP(bad)
    with pytest.raises(InputError):
        ZCDP(bad)
    with pytest.raises(InputError):
        ApproxDP(bad, 1e-6)


@pytest.mark.parametrize("delta", [1.0, 1.5, -0.1, math.nan])
def test_approx_rejects_bad_delta(delta):
    with pytest.raises(InputError):
        ApproxDP(1.0, delta)


def test_compose_budgets():
    assert compose_budgets(PureDP(0.5), PureDP(0.25)) == PureDP(0.75)
    assert compose_budgets(PureDP(0.5), ApproxDP(0.25, 1e-6)) == ApproxDP(0.75, 1e-6)
    assert compose_budgets(ZCDP(0.1), PureDP(1.0)).rho == pytest.approx(0.6)
    with pytest.raises(InputError, match="to_approx"):
        compose_budgets(ZCDP(0.1), ApproxDP(1.0, 1e-6))
    with pytest.raises(InputError):
        compose_budgets(ApproxDP(1.0, 0.6), ApproxDP(1.0, 0.6))
    with pytest.raises(InputError):
        compose_budgets()


def test_accountant_spends_reports_and_refuses_to_overspend():
    acct = Accountant(PureDP(1.0))
    acct.spend(PureDP(0.4), "first")
    assert acct.remaining.epsilon == pytest.approx(0.6)
    assert acct.can_spend(PureDP(0.6))
    assert not acct.can_spend(PureDP(0.61))
    with pytest.raises(BudgetExceededError, match="nothing was spent"):
        acct.spend(PureDP(0.7))
    assert len(acct.history) == 1  # the refused spend left no trace
    acct.spend(PureDP(0.6))
    assert acct.remaining is None
    assert acct.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        acct.spend(PureDP(1e-9))


def test_accountant_exact_split_into_many_parts_fits():
    acct = Accountant(PureDP(1.0))
    for _ in range(10):
        acct.spend(PureDP(0.1))  # 0.1 ten times does not sum to exactly 1.0 in floating point
    assert acct.remaining is None


def test_accountant_approximate_tracks_epsilon_and_delta():
    acct = Accountant(ApproxDP(1.0, 1e-5))
    acct.spend(PureDP(0.5))
    acct.spend(ApproxDP(0.2, 4e-6))
    rem = acct.remaining
    assert rem.epsilon == pytest.approx(0.3) and rem.delta == pytest.approx(6e-6)
    with pytest.raises(BudgetExceededError):
        acct.spend(ApproxDP(0.1, 1e-5))  # epsilon fits, delta does not
    with pytest.raises(InputError, match="to_approx"):
        acct.spend(ZCDP(0.01))
    acct.spend(ZCDP(1e-4).to_approx(1e-6))


def test_accountant_zcdp_converts_pure_costs():
    acct = Accountant(ZCDP(0.5))
    acct.spend(PureDP(0.5))  # 0.125-zCDP
    assert acct.remaining.rho == pytest.approx(0.375)
    with pytest.raises(InputError):
        acct.spend(ApproxDP(0.1, 1e-6))
    with pytest.raises(InputError):
        Accountant(ZCDP(0.5)).spend(ApproxDP(0.1, 1e-6))


def test_accountant_takes_guarantees_of_its_unit_only():
    acct = Accountant(PureDP(2.0), unit=UNIT_RANKING, model="central")
    g = Guarantee(epsilon=1.0, model="central", unit=UNIT_RANKING, mechanism="m")
    acct.spend(g)
    with pytest.raises(InputError, match="protects"):
        acct.spend(Guarantee(epsilon=0.1, model="central", unit=UNIT_COMPARISON, mechanism="m"))
    with pytest.raises(InputError, match="model"):
        acct.spend(Guarantee(epsilon=0.1, model="local", unit=UNIT_RANKING, mechanism="m"))
    with pytest.raises(InputError, match="non-private"):
        acct.spend(Guarantee.non_private())
    z = Guarantee(epsilon=zcdp_epsilon(0.01, 1e-6), delta=1e-6, model="central", unit=UNIT_RANKING,
                  mechanism="m", rho=0.01)
    zacct = Accountant(ZCDP(0.02))
    zacct.spend(z)  # a zCDP release is accounted by its rho
    assert zacct.remaining.rho == pytest.approx(0.01)
    with pytest.raises(InputError):
        Accountant(PureDP(1.0)).spend(z)  # an (epsilon, delta) cost does not fit a pure budget


def test_accountant_rejects_a_bad_total():
    with pytest.raises(InputError):
        Accountant(1.0)


def test_compose_guarantees_stays_compatible_and_uses_rho():
    g1 = Guarantee(epsilon=1.0, model="central", unit=UNIT_RANKING, mechanism="a")
    g2 = Guarantee(epsilon=0.5, delta=1e-6, model="central", unit=UNIT_RANKING, mechanism="b")
    c = compose(g1, g2)
    assert (c.epsilon, c.delta, c.rho, c.mechanism) == (1.5, 1e-6, None, "a+b")
    z = [Guarantee(epsilon=zcdp_epsilon(0.01, 1e-6), delta=1e-6, model="central",
                   unit=UNIT_RANKING, mechanism="z", rho=0.01)] * 4
    cz = compose(*z)
    assert cz.rho == pytest.approx(0.04)
    assert cz.epsilon == pytest.approx(zcdp_epsilon(0.04, 4e-6))  # below 4 x epsilon
    assert cz.epsilon < sum(g.epsilon for g in z)
    assert "zCDP" in cz.describe()
    with pytest.raises(InputError):
        Guarantee(epsilon=1.0, model="central", unit=UNIT_RANKING, mechanism="z", rho=-1.0)


def test_accountant_history_is_counted_as_spent():
    acct = Accountant(ApproxDP(2.0, 1e-5), history=[("a", PureDP(0.5)), ("b", ApproxDP(1.0, 4e-6))])
    left = acct.remaining
    assert (left.epsilon, left.delta) == (pytest.approx(0.5), pytest.approx(6e-6))
    assert acct.can_spend(ApproxDP(0.5, 6e-6)) and not acct.can_spend(ApproxDP(0.5, 7e-6))
    over = Accountant(PureDP(1.0), history=[("", PureDP(1.5))])  # recorded spending may exceed a later total
    assert over.remaining is None and not over.can_spend(PureDP(1e-9))
    with pytest.raises(InputError, match="does not convert"):
        Accountant(PureDP(1.0), history=[("", ApproxDP(0.5, 1e-6))])


def test_an_accountant_without_a_unit_takes_the_unit_of_its_first_guarantee():
    acct = Accountant(PureDP(1.0))
    acct.spend(Guarantee(epsilon=0.4, model="central", unit=UNIT_COMPARISON, mechanism="m"))
    assert acct.unit == UNIT_COMPARISON
    with pytest.raises(InputError, match="protects"):  # a per-ranking epsilon is not a per-comparison one
        acct.spend(Guarantee(epsilon=0.5, model="central", unit=UNIT_RANKING, mechanism="m"))
    assert acct.remaining.epsilon == pytest.approx(0.6) and len(acct.history) == 1
    acct.spend(Guarantee(epsilon=0.5, model="central", unit=UNIT_USER, mechanism="m"))  # converts: a user's
    assert acct.remaining.epsilon == pytest.approx(0.1)  # data include each of their comparisons
    probe = Accountant(PureDP(1.0))
    assert probe.can_spend(Guarantee(epsilon=0.5, model="central", unit=UNIT_RANKING, mechanism="m"))
    assert probe.unit is None  # asking does not fix the unit; spending does
    seeded = Accountant(PureDP(1.0), history=[("", Guarantee(epsilon=0.2, model="central", unit=UNIT_RANKING,
                                                                 mechanism="m"))])
    assert seeded.unit == UNIT_RANKING


def test_a_guarantee_stating_a_per_user_epsilon_is_charged_per_user():
    per_cmp = Guarantee(epsilon=0.5, model="local", unit=UNIT_COMPARISON, mechanism="m",
                        epsilon_per_comparison=0.5, epsilon_per_user=5.0)
    with pytest.raises(BudgetExceededError):  # 5-DP per user does not fit 1-DP, whatever 0.5 per comparison says
        Accountant(PureDP(1.0)).spend(per_cmp)
    acct = Accountant(PureDP(6.0))
    acct.spend(per_cmp)
    assert acct.unit == UNIT_USER and acct.spent.epsilon == pytest.approx(5.0)
    with pytest.raises(InputError, match="per-user epsilon"):  # no per-user statement: cannot be charged per user
        acct.spend(Guarantee(epsilon=0.1, model="local", unit=UNIT_COMPARISON, mechanism="m"))
    approx = Guarantee(epsilon=0.5, delta=1e-6, model="central", unit=UNIT_COMPARISON, mechanism="m",
                       epsilon_per_comparison=0.5, epsilon_per_user=5.0)
    with pytest.raises(InputError, match="give the accountant a unit"):
        Accountant(ApproxDP(10.0, 1e-5)).spend(approx)
    explicit = Accountant(ApproxDP(10.0, 1e-5), unit=UNIT_COMPARISON)
    explicit.spend(approx)  # a per-comparison accountant charges it per comparison
    assert explicit.spent.epsilon == pytest.approx(0.5)


def test_zcdp_conversions_at_a_subnormal_delta():
    # 1 / 5e-324 overflows: rho came out 0 (and noisy_counts divided by it) and epsilon infinite
    L = -math.log(5e-324)
    assert zcdp_rho(1.0, 5e-324) == pytest.approx((math.sqrt(L + 1.0) - math.sqrt(L)) ** 2)
    assert zcdp_epsilon(0.1, 5e-324) == pytest.approx(0.1 + 2.0 * math.sqrt(0.1 * L))


def test_the_accountant_history_is_label_cost_pairs():
    with pytest.raises(InputError, match=r"history must be a list of \(label, cost\) pairs"):
        Accountant(PureDP(1.0), history="x")
    with pytest.raises(InputError, match=r"every entry of history must be a \(label, cost\) pair"):
        Accountant(PureDP(1.0), history=[PureDP(0.5)])
    assert Accountant(PureDP(1.0), history=[("first", PureDP(0.25))]).remaining == PureDP(0.75)


def test_private_is_true_or_false():
    with pytest.raises(InputError, match="private must be True or False"):
        Guarantee(1.0, "central", UNIT_RANKING, "m", private=np.array([]))
    assert Guarantee(1.0, "central", UNIT_RANKING, "m", private=np.True_).private is True
