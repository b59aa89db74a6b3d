"""Rankings container, its pairwise statistic, and the PrefLib / CSV ranking readers."""
import numpy as np
import pytest

import privrank as pr
from privrank.data import datasets
from privrank.data.io import read_rankings
from privrank.data.rankings import Rankings
from privrank.errors import InputError

# Alabi et al. Table 1: four users ranking five offices (rows and columns M, S, N, C, A)
TABLE1 = [list("MSNCA"), list("AMNCS"), list("NCSMA"), list("MSCNA")]
TABLE1_W = [[0, .75, .75, .75, .75], [.25, 0, .5, .5, .75], [.25, .5, 0, .75, .75],
            [.25, .5, .25, 0, .75], [.25, .25, .25, .25, 0]]


def table1():
    return Rankings.from_labels(TABLE1, items=list("MSNCA"))


def test_table1_pairwise_matrix_matches_the_paper_fixture():
    R = table1()
    np.testing.assert_allclose(R.pairwise_matrix(), TABLE1_W)
    assert R.n_voters == 4 and R.n_items == 5 and "M" not in repr(R)


def test_pairwise_matrix_properties_and_query_access(rng):
    orders = np.array([rng.permutation(7) for _ in range(40)])
    R = Rankings.from_orders(orders, weights=rng.integers(1, 4, 40))
    W = R.pairwise_matrix()
    off = ~np.eye(7, dtype=bool)
    np.testing.assert_allclose((W + W.T)[off], 1.0)
    assert np.all(np.diag(W) == 0)
    a, b = np.nonzero(off)
    np.testing.assert_allclose(R.preference(a, b), W[a, b])
    # weights are multiplicities: the expanded profile gives the same statistic
    E = Rankings.from_orders(R.expanded())
    assert E.n_voters == R.n_voters
    np.testing.assert_allclose(E.pairwise_matrix(), W)
    assert np.all(np.take_along_axis(R.positions, R.orders, axis=1) == np.arange(7))


@pytest.mark.parametrize("orders,weights,match", [
    ([[0, 1, 1]], None, "not a permutation"),
    ([[0, 1, 3]], None, "not a permutation"),
    ([[0.5, 1, 2]], None, "integer"),
    ([[0, 1, 2]], [0], "sum to zero"),
    ([[0, 1, 2]], [1.5], "non-negative integers"),
    ([[0, 1, 2]], [-1], "non-negative integers"),
    (np.zeros((0, 3), dtype=int), None, "n, m >= 1"),
])
def test_invalid_rankings_are_refused(orders, weights, match):
    with pytest.raises(InputError, match=match):
        Rankings.from_orders(orders, weights=weights)


def test_zero_multiplicities_are_left_out():
    from privrank.data.ranking_files import as_rankings
    from privrank.data.rankings import position_counts

    R = as_rankings(np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2]]), weights=[2, 0, 1])
    assert R.n_voters == 3 and R.orders.shape == (2, 3)
    assert as_rankings(R) is R
    np.testing.assert_array_equal(position_counts(R.positions, R.weights),
                                  [[2, 1, 0], [1, 2, 0], [0, 0, 3]])
    for bad in ([0, 0, 0], [1, -1, 1], [1, 0.5, 1]):
        with pytest.raises(InputError):
            as_rankings(np.array([[0, 1, 2], [2, 1, 0], [1, 0, 2]]), weights=bad)


def test_from_labels_validation():
    with pytest.raises(InputError, match="entries"):
        Rankings.from_labels([["a", "b"], ["a"]])
    with pytest.raises(InputError, match="outside"):
        Rankings.from_labels([["a", "b"], ["a", "c"]])


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


PREFLIB_HEADER = ("# FILE NAME: x\n# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: Red\n"
                  "# ALTERNATIVE NAME 2: Green\n# ALTERNATIVE NAME 3: Blue\n")


def test_preflib_soc_with_counts(tmp_path):
    p = _write(tmp_path, "a.soc", PREFLIB_HEADER + "3: 1,2,3\n2: 3,1,2\n0: 2,1,3\n")
    R = read_rankings(p)
    assert R.items == ("Red", "Green", "Blue") and R.n_voters == 5
    np.testing.assert_array_equal(R.orders, [[0, 1, 2], [2, 0, 1]])
    np.testing.assert_array_equal(R.weights, [3, 2])


def test_partial_policies_for_soi_and_toc(tmp_path):
    p = _write(tmp_path, "b.soi", PREFLIB_HEADER + "1: 1,2,3\n4000: 2\n")
    with pytest.raises(InputError, match="some ballots") as err:
        read_rankings(p)
    assert "partial" in str(err.value) and "4000" not in str(err.value)  # no exact count of the data
    dropped = read_rankings(p, partial="drop")
    assert dropped.n_voters == 1 and dropped.selected  # the size depends on the data: private methods refuse it
    with pytest.raises(InputError, match="partial='randomize'"):
        pr.private_kemeny(dropped, epsilon=1.0, rng=0)
    R = read_rankings(p, partial="randomize", rng=0)
    assert R.n_voters == 4001
    W = R.pairwise_matrix()
    # Green first for the 4000 completed ballots; Red vs Blue a fair coin for them
    assert W[1, 0] == pytest.approx(4000 / 4001) and W[1, 2] == 1.0
    se = 0.5 / np.sqrt(4000)  # SE of a fair-coin fraction over 4000 voters
    assert abs(W[0, 2] * 4001 - 1 - 2000) / 4000 <= 4 * se
    t = _write(tmp_path, "c.toc", PREFLIB_HEADER + "4000: {1,2},3\n")
    R = read_rankings(t, partial="randomize", rng=1)
    W = R.pairwise_matrix()
    assert W[0, 2] == 1.0 and W[1, 2] == 1.0 and abs(W[0, 1] - 0.5) <= 4 * se


@pytest.mark.parametrize("body,match", [
    ("1: 1,2,2\n", "line 6: an item is ranked twice"),
    ("1: 1,2,4\n", "line 6: an item number is outside"),
    ("x: 1,2,3\n", "line 6: counts and items"),
    ("1 1,2,3\n", "line 6"),
])
def test_preflib_errors_name_the_line_without_echoing_it(tmp_path, body, match):
    p = _write(tmp_path, "d.soc", PREFLIB_HEADER + body)
    with pytest.raises(InputError, match=match) as err:
        read_rankings(p)
    assert body.strip() not in str(err.value)


@pytest.mark.parametrize("header,body,match", [
    ("# NUMBER VOTERS: 100\n", "1: 1,2,3\n1: 2,1,3\n", "do not add up to the header's '# NUMBER VOTERS'"),
    ("# NUMBER UNIQUE ORDERS: 5\n", "1: 1,2,3\n1: 2,1,3\n", "'# NUMBER UNIQUE ORDERS'"),
    ("# ALTERNATIVE NAME 4: Black\n", "1: 1,2,3\n", "outside 1..3"),
    ("# ALTERNATIVE NAME 1: Pink\n", "1: 1,2,3\n", "alternative 1 is named twice"),
])
def test_preflib_header_that_disagrees_with_the_body_is_refused(tmp_path, header, body, match):
    p = _write(tmp_path, "h.soc", header + PREFLIB_HEADER + body)
    with pytest.raises(InputError, match=match) as err:
        read_rankings(p)
    assert "100" not in str(err.value)  # no count read from the file


def test_preflib_header_counts_that_agree_are_read(tmp_path):
    p = _write(tmp_path, "ok.toc", "# NUMBER VOTERS: 5\n# NUMBER UNIQUE ORDERS: 3\n" + PREFLIB_HEADER
               + "3: 1,2,3\n2: 3,{1,2}\n0: 2,1,3\n")
    assert read_rankings(p, partial="randomize", rng=0).n_voters == 5


@pytest.mark.parametrize("order", ["3,{1,2", "{}", "3,{},1,2", "1,,2,3", "1,2}", "{1,{2}},3", "1 2 3"])
def test_preflib_malformed_order_is_refused_by_line(tmp_path, order):
    p = _write(tmp_path, "m.toc", PREFLIB_HEADER + f"1: 1,2,3\n7: {order}\n")
    with pytest.raises(InputError, match="line 7: not an order") as err:
        read_rankings(p, partial="randomize", rng=0)
    assert order not in str(err.value)


def test_preflib_repeated_alternative_name_is_refused(tmp_path):
    p = _write(tmp_path, "n.soc", PREFLIB_HEADER.replace("Blue", "Red") + "1: 1,2,3\n")
    with pytest.raises(InputError, match="two alternatives have the same"):
        read_rankings(p)


def test_csv_order_and_rank_layouts(tmp_path):
    order = _write(tmp_path, "o.csv", "voter,rank1,rank2,rank3,count\n1,b,a,c,2\n2,c,b,a,1\n")
    R = read_rankings(order)
    assert R.items == ("a", "b", "c") and R.n_voters == 3
    np.testing.assert_array_equal(R.orders, [[1, 0, 2], [2, 1, 0]])
    ranks = _write(tmp_path, "r.csv", "judge,A,B,C\n1,2,1,3\n2,3,2,1\n")
    R = read_rankings(ranks)
    assert R.items == ("A", "B", "C")
    np.testing.assert_array_equal(R.orders, [[1, 0, 2], [2, 1, 0]])
    tied = _write(tmp_path, "t.csv", "A,B,C\n1,1,2\n")
    with pytest.raises(InputError, match="ties or unranked"):
        read_rankings(tied)
    assert read_rankings(tied, partial="randomize", rng=0).orders[0, 2] == 2
    with pytest.raises(InputError, match="line 2: ranks must be numbers"):
        read_rankings(_write(tmp_path, "x.csv", "A,B\nfirst,2\n"))
    with pytest.raises(InputError, match="unknown ranking file type"):
        read_rankings(_write(tmp_path, "x.txt", "A,B\n1,2\n"))


def _preflib(folder, name):
    root = datasets.data_dir()
    path = None if root is None else root / folder / name
    if path is None or not path.exists():
        pytest.skip(f"{folder} not available (../shared/data or PRIVRANK_DATA)")
    return path


def test_real_preflib_files_load():
    R = read_rankings(_preflib("preflib_small_complete", "00012-00000001.soc"))
    assert R.n_voters == 30 and R.n_items == 11 and R.items[0] == "Australia"
    with pytest.raises(InputError, match="ties or unranked"):
        read_rankings(_preflib("preflib_irish", "00001-00000002.soi"))


def test_dataset_loaders():
    _preflib("preflib_sushi", "00014-00000001.soc")
    R = datasets.load_sushi()
    assert R.n_voters == 5000 and R.n_items == 10
    _preflib("preflib_netflix", "00004-00000150.soc")
    R = datasets.load_netflix(150)
    assert R.n_items == 4 and R.n_voters >= 350
    with pytest.raises(InputError, match="1 to 200"):
        datasets.load_netflix(201)


def test_a_line_of_spaces_in_a_one_column_ranking_file_is_a_clear_error(tmp_path):
    """In a file of one column a line of spaces is a record (an empty ballot), not a blank line: the
    line numbers the reader gives count it (they ran out: an IndexError)."""
    path = tmp_path / "ballots.csv"
    path.write_text("x\n \n")
    with pytest.raises(InputError, match="no rankings"):
        pr.read_rankings(path)


def test_ballots_that_name_no_item_are_a_clear_error(tmp_path):
    """A voter column beside rank columns that are all empty: ballots of no item (a ValueError before)."""
    path = tmp_path / "ballots.csv"
    path.write_text("voter,rank1,rank2\nnan,,\n")
    for partial in ("error", "drop", "randomize"):
        with pytest.raises(InputError, match="names no item"):
            pr.read_rankings(path, partial=partial)


def test_from_labels_refuses_what_is_not_a_list_of_rankings_of_labels():
    with pytest.raises(InputError, match="rankings must be a list of rankings"):
        Rankings.from_labels(5)
    with pytest.raises(InputError, match="an item label is not hashable"):
        Rankings.from_labels([[["a"], ["b"]]])
    with pytest.raises(InputError, match="not valid Unicode text"):
        Rankings.from_labels([["a", "b"]], items=["\ud800", "a"])
