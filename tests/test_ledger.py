"""The persistent privacy ledger: fingerprints, charges per unit, enforcement, restarts and concurrency."""
import math
import threading

import numpy as np
import pytest

from privrank.data.comparisons import PairwiseComparisons
from privrank.errors import BudgetExceededError, InputError
from privrank.guarantees import UNIT_COMPARISON, UNIT_EDGE, UNIT_USER, Guarantee
from privrank.ledger import Ledger, fingerprint, spent


def comps(rows, items=None):
    users, a, b, out = zip(*rows)
    return PairwiseComparisons.from_labels(a, b, out, user=users, items=items)


ROWS = [(1, "x", "y", 1), (1, "y", "z", -1), (2, "x", "z", 0), (2, "x", "y", 1)]
LOCAL = Guarantee(epsilon=1.0, model="local", unit=UNIT_COMPARISON, mechanism="rr", epsilon_per_comparison=1.0,
                  epsilon_per_user=2.0)
CENTRAL_USER = Guarantee(epsilon=1.5, model="central", unit=UNIT_USER, mechanism="op")


def test_fingerprint_is_canonical():
    base = fingerprint(comps(ROWS))
    assert fingerprint(comps(ROWS[::-1])) == base  # row order
    assert fingerprint(comps([(1, "y", "x", -1)] + ROWS[1:])) == base  # orientation of a pair
    assert fingerprint(comps(ROWS, items=["w", "x", "y", "z"])) == base  # an item nobody compared
    assert fingerprint(comps([(1, "x", "y", -1)] + ROWS[1:])) != base  # one answer changed
    assert fingerprint(comps([(3, "x", "y", 1)] + ROWS[1:])) != base  # another person
    with pytest.raises(InputError):
        fingerprint(42)


def test_charges_per_unit():
    row = lambda g: {"unit": g.unit, "epsilon": g.epsilon, "delta": g.delta,  # noqa: E731
                     "epsilon_per_user": g.epsilon_per_user, "private": g.private}
    edge = Guarantee(epsilon=0.5, model="central", unit=UNIT_EDGE, mechanism="op", epsilon_per_user=7.5)
    releases = [row(LOCAL), row(CENTRAL_USER), row(edge)]
    assert spent(releases, UNIT_COMPARISON) == (3.0, 0.0)  # 1 + 1.5 (user-level covers a comparison) + 0.5
    assert spent(releases, UNIT_USER) == (2.0 + 1.5 + 7.5, 0.0)  # per-user epsilons by composition
    no_ids = Guarantee(epsilon=1.0, model="local", unit=UNIT_COMPARISON, mechanism="rr", epsilon_per_comparison=1.0)
    assert math.isinf(spent([row(no_ids)], UNIT_USER)[0])  # no per-user statement: cannot be bounded
    assert math.isinf(spent([row(Guarantee.non_private())], UNIT_COMPARISON)[0])


def test_budget_is_enforced_across_restarts(tmp_path):
    path = tmp_path / "l.sqlite"
    fp = fingerprint(comps(ROWS))
    with Ledger(path) as ledger:
        ledger.set_budget(fp, "user", 5.0, dataset="votes.csv")
        ledger.record(fp, LOCAL, output="a.csv")  # 2 per user
        ledger.record(fp, LOCAL, output="b.csv")  # 4 per user
    with Ledger(path) as ledger:  # a new process sees the same spending
        with pytest.raises(BudgetExceededError, match="only 1 of the data set's budget of 5 per user"):
            ledger.record(fp, LOCAL, output="c.csv")
        with pytest.raises(BudgetExceededError, match="not private"):
            ledger.record(fp, Guarantee.non_private())
        ledger.record(fp, Guarantee(epsilon=1.0, model="central", unit=UNIT_USER, mechanism="op"))  # exactly 5
        assert [r["output"] for r in ledger.releases(fp)] == ["a.csv", "b.csv", ""]
        (b,) = ledger.budgets(fp)
        assert (b["spent_epsilon"], b["remaining_epsilon"]) == (5.0, 0.0)
        other = fingerprint(comps(ROWS[:3]))
        ledger.record(other, LOCAL)  # another data set has its own (unset) budget
        assert len(ledger.releases()) == 4


def test_concurrent_releases_never_overspend(tmp_path):
    path = tmp_path / "l.sqlite"
    fp = "f" * 64
    with Ledger(path) as ledger:
        ledger.set_budget(fp, "comparison", 5.0)
    outcomes = []

    def release():
        with Ledger(path) as ledger:
            try:
                ledger.record(fp, LOCAL)
                outcomes.append("ok")
            except BudgetExceededError:
                outcomes.append("refused")

    threads = [threading.Thread(target=release) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes).count("ok") == 5
    with Ledger(path) as ledger:
        assert len(ledger.releases(fp)) == 5


def test_bad_inputs(tmp_path):
    bad = tmp_path / "not-a-ledger"
    bad.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(InputError, match="not a privrank ledger"):
        Ledger(bad)
    with Ledger(tmp_path / "l.sqlite") as ledger:
        with pytest.raises(InputError, match="unit"):
            ledger.set_budget("f", "household", 1.0)
        with pytest.raises(InputError, match="epsilon"):
            ledger.set_budget("f", "user", -1.0)
