"""End-to-end tests of ``privrank rank``, ``randomize`` and ``demo``."""
import csv
import io
import json

import pytest

from privrank.exports import GUARANTEE_COLUMNS
from privrank.data import datasets
from privrank.data.datasets import DatasetNotFound


def test_cems_without_privacy_london_first(cli, cems_file):
    code, out, _ = cli("rank", cems_file, "--mechanism", "none", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["rank", "item", "score", *GUARANTEE_COLUMNS]
    assert rows[0]["item"] == "London" and rows[-1]["item"] == "Stockholm"


def test_cems_private_json(cli, cems_file):
    code, out, _ = cli("rank", cems_file, "--epsilon", "1", "--seed", "3", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [r["rank"] for r in doc["ranking"]] == list(range(1, 7))
    g = doc["guarantee"]
    assert g["model"] == "local" and g["unit"] == "one comparison" and g["mechanism"]
    assert g["epsilon_per_comparison"] == 1.0 and g["epsilon_per_user"] is None  # no declared bound
    assert "k x 1" in g["description"] and "15" not in g["description"]
    code, out, _ = cli("rank", cems_file, "--epsilon", "1", "--max-answers", "15", "--seed", "3", "--format", "json")
    assert code == 0 and json.loads(out)["guarantee"]["epsilon_per_user"] == 15.0


def test_lambda_and_mechanisms(cli, pairs):
    code, out, _ = cli("rank", str(pairs), "--mechanism", "none", "--lambda", "0.005", "--format", "json")
    assert code == 0 and json.loads(out)["lambda"] == 0.005
    assert json.loads(out)["ranking"][0]["item"] == "A"
    for mech in ("rr", "laplace", "debiased-rr"):
        code, out, _ = cli("rank", str(pairs), "--mechanism", mech, "--user-epsilon", "3", "--seed", "1",
                           "--format", "json")
        assert code == 0
        g = json.loads(out)["guarantee"]
        assert g["epsilon"] == pytest.approx(3.0) and g["unit"] == "all comparisons of one user"
        assert g["epsilon_per_comparison"] is None


def test_table_output_has_guarantee(cli, pairs):
    code, out, _ = cli("rank", str(pairs), "--epsilon", "2", "--seed", "0")
    assert code == 0 and "guarantee: 2-DP, local model" in out and "per user" in out


def test_randomize_then_rank_reports(cli, pairs, tmp_path):
    out_path = tmp_path / "reports.csv"
    assert cli("randomize", str(pairs), "--epsilon", "1", "--seed", "2", "--output", str(out_path))[0] == 0
    header = out_path.read_text().splitlines()[0]
    assert header == "user,item_a,item_b,outcome,epsilon"
    code, out, _ = cli("rank", str(out_path), "--format", "json")
    assert code == 0 and json.loads(out)["guarantee"]["epsilon_per_comparison"] == 1.0
    # for reports --epsilon declares the epsilon they were randomized at (they are not randomized again)
    assert cli("rank", str(out_path), "--epsilon", "1", "--format", "json")[1].replace(
        "the declared epsilon 1", "epsilon 1, the one all the reports carry (none was declared)") == out
    code, _, err = cli("rank", str(out_path), "--epsilon", "2")
    assert code == 2 and "not declared (2)" in err
    code, _, err = cli("rank", str(out_path), "--user-epsilon", "1")
    assert code == 2 and "drop --user-epsilon" in err
    # the output file is never overwritten silently
    code, _, err = cli("randomize", str(pairs), "--epsilon", "1", "--output", str(out_path))
    assert code == 2 and "--force" in err


def test_output_file_and_force(cli, pairs, tmp_path):
    target = tmp_path / "rank.csv"
    assert cli("rank", str(pairs), "--mechanism", "none", "--format", "csv", "-o", str(target))[0] == 0
    first = target.read_text()
    code, _, err = cli("rank", str(pairs), "--mechanism", "none", "-o", str(target))
    assert code == 2 and "exists" in err and target.read_text() == first
    assert cli("rank", str(pairs), "--mechanism", "none", "-o", str(target), "--force")[0] == 0


@pytest.mark.parametrize("argv,match", [
    (["--epsilon", "0"], "epsilon must be > 0"),
    (["--epsilon", "nan"], "epsilon"),
    (["--epsilon", "inf"], "finite"),
    ([], "needs --epsilon"),
    (["--mechanism", "none", "--epsilon", "1"], "not private"),
    (["--lambda", "abc", "--mechanism", "none"], "--lambda"),
    (["--epsilon", "0.5,1"], "--epsilon takes one number for a file of answers"),
    (["--epsilon", "0.5,1", "--mechanism", "noisy-copeland"], "--epsilon takes one number"),
    (["--epsilon", "0.5,1", "--engine", "stream"], "--epsilon takes one number"),
])
def test_usage_errors_exit_2(cli, pairs, argv, match):
    code, _, err = cli("rank", str(pairs), *argv)
    assert code == 2 and match in err and "Traceback" not in err


@pytest.mark.parametrize("argv,match", [
    (["rank", "--epsilon", "1,"], "declared epsilons separated by commas"),
    (["top-k", "--k", "2", "--epsilon", "1;2"], "declared epsilons separated by commas"),
    (["randomize", "--output", "r.csv", "--epsilon", "0.5,1"], "invalid float value"),  # answers: one number
])
def test_epsilon_parsing_is_strict(cli, capsys, pairs, tmp_path, monkeypatch, argv, match):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exc:  # an argparse usage error
        cli(argv[0], pairs, *argv[1:])
    assert exc.value.code == 2 and match in capsys.readouterr().err and not (tmp_path / "r.csv").exists()


def test_reports_at_several_epsilons_need_them_declared(cli, tmp_path):
    path = tmp_path / "reports.csv"
    path.write_text("user,item_a,item_b,outcome,epsilon\n" + "".join(
        f"u{u},{a},{b},{1 if u % 3 else -1},{0.5 if u % 2 else 1}\n"
        for u in range(40) for a, b in (("A", "B"), ("B", "C"), ("A", "C"))))
    code, out, err = cli("rank", path)
    assert code == 2 and out == "" and "none was declared" in err and "--epsilon 0.5,1" in err
    for argv in (["rank"], ["top-k", "--mechanism", "debiased-rr", "--k", "2"]):
        code, out, err = cli(*argv, path, "--epsilon", "1,0.5", "--format", "json")
        g = json.loads(out)["guarantee"]
        assert code == 0 and g["epsilon"] == 1.0 and "one of the declared epsilons (0.5, 1)" in g["note"]
    for declared, match in (("0.5", "not declared (0.5)"), ("0.5,1,1000", "--epsilon must lie in")):
        code, out, err = cli("rank", path, "--epsilon", declared)
        assert code == 2 and out == "" and match in err


def test_bad_file_exit_2(cli, tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("item_a,item_b,outcome\nA,B,7\n")
    code, _, err = cli("rank", str(p), "--mechanism", "none")
    assert code == 2 and "line 2" in err


def test_demo_runs(cli):
    code, out, _ = cli("demo")
    assert code == 0
    assert "LLMFAO" in out and "NFL" in out and "per user" in out
    assert out.count("Kendall distance") == 12


def test_missing_dataset_message(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVRANK_DATA", str(tmp_path))
    with pytest.raises(DatasetNotFound):
        datasets.load_movielens_top40()


@pytest.mark.parametrize("argv", [["rank", "--epsilon", "1e300"], ["rank", "--epsilon", "800"],
                                  ["rank", "--user-epsilon", "1e-300"], ["top-k", "--k", "2", "--epsilon", "1e-9"]])
def test_epsilons_outside_the_release_range_are_refused_without_numpy_warnings(cli, pairs, argv):
    # regression (issue 16): raw "overflow encountered in exp" warnings, then a release at 1e300 or an
    # error after the charge at 1e-300
    code, _, err = cli(argv[0], pairs, *argv[1:])
    assert code == 2 and "must lie in [1e-06, 100]" in err and "warning" not in err


def test_help_starts_without_the_heavy_libraries():
    """``privrank --help`` imports only the command table (issue 17/18: it took 1.9 s)."""
    import subprocess
    import sys
    code = ("import sys\nfrom privrank.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('pyarrow', 'scipy', 'pandas', 'matplotlib', 'dask') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip().endswith("[]") and "rank" in out.stdout and "reproduce" in out.stdout
