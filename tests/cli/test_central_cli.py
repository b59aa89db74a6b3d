"""``privrank rank`` with the central mechanisms and baselines, and ``privrank top-k``."""
import csv
import io
import json

import pytest

from cli_data import items_of

from privrank.guarantees import UNIT_EDGE, UNIT_USER

DIAGNOSTIC_KEYS = {"gradient_norm", "converged", "n_iter", "n_components", "answers_dropped", "objective"}


def run_json(cli, *argv):
    code, out, err = cli(*argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_rank_objective_perturbation_on_cems(cli, cems_file):
    doc = run_json(cli, "rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--epsilon", "1", "--seed", "3")
    assert [r["rank"] for r in doc["ranking"]] == list(range(1, 7))
    g = doc["guarantee"]
    assert (g["model"], g["unit"], g["epsilon"], g["delta"], g["private"]) == ("central", UNIT_EDGE, 1.0, 0.0, True)
    assert g["epsilon_per_user"] is None and "k x 1" in g["description"] and "15" not in g["description"]
    doc = run_json(cli, "rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation",
                   "--epsilon", "1", "--max-answers", "15", "--seed", "3")
    assert doc["guarantee"]["epsilon_per_user"] == 15.0 and "group privacy" in doc["guarantee"]["description"]
    assert 8.0 <= doc["noise_scale"] < 8.0 * (1 + 2 ** -10) and doc["link"] == "logistic" and not DIAGNOSTIC_KEYS & set(doc)


def test_rank_probit_link_on_both_data_sets(cli, cems_file, immig_file):
    for path, n in ((cems_file, 6), (immig_file, 4)):
        doc = run_json(cli, "rank", path, "--items", items_of(path), "--mechanism", "objective-perturbation", "--link", "probit",
                       "--epsilon", "2", "--seed", "1")
        assert len(doc["ranking"]) == n and doc["link"] == "probit"
        assert doc["noise_scale"] == pytest.approx(8 * 4.2257 / 2, rel=1e-4)


def test_top_k_on_both_data_sets(cli, cems_file, immig_file):
    for path in (cems_file, immig_file):
        for mech in ("noisy-copeland", "objective-perturbation"):
            doc = run_json(cli, "top-k", path, "--items", items_of(path), "--k", "2", "--epsilon", "1", "--mechanism", mech, "--seed", "2")
            assert [r["rank"] for r in doc["ranking"]] == [1, 2]
            assert doc["guarantee"]["model"] == "central" and doc["guarantee"]["unit"] == UNIT_EDGE
    code, out, _ = cli("top-k", cems_file, "--items", items_of(cems_file), "--k", "3", "--epsilon", "1", "--seed", "2")
    assert code == 0 and out.count("\n") == 3 + 1 + 3 and "noisy Copeland" in out  # header, rows, guarantee, plain words


def test_person_level_budget(cli, cems_file):
    doc = run_json(cli, "rank", cems_file, "--items", items_of(cems_file), "--mechanism", "noisy-copeland", "--user-epsilon", "2",
                   "--max-answers", "15", "--seed", "0")
    assert doc["guarantee"]["unit"] == UNIT_USER and doc["noise_scale"] == 15.0 and doc["max_answers"] == 15
    code, _, err = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--user-epsilon", "2")
    assert code == 2 and "max_answers" in err


def test_non_private_diagnostics_are_marked(cli, cems_file):
    doc = run_json(cli, "rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--epsilon", "1",
                   "--non-private-diagnostics")
    assert doc["converged"] is True and doc["guarantee"]["private"] is False
    code, out, _ = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", "objective-perturbation", "--epsilon", "1",
                       "--non-private-diagnostics")
    assert code == 0 and "NOT PRIVATE" in out


@pytest.mark.parametrize("mech", ["penalised-mle", "copeland", "rank-centrality"])
def test_baselines_on_cems(cli, cems_file, mech):
    code, out, _ = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", mech, "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rows[0]["item"] == "London" and rows[-1]["item"] == "Stockholm"


def test_public_item_list(cli, pairs, tmp_path):
    items = tmp_path / "items.txt"
    items.write_text("A\nB\nC\nD\n")
    doc = run_json(cli, "rank", str(pairs), "--mechanism", "noisy-copeland", "--epsilon", "1", "--items",
                   str(items), "--seed", "0")
    assert sorted(r["item"] for r in doc["ranking"]) == ["A", "B", "C", "D"]  # D was never compared


@pytest.mark.parametrize("argv,match", [
    (["--mechanism", "noisy-copeland"], "needs --epsilon"),
    (["--mechanism", "copeland", "--epsilon", "1"], "not private"),
    (["--mechanism", "noisy-copeland", "--epsilon", "1", "--link", "probit"], "--link"),
    (["--mechanism", "objective-perturbation", "--epsilon", "1", "--lambda", "2"], "--gamma"),
    (["--mechanism", "objective-perturbation", "--epsilon", "1", "--gamma", "0.1"], "smallest ridge"),
    (["--mechanism", "objective-perturbation", "--epsilon", "1", "--gamma", "x"], "--gamma"),
    (["--mechanism", "penalised-mle", "--max-answers", "3"], "--max-answers"),
    (["--mechanism", "noisy-copeland", "--epsilon", "1"], "--items FILE"),
    (["--mechanism", "debiased-rr", "--epsilon", "1", "--non-private-diagnostics"], "diagnostics"),
    (["--mechanism", "noisy-copeland", "--epsilon", "1", "--items", "missing.txt"], "no such file"),
])
def test_usage_errors_exit_2(cli, pairs, pairs_items, argv, match):
    items = [] if "--items" in argv or match == "--items FILE" else ["--items", pairs_items]
    code, _, err = cli("rank", str(pairs), *argv, *items)
    assert code == 2 and match in err


def test_top_k_bounds(cli, pairs, pairs_items):
    code, _, err = cli("top-k", str(pairs), "--k", "4", "--epsilon", "1", "--items", pairs_items)
    assert code == 2 and "k must be between" in err


def test_central_auto_names_the_mechanism_it_chose_and_why(cli, cems_file):
    argv = ("rank", cems_file, "--items", items_of(cems_file), "--epsilon", "1", "--seed", "3")
    doc = run_json(cli, *argv, "--mechanism", "central-auto")
    assert doc["mechanism"] in ("objective-perturbation", "noisy-copeland")
    assert "planner's simulation" in doc["chosen_because"] and "never the data" in doc["chosen_because"]
    assert doc["guarantee"]["model"] == "central" and doc["guarantee"]["epsilon"] == 1.0
    named = run_json(cli, *argv, "--mechanism", doc["mechanism"], "--new-data", "the same release, named")
    assert named["ranking"] == doc["ranking"]  # the chosen mechanism, run as if named
    code, out, _ = cli(*argv, "--mechanism", "central-auto", "--new-data", "again, as a table")
    assert code == 0 and f"mechanism: {doc['mechanism']}" in out and "chosen_because:" in out


@pytest.mark.parametrize("argv, match", [
    (("--epsilon", "1", "--gamma", "2"), "runs the mechanism it chooses with its defaults"),
    (("--user-epsilon", "1", "--max-answers", "5"), "give --respondents N"),
])
def test_central_auto_refuses_options_of_one_mechanism(cli, cems_file, argv, match):
    code, _, err = cli("rank", cems_file, "--items", items_of(cems_file), "--mechanism", "central-auto", *argv)
    assert code == 2 and match in err
