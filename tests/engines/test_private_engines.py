"""Private releases of ``rank`` on the stream and Dask engines print the local engine's bytes (issue 40):
central mechanisms from the tally, per-user bounds (each user's first K records) and personal budgets
(each user's budget split over that user's records), with one counter per user and nothing per record."""
import dataclasses

import numpy as np
import pytest
from engine_data import pa, pq

from privrank.cli import main
from privrank.data.pinned import FileChangedError
from privrank.engines import sufficient_statistics, users
from privrank.ledger import Ledger, fingerprint

dd = pytest.importorskip("dask.dataframe")

ITEMS = list("ABCDEFGH")


@pytest.fixture(scope="module")
def votes(tmp_path_factory):
    """The same votes as CSV (one partition), Parquet of text users and of integer users, close together
    and far apart (row groups of 499 and 700: users cross their bound inside and across partitions), and
    the item list."""
    path = tmp_path_factory.mktemp("private")
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.integers(0, 8, n)
    b = (a + rng.integers(1, 8, n)) % 8
    outcome = rng.choice([1, -1, 0], n)
    user = rng.zipf(1.5, n) % 60  # a few busy users, many with one or two records
    labels = np.array(ITEMS)
    files = {"csv": path / "votes.csv", "parquet": path / "votes.parquet", "int": path / "int.parquet",
             "sparse": path / "sparse.parquet"}
    files["csv"].write_text("user,item_a,item_b,outcome\n" + "".join(
        f"u{u},{labels[x]},{labels[y]},{o}\n" for u, x, y, o in zip(user, a, b, outcome)))
    columns = {"item_a": labels[a], "item_b": labels[b], "outcome": outcome}
    pq.write_table(pa.table({"user": [f"u{u}" for u in user], **columns}), files["parquet"], row_group_size=499)
    pq.write_table(pa.table({"user": user, **columns}), files["int"], row_group_size=700)
    # ids far apart: looked up in the sorted ids, not in a table over their span
    pq.write_table(pa.table({"user": user * 10 ** 12 + 7, **columns}), files["sparse"], row_group_size=700)
    items = path / "items.txt"
    items.write_text("\n".join(ITEMS) + "\n")
    return files, items


def run(capsys, *argv):
    code = main([str(x) for x in argv])
    out, err = capsys.readouterr()
    return code, out, err


BUDGETS = {
    "first K": ("--epsilon", "1", "--max-answers", "5"),
    "personal": ("--user-epsilon", "4"),
}
CENTRAL = {
    "per comparison": ("--epsilon", "1"),
    "first K": ("--epsilon", "1", "--max-answers", "4"),
    "per person": ("--user-epsilon", "2", "--max-answers", "4", "--respondents", "60"),
}


def same_everywhere(capsys, votes, argv):
    """The local engine's output for ``argv`` and that it is what stream (two batchings) and dask print."""
    files, _ = votes
    code, expected, err = run(capsys, "rank", files["csv"], "--engine", "local", *argv)
    assert code == 0, err
    for path in files.values():
        for engine, batch in (("stream", "97"), ("stream", "4096"), ("dask", "97")):
            code, out, err = run(capsys, "rank", path, "--engine", engine, "--batch-size", batch, *argv)
            assert code == 0, err
            assert out == expected, (path.name, engine, batch)
    return expected


@pytest.mark.parametrize("fmt", ["csv", pytest.param("json", marks=pytest.mark.slow)])
@pytest.mark.parametrize("budget", list(BUDGETS))
@pytest.mark.parametrize("mechanism", ["debiased-rr", "rr"])
def test_local_mechanisms_under_a_per_user_bound_or_budget(capsys, votes, mechanism, budget, fmt):
    same_everywhere(capsys, votes, ("--mechanism", mechanism, *BUDGETS[budget], "--seed", "3", "--format", fmt))


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["csv", "json"])
@pytest.mark.parametrize("budget", list(BUDGETS))
def test_local_intervals_under_a_per_user_bound_or_budget(capsys, votes, budget, fmt):
    same_everywhere(capsys, votes, (*BUDGETS[budget], "--seed", "3", "--format", fmt, "--ci"))


@pytest.mark.parametrize("ci", [(), ("--ci",)])
@pytest.mark.parametrize("budget", list(CENTRAL))
@pytest.mark.parametrize("mechanism", ["objective-perturbation", "noisy-copeland",
                                       pytest.param("central-auto", marks=pytest.mark.slow)])
def test_central_mechanisms(capsys, votes, mechanism, budget, ci):
    fmt = "json" if ci else "csv"
    same_everywhere(capsys, votes, ("--mechanism", mechanism, "--items", votes[1], *CENTRAL[budget], "--seed", "5",
                                    "--format", fmt, *ci))


def test_top_k_and_seeds(capsys, votes):
    argv = ("--mechanism", "objective-perturbation", "--items", votes[1], "--epsilon", "1", "--max-answers", "4")
    files, _ = votes
    outs = {run(capsys, "top-k", files["parquet"], "--k", "3", "--engine", "stream", *argv, "--seed", s)[1]
            for s in ("1", "2")}
    assert len(outs) == 2
    same_everywhere(capsys, votes, ("--epsilon", "1", "--max-answers", "5", "--seed", "9"))  # the table format


def test_the_bound_keeps_each_users_first_records_in_file_order(votes):
    """The tally under a bound is the in-memory tally of PairwiseComparisons.first_answers, raw and randomized,
    and declares the bound and the records given."""
    files, _ = votes
    for eps in (None, 0.8):
        ref = sufficient_statistics(files["csv"], engine="local", max_answers=3, epsilon=eps, rng=2)
        assert ref.max_answers == 3 and ref.answers_given == 3000 and ref.n_records < 3000
        for path in files.values():
            for engine in ("stream", "dask"):
                t = sufficient_statistics(path, engine=engine, max_answers=3, epsilon=eps, rng=2, batch_size=97)
                assert (t.items, t.max_answers, t.answers_given) == (ref.items, 3, 3000)
                for name in ("level", "i", "j", "n", "wins2"):
                    np.testing.assert_array_equal(getattr(t, name), getattr(ref, name))


def test_broken_variants_fail_the_equality(capsys, votes, monkeypatch):
    """The equality tests can fail: a cut that keeps K + 1 records per user, and a personal epsilon split
    over a user's records in the batch rather than in the file, change the stream's output."""
    first_k = ("--epsilon", "1", "--max-answers", "5", "--seed", "3", "--format", "csv")
    personal = ("--user-epsilon", "4", "--seed", "3", "--format", "csv")
    files, _ = votes
    expected = {argv: run(capsys, "rank", files["csv"], *argv)[1] for argv in (first_k, personal)}
    select = users.Users.select

    def one_more(self, batch):
        self.max_answers += 1
        try:
            return select(self, batch)
        finally:
            self.max_answers -= 1

    with monkeypatch.context() as m:
        m.setattr(users.Users, "select", one_more)
        assert run(capsys, "rank", files["parquet"], "--engine", "stream", *first_k)[1] != expected[first_k]

    def per_batch(self, batch):
        if self.budget is not None:
            self.counts = np.zeros_like(self.counts)
            self.add(self.codes(batch.user))
        return select(self, batch)

    with monkeypatch.context() as m:
        m.setattr(users.Users, "select", per_batch)
        out = run(capsys, "rank", files["parquet"], "--engine", "stream", "--batch-size", "97", *personal)[1]
        assert out != expected[personal]
    assert run(capsys, "rank", files["parquet"], "--engine", "stream", "--batch-size", "97", *personal)[1] \
        == expected[personal]


def test_charged_once_before_the_noise_and_not_when_refused(capsys, votes, tmp_path):
    files, items = votes
    no_users = tmp_path / "no_users.csv"
    no_users.write_text("item_a,item_b,outcome\nA,B,1\nB,C,-1\n")
    ledger = tmp_path / "ledger.sqlite"
    for engine in ("stream", "dask"):
        for argv in ((no_users, "--user-epsilon", "2"), (no_users, "--epsilon", "1", "--max-answers", "2"),
                     (files["csv"], "--mechanism", "objective-perturbation", "--epsilon", "1"),  # no --items
                     (files["csv"], "--mechanism", "noisy-copeland", "--items", items, "--user-epsilon", "1")):
            code, _, err = run(capsys, "rank", *argv, "--engine", engine, "--ledger", ledger)
            assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err
    with Ledger(ledger) as led:
        assert led.releases() == []
    code, _, err = run(capsys, "rank", files["int"], "--engine", "stream", "--user-epsilon", "2", "--ledger", ledger)
    assert code == 0, err
    with Ledger(ledger) as led:
        assert len(led.releases()) == 1


def test_one_counter_per_user_not_per_record(votes):
    """The per-user state holds the users met and one count each."""
    files, _ = votes
    from privrank.data.io import ComparisonFile

    state = users.Users(max_answers=4)
    for batch in ComparisonFile(files["int"]).batches(97):
        state.select(batch)
    assert len(state.labels) == state.counts.size <= 60
    assert state.counts.sum() == 3000 and state.used == np.minimum(state.counts, 4).sum()


@pytest.mark.slow
def test_a_local_cluster_prints_the_local_bytes(capsys, votes):
    distributed = pytest.importorskip("distributed")
    files, items = votes
    argv = ("--mechanism", "objective-perturbation", "--items", items, "--user-epsilon", "2", "--max-answers", "4",
            "--respondents", "60", "--seed", "5", "--format", "json", "--ci")
    expected = run(capsys, "rank", files["csv"], *argv)[1]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        for path in (files["parquet"], files["int"]):
            code, out, err = run(capsys, "rank", path, "--engine", "dask", "--scheduler", c.scheduler_address, *argv)
            assert code == 0, err
            assert out == expected
        code, out, err = run(capsys, "rank", files["int"], "--engine", "dask", "--scheduler", c.scheduler_address,
                             "--user-epsilon", "3", "--seed", "2", "--format", "csv")
        assert code == 0 and out == run(capsys, "rank", files["csv"], "--user-epsilon", "3", "--seed", "2",
                                        "--format", "csv")[1]


def test_the_ledger_fingerprint_merges_its_batches_without_changing(votes, monkeypatch):
    """The streamed fingerprint merges its batches' cells and users as it goes (memory set by the distinct
    cells and users, not by the batches): merged after every batch, the identity is the same."""
    from privrank import fingerprints
    from privrank.data.io import ComparisonFile

    files, _ = votes
    for path in files.values():
        expected = fingerprints.identify(path)
        monkeypatch.setattr(fingerprints, "MERGE_ENTRIES", 0)
        merged = fingerprints._Comparisons()
        for batch in ComparisonFile(path).batches(97):
            merged.add_batch(batch)
        assert len(merged.users) < 8 and len(merged.cells) < 8  # 31 batches, merged as they came
        got = merged.identity()
        for field in dataclasses.fields(got):
            assert np.array_equal(getattr(got, field.name), getattr(expected, field.name)), field.name
        monkeypatch.undo()


@pytest.mark.parametrize("ids", ["dense", "far", "mixed", "text"])
def test_users_keep_each_users_first_k_records_whatever_the_ids(ids):
    """Batch after batch, the records kept are each user's first K in order (a loop with a dict), whether
    the ids are looked up in a table over their span, in sorted ids, all in turn, or hashed as text."""
    rng = np.random.default_rng(7)
    seen, state = {}, users.Users(max_answers=3)
    for k in range(12):
        raw = rng.integers(0, 40, int(rng.integers(0, 60)))
        if ids == "far" or ids == "mixed" and k % 3 == 2:
            raw = raw * 10 ** 15 + 1
        column = pa.array([f"u{x}" for x in raw]) if ids == "text" else pa.array(raw, type=pa.int64())
        if ids == "mixed" and k % 3 == 1:  # integer ids dictionary-encoded: looked up in the sorted ids
            column = column.dictionary_encode()
        expected = []
        for x in raw.tolist():
            seen[x] = seen.get(x, 0) + 1
            expected.append(seen[x] <= 3)
        selection = state.select(type("Batch", (), {"user": column})())
        kept = np.ones(len(raw), dtype=bool) if selection.keep is None else selection.keep
        assert kept.tolist() == expected
    assert state.used == sum(min(c, 3) for c in seen.values())


def test_the_dask_client_counts_users_a_few_partitions_at_a_time(votes, monkeypatch):
    """The plan is built as the partitions' user counts come, a chunk at a time: the same tallies."""
    from privrank.engines import dask_engine

    files, _ = votes
    monkeypatch.setattr(dask_engine, "MEASURE_CHUNK", 2)
    for kwargs in ({"max_answers": 3, "epsilon": 0.8}, {"user_epsilon": 3.0}):
        ref = sufficient_statistics(files["csv"], engine="local", rng=2, **kwargs)
        for name in ("parquet", "int", "sparse"):
            t = sufficient_statistics(files[name], engine="dask", rng=2, **kwargs)
            assert np.array_equal(t.epsilons, ref.epsilons)
            for field in ("level", "i", "j", "n", "wins2"):
                np.testing.assert_array_equal(getattr(t, field), getattr(ref, field))


@pytest.fixture
def swapped(votes, tmp_path, monkeypatch):
    """``(table, path, swap)``: the integer-user votes, a copy of them at ``path`` and ``swap(first, then)``,
    after which the dask engine's first pass reads the table ``first`` at ``path`` and its second pass the
    table ``then``, as a file swapped between the passes and back would be read."""
    from privrank.engines import dask_engine

    files, _ = votes
    table = pq.read_table(files["int"])
    path = tmp_path / "votes.parquet"
    pq.write_table(table, path, row_group_size=700)
    measured = dask_engine._measured

    def swap(first, then):
        def first_pass_on_other(*args, **kwargs):
            pq.write_table(first, path, row_group_size=700)
            try:
                return measured(*args, **kwargs)
            finally:
                pq.write_table(then, path, row_group_size=700)
        monkeypatch.setattr(dask_engine, "_measured", first_pass_on_other)
    return table, path, swap


def test_a_file_swapped_between_the_dask_passes_is_refused(capsys, votes, swapped, tmp_path):
    """The second pass digests what the first pass read of each partition: a partition read otherwise there is
    refused, with nothing written; a central release has charged nothing, a local one (charged before its
    reports are drawn, in the second pass) says that its spend stays recorded."""
    _, items = votes
    table, path, swap = swapped
    ledger, out = tmp_path / "ledger.sqlite", tmp_path / "out.csv"
    swap(regrouped(table), table)
    for argv, spent in ((("--mechanism", "objective-perturbation", "--items", items, "--epsilon", "1",
                          "--max-answers", "4"), []),
                        (("--epsilon", "1", "--max-answers", "4"), [1.0]),
                        (("--user-epsilon", "2"), [1.0, 2.0])):
        code, _, err = run(capsys, "rank", path, "--engine", "dask", "--ledger", ledger, "--out", out, *argv)
        assert code == 2 and "Traceback" not in err, err
        assert "changed while it was being released: nothing was released" in err
        assert ("the spend stays recorded in the ledger" in err) == bool(spent)
        assert not out.exists()
        with Ledger(ledger) as led:
            assert [r["epsilon"] for r in led.releases()] == spent
    counts = [table.append_column("count", pa.array(np.full(len(table), c))) for c in (2, 1)]
    pq.write_table(counts[1], path, row_group_size=700)
    swap(*counts)  # the partitions' extents differ: the second pass would number its records wrong
    with pytest.raises(FileChangedError, match="changed between the dask engine's passes"):
        sufficient_statistics(path, engine="dask", epsilon=1.0, rng=2)


def test_broken_variant_without_the_check_lets_users_past_their_bound(votes, swapped, monkeypatch):
    """Without the second pass's check, the plan of the data first read selects records of the data read
    then: users keep more than their K records, and the records still have the ledger's fingerprint."""
    from privrank.engines import dask_engine

    table, path, swap = swapped
    within = int(np.minimum(np.unique(table.column("user").to_numpy(), return_counts=True)[1], 3).sum())
    assert sufficient_statistics(path, engine="dask", max_answers=3).n.sum() == within
    swap(regrouped(table), table)
    monkeypatch.setattr(dask_engine, "columns_digest", lambda table, names: b"")
    fp = fingerprint(str(path))
    tally = sufficient_statistics(path, engine="dask", max_answers=3, fingerprint=fp)
    assert tally.n.sum() > within


def regrouped(table):
    """The same comparisons, every record its own user (the ledger's fingerprint leaves users out)."""
    return table.set_column(0, "user", pa.array(np.arange(len(table))))
