"""``privrank aggregate --engine {local,stream,dask}``: the same output byte for byte, clear refusals."""
import numpy as np
import pytest

from privrank.cli import main
from privrank.cli.engine_options import ENGINE_AGGREGATION, LOCAL_AGGREGATION

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pytest.importorskip("dask.dataframe")

ITEMS = list("QPMKHDCA")  # labels whose sorted order differs from the generation order
PRIVATE = ("noisy-borda", "noisy-matrix", "dp-kwiksort", "exponential", "hay-quicksort", "dp-footrule") + LOCAL_AGGREGATION


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """120 ballots of 6 items (exponential enumerates 6! orders) with counts, as CSV and Parquet."""
    rng = np.random.default_rng(4)
    items = ITEMS[:6]
    orders = np.argsort(-(np.linspace(1, -1, 6) + rng.gumbel(size=(120, 6))), axis=1)
    counts = rng.integers(0, 3, 120)
    labels = np.asarray(items)[orders]
    directory = tmp_path_factory.mktemp("ballots")
    csv_path = directory / "ballots.csv"
    csv_path.write_text("rank1,rank2,rank3,rank4,rank5,rank6,count\n" + "".join(
        ",".join(row) + f",{c}\n" for row, c in zip(labels, counts)))
    parquet_path = directory / "ballots.parquet"
    pq.write_table(pa.table({**{f"rank{k + 1}": labels[:, k] for k in range(6)}, "count": counts}), parquet_path,
                   row_group_size=25)
    return csv_path, parquet_path


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method", sorted(ENGINE_AGGREGATION))
def test_every_engine_gives_the_same_output(files, capsys, method):
    csv_path, parquet_path = files
    options = ["--method", method, "--seed", "5", "--format", "json"]
    if method in PRIVATE:
        options += ["--epsilon", "2"]
    if method in ("noisy-matrix", "ldp-matrix"):
        options += ["--solver", "kwiksort", "--best-of", "3"]  # randomized solver: it shares the seed
    outputs = set()
    for path, engine in ((csv_path, "local"), (parquet_path, "local"), (parquet_path, "stream"),
                         (csv_path, "dask")):
        code, out, err = run(capsys, "aggregate", path, "--engine", engine, "--batch-size", "17", *options)
        assert code == 0, err
        outputs.add(out)
    assert len(outputs) == 1, outputs
    # a private output shows nothing exact (the Kemeny or footrule cost of the raw rankings)
    assert ("kemeny_cost" in out) == (method not in PRIVATE)


def test_diagnostics_of_a_central_method_match(files, capsys):
    csv_path, parquet_path = files
    argv = ["--method", "dp-footrule", "--epsilon", "1", "--seed", "2", "--non-private-diagnostics"]
    (_, local, _), (_, stream, _) = (run(capsys, "aggregate", p, "--engine", e, *argv)
                                     for p, e in ((csv_path, "local"), (parquet_path, "stream")))
    assert local == stream and "kemeny_cost" in stream


def test_a_different_seed_gives_a_different_local_release(files, capsys):
    _, parquet_path = files
    orders = {run(capsys, "aggregate", parquet_path, "--engine", "stream", "--method", "ldp-matrix",
                  "--epsilon", "0.3", "--seed", seed, "--format", "json")[1] for seed in range(6)}
    assert len(orders) > 1


@pytest.mark.parametrize("argv,match", [
    (("--method", "ldp-kwiksort", "--epsilon", "1"), "needs the whole profile in memory"),
    (("--method", "dp-ptas", "--epsilon", "1"), "needs the whole profile in memory"),
    (("--method", "exact", "--partial", "drop"), "--partial drop needs --engine local"),
    (("--method", "ldp-matrix", "--epsilon", "1", "--non-private-diagnostics"), "epsilon-local DP"),
    (("--method", "ldp-footrule"), "epsilon-local DP"),
    (("--method", "exact", "--scheduler", "tcp://127.0.0.1:1"), "only with --engine dask"),
])
def test_refusals(files, capsys, argv, match):
    _, parquet_path = files
    code, _, err = run(capsys, "aggregate", parquet_path, "--engine", "stream", *argv)
    assert code != 0 and match in err
