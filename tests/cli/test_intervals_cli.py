"""``--ci`` and ``--plot`` on ``privrank rank`` and ``privrank top-k``."""
import csv
import io
import json

import pytest

from cli_data import items_of

from privrank.exports import GUARANTEE_COLUMNS

CI_COLUMNS = ["score_lower", "score_upper", "rank_lower", "rank_upper"]


def test_rank_ci_columns_on_cems(cli, cems_file):
    code, out, err = cli("rank", cems_file, "--items", items_of(cems_file), "--epsilon", "1", "--seed", "3", "--ci", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["rank", "item", "score", *CI_COLUMNS, *GUARANTEE_COLUMNS, "intervals"]
    for r in rows:
        assert float(r["score_lower"]) < float(r["score"]) < float(r["score_upper"])
        assert 1 <= int(r["rank_lower"]) <= int(r["rank"]) <= int(r["rank_upper"]) <= 6
    assert rows[0]["item"] == "London" and rows[0]["rank_upper"] == "1"  # London is first beyond doubt


def test_top_k_ci_json_and_bias_correction(cli, cems_file):
    code, out, err = cli("top-k", cems_file, "--items", items_of(cems_file), "--k", "2", "--epsilon", "1", "--seed", "2", "--ci", "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert len(doc["ranking"]) == 2 and set(CI_COLUMNS) <= set(doc["ranking"][0])
    assert "expected win counts" in doc["intervals"] and doc["guarantee"]["model"] == "central"
    code, out, err = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--epsilon", "1", "--seed", "5",
                         "--ci", "--bias-corrected", "--format", "json")
    assert code == 0, err
    first = json.loads(out)["ranking"][0]
    assert first["score_lower"] < first["score_corrected"] < first["score_upper"]
    assert first["score_corrected"] > first["score"]  # the ridge shrank London's score
    code, _, err = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--epsilon", "1", "--ci")
    assert code == 0 and "privrank: warning: the ridge shrinks" in err  # plain intervals under the theory ridge


def test_shipped_llmfao_and_bootstrap(cli, cems_file):
    from privrank.data.datasets import _shipped
    code, out, err = cli("top-k", _shipped("llmfao_crowd.csv"), "--k", "3", "--mechanism", "debiased-rr",
                         "--epsilon", "2", "--seed", "7", "--ci", "--format", "json")
    assert code == 0, err
    first = json.loads(out)["ranking"][0]
    assert first["item"] == "command" and first["rank_lower"] == 1 and first["rank_upper"] < 59  # seed 7
    code, out, err = cli("rank", cems_file, "--items", items_of(cems_file), "--epsilon", "1", "--seed", "3", "--ci", "--ci-method", "bootstrap",
                         "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert "parametric bootstrap through the mechanism (1000 fits)" in doc["intervals"]
    assert all(r["score_lower"] < r["score"] < r["score_upper"] for r in doc["ranking"])


@pytest.mark.parametrize("mechanism", ["noisy-copeland", "objective-perturbation"])
def test_bootstrap_intervals_of_central_releases(cli, cems_file, mechanism, tmp_path):
    # the replicates redraw the released noise law inside the ledger's block: post-processing, not a spend
    ledger = tmp_path / "ledger.sqlite"
    code, out, err = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", mechanism, "--epsilon", "1",
                         "--ci", "--ci-method", "bootstrap", "--ledger", ledger, "--format", "json")
    assert code == 0, err
    assert all(r["score_lower"] <= r["score_upper"] for r in json.loads(out)["ranking"])
    code, out, _ = cli("ledger", "show", "--ledger", ledger)
    assert code == 0 and out.count(mechanism.split("-")[0]) >= 1


def test_plot(cli, pairs, tmp_path):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "ranks.png"
    code, out, err = cli("rank", pairs, "--epsilon", "2", "--seed", "1", "--plot", plot)
    assert code == 0, err
    assert plot.stat().st_size > 1000
    assert "score_lower" in out  # --plot implies --ci


@pytest.mark.parametrize("argv,match", [
    (["--mechanism", "rr", "--epsilon", "1", "--ci"], "biased"),
    (["--mechanism", "rank-centrality", "--ci"], "confidence intervals need"),
    (["--epsilon", "1", "--ci-level", "0.9"], "apply with --ci"),
    (["--epsilon", "1", "--ci", "--ci-level", "1.5"], "level"),
    (["--mechanism", "noisy-copeland", "--epsilon", "1", "--ci", "--bias-corrected"], "unbiased"),
])
def test_interval_errors(cli, pairs, pairs_items, argv, match):
    code, _, err = cli("rank", pairs, *argv, "--items", pairs_items)
    assert code == 2 and match in err


def test_a_release_that_cannot_rank_gets_the_planners_epsilon(cli):
    from privrank.data.datasets import _shipped

    code, out, err = cli("rank", _shipped("llmfao_crowd.csv"), "--epsilon", "0.001", "--ci", "--seed", "1")
    assert code == 0, err
    assert "cannot tell the items apart" in err and "the planner suggests epsilon" in err
    assert err.count("the planner suggests epsilon") == 1
    code, out, err = cli("rank", _shipped("llmfao_crowd.csv"), "--epsilon", "2", "--ci", "--seed", "1")
    assert code == 0 and "planner suggests" not in err and "cannot tell" not in err
