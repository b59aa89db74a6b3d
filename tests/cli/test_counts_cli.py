"""``privrank rank`` and ``top-k`` on per-pair counts from a warehouse, and docs/warehouse.md's recipes run."""
import json
import re
import shlex
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pcsv
import pytest

import privrank as pr
from privrank.data.datasets import load_llmfao
from privrank.fingerprints import identify

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = Path(pr.__file__).parent / "datasets_shipped" / "llmfao_crowd.csv"
RESPONDENTS = 124  # LLMFAO's workers: the public number of respondents
UNCHECKED = "privrank cannot check it"


def recipe(section: str, kind: str, which: int = 0) -> str:
    """The ``which``-th ``kind`` block of a section of docs/warehouse.md."""
    text = (ROOT / "docs" / "warehouse.md").read_text(encoding="utf-8")
    part = text.split(f"\n## {section}", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"^```{kind}\n(.*?)^```", part, re.S | re.M)[which]


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A DuckDB database holding LLMFAO's crowd judgments as ``battles(user_id, item_a, item_b, outcome,
    ts, battle_id)`` (the file order as the time), and the public item list in items.txt, in the cwd."""
    duckdb = pytest.importorskip("duckdb")
    monkeypatch.chdir(tmp_path)
    table = pcsv.read_csv(SHIPPED, convert_options=pcsv.ConvertOptions(column_types={"worker": pa.string()}))
    order = pa.array(range(table.num_rows))
    battles = table.rename_columns(["user_id", "item_a", "item_b", "outcome"]).append_column(
        "ts", order).append_column("battle_id", order)
    con = duckdb.connect()
    con.register("battles_arrow", battles)
    con.execute("CREATE TABLE battles AS SELECT * FROM battles_arrow")
    Path("items.txt").write_text("\n".join(load_llmfao().items) + "\n", encoding="utf-8")
    return con


def released(cli, argv):
    code, out, err = cli(*argv, "--seed", "5", "--format", "json")
    assert code == 0, err
    return json.loads(out), err


def test_the_duckdb_recipe_gives_the_release_of_the_raw_comparisons(cli, warehouse):
    warehouse.execute(recipe("DuckDB", "sql"))
    argv = shlex.split(recipe("DuckDB", "sh"))
    assert argv[:3] == ["privrank", "rank", "counts.csv"] and "--max-answers" in argv
    counted, err = released(cli, argv[1:])
    assert "read per-pair counts (item_a,item_b,wins_a,wins_b,ties)" in err and "--max-answers 20 is declared" in err
    raw, _ = released(cli, [argv[1], SHIPPED, *argv[3:]])
    assert counted["ranking"] == raw["ranking"]  # the same items, ranks and scores
    assert {k: v for k, v in counted.items() if k not in ("ranking", "guarantee")} == \
        {k: v for k, v in raw.items() if k not in ("ranking", "guarantee")}
    g, h = counted["guarantee"], raw["guarantee"]
    assert (g["unit"], g["epsilon"], g["model"]) == (h["unit"], h["epsilon"], h["model"])
    assert (g["unit"], g["epsilon"], g["model"]) == ("all comparisons of one user", 1.0, "central")
    assert UNCHECKED in g["note"] and UNCHECKED not in h["note"]
    for command in ("top-k",):  # noisy Copeland counts, the top-k default
        tops = [released(cli, [command, path, "--k", "5", "--items", "items.txt", "--user-epsilon", "1",
                               "--max-answers", "20"])[0] for path in ("counts.csv", SHIPPED)]
        assert tops[0]["ranking"] == tops[1]["ranking"]
    # the ledger knows the counts as the comparisons the query kept
    kept = pr.read_comparisons(SHIPPED).first_answers(20)
    assert identify("counts.csv").labels == identify(kept).labels


def test_the_standard_sql_and_spark_sql_recipes_count_alike(warehouse):
    def rows(sql):
        return sorted(warehouse.sql(sql).fetchall())
    duck = rows(recipe("DuckDB", "sql").split("COPY (", 1)[1].rsplit(") TO", 1)[0])
    assert len(duck) > 500 and sum(sum(r[2:]) for r in duck) == pr.read_comparisons(SHIPPED).first_answers(20).n_records
    assert rows(recipe("PostgreSQL", "sql")) == duck
    assert rows(recipe("Spark", "sql")) == duck


def write(tmp_path, *rows, name="counts.csv"):
    path = tmp_path / name
    path.write_text("\n".join(["item_a,item_b,wins_a,wins_b,ties", *rows]) + "\n")
    (tmp_path / "items.txt").write_text("a\nb\nc\n")
    return path


def nothing_charged(ledger) -> bool:
    return not ledger.exists() or not pr.Ledger(ledger).releases()


@pytest.mark.parametrize("argv, message", [
    (["rank", "--mechanism", "debiased-rr", "--epsilon", "1"], "use a central mechanism"),
    (["rank", "--mechanism", "rr", "--epsilon", "1"], "a local mechanism randomizes each comparison at the person"),
    (["rank", "--mechanism", "none"], "use a central mechanism"),
    (["rank", "--mechanism", "objective-perturbation", "--user-epsilon", "1", "--respondents", "9"],
     "per-respondent budget on counts needs the bound"),
])
def test_counts_are_refused_where_they_do_not_apply(cli, tmp_path, private_ledger, argv, message):
    path = write(tmp_path, "a,b,3,1,0", "b,c,2,2,1", "a,c,4,0,0")
    code, out, err = cli(argv[0], path, "--items", tmp_path / "items.txt", *argv[1:])
    assert code == 2 and message in err and "Traceback" not in err and not out
    assert nothing_charged(private_ledger)


@pytest.mark.parametrize("rows, message", [
    (["a,b,3.0,1,0"], "line 2: a wins_a must be a whole number"),
    (["a,b,3,1,0", "b,a,1,1,1"], "line 3: a pair of items is listed twice"),
    (["a,b,3,1,0", "c,c,1,0,0"], "line 3: a comparison of an item with itself"),
    (["a,b,3,1,0", "a,zz-secret,1,0,0"], "not in the given item list"),
])
def test_bad_counts_are_refused_before_anything_is_charged(cli, tmp_path, private_ledger, rows, message):
    path = write(tmp_path, *rows)
    code, out, err = cli("top-k", path, "--k", "2", "--items", tmp_path / "items.txt", "--user-epsilon", "1",
                         "--max-answers", "5")
    assert code == 2 and message in err and "privrank: error:" in err and "Traceback" not in err
    assert "zz-secret" not in err and "3.0" not in err and nothing_charged(private_ledger)


def test_a_budget_on_counts_is_per_user_and_refuses_what_it_cannot_cover(cli, tmp_path, private_ledger):
    path = write(tmp_path, "a,b,3,1,0", "b,c,2,2,1", "a,c,4,0,0")
    code, out, err = cli("ledger", "set-budget", path, "--epsilon", "1.5")
    assert code == 0 and "per user: epsilon 1.5 total" in out
    items = tmp_path / "items.txt"
    code, out, err = cli("top-k", path, "--k", "1", "--items", items, "--user-epsilon", "1", "--max-answers", "3")
    assert code == 0, err
    code, out, err = cli("top-k", path, "--k", "1", "--items", items, "--user-epsilon", "1", "--max-answers", "3")
    assert code == 2 and "only 0.5 of the data set's budget of 1.5 per user remains" in err
    code, out, err = cli("top-k", path, "--k", "1", "--items", items, "--epsilon", "0.1")
    assert code == 2 and "states no guarantee per user" in err
    assert len(pr.Ledger(private_ledger).releases()) == 1
