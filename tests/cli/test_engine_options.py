"""``privrank rank --engine {local,stream,dask}``: same output byte for byte, clear refusals."""
import io

import numpy as np
import pytest

from privrank.cli import main
from privrank.progress import RecordsBar

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("pyarrow.csv")


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.integers(0, 8, n)
    b = (a + rng.integers(1, 8, n)) % 8
    outcome = rng.choice([1, -1, 0], n)
    user = rng.integers(0, 40, n)
    labels = np.array(list("ABCDEFGH"))
    csv_path = tmp_path / "votes.csv"
    csv_path.write_text("user,item_a,item_b,outcome\n" + "".join(
        f"u{u},{labels[x]},{labels[y]},{o}\n" for u, x, y, o in zip(user, a, b, outcome)))
    parquet_path = tmp_path / "votes.parquet"
    pq.write_table(pa.table({"user": [f"u{u}" for u in user], "item_a": labels[a], "item_b": labels[b],
                             "outcome": outcome}), parquet_path, row_group_size=500)
    return csv_path, parquet_path


def run(capsys, *argv):
    code = main([str(x) for x in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("options", [
    ("--epsilon", "1", "--seed", "3", "--format", "json"),
    ("--mechanism", "rr", "--epsilon", "0.5", "--seed", "3"),
    ("--mechanism", "none", "--format", "csv"),
])
def test_every_engine_prints_the_same_bytes(capsys, files, options):
    outputs = set()
    for path in files:
        for engine in ("local", "stream", "dask"):
            code, out, err = run(capsys, "rank", path, "--engine", engine, "--batch-size", "333", *options)
            assert code == 0 and err == ""  # no progress bar unless standard error is a terminal
            outputs.add(out)
    assert len(outputs) == 1


@pytest.fixture
def counted(files, tmp_path):
    """``(counted, rows)``: the votes with a count column (0 to 3) as CSV and Parquet, and the
    comparisons they stand for, one per row."""
    table = pq.read_table(files[1])
    table = table.append_column("count", pa.array(np.random.default_rng(1).integers(0, 4, table.num_rows)))
    rows = table.take(np.repeat(np.arange(table.num_rows), table.column("count").to_numpy())).drop_columns("count")
    paths = tmp_path / "counted.csv", tmp_path / "counted.parquet", tmp_path / "rows.csv"
    pa.csv.write_csv(table, paths[0])
    pq.write_table(table, paths[1], row_group_size=500)
    pa.csv.write_csv(rows, paths[2])
    return paths[:2], paths[2]


@pytest.mark.parametrize("options", [
    ("--epsilon", "1", "--seed", "3", "--format", "json"),
    ("--mechanism", "none", "--format", "csv"),
])
def test_a_counted_file_prints_what_its_rows_repeated_print(capsys, counted, options):
    paths, rows = counted
    code, expected, _ = run(capsys, "rank", rows, "--engine", "local", *options)
    assert code == 0
    for path in paths:
        for engine in ("local", "stream", "dask"):
            assert run(capsys, "rank", path, "--engine", engine, "--batch-size", "333", *options)[1] == expected
    # a counted row is that many of its user's answers: the first N answers per user are those of the rows
    bounded = ("--epsilon", "1", "--seed", "3", "--max-answers", "20", "--format", "json")
    assert run(capsys, "rank", paths[0], *bounded)[1] == run(capsys, "rank", rows, *bounded)[1]


def test_different_seeds_differ(capsys, files):
    outs = {run(capsys, "rank", files[1], "--engine", "stream", "--epsilon", "1", "--seed", s, "--format", "json")[1]
            for s in (1, 2)}
    assert len(outs) == 2


@pytest.mark.parametrize("argv,match", [
    (["--engine", "stream", "--mechanism", "laplace", "--epsilon", "1"], "use --engine local"),
    (["--engine", "stream"], "needs --epsilon"),
    (["--engine", "stream", "--mechanism", "none", "--epsilon", "1"], "not private"),
    (["--scheduler", "tcp://127.0.0.1:1"], "only with --engine dask"),
])
def test_engine_refusals(capsys, files, argv, match):
    code, _, err = run(capsys, "rank", files[1], *argv)
    assert code == 2 and match in err


def test_reports_file_on_the_stream_engine(capsys, files, tmp_path):
    with_users = tmp_path / "with_users.csv"
    assert run(capsys, "randomize", files[0], "--epsilon", "1", "--seed", "5", "--output", with_users)[0] == 0
    code, _, err = run(capsys, "rank", with_users, "--engine", "stream")  # one report per respondent and pair:
    assert code == 2 and "--engine local" in err  # checked by the local engine only
    reports = tmp_path / "reports.csv"
    reports.write_text("".join(line.split(",", 1)[1] for line in with_users.read_text().splitlines(True)))
    for declared in ([], ["--epsilon", "1"]):
        local = run(capsys, "rank", reports, "--format", "json", *declared)
        stream = run(capsys, "rank", reports, "--engine", "stream", "--format", "json", *declared)
        assert local[0] == stream[0] == 0 and local[1] == stream[1]
    code, _, err = run(capsys, "rank", reports, "--engine", "stream", "--epsilon", "0.5,2")
    assert code == 2 and "not declared (0.5, 2)" in err


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar():
    out = _Terminal()
    bar = RecordsBar(out)
    bar(500, 1000)
    bar(1000, 1000)
    bar.close()
    text = out.getvalue()
    assert "100%" in text and "1.00k/1.00k" in text and "records" in text
    out = _Terminal()
    bar = RecordsBar(out)
    bar(12345, None)  # CSV: no total known
    bar.close()
    assert "12.3k" in out.getvalue()
    quiet = io.StringIO()  # not a terminal: nothing drawn
    bar = RecordsBar(quiet)
    bar(5, 10)
    bar.close()
    assert quiet.getvalue() == ""


def test_engine_runs_share_the_ledger_budget_of_the_data_set(capsys, files, tmp_path):
    csv_path, parquet_path = files
    ledger = tmp_path / "l.sqlite"
    assert run(capsys, "ledger", "set-budget", csv_path, "--epsilon", "1.5", "--unit", "comparison",
               "--ledger", ledger)[0] == 0
    assert run(capsys, "rank", csv_path, "--epsilon", "1", "--ledger", ledger)[0] == 0
    # the same records, another file and engine: the same data set, so the budget is spent
    code, _, err = run(capsys, "rank", parquet_path, "--engine", "stream", "--epsilon", "1", "--ledger", ledger)
    assert code == 2 and "budget" in err
    assert run(capsys, "rank", parquet_path, "--engine", "stream", "--epsilon", "0.5", "--ledger", ledger)[0] == 0
