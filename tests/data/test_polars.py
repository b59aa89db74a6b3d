"""polars frames and files, and every Arrow text type polars and others write, read as the same data."""
import numpy as np
import pytest

import privrank as pr
from privrank.data.io import RankingFile

from data_checks import same_data

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


@pytest.fixture(scope="module")
def votes():
    """Comparisons as a polars DataFrame (text: string_view in Arrow) and the same as a pyarrow table of strings."""
    rng = np.random.default_rng(7)
    n, labels = 600, np.array(list("ABCDEF"))
    a = rng.integers(0, 6, n)
    b = (a + rng.integers(1, 6, n)) % 6
    columns = {"user": [f"u{u}" for u in rng.integers(0, 50, n)], "item_a": labels[a].tolist(),
               "item_b": labels[b].tolist(), "outcome": rng.choice([1, -1, 0], n).tolist()}
    return pl.DataFrame(columns), pa.table(columns)


def test_a_polars_frame_is_fitted_and_ranked_as_its_arrow_table(votes):
    frame, table = votes
    assert pa.table(frame).schema.field("item_a").type == pa.string_view()  # what polars hands over
    assert same_data(pr.read_comparisons(frame), pr.read_comparisons(table))
    fit, expected = pr.fit_btl(frame), pr.fit_btl(table)
    assert fit.ranking == expected.ranking
    np.testing.assert_allclose(fit.scores, expected.scores)


@pytest.mark.parametrize("cast", [
    pl.Categorical,
    pl.Enum(list("ABCDEF")),
], ids=["categorical", "enum"])
def test_categorical_and_enum_columns_are_labels(votes, cast):
    frame, table = votes
    coded = frame.with_columns(pl.col("item_a").cast(cast), pl.col("item_b").cast(cast), pl.col("user").cast(
        pl.Categorical))
    assert pa.types.is_dictionary(pa.table(coded).schema.field("item_a").type)
    assert same_data(pr.read_comparisons(coded), pr.read_comparisons(table))


@pytest.mark.parametrize("kind", [
    pa.string_view(), pa.large_string(), pa.dictionary(pa.int8(), pa.string_view()),
    pa.dictionary(pa.uint32(), pa.large_string()), pa.dictionary(pa.uint64(), pa.string()),
], ids=str)
@pytest.mark.parametrize("engine", ["local", "stream"])
def test_every_arrow_text_type_is_read_as_text(votes, tmp_path, kind, engine):
    _, table = votes
    typed = pa.table({name: table[name].cast(kind) if name != "outcome" else table[name] for name in table.column_names})
    path = tmp_path / "votes.arrow"
    with pa.ipc.new_file(path, typed.schema) as writer:
        writer.write_table(typed, max_chunksize=100)
    tally = pr.sufficient_statistics(str(path), engine=engine, batch_size=128)
    assert same_data(tally, pr.read_comparisons(table).tally())
    assert same_data(pr.read_comparisons(typed), pr.read_comparisons(table))


def test_polars_files_are_read_by_the_cli_and_the_stream_engine(votes, tmp_path, cli):
    frame, table = votes
    frame.write_parquet(tmp_path / "votes.parquet")
    frame.write_ipc(tmp_path / "votes.arrow")  # string_view columns in an Arrow IPC file
    frame.write_ipc_stream(tmp_path / "votes.arrows")
    pq.write_table(table, tmp_path / "reference.parquet")
    expected = pr.read_comparisons(table).tally()
    outputs = set()
    for name in ("votes.parquet", "votes.arrow", "votes.arrows", "reference.parquet"):
        assert same_data(pr.sufficient_statistics(str(tmp_path / name), engine="stream", batch_size=100), expected)
        for engine in ("local", "stream"):
            code, out, err = cli("rank", tmp_path / name, "--engine", engine, "--mechanism", "none", "--format", "csv")
            assert code == 0, err
            outputs.add(out)
    assert len(outputs) == 1


def test_polars_rankings_are_read_as_their_arrow_table(tmp_path):
    rng = np.random.default_rng(3)
    orders = np.argsort(rng.random((30, 4)), axis=1)
    labels = np.array(["w", "x", "y", "z"])
    frame = pl.DataFrame({f"rank{k + 1}": labels[orders[:, k]].tolist() for k in range(4)})
    expected = pr.read_rankings(pa.table({name: frame[name].to_list() for name in frame.columns}))
    profile = pr.read_rankings(frame)
    assert same_data(profile, expected)
    frame.write_ipc(tmp_path / "ballots.arrow")
    assert same_data(RankingFile(tmp_path / "ballots.arrow").read(), expected)


def test_a_lazy_frame_is_collected_and_read_as_its_frame(votes):
    frame, _ = votes
    lazy = frame.lazy()
    assert same_data(pr.read_comparisons(lazy), pr.read_comparisons(frame))
    assert pr.fit_btl(lazy).ranking == pr.fit_btl(frame).ranking
    orders = pl.DataFrame({"rank1": ["a", "b"], "rank2": ["b", "a"], "count": [3, 1]})
    assert pr.read_rankings(orders.lazy()).n_voters == 4
