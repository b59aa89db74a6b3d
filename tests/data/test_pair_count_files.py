"""Per-pair counts tables (item_a,item_b,wins_a,wins_b,ties): reading, validation, the ledger's identity."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import privrank as pr
from privrank.data.comparisons import PairwiseComparisons
from privrank.data.datasets import load_llmfao
from privrank.data.pair_count_files import PairCountFile, holds_pair_counts, read_pair_counts
from privrank.errors import InputError
from privrank.fingerprints import identify

HEADER = "item_a,item_b,wins_a,wins_b,ties"


def write(tmp_path, *rows, header=HEADER, name="counts.csv"):
    path = tmp_path / name
    path.write_text("\n".join([header, *rows]) + "\n")
    return path


def counts_table(comps):
    """The counts table of comparisons, computed apart from privrank: one row per pair, the pair in
    the order of its first comparison, the outcomes seen from its first item."""
    rows = {}
    for a, b, o in zip(comps.item_a, comps.item_b, comps.outcome):
        key = (a, b) if (a, b) in rows or (b, a) not in rows else (b, a)
        o = o if key == (a, b) else -o
        cell = rows.setdefault(key, [0, 0, 0])
        cell[{1: 0, -1: 1, 0: 2}[int(o)]] += 1
    labels = comps.items
    return pa.table({"item_a": [labels[a] for a, _ in rows], "item_b": [labels[b] for _, b in rows],
                     **{name: [c[k] for c in rows.values()] for k, name in enumerate(("wins_a", "wins_b", "ties"))}})


def test_a_counts_table_is_the_statistic_of_its_comparisons():
    comps = load_llmfao().first_answers(20)
    counts = read_pair_counts(counts_table(comps), items=comps.items, max_answers=20)
    expected = comps.pair_counts()
    for name in ("i", "j", "wins", "totals"):
        np.testing.assert_array_equal(getattr(counts, name), getattr(expected, name))
    assert counts.items == comps.items and counts.items_declared and counts.max_answers == 20


def test_csv_parquet_and_frames_read_alike(tmp_path):
    path = write(tmp_path, "b,a,1,2,0", "a,c,0,0,3", "c,b,4,0,1", "a,d,0,0,0")
    table = pa.csv.read_csv(path)
    pq.write_table(table, tmp_path / "counts.parquet")
    got = [read_pair_counts(src, items="abcd") for src in (path, tmp_path / "counts.parquet", table,
                                                           table.to_pandas())]
    for counts in got:
        assert counts.n_items == 4 and counts.i.tolist() == [0, 0, 1] and counts.j.tolist() == [1, 2, 2]
        assert counts.wins.tolist() == [2.0, 1.5, 0.5] and counts.totals.tolist() == [3.0, 3.0, 5.0]
        assert counts.max_answers is None  # none declared
    undeclared = read_pair_counts(path)  # the items the table names
    assert undeclared.items == ("a", "b", "c", "d") and not undeclared.items_declared


def test_the_ties_column_is_optional(tmp_path):
    counts = read_pair_counts(write(tmp_path, "a,b,2,1", header="Item_A, item_b ,WINS_A,wins_b"), items="ab")
    assert counts.wins.tolist() == [2.0] and counts.totals.tolist() == [3.0]


def test_the_header_is_recognised(tmp_path):
    assert holds_pair_counts(["item_a", "item_b", "wins_a", "wins_b"])
    assert not holds_pair_counts(["item_a", "item_b", "outcome", "count"])
    with pytest.raises(InputError, match="per-pair counts .* read_pair_counts"):
        pr.read_comparisons(write(tmp_path, "a,b,1,0,0"))


SECRET = "zq-secret-label"


@pytest.mark.parametrize("rows, header, match", [
    (["a,b,3.0,1,0"], HEADER, "line 2: a wins_a must be a whole number"),
    (["a,b,1,-2,0"], HEADER, "line 2: a wins_b must be a whole number"),
    (["a,b,1,0,x"], HEADER, "line 2: a ties must be a whole number"),
    (["a,b,1,0,"], HEADER, "line 2: a ties must be a whole number"),
    (["a,b,1,0,0", "a,c,1,0,0", "a,b,0,2,0"], HEADER, "line 4: a pair of items is listed twice"),
    (["a,b,1,0,0", "b,a,0,2,0"], HEADER, "line 3: a pair of items is listed twice"),
    (["a,b,1,0,0", "b,b,1,0,0"], HEADER, "line 3: a comparison of an item with itself"),
    (["a,b,1,0,0", f"a,{SECRET},1,0,0"], HEADER, "not in the given item list"),
    (["a,,1,0,0"], HEADER, "line 2: empty or NaN item"),
    (["a,b,0,0,0"], HEADER, "has a header but no comparisons"),
    (["u,a,b,1,0,0"], "user," + HEADER, "'user' column belongs to another layout"),
    (["a,b,1,0,0,1"], HEADER + ",outcome", "'outcome' column belongs to another layout"),
    (["a,b,1,0,0,1"], HEADER + ",count", "'count' column belongs to another layout"),
    (["a,b,1,0,0,1"], HEADER + ",Ties", "'ties' appears more than once"),
])
def test_bad_tables_are_refused_without_echoing_them(tmp_path, rows, header, match):
    path = write(tmp_path, *rows, header=header)
    with pytest.raises(InputError, match=match) as exc:
        read_pair_counts(path, items=["a", "b", "c"])
    message = str(exc.value).replace(str(path), "FILE")  # the path is named; its temporary folder may hold "-2"
    assert SECRET not in message and "3.0" not in message and "-2" not in message


def test_counts_beyond_the_limits_are_refused(tmp_path, monkeypatch):
    path = write(tmp_path, "a,b,600,400,1", "a,c,1,0,0")
    monkeypatch.setenv("PRIVRANK_MAX_COUNTED_RECORDS", "1000")
    # the statistic and the fingerprint take one step per row: the limit of comparisons read one by one
    assert read_pair_counts(path, items="abc").totals.sum() == 1002 and identify(path).size == 1002
    for expand in (lambda f: f.read(items="abc"), lambda f: list(f.batches())):
        with pytest.raises(InputError, match="above the limit PRIVRANK_MAX_COUNTED_RECORDS = 1000"):
            expand(PairCountFile(path))
    monkeypatch.setenv("PRIVRANK_MAX_COUNTED_RECORDS", "1e30")
    with pytest.raises(InputError, match="more than 2\\^53 comparisons"):
        read_pair_counts(write(tmp_path, f"a,b,{2 ** 53},0,0", f"a,c,0,0,{2 ** 53}"), items="abc")


def test_a_bad_declared_bound_is_refused(tmp_path):
    with pytest.raises(InputError, match="max_answers must be a whole number >= 1"):
        read_pair_counts(write(tmp_path, "a,b,1,0,0"), items="ab", max_answers=0)


def test_the_ledger_knows_counts_as_the_comparisons_they_count(tmp_path):
    comps = load_llmfao().first_answers(20)
    table = counts_table(comps)
    pa.csv.write_csv(table, tmp_path / "counts.csv")
    anonymous = PairwiseComparisons.from_indices(comps.items, comps.item_a, comps.item_b, comps.outcome)
    counted, raw, bare = identify(tmp_path / "counts.csv"), identify(comps), identify(anonymous)
    assert (counted.labels, counted.legacy, counted.structure) == (raw.labels, raw.legacy, raw.structure)
    # the sketch is over records: that of the comparisons without their user ids
    assert np.array_equal(counted.sketch, bare.sketch) and counted.size == bare.size
    assert identify(table).labels == raw.labels  # a table in memory too
    assert PairCountFile(tmp_path / "counts.csv").n_records() == comps.n_records
    assert identify(write(tmp_path, "a,b,1,0,0", name="other.csv")).labels != raw.labels
