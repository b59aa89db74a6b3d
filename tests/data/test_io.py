"""CSV reading and writing of comparisons."""
import contextlib
import os
import time

import numpy as np
import pyarrow.csv
import pytest

import privrank as pr
from privrank.data.io import comparisons_to_csv, read_comparisons, read_rankings
from privrank.errors import InputError
from privrank.files import write_text_atomic
from data_checks import same_data


def write(tmp_path, text, name="c.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_long_format_with_aliases(tmp_path):
    p = write(tmp_path, "respondent,item_a,item_b,result\n1,A,B,1\n1,B,C,-1\n2,A,C,0\n")
    c = pr.read_comparisons(p)
    assert c.items == ("A", "B", "C") and c.n_users == 2 and not c.is_randomized
    np.testing.assert_array_equal(c.outcome, [1, -1, 0])


def test_winner_loser(tmp_path):
    c = pr.read_comparisons(write(tmp_path, "winner,loser\nx,y\ny,z\n"))
    assert c.user is None and np.all(c.outcome == 1)


def test_epsilon_column_marks_reports(tmp_path):
    c = pr.read_comparisons(write(tmp_path, "user,item_a,item_b,outcome,epsilon\nu,A,B,1,0.5\nv,B,A,-1,1\n"))
    assert c.is_randomized
    np.testing.assert_allclose(c.epsilon, [0.5, 1.0])


@pytest.mark.parametrize("text,match", [
    ("user,item_a,outcome\n1,A,1\n", "need a header row"),
    ("item_a,item_b,outcome\nA,B,2\n", "line 2: outcome"),
    ("item_a,item_b,outcome\nA,B,1\nA,C,yes\n", "line 3: outcome"),
    ("item_a,item_b,outcome\nA,B,nan\n", "line 2"),
    ("item_a,item_b,outcome\nA,,1\n", "line 2: empty"),
    ("item_a,item_b,outcome\nA,A,1\n", "line 2"),
    ("item_a,item_b,outcome\nA,B,1,7\n", "line 2: expected 3 fields"),
    ("item_a,item_b,outcome\n", "no comparisons"),
    ("", "empty"),
    ("user,item_a,item_b,outcome,epsilon\nu,A,B,1,-1\n", "line 2: epsilon"),
    ("user,item_a,item_b,outcome,epsilon\nu,A,B,0,1\n", "not a tie"),
])
def test_bad_csv_gives_clear_error(tmp_path, text, match):
    with pytest.raises(InputError, match=match):
        pr.read_comparisons(write(tmp_path, text))


def test_one_item_only(tmp_path):
    # the only way to name a single item in a file is to compare it with itself
    with pytest.raises(InputError, match="line 2: a comparison of an item with itself"):
        pr.read_comparisons(write(tmp_path, "winner,loser\nx,x\n"))


def test_error_does_not_echo_answers(tmp_path):
    with pytest.raises(InputError) as info:
        pr.read_comparisons(write(tmp_path, "user,item_a,item_b,outcome\nalice,SecretParty,OtherParty,5\n"))
    assert "alice" not in str(info.value) and "SecretParty" not in str(info.value)


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        pr.read_comparisons("/nonexistent/file.csv")


def test_round_trip_reports(tmp_path):
    c = pr.read_comparisons(write(tmp_path, "user,item_a,item_b,outcome\n1,A,B,1\n2,B,C,0\n"))
    rep = pr.randomized_response(c, 1.0, rng=0)
    p = write(tmp_path, comparisons_to_csv(rep), "r.csv")
    back = pr.read_comparisons(p)
    np.testing.assert_array_equal(back.outcome, rep.outcome)
    np.testing.assert_allclose(back.epsilon, rep.epsilon)


def test_atomic_write_refuses_overwrite(tmp_path):
    p = tmp_path / "out.txt"
    write_text_atomic(p, "one")
    with pytest.raises(InputError, match="exists"):
        write_text_atomic(p, "two")
    write_text_atomic(p, "two", force=True)
    assert p.read_text() == "two"
    assert [x.name for x in tmp_path.iterdir()] == ["out.txt"]


def test_parquet_and_arrow_read_like_csv(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    feather = pytest.importorskip("pyarrow.feather")
    text = "Worker,item_a,item_b,outcome,epsilon\nw2,B,A,1,0.5\nw1,A,C,-1,2\nw2,C,B,1,0.5\n"
    ref = pr.read_comparisons(write(tmp_path, text))
    table = pa.table({"Worker": ["w2", "w1", "w2"], "item_a": ["B", "A", "C"], "item_b": ["A", "C", "B"],
                      "outcome": pa.array([1, -1, 1], pa.int8()), "epsilon": [0.5, 2.0, 0.5]})
    pq.write_table(table, tmp_path / "c.parquet", row_group_size=2)
    feather.write_feather(table, tmp_path / "c.arrow")
    for name in ("c.parquet", "c.arrow"):
        c = pr.read_comparisons(tmp_path / name)
        assert c.items == ref.items and c.users == ref.users and c.is_randomized
        for f in ("item_a", "item_b", "outcome", "user", "epsilon"):
            np.testing.assert_array_equal(getattr(c, f), getattr(ref, f))


def test_streamed_csv_reads_like_the_csv_module(tmp_path):
    from privrank.data.io import ComparisonFile

    text = "\ufeffUser , item_a,item_b , result\n1, A ,B,1\n\n2,B , C,-1.0\n3,A,C, 0\n"
    ref = pr.read_comparisons(write(tmp_path, text))
    (batch,) = ComparisonFile(tmp_path / "c.csv").batches()
    assert sorted(batch.labels()) == list(ref.items)
    a, b = batch.item_indices(ref.items)
    np.testing.assert_array_equal(a, ref.item_a)
    np.testing.assert_array_equal(b, ref.item_b)
    np.testing.assert_array_equal(batch.outcome, ref.outcome)


@pytest.mark.parametrize("read", [
    pr.read_comparisons, read_rankings,
    lambda p: __import__("privrank.engines", fromlist=["x"]).sufficient_statistics(p, "comparisons", engine="stream")])
def test_a_csv_with_two_byte_order_marks_is_refused_not_a_crash(tmp_path, read):
    # Arrow drops one byte order mark from the records and, reading the header line alone, a second one
    # from the header: the names differed and the read failed with an ArrowKeyError
    path = tmp_path / "c.csv"
    path.write_bytes("\ufeff\ufeffuser,item_a,item_b,outcome\nu1,A,B,1\nu2,B,C,-1\n".encode("utf-8"))
    with pytest.raises(InputError, match="more than one byte order mark"):
        read(path)


@pytest.mark.parametrize("text,match", [  # the same line numbers as the in-memory reader
    ("item_a,item_b,outcome\nA,B,1\nA,C,2\n", "line 3: outcome must be 1, -1 or 0"),
    ("item_a,item_b,outcome\nA,B,1\n\nA,C,yes\n", "line 4: outcome must be a number"),
    ("item_a,item_b,outcome\nA, ,1\n", "line 2: empty or NaN item"),
    ("item_a,item_b,outcome\nB,A,1\n  \nA,A,1\n", "line 4: a comparison of an item with itself"),
    ("item_a,item_b,outcome\nA,B,1\nA,B,1,7\n", "line 3: expected 3 fields, found 4"),
    ("item_a,item_b,outcome,epsilon\nA,B,1,-1\n", "line 2: epsilon must be finite and > 0"),
    ("item_a,item_b,outcome,epsilon\nA,B,0,1\n", "not a tie"),
    ("user,item_a,outcome\n1,A,1\n", "need a header row"),
])
def test_streamed_files_give_clear_errors(tmp_path, text, match):
    pytest.importorskip("pyarrow")
    from privrank.engines import sufficient_statistics

    with pytest.raises(InputError, match=match):
        sufficient_statistics(write(tmp_path, text), engine="stream")


def test_streamed_errors_do_not_echo_answers(tmp_path):
    pytest.importorskip("pyarrow")
    from privrank.engines import sufficient_statistics

    for text in ("user,item_a,item_b,outcome\nalice,SecretParty,OtherParty,5\n",
                 "user,item_a,item_b,outcome\nalice,SecretParty,OtherParty,1,extra\n"):
        with pytest.raises(InputError) as info:
            sufficient_statistics(write(tmp_path, text), engine="stream")
        assert "alice" not in str(info.value) and "SecretParty" not in str(info.value)


def test_parquet_nulls_are_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    pq.write_table(pa.table({"item_a": ["A", None], "item_b": ["B", "C"], "outcome": [1, 1]}), tmp_path / "n.parquet")
    with pytest.raises(InputError, match="record 2: empty item"):
        pr.read_comparisons(tmp_path / "n.parquet")


# ------------------------------------------------------------------ issue 16: inputs that misled or leaked

def test_a_file_without_header_is_refused_without_echoing_its_first_record(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("alice@example.com,A,B,1\nbob@example.com,B,C,1\n")
    with pytest.raises(InputError, match="header row") as err:
        read_comparisons(p)
    assert "alice" not in str(err.value) and "example.com" not in str(err.value)


def test_repeated_columns_are_refused_not_silently_picked(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("user,item_a,item_b,outcome,outcome\n1,A,B,1,-1\n")
    with pytest.raises(InputError, match="more than once"):
        read_comparisons(p)
    q = tmp_path / "u.csv"
    q.write_text("user_id,item_a,item_b,outcome\nu1,A,B,1\nu2,B,C,1\n")
    assert read_comparisons(q).n_users == 2  # user_id is a user column, not ignored


def test_columnar_values_that_would_be_misread_are_refused(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    cases = {
        "bool": ({"item_a": ["A", "B"], "item_b": ["B", "C"], "outcome": [True, False]}, "true/false"),
        "nan_label": ({"item_a": ["A", "nan"], "item_b": ["B", "C"], "outcome": [1, 1]}, "NaN item"),
        "nan_float": ({"item_a": [1.0, float("nan")], "item_b": [2.0, 3.0], "outcome": [1, 1]}, "NaN item"),
        "list": ({"item_a": [["A"], ["B"]], "item_b": ["B", "C"], "outcome": [1, 1]}, "text or numbers"),
    }
    for name, (cols, message) in cases.items():
        path = tmp_path / f"{name}.parquet"
        pq.write_table(pa.table(cols), path)
        for engine in ("local", "stream"):  # the engines agree
            with pytest.raises(InputError, match=message):
                pr.sufficient_statistics(str(path), engine=engine)


def test_paths_that_are_not_files_say_what_they_are(tmp_path):
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(InputError, match="is a directory"):
        read_comparisons(tmp_path / "d.csv")
    os.mkfifo(tmp_path / "f.csv")
    with pytest.raises(InputError, match="not a regular file"):
        read_comparisons(tmp_path / "f.csv")


def test_rankings_whose_size_cannot_be_right_are_refused(tmp_path):
    big = tmp_path / "big.soc"
    big.write_text("# NUMBER ALTERNATIVES: 50000000\n1: 1,2\n")
    start = time.monotonic()
    with pytest.raises(InputError, match="more than 1,000,000 items"):
        read_rankings(big)
    assert time.monotonic() - start < 5
    named = tmp_path / "named.soc"
    named.write_text("# NUMBER ALTERNATIVES: 900000\n# ALTERNATIVE NAME 1: a\n# ALTERNATIVE NAME 2: b\n1: 1,2\n")
    with pytest.raises(InputError, match="declares more alternatives than it names"):
        read_rankings(named)
    header = "# NUMBER ALTERNATIVES: 2\n# ALTERNATIVE NAME 1: a\n# ALTERNATIVE NAME 2: b\n"
    for lines, message in ((["99999999999999999999: 1,2"], "2\\^53"),
                           (["9007199254740000: 1,2", "9007199254740000: 2,1"], "2\\^53 voters")):
        path = tmp_path / "counts.soc"
        path.write_text(header + "\n".join(lines) + "\n")
        with pytest.raises(InputError, match=message):
            read_rankings(path)
    headerless = tmp_path / "r.csv"
    headerless.write_text("1,2,3\n2,1,3\n3,1,2\n")
    with pytest.raises(InputError, match="not a header"):
        read_rankings(headerless)


@pytest.mark.parametrize("ballot, message", [("1,2,4", "outside 1..3"), ("1,2,2", "ranked twice")])
def test_a_bad_ballot_is_refused_by_every_reader_of_the_file(tmp_path, ballot, message):
    # the ledger fingerprints the ballots before the release reads them: both must refuse, neither crash
    from privrank.data.ranking_files import read_ballots
    from privrank.ledger import fingerprint

    path = tmp_path / "a.soc"
    path.write_text("# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: A\n# ALTERNATIVE NAME 2: B\n"
                    f"# ALTERNATIVE NAME 3: C\n1: 1,2,3\n1: {ballot}\n")
    for read in (read_ballots, read_rankings, fingerprint):
        with pytest.raises(InputError, match=f"line 6: an item .*{message.split()[-1]}"):
            read(path)


def test_gzipped_csv_reads_as_the_plain_file_on_every_engine(tmp_path):
    import gzip

    text = b"user,item_a,item_b,outcome\n1,A,B,1\n2,B,C,-1\n\n3,A,C,0\n"
    (tmp_path / "c.csv").write_bytes(text)
    (tmp_path / "c.csv.gz").write_bytes(gzip.compress(text))
    plain = pr.read_comparisons(tmp_path / "c.csv")
    zipped = pr.read_comparisons(tmp_path / "c.csv.gz")
    assert zipped.items == plain.items and zipped.users == plain.users
    np.testing.assert_array_equal(zipped.outcome, plain.outcome)
    for engine in ("local", "stream"):
        a = pr.sufficient_statistics(str(tmp_path / "c.csv"), engine=engine)
        b = pr.sufficient_statistics(str(tmp_path / "c.csv.gz"), engine=engine)
        assert a.items == b.items and np.array_equal(a.n, b.n) and np.array_equal(a.wins2, b.wins2)
    (tmp_path / "bad.csv.gz").write_bytes(gzip.compress(b"item_a,item_b,outcome\nA,B,1\nA,B,1,2\n"))
    with pytest.raises(InputError, match="line 3: expected 3 fields"):
        pr.read_comparisons(tmp_path / "bad.csv.gz")


def test_awkward_columns_and_encodings_are_clear_errors_on_every_engine(tmp_path):
    # regression (issue 16): duplicate or struct Parquet columns, non-UTF-8 and gzip'd CSV on the
    # stream engine ended in tracebacks
    import gzip

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    dup = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array(["A", "B"]), pa.array(["B", "C"]), pa.array([1, 1]),
                                         pa.array([-1, 1])], names=["item_a", "item_b", "outcome", "outcome"]), dup)
    struct = tmp_path / "struct.parquet"
    pq.write_table(pa.table({"item_a": [{"x": 1}, {"x": 2}], "item_b": ["B", "C"], "outcome": [1, 1]}), struct)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"item_a,item_b,outcome\n\xe9A,B,1\nB,C,1\n")
    damaged = tmp_path / "c.csv.gz"
    damaged.write_bytes(gzip.compress(b"item_a,item_b,outcome\nA,B,1\nB,C,1\n" * 1000)[:-200])
    for path in (dup, struct, latin, damaged):
        for engine in ("local", "stream"):
            with pytest.raises(InputError) as err:
                pr.sufficient_statistics(str(path), engine=engine)
            assert "\xe9A" not in str(err.value)


def test_tab_separated_files_read_as_csv(tmp_path):
    (tmp_path / "c.csv").write_text('user,item_a,item_b,outcome\n1,"A, Inc.",B,1\n2,B,C,-1\n')
    (tmp_path / "c.tsv").write_text("user\titem_a\titem_b\toutcome\n1\tA, Inc.\tB\t1\n2\tB\tC\t-1\n")
    a, b = pr.read_comparisons(tmp_path / "c.csv"), pr.read_comparisons(tmp_path / "c.tsv")
    assert a.items == b.items == ("A, Inc.", "B", "C")
    np.testing.assert_array_equal(a.outcome, b.outcome)
    s = pr.sufficient_statistics(str(tmp_path / "c.tsv"), engine="stream")
    assert s.items == a.items and s.n.sum() == 2
    (tmp_path / "r.tsv").write_text("rank1\trank2\trank3\nx\ty\tz\ny\tx\tz\n")
    assert pr.read_rankings(tmp_path / "r.tsv").n_voters == 2


def test_a_null_entry_of_an_arrow_dictionary_is_a_missing_label_on_every_engine(tmp_path):
    pa = pytest.importorskip("pyarrow")
    labels = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, 0, 1], pa.int32()), pa.array(["a", "b", None]))
    table = pa.table({"item_a": labels, "item_b": ["b", "c", "a", "c", "c"], "outcome": [1, -1, 1, 0, 1]})
    path = tmp_path / "votes.arrow"
    with pa.ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    for read in (read_comparisons, lambda p: pr.sufficient_statistics(p, engine="stream")):
        with pytest.raises(InputError, match="record 3: empty item"):
            read(str(path))
    with pytest.raises(InputError, match="record 3: empty item"):
        read_comparisons(table)
    ratings = pa.table({"user": [1, 1, 2, 2, 2], "item": labels, "rating": [1.0, 2.0, 3.0, 4.0, 5.0]})
    with pytest.raises(InputError, match="record 3: empty item"):
        pr.comparisons_from_ratings(ratings)


def test_the_arena_judge_column_is_the_user_column(tmp_path):
    path = write(tmp_path, "model_a,model_b,winner,judge\nA,B,model_a,j1\nB,C,tie,j2\nA,C,model_b,j1\n")
    comps = read_comparisons(path)
    assert comps.users == ("j1", "j2") and comps.user.tolist() == [0, 1, 0]


def test_a_header_of_no_layout_is_refused_listing_the_accepted_column_names(tmp_path):
    with pytest.raises(InputError) as error:
        read_comparisons(write(tmp_path, "rater,first,second,verdict\nr1,A,B,1\n"))
    message = str(error.value)
    for name in ("item_a,item_b,outcome", "winner,loser", "model_a,model_b,winner", "user,item,rating", "judge",
                 "respondent", "worker_id"):
        assert name in message
    assert "r1" not in message


def test_rankings_without_ballot_columns_are_refused_listing_the_accepted_column_names(tmp_path):
    path = write(tmp_path, "judge,count\nj1,2\n", "ballots.csv")
    for read in (read_rankings, lambda p: pr.sufficient_statistics(p, "rankings", engine="stream")):
        with pytest.raises(InputError, match="rank1, rank2") as error:
            read(path)
        assert "judge" in str(error.value) and "j1" not in str(error.value)


def test_arena_parquet_of_dictionary_columns_reads_as_its_plain_text(tmp_path):
    """Dictionaries that differ between row groups, repeat an entry or hold unused entries change nothing:
    item labels, winners (words, or an item's label that matches first) and judges read as from CSV."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [("A", "tie", "tie", "j2"), ("tie", "B", "tie", "j10"), ("B", "C", "C", "j1"), ("A", "C", "model_b", "j2"),
            ("C", "A", "model_a", "j10"), ("B", "A", "tie (bothbad)", "j1"), ("C", "B", "B", "j3")]
    path = tmp_path / "arena.parquet"
    names = ("model_a", "model_b", "winner", "judge")
    with pq.ParquetWriter(path, pa.schema([(n, pa.dictionary(pa.int32(), pa.string())) for n in names])) as writer:
        for part in (rows[:3], rows[3:]):
            columns = {}
            for k, name in enumerate(names):
                values = [r[k] for r in part]
                dictionary = ["unused", *dict.fromkeys(values), values[0]]  # an unused and a repeated entry
                codes = [dictionary.index(v) for v in values]
                codes[-1] = len(dictionary) - 1 if values[-1] == values[0] else codes[-1]
                columns[name] = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int32()), dictionary)
            writer.write_table(pa.table(columns))
    csv = write(tmp_path, "model_a,model_b,winner,judge\n" + "".join(",".join(r) + "\n" for r in rows))
    want, got = read_comparisons(csv), read_comparisons(path)
    assert got.items == want.items == ("A", "B", "C", "tie") and got.users == want.users == ("j1", "j10", "j2", "j3")
    for field in ("item_a", "item_b", "outcome", "user"):
        np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    np.testing.assert_array_equal(got.outcome, [-1, 1, -1, -1, 1, 0, -1])


@pytest.mark.parametrize("header, row, both", [
    ("item_a,item_b,outcome,winner,loser", "a,b,1,b,a", ("winner,loser", "item_a,item_b,outcome")),
    ("model_a,model_b,winner,loser", "a,b,model_a,b", ("winner,loser", "model_a,model_b,winner")),
])
def test_a_file_with_the_columns_of_two_layouts_is_refused_naming_both(tmp_path, header, row, both):
    """Read as one layout, the file's other columns were ignored; where they disagree the ranking came
    out reversed."""
    path = tmp_path / "two.csv"
    path.write_text(f"{header}\n{row}\n{row}\n")
    for read in (pr.read_comparisons, lambda p: pr.read_comparisons(pyarrow.csv.read_csv(p))):
        with pytest.raises(InputError, match="two layouts") as caught:
            read(path)
        assert all(name in str(caught.value) for name in both) and "b,a" not in str(caught.value)


COUNTED = "item_a,item_b,outcome,{column}\na,b,1,100\nb,c,1,50\na,c,-1,70\n"


def expanded(text: str) -> str:
    """A counted CSV text (the count last) as the same comparisons, one per row."""
    header, *rows = text.strip().split("\n")
    return "\n".join([header.rsplit(",", 1)[0]] + [row.rsplit(",", 1)[0] for row in rows
                                                    for _ in range(int(row.rsplit(",", 1)[1]))]) + "\n"


@pytest.mark.parametrize("column", ["count", "Weight", "weights", "multiplicity"])
def test_a_multiplicity_column_is_read_as_that_many_comparisons(tmp_path, column):
    """Rows with counts 100, 50 and 70 were read as 3 comparisons (then refused): they are 220."""
    text = COUNTED.format(column=column)
    counted, rows = read_comparisons(write(tmp_path, text)), read_comparisons(write(tmp_path, expanded(text), "e.csv"))
    assert counted.n_records == 220 and np.bincount(counted.outcome + 1).tolist() == [70, 0, 150]
    assert same_data(counted, rows)
    table = pyarrow.csv.read_csv(tmp_path / "c.csv")  # integers in memory, and floats holding whole numbers
    floats = table.set_column(3, column, table.column(3).cast("float64"))
    for source in (table, table.to_pandas(), floats, floats.to_pandas()):
        assert same_data(read_comparisons(source), rows)


def test_a_counted_row_is_its_users_comparisons_and_rows_of_count_zero_are_dropped(tmp_path):
    text = "user,item_a,item_b,outcome,count\nu1,a,b,1,5\nu2,a,b,-1,2\nu1,b,c,0,1\nu3,c,z,1,0\n"
    counted = read_comparisons(write(tmp_path, text))
    assert same_data(counted, read_comparisons(write(tmp_path, expanded(text), "e.csv")))
    assert counted.items == ("a", "b", "c") and counted.users == ("u1", "u2")  # z and u3: only a row of count 0
    assert np.bincount(counted.user).tolist() == [6, 2]  # u1 made six comparisons: a per-user bound counts six


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_count_column_of_a_parquet_or_arrow_file_or_a_named_table_is_read(tmp_path, suffix):
    import pyarrow.feather
    import pyarrow.parquet

    table = pyarrow.table({"model_a": ["a", "b", "a"], "model_b": ["b", "c", "c"],
                           "winner": ["model_a", "tie", "model_b"], "weight": [3, 0, 2]})
    path = tmp_path / f"c{suffix}"
    (pyarrow.parquet.write_table if suffix == ".parquet" else pyarrow.feather.write_feather)(table, path)
    repeat = table.column("weight").to_numpy()
    reference = read_comparisons(pyarrow.table({name: np.repeat(table.column(name).to_numpy(), repeat)
                                                for name in table.column_names[:3]}))
    assert reference.n_records == 5
    assert same_data(read_comparisons(path), reference)
    named = table.rename_columns(["x", "y", "who", "weight"])  # keywords name the others; the count keeps its name
    assert same_data(read_comparisons(named, left="x", right="y", winner="who"), reference)


@pytest.mark.parametrize("value", ["2.5", "-1", "nan", "", "lots", "3.0", str(2 ** 53 + 1)])
def test_a_bad_count_is_refused_naming_its_line_never_its_contents(tmp_path, value):
    """A CSV count is written as an integer ("3.0": a float column written out, refused as the
    rankings readers refuse it); a float column of a table may hold whole numbers."""
    path = write(tmp_path, f"item_a,item_b,outcome,count\nsecret1,secret2,1,4\nsecret3,secret4,1,{value}\n")
    for read in (read_comparisons, lambda p: pr.sufficient_statistics(p, engine="stream")):
        with pytest.raises(InputError, match="line 3: a count must be a whole number") as caught:
            read(path)
        assert "secret" not in str(caught.value) and (len(value) < 3 or value not in str(caught.value))


@pytest.mark.parametrize("values", [[1.0, 2.5], [1.0, -3.0], [1.0, float("nan")], [1.0, None], [1.0, 1e300],
                                    ["1", "2"], [True, False]])
def test_a_bad_count_in_a_table_is_refused_by_record(values):
    table = pyarrow.table({"item_a": ["a", "b"], "item_b": ["b", "c"], "outcome": [1, 1], "count": values})
    with pytest.raises(InputError, match="record [12]: a count must be a whole number") if values != ["1", "2"] \
            else contextlib.nullcontext():
        read_comparisons(table)


def test_two_multiplicity_columns_are_refused_naming_both(tmp_path):
    with pytest.raises(InputError, match="'count' and 'weight' both say how many comparisons") as caught:
        read_comparisons(write(tmp_path, "item_a,item_b,outcome,count,weight\na,b,1,2,3\n"))
    assert "a,b" not in str(caught.value)
    with pytest.raises(InputError, match="'count' appears more than once"):
        read_comparisons(write(tmp_path, "item_a,item_b,outcome,count,count\na,b,1,2,3\n"))


def test_counts_standing_for_too_many_comparisons_are_refused_before_they_are_built(tmp_path, monkeypatch):
    """A few bytes of counts declared 2^52 comparisons: np.repeat would have asked for petabytes."""
    path = write(tmp_path, f"item_a,item_b,outcome,count\na,b,1,{2 ** 52}\nb,c,1,3\n")
    for read in (read_comparisons, lambda p: pr.sufficient_statistics(p, engine="stream", epsilon=1.0)):
        with pytest.raises(InputError, match="PRIVRANK_MAX_COUNTED_RECORDS") as caught:
            read(path)
        assert str(2 ** 52) not in str(caught.value)
    monkeypatch.setenv("PRIVRANK_MAX_COUNTED_RECORDS", "1e300")  # raised past what is counted exactly
    with pytest.raises(InputError, match=r"more than 2\^53"):
        read_comparisons(write(tmp_path, f"item_a,item_b,outcome,count\na,b,1,{2 ** 53}\nb,c,1,3\n"))
    monkeypatch.setenv("PRIVRANK_MAX_MEMORY_MB", "1")  # in memory: refused by the memory it would take
    small = write(tmp_path, "item_a,item_b,outcome,count\na,b,1,100000\nb,c,1,3\n", "small.csv")
    with pytest.raises(InputError, match="PRIVRANK_MAX_MEMORY_MB.*engine stream"):
        read_comparisons(small)
    assert pr.sufficient_statistics(small, engine="stream").n_records == 100_003  # in bounded memory


def test_counted_reports_are_the_reports_repeated(tmp_path):
    """A count in a file of randomized reports says how many respondents sent that report: the
    same as repeating the row. With a user column, a count above 1 is one respondent reporting a
    pair more than once, refused as the repeated rows are."""
    text = "item_a,item_b,outcome,epsilon,count\na,b,1,1.0,30\na,b,-1,1.0,10\nb,c,1,2.0,7\nb,c,-1,2.0,2\n"
    counted = read_comparisons(write(tmp_path, text))
    assert counted.is_randomized and same_data(counted, read_comparisons(write(tmp_path, expanded(text), "e.csv")))
    fits = [pr.fit_btl(pr.release_from_reports(pr.sufficient_statistics(tmp_path / name, engine=engine),
                                               epsilons=[1.0, 2.0])).scores
            for name in ("c.csv", "e.csv") for engine in ("local", "stream")]
    assert all(np.array_equal(fit, fits[0]) for fit in fits)
    errors = []
    for body in ("user,item_a,item_b,outcome,epsilon,count\nu1,a,b,1,1.0,2\nu2,b,c,1,1.0,1\n",
                 "user,item_a,item_b,outcome,epsilon\nu1,a,b,1,1.0\nu1,a,b,1,1.0\nu2,b,c,1,1.0\n"):
        with pytest.raises(InputError) as caught:
            read_comparisons(write(tmp_path, body, "u.csv"))
        errors.append(str(caught.value))
    assert errors[0] == errors[1] and "u1" not in errors[0]


def test_ratings_refuse_a_column_named_by_anything_but_text_and_a_bad_seed():
    pa = pytest.importorskip("pyarrow")
    ratings = pa.table({"user": [1, 1, 2, 2], "item": ["a", "b", "a", "c"], "rating": [5, 3, 2, 4]})
    with pytest.raises(InputError, match="user= names the user column: give its name as text"):
        pr.comparisons_from_ratings(ratings, user=np.array(["user"]))
    with pytest.raises(InputError, match="rng must be None, an int seed or a numpy.random.Generator"):
        pr.comparisons_from_ratings(ratings, rng=0.5)


@pytest.mark.parametrize("suffix", [".soc", ".soi", ".toc"])
def test_a_preflib_file_read_as_comparisons_says_it_holds_rankings(tmp_path, suffix):
    # it was read as a CSV of one column: "need a header row naming the columns of one layout ..."
    path = tmp_path / f"ballots{suffix}"
    path.write_text("# NUMBER ALTERNATIVES: 2\n# NUMBER VOTERS: 2\n# ALTERNATIVE NAME 1: a\n# ALTERNATIVE NAME 2: b\n"
                    "1: 1,2\n1: 2,1\n")
    from privrank.engines import sufficient_statistics
    for read in (pr.read_comparisons, lambda p: sufficient_statistics(p, "comparisons", engine="stream")):
        with pytest.raises(InputError, match="PrefLib file of rankings.*read_rankings"):
            read(path)
    read_rankings(path)  # what reads it


def test_a_truncated_gzip_item_list_is_refused_not_an_eoferror(tmp_path):
    import gzip

    from privrank.data.io import read_item_list
    path = tmp_path / "items.txt.gz"
    path.write_bytes(gzip.compress(b"apple\nbanana\ncherry\n" * 40)[:30])
    with pytest.raises(InputError, match="not a readable gzip file"):
        read_item_list(path)


@pytest.mark.parametrize("name", ["x" * 300 + ".csv", "d" * 200 + "/" + "e" * 4000 + ".csv"])
def test_an_input_name_too_long_is_refused_not_an_oserror(tmp_path, name):
    # Path.exists() raised ENAMETOOLONG: every command printed a traceback
    for read in (pr.read_comparisons, read_rankings):
        with pytest.raises(InputError, match="cannot read .*File name too long"):
            read(tmp_path / name)
