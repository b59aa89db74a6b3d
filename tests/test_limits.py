"""Limits of privrank.limits: refusals before hours of work or a MemoryError."""
import time

import numpy as np
import pytest

import privrank as pr
from privrank import limits
from privrank.aggregation import kemeny_heuristics as H
from privrank.errors import InputError
from privrank.plan import Design, predict, smallest_epsilon
from privrank.simulate import sample_debiased_release


def test_limits_read_their_environment_variable(monkeypatch):
    assert limits.limit("BEST_OF") == limits.DEFAULTS["BEST_OF"]
    monkeypatch.setenv("PRIVRANK_MAX_BEST_OF", "1e4")
    assert limits.limit("BEST_OF") == 10_000
    monkeypatch.setenv("PRIVRANK_MAX_BEST_OF", "-1")
    with pytest.raises(InputError, match="PRIVRANK_MAX_BEST_OF"):
        limits.limit("BEST_OF")


def test_best_of_is_bounded(monkeypatch):
    with pytest.raises(InputError, match="PRIVRANK_MAX_BEST_OF"):
        H.kwiksort_matrix(np.full((5, 5), 0.5), 0, best_of=100_000_000)


def test_best_of_cli_refused_before_any_work(cli, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("rank1,rank2,rank3\na,b,c\nb,a,c\n")
    code, _, err = cli("aggregate", str(path), "--method", "kwiksort", "--best-of", "100000000")
    assert code == 2 and "PRIVRANK_MAX_BEST_OF" in err


def test_aggregate_intervals_bound_the_replicates_and_the_work():
    R = np.array([np.random.default_rng(k).permutation(8) for k in range(50)])
    res = pr.private_kemeny(R, epsilon=1.0, rng=0)
    with pytest.raises(InputError, match="PRIVRANK_MAX_BOOTSTRAP"):
        pr.aggregate_intervals(res, n_bootstrap=10 ** 9)
    t0 = time.perf_counter()
    big = pr.private_kemeny(np.array([np.random.default_rng(k).permutation(1500) for k in range(3)]),
                            epsilon=1.0, solver="kwiksort", rng=0)
    with pytest.raises(InputError, match="PRIVRANK_MAX_BOOTSTRAP_WORK"):
        pr.aggregate_intervals(big)
    assert time.perf_counter() - t0 < 30


def test_confidence_intervals_bound_the_replicates_and_the_memory(monkeypatch):
    fit = pr.fit_btl(sample_debiased_release(np.linspace(-1, 1, 6), 50, 1.0, 0))
    with pytest.raises(InputError, match="PRIVRANK_MAX_BOOTSTRAP"):
        pr.confidence_intervals(fit, method="bootstrap", n_bootstrap=10 ** 9)
    monkeypatch.setenv("PRIVRANK_MAX_MEMORY_MB", "1e-6")
    with pytest.raises(InputError, match="PRIVRANK_MAX_MEMORY_MB"):
        pr.confidence_intervals(fit)


def test_memory_estimate_refuses_100k_items():
    with pytest.raises(InputError, match="PRIVRANK_MAX_MEMORY_MB"):
        pr.inference.check_interval_cost(100_000)


@pytest.mark.parametrize("kwargs,variable", [(dict(items=2000, users=10), "PRIVRANK_MAX_PLAN_CELLS"),
                                             (dict(items=10, users=10 ** 12), "PRIVRANK_MAX_PLAN_PAIR_COUNT")])
def test_planner_is_bounded(kwargs, variable):
    t0 = time.perf_counter()
    with pytest.raises(InputError, match=variable):
        predict(Design(**kwargs), 1.0)
    with pytest.raises(InputError, match=variable):
        smallest_epsilon(Design(**kwargs), "kendall", 0.05)
    assert time.perf_counter() - t0 < 5


def test_plan_cli_reads_users_in_e_notation_and_refuses(cli):
    code, _, err = cli("plan", "--items", "10", "--users", "1e12", "--epsilon", "1")
    assert code == 2 and "PRIVRANK_MAX_PLAN_PAIR_COUNT" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["rank", "aggregate"])
def test_interval_cost_refused_before_the_release_is_charged(cli, tmp_path, monkeypatch, command):
    """--ci above the memory limit is refused before any privacy is spent: the ledger records nothing."""
    data = tmp_path / "data.csv"
    if command == "rank":
        data.write_text("user,item_a,item_b,outcome\n" + "".join(f"{u},A,B,{u % 2}\n{u},B,C,1\n" for u in range(40)))
        argv = ["rank", data, "--epsilon", "1", "--ci"]
    else:
        data.write_text("rank1,rank2,rank3\n" + "a,b,c\nb,a,c\n" * 20)
        items = tmp_path / "items.txt"
        items.write_text("a\nb\nc\n")
        argv = ["aggregate", data, "--items", items, "--method", "noisy-matrix", "--epsilon", "1", "--ci"]
    ledger = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("PRIVRANK_MAX_MEMORY_MB", "1e-6")
    code, _, err = cli(*argv, "--ledger", ledger)
    assert code == 2 and "PRIVRANK_MAX_MEMORY_MB" in err
    monkeypatch.delenv("PRIVRANK_MAX_MEMORY_MB")
    code, out, err = cli("ledger", "show", "--ledger", ledger)
    assert code == 0, err
    assert "releases: 0" in out or "no releases" in out or "#1" not in out
    code, _, err = cli(*argv, "--ledger", ledger)  # the same run under the default limits is charged
    assert code == 0, err
    code, out, _ = cli("ledger", "show", "--ledger", ledger)
    assert "#1" in out


def test_footrule_aggregation_is_bounded_before_the_charge(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVRANK_MAX_FOOTRULE_ITEMS", "5")
    R = pr.Rankings.from_orders(np.array([np.random.default_rng(k).permutation(6) for k in range(20)]))
    path = tmp_path / "ledger.sqlite"
    for release in (pr.dp_footrule, pr.ldp_footrule):
        with pytest.raises(InputError, match="PRIVRANK_MAX_FOOTRULE_ITEMS"):
            release(R, epsilon=1.0, ledger=path)
    with pr.Ledger(path) as ledger:
        assert ledger.releases() == []
    monkeypatch.setenv("PRIVRANK_MAX_FOOTRULE_ITEMS", "6")
    assert len(pr.dp_footrule(R, epsilon=1.0, rng=0).order) == 6


@pytest.mark.parametrize("spread", [1e308, float("inf"), float("nan"), 0.0, -1.0])
def test_a_plan_refuses_a_spread_with_nothing_to_plan(spread):
    with pytest.raises(InputError, match="spread"):
        Design(10, 100, 5, spread=spread)
