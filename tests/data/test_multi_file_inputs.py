"""A data set of many files -- a directory, a Hive-partitioned directory, a glob pattern -- is one input.

The same records as one file and split into three parts give the same output, byte for byte, on
every engine (a seeded private release too), and the same identity to the ledger; a part changed
between the fingerprint and the Dask workers' read is refused; parts that do not make one data
set are clear errors before anything is charged (:mod:`privrank.data.parts`).
"""
import os

import numpy as np
import pytest

import privrank as pr
import privrank.cli.releasing as cli_releasing
from privrank.data.io import ComparisonFile, read_comparisons
from privrank.errors import InputError
from privrank.fingerprints import identify
from privrank.ledger import Ledger

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
pcsv = pytest.importorskip("pyarrow.csv")

#: where the three parts end (rows)
SPLITS = ((0, 250), (250, 430), (430, 600))
ENGINES = ("local", "stream", "dask")


def _comparisons(seed=0, n=600):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, n)
    b = (a + rng.integers(1, 6, n)) % 6
    return pa.table({"user": [f"u{x}" for x in rng.integers(0, 80, n)], "item_a": [f"item{x}" for x in a],
                     "item_b": [f"item{x}" for x in b], "outcome": np.where(rng.random(n) < 0.7, 1, -1)})


def _rankings(n=300):
    orders = np.array([np.random.default_rng(k).permutation(5) for k in range(n)])
    return pa.table({f"rank{k + 1}": [f"item{x}" for x in orders[:, k]] for k in range(5)})


def _write(table, path, row_group_size=100):
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".csv":
        pcsv.write_csv(table, path)
    else:
        pq.write_table(table, path, row_group_size=row_group_size)


def _split(table, root, layout, suffix="parquet"):
    """``table`` in three parts under ``root`` as ``layout``; returns the path (or pattern) to give."""
    for k, (start, end) in enumerate(SPLITS):
        part = table.slice(start, end - start)
        if layout == "directory":
            _write(part, root / "dir" / f"part-{k}.{suffix}")
        elif layout == "hive":
            _write(part, root / "hive" / f"day=2026-01-0{k + 1}" / f"part-0.{suffix}")
        else:
            _write(part, root / f"c{k}.{suffix}")
    if layout == "directory":  # what writers leave beside the parts: skipped, as pyarrow.dataset skips them
        (root / "dir" / "_SUCCESS").write_text("")
        (root / "dir" / ".part-0.crc").write_bytes(b"\x00crc")
        _write(_comparisons(seed=9), root / "dir" / "_temporary" / f"part-9.{suffix}")
    return {"directory": root / "dir", "hive": root / "hive", "glob": root / f"c*.{suffix}"}[layout]


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
@pytest.mark.parametrize("layout", ["directory", "hive", "glob"])
def test_a_split_data_set_gives_the_one_files_release_on_every_engine(cli, tmp_path, layout, suffix):
    """A seeded randomized-response release of the parts is the one file's, byte for byte, on every engine."""
    pytest.importorskip("dask")
    table = _comparisons()
    one = tmp_path / f"one.{suffix}"
    _write(table, one)
    split = _split(table, tmp_path, layout, suffix)
    release = ["rank", "--mechanism", "rr", "--epsilon", "1", "--seed", "3"]
    assert cli(*release, one, "--engine", "local", "-o", tmp_path / "released.csv")[0] == 0
    expected = (tmp_path / "released.csv").read_text()
    for engine in ENGINES:
        code, _, err = cli(*release, split, "--engine", engine, "-o", tmp_path / f"{engine}.csv")
        assert code == 0, err
        assert (tmp_path / f"{engine}.csv").read_text() == expected, engine


@pytest.mark.parametrize("suffix", ["parquet", "csv"])
def test_split_rankings_give_the_one_files_aggregate_on_every_engine(cli, tmp_path, suffix):
    pytest.importorskip("dask")
    table = _rankings()
    one = tmp_path / f"one.{suffix}"
    _write(table, one)
    split = _split(table, tmp_path, "hive", suffix)
    release = ["aggregate", "--method", "dp-footrule", "--epsilon", "1", "--seed", "3"]
    assert cli(*release, one, "-o", tmp_path / "released.csv")[0] == 0
    for engine in ENGINES:
        code, _, err = cli(*release, split, "--engine", engine, "-o", tmp_path / f"{engine}.csv")
        assert code == 0, err
        assert (tmp_path / f"{engine}.csv").read_text() == (tmp_path / "released.csv").read_text(), engine


@pytest.mark.parametrize("layout", ["directory", "hive", "glob"])
def test_the_ledger_knows_the_parts_as_the_one_file(tmp_path, layout):
    table = _comparisons()
    _write(table, tmp_path / "one.parquet")
    whole, parts = identify(str(tmp_path / "one.parquet")), identify(str(_split(table, tmp_path, layout)))
    assert (parts.labels, parts.legacy, parts.structure, parts.size, parts.users) == \
        (whole.labels, whole.legacy, whole.structure, whole.size, whole.users)
    assert np.array_equal(parts.sketch, whole.sketch)
    assert identify(str(_split(_comparisons(seed=1), tmp_path / "other", layout))).labels != whole.labels


def test_a_release_of_the_parts_spends_the_one_files_budget(cli, tmp_path, private_ledger):
    """The budget set on the one file is charged by a release of its parts, and refuses what the two
    releases together exceed, before anything is drawn."""
    table = _comparisons()
    one = tmp_path / "one.parquet"
    _write(table, one)
    split = _split(table, tmp_path, "hive")
    assert cli("ledger", "set-budget", one, "--epsilon", "1", "--unit", "comparison")[0] == 0
    assert cli("rank", split, "--epsilon", "0.75", "--engine", "stream", "-o", tmp_path / "a.csv")[0] == 0
    code, _, err = cli("rank", one, "--epsilon", "0.5", "-o", tmp_path / "b.csv")
    assert code == 2 and "only 0.25 of the data set's budget of 1" in err, err
    assert not (tmp_path / "b.csv").exists()
    with Ledger(private_ledger) as ledger:
        assert len(ledger.releases()) == 1 and ledger.budgets()[0]["spent_epsilon"] == pytest.approx(0.75)


def test_the_library_reads_the_parts_as_one_file(tmp_path):
    """In memory and streamed, records numbered in the parts' order; the partition key is not a column."""
    table = _comparisons()
    _write(table, tmp_path / "one.parquet")
    hive = _split(table, tmp_path, "hive")
    whole, parts = read_comparisons(tmp_path / "one.parquet"), read_comparisons(hive)
    assert parts.items == whole.items and np.array_equal(parts.outcome, whole.outcome)
    assert np.array_equal(parts.item_a, whole.item_a) and parts.n_records == 600
    file = ComparisonFile(str(hive))
    assert "day" not in file.header and file.n_records() == 600
    assert [b.first_record for b in file.batches(100)] == list(range(0, 600, 100))[:3] + [250, 350, 430, 530]
    tallies = [pr.sufficient_statistics(str(path), engine="stream", epsilon=1.0, rng=5, batch_size=64)
               for path in (hive, tmp_path / "one.parquet")]
    assert all(np.array_equal(getattr(tallies[0], x), getattr(tallies[1], x)) for x in ("i", "j", "n", "wins2"))


def test_a_file_a_pattern_matches_twice_is_read_once(tmp_path):
    """``hive/**`` matches each part and the directories holding it: every part is read once."""
    table = _comparisons()
    hive = _split(table, tmp_path, "hive")
    assert read_comparisons(str(hive / "**")).n_records == read_comparisons(hive).n_records == 600
    assert identify(str(hive / "**")).labels == identify(str(hive)).labels


@pytest.mark.parametrize("engine,how", [("dask", "rename"), ("dask", "in-place"), ("stream", "in-place"),
                                        ("stream", "rename"), ("local", "rename")])
def test_a_part_changed_after_the_fingerprint_never_releases_other_records(cli, tmp_path, monkeypatch,
                                                                           private_ledger, engine, how):
    """Every part is pinned: a part rewritten in place after the fingerprint pass is refused when
    read again, and one renamed over is not read (the pinned bytes are). The Dask workers read every
    part by its path, so there a part replaced either way gives records other than those
    fingerprinted, refused before anything is written."""
    if engine == "dask":
        pytest.importorskip("dask")
    hive = _split(_comparisons(), tmp_path, "hive")
    release = ["rank", "--mechanism", "rr", "--epsilon", "1", "--seed", "3", hive, "--engine", engine]
    assert cli(*release, "-o", tmp_path / "clean.csv")[0] == 0
    part = hive / "day=2026-01-02" / "part-0.parquet"
    other = tmp_path / "other.parquet"
    _write(_comparisons(seed=4).slice(0, 180), other)
    original = cli_releasing.identify

    def fingerprint_then_replace(data):
        identity = original(data)
        if how == "rename":
            os.replace(other, part)
        else:  # the same inode, other bytes
            with open(part, "r+b") as fh:
                fh.write(other.read_bytes())
        return identity
    monkeypatch.setattr(cli_releasing, "identify", fingerprint_then_replace)
    code, _, err = cli(*release, "-o", tmp_path / "out.csv")
    if engine != "dask" and how == "rename":  # the pinned parts still read the fingerprinted records
        assert code == 0, err
        assert (tmp_path / "out.csv").read_text() == (tmp_path / "clean.csv").read_text()
        return
    assert code == 2 and "changed while" in err and "Traceback" not in err, err
    assert not (tmp_path / "out.csv").exists()


def _mismatched(root):
    _write(_comparisons().slice(0, 50), root / "p0.parquet")
    _write(_comparisons().slice(50, 50).set_column(3, "outcome", pa.array(np.ones(50))), root / "p1.parquet")
    return root, "p1.parquet: its columns (names, order or types) differ from those of"


def _mixed(root):
    _write(_comparisons().slice(0, 50), root / "p0.parquet")
    _write(_comparisons().slice(50, 50), root / "p1.csv")
    return root, "p1.csv is not of the format of"


def _empty(root):
    root.mkdir()
    (root / "_SUCCESS").write_text("")
    return root, "is a directory without data files"


def _no_match(root):
    return root / "nothing-*.parquet", "no data file matches"


def _not_data(root):
    _write(_comparisons(), root / "p0.parquet")
    (root / "README").write_text("notes")
    return root, "README, in the data set"


def _partitioned_by_user(root):
    for user in ("a", "b"):
        _write(_comparisons().drop_columns(["user"]), root / f"user={user}" / "p.parquet")
    return root, "its directories name the column 'user'"


def _bad_record(root):
    _write(_comparisons().slice(0, 50), root / "p0.csv")
    bad = _comparisons().slice(50, 50).set_column(3, "outcome", pa.array([1, 1, 7] + [1] * 47))
    _write(bad, root / "p1.csv")
    return root, "p1.csv, line 4: outcome must be 1, -1 or 0"


REFUSED = {"mismatched schema": _mismatched, "mixed formats": _mixed, "no data files": _empty,
           "empty glob": _no_match, "a file that is not data": _not_data, "partitioned by user": _partitioned_by_user,
           "a bad record": _bad_record}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("case", list(REFUSED))
def test_parts_that_are_not_one_data_set_are_refused_before_any_charge(cli, tmp_path, private_ledger, case, engine):
    if engine == "dask":
        pytest.importorskip("dask")
    source, message = REFUSED[case](tmp_path / "data")
    code, out, err = cli("rank", source, "--epsilon", "1", "--engine", engine, "-o", tmp_path / "out.csv")
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err, err
    assert message in err, err
    assert not (tmp_path / "out.csv").exists()
    with Ledger(private_ledger) as ledger:
        assert not ledger.releases()


@pytest.mark.parametrize("engine", ["stream", "dask"])
def test_a_bad_ballot_is_named_by_its_part_and_record(cli, tmp_path, private_ledger, engine):
    if engine == "dask":
        pytest.importorskip("dask")
    _write(_rankings().slice(0, 50), tmp_path / "data" / "p0.parquet")
    bad = _rankings().slice(50, 50).to_pydict()
    bad["rank2"][2] = bad["rank1"][2]
    _write(pa.table(bad), tmp_path / "data" / "p1.parquet")
    code, _, err = cli("aggregate", tmp_path / "data", "--method", "borda", "--engine", engine)
    assert code == 2 and "p1.parquet, record 3: an item is ranked twice" in err, err
    with Ledger(private_ledger) as ledger:
        assert not ledger.releases()


def test_the_library_refuses_the_same_way(tmp_path):
    source, message = _mismatched(tmp_path / "data")
    with pytest.raises(InputError, match="differ from those of"):
        read_comparisons(source)
    with pytest.raises(InputError, match="no data file matches"):
        pr.sufficient_statistics(str(tmp_path / "none-*.parquet"), engine="dask")


@pytest.mark.slow
def test_dask_worker_processes_read_every_part(tmp_path):
    """On a LocalCluster of two worker processes, each reading parts by path, the tally is the one file's."""
    distributed = pytest.importorskip("distributed")
    table = _comparisons()
    _write(table, tmp_path / "one.parquet")
    hive = _split(table, tmp_path, "hive")
    expected = pr.sufficient_statistics(str(tmp_path / "one.parquet"), engine="stream", epsilon=1.0, rng=5)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as cluster:
        tally = pr.sufficient_statistics(str(hive), engine="dask", epsilon=1.0, rng=5,
                                         scheduler=cluster.scheduler_address)
    assert all(np.array_equal(getattr(tally, x), getattr(expected, x)) for x in ("i", "j", "n", "wins2"))
