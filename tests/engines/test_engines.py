"""The engines compute identical statistics and identical seeded releases (issue 8)."""
from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest
from engine_data import assert_same_tally, make_records, pa, pq, write_all

import privrank as pr
from privrank.data.tally import ComparisonTally
from privrank.engines import dask_engine, sufficient_statistics
from privrank.errors import InputError
from privrank.mechanisms.randomized_response import flip_probability, randomize_records, record_key
from privrank.pairwise.release import release_from_reports

dd = pytest.importorskip("dask.dataframe")

BATCH_SIZES = (97, 4096)  # 97: batches start at every offset modulo a Philox block of 4


def brute_force(cols, values2=None, epsilon=None):
    """(level, i, j) -> [n, wins2] by a loop over records, items and levels in sorted order."""
    items = sorted(set(cols["item_a"]) | set(cols["item_b"]))
    levels = sorted(set(epsilon)) if epsilon is not None else [None]
    out = defaultdict(lambda: [0, 0])
    v2 = cols["outcome"] + 1 if values2 is None else values2
    for k, (x, y, v) in enumerate(zip(cols["item_a"], cols["item_b"], v2)):
        i, j = items.index(x), items.index(y)
        level = 0 if epsilon is None else levels.index(epsilon[k])
        key = (level, min(i, j), max(i, j))
        out[key][0] += 1
        out[key][1] += int(v) if i < j else 2 - int(v)
    return items, out


def as_dict(t):
    return {(int(l), int(i), int(j)): [int(n), int(w)] for l, i, j, n, w in zip(t.level, t.i, t.j, t.n, t.wins2)}


def test_local_tally_matches_a_loop_over_records(raw_files):
    cols = make_records()
    t = sufficient_statistics(raw_files["csv"], engine="local")
    items, expected = brute_force(cols)
    assert t.items == tuple(items) and as_dict(t) == dict(expected)
    assert t.epsilons is None and not t.seeded
    # the non-private statistic is the one PairwiseComparisons always had
    pc, old = t.pair_counts(), pr.read_comparisons(raw_files["csv"]).pair_counts()
    np.testing.assert_array_equal(pc.wins, old.wins)
    np.testing.assert_array_equal(pc.totals, old.totals)


def test_randomized_tally_matches_a_loop_over_reports(raw_files):
    # record r is randomized with the r-th Philox output under the seed's key, whatever the engine
    cols = make_records()
    reports = randomize_records(cols["outcome"] + 1, 0.8, record_key(5))
    items, expected = brute_force(cols, values2=2 * reports, epsilon=np.full(len(reports), 0.8))
    for engine in ("local", "stream"):
        t = sufficient_statistics(raw_files["parquet"], engine=engine, epsilon=0.8, rng=5)
        assert as_dict(t) == dict(expected) and t.seeded


@pytest.mark.parametrize("kind", ["raw", "randomized", "reports"])
def test_engines_and_batchings_give_identical_tallies(raw_files, report_files, kind):
    files = report_files if kind == "reports" else raw_files
    eps = 1.5 if kind == "randomized" else None
    ref = sufficient_statistics(files["csv"], engine="local", epsilon=eps, rng=11)
    if kind == "reports":
        assert ref.epsilons.tolist() == [0.5, 1.0, 2.0] and not ref.seeded
    for fmt, path in files.items():
        assert_same_tally(sufficient_statistics(path, engine="local", epsilon=eps, rng=11), ref)
        for size in BATCH_SIZES:
            assert_same_tally(sufficient_statistics(path, engine="stream", epsilon=eps, rng=11, batch_size=size), ref)
        if fmt != "arrow":
            assert_same_tally(sufficient_statistics(path, engine="dask", epsilon=eps, rng=11), ref)


def test_a_counted_file_gives_what_its_rows_repeated_give_on_every_engine(counted_files):
    """A row of count c is c comparisons: the tallies, seeded randomization (record r of the
    repeated rows is record r of the counted file), the ledger's identity and the progress
    count are those of the rows repeated, whatever the format, engine and batching (a batch of 97
    records ends inside a row)."""
    from privrank.fingerprints import identify

    counted, rows = counted_files
    reports = "epsilon" in pq.read_schema(rows["parquet"]).names
    for eps in (None,) if reports else (None, 1.5):
        ref = sufficient_statistics(rows["csv"], engine="local", epsilon=eps, rng=11)
        for fmt, path in counted.items():
            assert_same_tally(sufficient_statistics(path, engine="local", epsilon=eps, rng=11), ref)
            for size in BATCH_SIZES:
                assert_same_tally(sufficient_statistics(path, engine="stream", epsilon=eps, rng=11, batch_size=size),
                                  ref)
            if fmt != "arrow":
                assert_same_tally(sufficient_statistics(path, engine="dask", epsilon=eps, rng=11), ref)
    identities = [identify(path) for path in [rows["csv"], *counted.values()]]
    assert len({(i.labels, i.structure, i.users, i.sketch.tobytes(), i.size) for i in identities}) == 1
    calls = []
    sufficient_statistics(counted["parquet"], batch_size=4096, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (ref.n_records,) * 2


def test_dask_partitionings_agree(raw_files, tmp_path, monkeypatch):
    cols = make_records()
    ref = sufficient_statistics(raw_files["csv"], epsilon=2.0, rng=3)
    for row_group in (100, 2500):
        directory = tmp_path / f"rg{row_group}"
        directory.mkdir()
        files = write_all(directory, cols, row_group=row_group)
        assert_same_tally(sufficient_statistics(files["parquet"], engine="dask", epsilon=2.0, rng=3), ref)
    monkeypatch.setattr(dask_engine, "CSV_BLOCKSIZE", 20_000)  # several CSV partitions
    assert dd.read_csv(raw_files["csv"], blocksize=20_000).npartitions > 3
    assert_same_tally(sufficient_statistics(raw_files["csv"], engine="dask", epsilon=2.0, rng=3), ref)


def test_seeded_releases_are_identical_and_seeds_matter(raw_files):
    runs = [("csv", dict(engine="local")), ("parquet", dict(engine="stream", batch_size=7)),
            ("arrow", dict(engine="stream", batch_size=1000)), ("parquet_dict", dict(engine="dask"))]
    releases = [release_from_reports(sufficient_statistics(raw_files[fmt], epsilon=1.0, rng=42, **kwargs),
                                     weights="inverse_variance") for fmt, kwargs in runs]
    in_memory = pr.debiased_randomized_response(pr.read_comparisons(raw_files["csv"]), 1.0, rng=42,
                                                weights="inverse_variance")
    for rel in releases:
        np.testing.assert_array_equal(rel.counts.wins, in_memory.counts.wins)
        np.testing.assert_array_equal(rel.counts.totals, in_memory.counts.totals)
        assert rel.variance_factor == in_memory.variance_factor
        # the tally's reports are taken as received at the epsilon they declare; the rest is the same
        assert "at the declared epsilon 1." in rel.guarantee.note
        assert replace(rel.guarantee, note=in_memory.guarantee.note) == in_memory.guarantee
    other = sufficient_statistics(raw_files["parquet"], epsilon=1.0, rng=43)
    assert not np.array_equal(other.wins2, sufficient_statistics(raw_files["parquet"], epsilon=1.0, rng=42).wins2)


def test_engine_randomization_is_randomized_response(tmp_path):
    # 200,000 answers "a beats b" randomized at eps by the stream engine: the share of reports
    # "a beats b" is 1 - p_eps within 4 standard errors, SE = sqrt(q(1-q)/n). The same check
    # catches randomization at 2 eps (too little noise) presented as eps.
    n, eps = 200_000, 1.0
    cols = {"user": np.arange(n) % 1000, "item_a": np.full(n, "A"), "item_b": np.full(n, "B"),
            "outcome": np.ones(n, dtype=int)}
    path = write_all(tmp_path, cols, row_group=30_000)["parquet"]
    q = 1 - flip_probability(eps)
    se = np.sqrt(q * (1 - q) / n)

    def share(tally):
        return tally.wins2.sum() / 2 / tally.n.sum()
    assert abs(share(sufficient_statistics(path, epsilon=eps, rng=1, batch_size=50_000)) - q) < 4 * se
    assert abs(share(sufficient_statistics(path, epsilon=2 * eps, rng=1, batch_size=50_000)) - q) > 4 * se



def test_fit_takes_a_tally(raw_files):
    t = sufficient_statistics(raw_files["parquet"], engine="stream")
    assert pr.fit_btl(t).scores == pytest.approx(pr.fit_btl(pr.read_comparisons(raw_files["csv"])).scores,
                                                 abs=1e-12)
    private = pr.fit_btl(sufficient_statistics(raw_files["parquet"], epsilon=2.0, rng=0))
    g = private.guarantee
    assert g.private and g.epsilon_per_user is None and g.seeded and "SEEDED RUN" in g.describe()
    assert "SEEDED" not in pr.fit_btl(sufficient_statistics(raw_files["parquet"], epsilon=2.0)).guarantee.describe()


def test_unused_dictionary_entries_are_not_items(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "d.parquet"
    a = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", "b", "unused"]))
    b = pa.DictionaryArray.from_arrays(pa.array([1, 2, 2], pa.int32()), pa.array(["a", "b", "c", "spare"]))
    pq.write_table(pa.table({"item_a": a, "item_b": b, "outcome": pa.array([1, -1, 0], pa.int8())}), path)
    for engine in ("local", "stream", "dask"):
        assert sufficient_statistics(path, engine=engine).items == ("a", "b", "c")


@pytest.mark.parametrize("m", [25, 60])  # 60 items: a table of codes too large for the batches, looked up per record
def test_text_labels_are_counted_as_dictionary_codes_not_looked_up_per_record(tmp_path, monkeypatch, m):
    files = write_all(tmp_path, make_records(m=m))
    items = tuple(f"item {k:02d}" for k in reversed(range(m + 5)))
    ref = {given: sufficient_statistics(files["csv"], engine="local", items=given, epsilon=1.0, rng=5)
           for given in (None, items)}

    def no_lookup(*args):
        raise AssertionError("labels looked up record by record")
    monkeypatch.setattr("privrank.data.comparison_files.label_indices", no_lookup)
    for fmt in ("csv", "parquet", "parquet_dict", "arrow"):
        for given in (None, items):
            for batch_size in BATCH_SIZES:
                assert_same_tally(sufficient_statistics(files[fmt], items=given, epsilon=1.0, rng=5,
                                                        batch_size=batch_size), ref[given])


def test_codes_naming_an_unknown_item_or_one_item_twice_are_refused_by_record(tmp_path):
    path = tmp_path / "d.parquet"
    labels = pa.array(["a", "b", "c", "unused"])
    a = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0, 2, 1], pa.int32()), labels)
    b = pa.DictionaryArray.from_arrays(pa.array([1, 2, 2, 2, 0], pa.int32()), labels)
    pq.write_table(pa.table({"item_a": a, "item_b": b, "outcome": pa.array([1, -1, 0, 1, 1], pa.int8())}), path)
    for engine in ("local", "stream"):
        with pytest.raises(InputError, match="record 4: a comparison of an item with itself"):
            sufficient_statistics(path, engine=engine, batch_size=2)
    fine = pa.table({"item_a": a[:3], "item_b": b[:3], "outcome": pa.array([1, -1, 0], pa.int8())})
    pq.write_table(fine, path)
    assert sufficient_statistics(path, engine="stream", items=("c", "b", "a")).n_records == 3  # "unused" unused
    with pytest.raises(InputError, match="not in the given item list"):
        sufficient_statistics(path, engine="stream", items=("a", "b"))


def test_given_item_list(raw_files):
    items = tuple(f"item {k:02d}" for k in reversed(range(30)))  # any order, and items never compared
    ref = sufficient_statistics(raw_files["csv"], engine="local", items=items)
    assert ref.items == items
    assert_same_tally(sufficient_statistics(raw_files["parquet"], items=items, batch_size=500), ref)
    with pytest.raises(InputError, match="not in the given item list"):
        sufficient_statistics(raw_files["parquet"], items=items[:10])


@pytest.mark.parametrize("kwargs,match", [
    (dict(engine="gpu"), "engine must be one of"),
    (dict(kind="votes"), "kind must be one of"),
    (dict(scheduler="tcp://127.0.0.1:1"), "only by the dask engine"),
    (dict(epsilon=0), "epsilon must be > 0"),
])
def test_bad_requests(raw_files, kwargs, match):
    with pytest.raises(InputError, match=match):
        sufficient_statistics(raw_files["csv"], **kwargs)


def test_reports_are_not_randomized_again(report_files):
    for engine in ("local", "stream"):
        with pytest.raises(InputError, match="randomized reports"):
            sufficient_statistics(report_files["parquet"], engine=engine, epsilon=1.0)


def test_refusals_and_clear_errors(raw_files, tmp_path):
    with pytest.raises(InputError, match="local engine"):
        sufficient_statistics(pr.read_comparisons(raw_files["csv"]), engine="stream")
    with pytest.raises(InputError, match="convert Arrow files to Parquet"):
        sufficient_statistics(raw_files["arrow"], engine="dask")
    with pytest.raises(InputError, match="no such file"):
        sufficient_statistics(tmp_path / "missing.parquet")
    empty = tmp_path / "empty.csv"
    empty.write_text("item_a,item_b,outcome\n")
    with pytest.raises(InputError, match="no comparisons"):
        sufficient_statistics(empty)


def test_a_user_column_declared_without_nulls_is_not_read_and_a_null_user_is_still_refused(tmp_path):
    from privrank.engines.comparisons import open_file

    table = pa.table({"user": [1, 2, 3, 4], "item_a": ["a", "b", "a", "c"], "item_b": ["b", "c", "c", "a"],
                      "outcome": [1, -1, 0, 1]})
    declared, required, silent, null = (tmp_path / f"{name}.parquet" for name in ("declared", "required", "silent",
                                                                                 "null"))
    pq.write_table(table, declared, row_group_size=2)
    pq.write_table(table.cast(table.schema.set(0, table.schema.field(0).with_nullable(False))), required)
    pq.write_table(table, silent, write_statistics=False)  # no statistics: nothing declared, the column is read
    pq.write_table(table.set_column(0, "user", pa.array([1, None, 3, 4])), null, row_group_size=2)
    assert open_file(declared).names == open_file(required).names == ["item_a", "item_b", "outcome"]
    assert open_file(silent).names[-1] == open_file(null).names[-1] == "user"
    expected = sufficient_statistics(pr.read_comparisons(declared), epsilon=1.0, rng=4)
    for path in (declared, required, silent):
        assert_same_tally(sufficient_statistics(path, engine="stream", epsilon=1.0, rng=4), expected)
    for engine in ("local", "stream", "dask"):
        with pytest.raises(InputError, match="record 2: empty user id"):
            sufficient_statistics(null, engine=engine, epsilon=1.0, rng=4)
    for users in (["u1", "", "u3", "u4"], [1.0, np.nan, 3.0, 4.0]):  # missing without a null: read, refused
        pq.write_table(table.set_column(0, "user", pa.array(users)), null)
        assert open_file(null).names[-1] == "user"
        with pytest.raises(InputError, match="record 2: empty or NaN user id"):
            sufficient_statistics(null, engine="stream", epsilon=1.0, rng=4)


def test_in_memory_source_is_the_local_engine(raw_files):
    comps = pr.read_comparisons(raw_files["csv"])
    assert_same_tally(sufficient_statistics(comps, epsilon=1.0, rng=9),
                      sufficient_statistics(raw_files["csv"], engine="stream", epsilon=1.0, rng=9))
    assert isinstance(sufficient_statistics(comps), ComparisonTally)


def test_ledger_fingerprint_streams_files_and_matches_memory(raw_files, report_files, tmp_path):
    from privrank.ledger import fingerprint

    for files in (raw_files, report_files):
        in_memory = fingerprint(pr.read_comparisons(files["csv"]))
        assert {fingerprint(path) for path in files.values()} == {in_memory}  # every format, streamed
    cols = make_records()
    shuffled = {k: v[::-1] for k, v in cols.items()}  # the same records in another order
    assert fingerprint(write_all(tmp_path, shuffled)["parquet"]) == fingerprint(raw_files["csv"])
    cols["outcome"] = cols["outcome"].copy()
    cols["outcome"][17] = -cols["outcome"][17] if cols["outcome"][17] else 1  # one answer changed
    changed = tmp_path / "changed"
    changed.mkdir()
    assert fingerprint(write_all(changed, cols)["parquet"]) != fingerprint(raw_files["csv"])


@pytest.mark.parametrize("labels", ["0..m-1", "gaps", "negative"])
def test_integer_item_ids_are_indexed_by_value_on_every_engine(tmp_path, labels):
    # integer ids of a small range skip hashing (indexed by value, or the ids themselves when the
    # range starts at 0); the tally is the one the hashing reader gives for the same records
    rng = np.random.default_rng(8)
    value = {"0..m-1": np.arange(12), "gaps": np.arange(12) * 7 + 3, "negative": np.arange(12) - 5}[labels]
    a = value[rng.integers(0, 12, 3000)]
    b = value[(np.searchsorted(value, a) + rng.integers(1, 12, a.size)) % 12]
    outcome = rng.choice([1, -1, 0], a.size)
    path = tmp_path / "ids.parquet"
    pq.write_table(pa.table({"item_a": a, "item_b": b, "outcome": outcome}), path, row_group_size=500)
    ref = pr.PairwiseComparisons.from_labels(a.tolist(), b.tolist(), outcome).tally()  # hashed labels
    assert ref.items == tuple(value.tolist())
    for engine in ("local", "stream", "dask"):
        assert_same_tally(sufficient_statistics(path, engine=engine), ref)
    # a batch's ids are every integer of its range (as a dictionary's entries); unused ones are dropped
    assert_same_tally(sufficient_statistics(path, engine="stream", batch_size=7), ref)
    with pytest.raises(pr.InputError, match="not in the given item list"):
        sufficient_statistics(path, engine="stream", items=tuple(value[1:].tolist()))


def test_progress_counts_the_records_of_every_format(raw_files, tmp_path):
    stream = tmp_path / "data.arrows"  # an Arrow IPC stream: no footer, its batches are read to count them
    table = pa.ipc.open_file(str(raw_files["arrow"])).read_all()
    with pa.ipc.new_stream(stream, table.schema) as writer:
        writer.write_table(table, max_chunksize=1000)
    for path in (raw_files["parquet"], raw_files["parquet_dict"], raw_files["arrow"], stream, raw_files["csv"]):
        calls = []
        sufficient_statistics(path, batch_size=4096, progress=lambda done, total, c=calls: c.append((done, total)))
        total = None if path == raw_files["csv"] else table.num_rows
        assert calls[-1] == (table.num_rows, total) and all(t == total for _, t in calls)
