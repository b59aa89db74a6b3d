"""CSV reading and writing of comparisons."""
import numpy as np
import pytest

import privrank as pr
from privrank.data.io import comparisons_to_csv, write_text_atomic
from privrank.errors import InputError


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
    ("user,item_a,outcome\n1,A,1\n", "need columns"),
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
