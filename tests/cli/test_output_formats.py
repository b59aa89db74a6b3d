"""CSV, Parquet and JSON outputs as other tools read them: plain tables with the guarantee in them.

A CSV output reads back with pandas' and R's defaults (labels such as ``C#``, ``=x``, ``a,b`` and
quotes exact, the guarantee as columns); a Parquet output also holds the guarantee in its schema's
metadata; JSON is strict, and a non-private output has ``"private": false`` and ``"epsilon": null``.
"""
import io
import json
import os
import shutil
import subprocess

import pytest
from cli_data import labelled_comparisons

from privrank.exports import GUARANTEE_COLUMNS, PARQUET_KEY
from privrank.guarantees import Guarantee
from privrank.ledger import Ledger

pd = pytest.importorskip("pandas")
LABELS = ["C#", "=x", "a,b", 'say "hi"', "'quoted'", "two words", "#7"]


@pytest.fixture
def awkward(tmp_path):
    """Comparisons (with users) between labels that a careless CSV writer or reader breaks."""
    return labelled_comparisons(tmp_path / "awkward.csv", LABELS, 40)


def _no_constant(name):
    raise AssertionError(f"JSON holds the token {name}")


def test_csv_reads_back_with_pandas_defaults(cli, awkward, tmp_path):
    out = tmp_path / "ranking.csv"  # the format follows the suffix
    code, _, err = cli("rank", awkward, "--epsilon", "1", "--max-answers", "7", "--seed", "3", "-o", out)
    assert code == 0, err
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["rank", "item", "score", *GUARANTEE_COLUMNS]
    assert sorted(frame["item"]) == sorted(LABELS) and frame["rank"].tolist() == list(range(1, len(LABELS) + 1))
    assert frame["score"].dtype == float
    assert frame["private"].tolist() == [True] * len(LABELS) and frame["seeded"].all()
    assert (frame["epsilon"] == 1.0).all() and (frame["delta"] == 0.0).all() and (frame["epsilon_per_user"] == 7).all()
    assert set(frame["unit"]) == {"one comparison"} and set(frame["model"]) == {"local"}
    assert frame["guarantee"].str.startswith("Changing any one comparison").all()
    assert frame["guarantee_detail"].str.startswith("1-DP, local model").all()


def test_a_ranking_output_is_an_item_list(cli, awkward, tmp_path):
    out = tmp_path / "first.csv"
    assert cli("rank", awkward, "--epsilon", "1", "--seed", "3", "-o", out)[0] == 0
    code, again, err = cli("top-k", awkward, "--k", "2", "--epsilon", "1", "--seed", "4", "--items", out,
                           "--format", "json")
    assert code == 0, err
    assert {r["item"] for r in json.loads(again)["ranking"]} <= set(LABELS)


def test_not_private_csv_has_no_epsilon(cli, awkward):
    code, out, err = cli("rank", awkward, "--mechanism", "none", "--format", "csv")
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out))
    assert not frame["private"].any() and frame["epsilon"].isna().all() and frame["delta"].isna().all()
    assert frame["guarantee"].str.startswith("Not private").all()


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed (Debian: apt-get install r-base-core)")
def test_r_reads_the_csv_with_its_defaults(cli, awkward, tmp_path):
    out = tmp_path / "ranking.csv"
    assert cli("rank", awkward, "--epsilon", "1", "--seed", "3", "-o", out)[0] == 0
    script = ('d <- read.csv(commandArgs(TRUE)[1]); cat(paste(names(d), collapse=","), nrow(d), class(d$score), '
              'class(d$private), class(d$epsilon), d$epsilon[1], sort(d$item), sep="\\n")')
    lines = subprocess.run(["Rscript", "-e", script, str(out)], capture_output=True, timeout=120, check=True,
                           env={**os.environ, "LANG": "C.UTF-8"}).stdout.decode("utf-8").splitlines()
    assert lines[:6] == [",".join(["rank", "item", "score", *GUARANTEE_COLUMNS]), str(len(LABELS)), "numeric",
                         "logical", "numeric", "1"]
    assert sorted(lines[6:]) == sorted(LABELS)


def test_parquet_holds_the_guarantee_in_columns_and_metadata(cli, awkward, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    out = tmp_path / "ranking.parquet"
    code, _, err = cli("rank", awkward, "--epsilon", "1", "--seed", "3", "--ci", "-o", out)
    assert code == 0, err
    meta = json.loads(pq.read_schema(out).metadata[PARQUET_KEY], parse_constant=_no_constant)
    assert meta["epsilon"] == 1.0 and meta["private"] is True and meta["description"].startswith("1-DP")
    frame = pd.read_parquet(out)
    assert sorted(frame["item"]) == sorted(LABELS) and frame["epsilon"].dtype == float
    assert frame["epsilon_per_user"].dtype == float and frame["epsilon_per_user"].isna().all()
    assert frame["rank_lower"].dtype == "int64" and (frame["epsilon"] == 1.0).all()
    polars = pytest.importorskip("polars")
    assert polars.read_parquet(out)["item"].to_list() == frame["item"].tolist()


def test_format_follows_the_suffix_unless_given(cli, pairs, tmp_path):
    assert cli("rank", pairs, "--epsilon", "1", "-o", tmp_path / "ranking.json")[0] == 0
    assert json.loads((tmp_path / "ranking.json").read_text())["guarantee"]["epsilon"] == 1.0
    assert cli("rank", pairs, "--epsilon", "1", "--format", "json", "-o", tmp_path / "ranking.csv")[0] == 0
    assert json.loads((tmp_path / "ranking.csv").read_text())["guarantee"]["epsilon"] == 1.0
    assert cli("rank", pairs, "--epsilon", "1", "-o", tmp_path / "ranking.txt")[0] == 0
    assert (tmp_path / "ranking.txt").read_text().startswith("rank  item")


def test_json_numbers_are_numbers_and_not_private_says_so(cli, pairs):
    code, out, err = cli("rank", pairs, "--mechanism", "none", "--format", "json")
    assert code == 0, err
    g = json.loads(out, parse_constant=_no_constant)["guarantee"]
    assert g["private"] is False and g["epsilon"] is None and g["delta"] is None
    code, out, err = cli("rank", pairs, "--epsilon", "0.5", "--max-answers", "3", "--format", "json")
    g = json.loads(out, parse_constant=_no_constant)["guarantee"]
    assert code == 0 and g["private"] is True and g["epsilon"] == 0.5 and g["epsilon_per_user"] == 1.5


def test_guarantee_to_dict_states_no_parameter_of_an_output_that_is_not_private():
    assert Guarantee.non_private().to_dict()["epsilon"] is None
    g = Guarantee(2.0, model="central", unit="one ranking", mechanism="m", delta=1e-6)
    assert g.to_dict()["epsilon"] == 2.0 and g.to_dict()["delta"] == 1e-6
    shown = g.without_privacy("exact costs shown").to_dict()
    assert shown["private"] is False and shown["epsilon"] is None and shown["delta"] is None
    json.dumps(shown, allow_nan=False)


def test_parquet_is_not_written_to_a_terminal(cli, pairs, private_ledger, monkeypatch):
    monkeypatch.setattr("sys.stdout.isatty", lambda: True)
    code, _, err = cli("rank", pairs, "--epsilon", "1", "--format", "parquet")
    assert code == 2 and "Parquet is binary" in err and "nothing was released" in err
    assert not private_ledger.exists() or Ledger(private_ledger).releases() == []
