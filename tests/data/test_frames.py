"""DataFrames and Arrow tables in, the layouts people already have, ratings to comparisons, results out."""
import subprocess
import sys
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

import privrank as pr
from privrank.data.datasets import _shipped, data_dir
from privrank.data.ratings import comparisons_from_ratings
from privrank.errors import InputError

LLMFAO = _shipped("llmfao_crowd.csv")


class StreamOnly:
    """A table that speaks only the Arrow PyCapsule stream protocol (as polars and DuckDB do)."""

    def __init__(self, table):
        self._table = table

    def __arrow_c_stream__(self, requested_schema=None):
        return self._table.__arrow_c_stream__(requested_schema)


@pytest.fixture(scope="module")
def llmfao():
    """The shipped LLMFAO comparisons as an Arrow table (long layout) and as PairwiseComparisons."""
    import pyarrow.csv as pcsv

    table = pcsv.read_csv(LLMFAO, convert_options=pcsv.ConvertOptions(
        column_types={"worker": pa.string(), "item_a": pa.string(), "item_b": pa.string()}))
    return table, pr.read_comparisons(LLMFAO)


def _same(a, b):
    assert a.items == b.items and a.n_records == b.n_records
    np.testing.assert_array_equal(a.item_a, b.item_a)
    np.testing.assert_array_equal(a.item_b, b.item_b)
    np.testing.assert_array_equal(a.outcome, b.outcome)


def _winner_words(table, left="left", right="right"):
    out = table.column("outcome").to_numpy()
    return np.where(out == 1, left, np.where(out == -1, right, "tie"))


def test_tables_of_every_kind_read_as_the_file(llmfao):
    table, ref = llmfao
    pytest.importorskip("pandas")
    for source in (table, table.to_batches()[0] if table.num_rows == len(table.to_batches()[0]) else table,
                   StreamOnly(table), table.to_pandas()):
        _same(pr.read_comparisons(source), ref)


def test_a_capsule_table_needs_neither_pandas_nor_polars():
    """With pandas and polars unimportable (as where they are not installed), a table that speaks
    the stream protocol still reads: privrank needs only pyarrow for it."""
    code = ("import sys\n"
            "class Absent:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name.split('.')[0] in ('pandas', 'polars'): raise ImportError(name)\n"
            "sys.meta_path.insert(0, Absent())\n"
            "import pyarrow as pa, privrank as pr\n"
            "class T:\n"
            "    def __init__(s, t): s.t = t\n"
            "    def __arrow_c_stream__(s, r=None): return s.t.__arrow_c_stream__(r)\n"
            "t = pa.table({'item_a': ['a', 'b'], 'item_b': ['b', 'c'], 'outcome': [1, -1]})\n"
            "print(pr.read_comparisons(T(t)).n_records, pr.fit_btl(T(t)).ranking)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("2 [")


def test_evalica_and_arena_layouts_read_as_the_long_layout(llmfao):
    table, ref = llmfao
    a, b = table.column("item_a"), table.column("item_b")
    evalica = pa.table({"left": a, "right": b, "winner": _winner_words(table)})
    arena = pa.table({"model_a": a, "model_b": b,
                      "winner": _winner_words(table, "model_a", "model_b").astype(object)})
    out = table.column("outcome").to_numpy()
    names = np.where(out == 1, a.to_numpy(zero_copy_only=False), b.to_numpy(zero_copy_only=False)).astype(object)
    names[out == 0] = "tie (bothbad)"
    crowdkit = pa.table({"worker": table.column("worker"), "left": a, "right": b, "label": names})
    for source in (evalica, arena, crowdkit):
        _same(pr.read_comparisons(source), ref)
    assert pr.read_comparisons(crowdkit).users == ref.users


def test_a_winner_label_matches_its_item_before_a_word():
    t = pa.table({"left": ["right", "a"], "right": ["a", "left"], "winner": ["right", "left"]})
    c = pr.read_comparisons(t)
    np.testing.assert_array_equal(c.outcome, [1, -1])  # items named "right" and "left" won


def test_keywords_name_other_columns(llmfao):
    table, ref = llmfao
    renamed = pa.table({"judge": table.column("worker"), "x": table.column("item_a"), "y": table.column("item_b"),
                        "result": table.column("outcome"), "notes": table.column("worker")})
    _same(pr.read_comparisons(renamed, left="x", right="y", outcome="result", user="judge"), ref)
    words = pa.table({"p": table.column("item_a"), "q": table.column("item_b"), "who": _winner_words(table)})
    _same(pr.read_comparisons(words, left="p", right="q", winner="who"), ref)


@pytest.mark.parametrize("kwargs,match", [
    ({"left": "p"}, "name the columns with left= and right="),
    ({"left": "p", "right": "q", "winner": "w", "outcome": "w"}, "one of winner="),
    ({"left": "p", "right": "nope", "winner": "w"}, "no column 'nope'"),
    ({"left": "p", "right": "p", "winner": "w"}, "different columns"),
])
def test_bad_column_keywords_are_clear(kwargs, match):
    t = pa.table({"p": ["a"], "q": ["b"], "w": ["left"]})
    with pytest.raises(InputError, match=match):
        pr.read_comparisons(t, **kwargs)


def test_a_file_does_not_take_column_keywords():
    with pytest.raises(InputError, match="a table in memory"):
        pr.read_comparisons(LLMFAO, left="item_a")


def test_an_unknown_winner_is_named_by_line_never_echoed(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("left,right,winner\nSecretA,SecretB,left\nSecretA,SecretB,SecretC\n")
    with pytest.raises(InputError, match="line 3: the winner must be") as info:
        pr.read_comparisons(path)
    assert "Secret" not in str(info.value)
    with pytest.raises(InputError, match="record 2: the winner must be"):
        pr.read_comparisons(pa.table({"left": ["a", "a"], "right": ["b", "b"], "winner": ["b", "c"]}))


def test_a_mixed_type_dataframe_column_is_a_clear_error():
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"item_a": ["a", 3], "item_b": ["b", "c"], "outcome": [1, 1]})
    with pytest.raises(InputError, match="one type each"):
        pr.read_comparisons(df)


def test_every_entry_point_takes_a_dataframe(llmfao):
    pd = pytest.importorskip("pandas")
    table, ref = llmfao
    df = table.to_pandas()
    np.testing.assert_allclose(pr.fit_btl(df).scores, pr.fit_btl(ref).scores)
    a = pr.debiased_randomized_response(df, 1.0, rng=5)
    b = pr.debiased_randomized_response(ref, 1.0, rng=5)
    np.testing.assert_array_equal(a.counts.wins, b.counts.wins)
    with pytest.raises(InputError, match="public item list"):
        pr.noisy_copeland(df, 1.0)
    declared = pr.read_comparisons(df, items=ref.items)
    assert declared.items_declared and pr.noisy_copeland(declared, 1.0).guarantee.private
    orders = pd.DataFrame({"rank1": ["x", "y", "x"], "rank2": ["y", "x", "z"], "rank3": ["z", "z", "y"]})
    res = pr.private_kemeny(orders, epsilon=1.0, rng=2)
    assert set(res.ranking) == {"x", "y", "z"} and res.items == ("x", "y", "z")
    assert pr.read_rankings(orders).n_voters == 3


def test_ratings_give_at_most_the_cap_per_user_with_the_right_outcomes():
    users = np.repeat(np.arange(30), 12)
    items = np.tile(np.arange(12), 30)
    ratings = (items * 7 + users) % 5  # ties among them
    t = pa.table({"user": users, "item": items, "rating": ratings.astype(float)})
    c = comparisons_from_ratings(t, max_pairs=8, rng=1)
    assert c.n_records == 30 * 8 and np.bincount(c.user).max() == 8
    value = dict(zip(zip(users.tolist(), items.tolist()), ratings.tolist()))
    for u, a, b, o in zip(c.user, c.item_a, c.item_b, c.outcome):
        uid, ia, ib = c.users[u], c.items[a], c.items[b]
        assert o == np.sign(value[uid, ia] - value[uid, ib])
    few = comparisons_from_ratings(t, max_pairs=100, rng=1)
    assert few.n_records == 30 * 66  # every pair of a user with fewer pairs than the cap
    with pytest.raises(InputError, match="max_pairs"):
        comparisons_from_ratings(t, max_pairs=0)
    twice = pa.table({"user": [1, 1, 1], "item": [2, 2, 3], "rating": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match="rated the same item twice"):
        comparisons_from_ratings(twice)


def test_a_local_release_of_ratings_says_which_items_one_rated_is_not_hidden():
    # the pairs a user reports are the items they rated: randomized response flips answers, not pairs
    t = pa.table({"user": [1, 1, 2, 2, 3, 3], "item": ["A", "B", "A", "B", "A", "rare"],
                  "rating": [5.0, 3.0, 2.0, 4.0, 4.0, 1.0]})
    c = comparisons_from_ratings(t, rng=0)
    assert c.pairs_from_ratings
    with pytest.warns(pr.PrivacyWarning, match="which items each person rated"):
        g = pr.debiased_randomized_response(c, user_epsilon=1.0, rng=0).guarantee
    assert "which items each person rated" in g.describe()
    plain = pr.PairwiseComparisons.from_labels(["A", "A"], ["B", "rare"], [1, -1], user=[1, 2])
    assert "rated" not in pr.debiased_randomized_response(plain, 1.0, rng=0).guarantee.describe()


@pytest.mark.parametrize("r,k", [(6, 3), (40, 5)])  # listed pairs, and drawn pairs with repeats redrawn
def test_the_capped_pairs_are_uniform_among_a_users_pairs(r, k):
    t = pa.table({"user": np.zeros(r, int), "item": np.arange(r), "rating": np.arange(r, dtype=float)})
    gen = np.random.default_rng(7)
    counts = Counter()
    runs = 4000 if r == 6 else 3000
    for _ in range(runs):
        c = comparisons_from_ratings(t, max_pairs=k, rng=gen)
        assert c.n_records == k and len({(int(a), int(b)) for a, b in zip(c.item_a, c.item_b)}) == k
        counts.update((c.items[a], c.items[b]) for a, b in zip(c.item_a, c.item_b))
    total = r * (r - 1) // 2
    observed = np.array([counts[(i, j)] for i in range(r) for j in range(i + 1, r)])
    assert observed.sum() == runs * k
    assert stats.chisquare(observed).pvalue > 1e-3  # equal expectation runs * k / total for every pair
    biased = observed.copy()
    biased[: total // 2] = (biased[: total // 2] * 1.15).astype(int)  # the control a test must catch
    assert stats.chisquare(biased, biased.sum() / total * np.ones(total)).pvalue < 1e-3


def test_movielens_ratings_read_from_the_file_and_the_frame():
    root = data_dir()
    path = None if root is None else root / "movielens/ml-latest-small/ratings.csv"
    if path is None or not path.exists():
        pytest.skip("MovieLens ml-latest-small is not available (../shared/data or PRIVRANK_DATA)")
    pd = pytest.importorskip("pandas")
    c = comparisons_from_ratings(path, max_pairs=10, rng=3)
    assert len(c.users) == 610 and np.bincount(c.user).max() <= 10
    frame = pd.read_csv(path, dtype={"userId": str, "movieId": str})
    d = comparisons_from_ratings(frame, max_pairs=10, rng=3)
    assert d.items == c.items and d.n_records == c.n_records
    np.testing.assert_array_equal(d.outcome, c.outcome)


def test_results_show_short_reprs_html_and_frames(llmfao):
    pd = pytest.importorskip("pandas")
    table, ref = llmfao
    release = pr.debiased_randomized_response(ref, 1.0, rng=1)
    fit = pr.fit_btl(release)
    ci = pr.confidence_intervals(fit)
    rankings = pr.Rankings.from_orders(np.array([[0, 1, 2, 3], [1, 0, 2, 3]] * 50), items=list("wxyz"))
    agg = pr.private_kemeny(rankings, epsilon=1.0, rng=1)
    for result in (release, fit, ci, agg, pr.aggregate_intervals(agg, n_bootstrap=100, rng=1),
                   pr.dp_footrule(rankings, epsilon=1.0, rng=1).release,
                   pr.noisy_counts(np.arange(5000), epsilon=1.0, unit="one count", rng=1)):
        assert len(repr(result)) < 1000 and "factor of" in repr(result)
    big = pr.Rankings.from_orders(np.array([np.random.default_rng(k).permutation(60) for k in range(50)]))
    assert len(repr(pr.private_kemeny(big, epsilon=1.0, solver="local-search", certify_seconds=0.5, rng=1).release)) < 200
    for result in (fit, ci, agg):
        frame = result.to_pandas()
        assert isinstance(frame, pd.DataFrame) and len(frame) == len(result.items)
        assert list(frame["rank"]) == list(range(1, len(result.items) + 1))
        assert "local model" in frame.attrs["guarantee"] or "central model" in frame.attrs["guarantee"]
        assert "<table>" in result._repr_html_() and len(result._repr_html_()) < 10_000
    assert list(fit.to_pandas()["item"]) == fit.ranking
    assert {"score_lower", "score_upper", "rank_lower", "rank_upper"} <= set(ci.to_pandas().columns)
    assert list(agg.to_pandas()["item"]) == agg.ranking


def test_the_plain_guarantee_says_who_against_whom_and_how_strongly():
    g = pr.debiased_randomized_response(pr.read_comparisons(LLMFAO), 1.0, max_answers=5, rng=1).guarantee
    text = g.plain()
    assert "any one comparison" in text and "2.72 (e^1)" in text and "148 (e^5)" in text
    assert "data holder included" in text and "SEEDED RUN" in text
    central = pr.Guarantee(epsilon=0.5, delta=1e-6, model="central", unit=pr.guarantees.UNIT_RANKING,
                           mechanism="m").plain()
    assert "one person's ranking" in central and "1e-06" in central and "trusted" in central
    assert pr.Guarantee.non_private().plain().startswith("Not private")


def test_the_cli_says_which_layout_it_read(cli, tmp_path, llmfao):
    table, _ = llmfao
    path = tmp_path / "arena.csv"
    import pyarrow.csv as pcsv
    pcsv.write_csv(pa.table({"model_a": table.column("item_a"), "model_b": table.column("item_b"),
                             "winner": _winner_words(table, "model_a", "model_b")}), path)
    code, out, err = cli("rank", path, "--epsilon", "1", "--seed", "1")
    assert code == 0, err
    assert "read the model_a,model_b,winner layout" in err and "GPT 4" in out


def test_the_cli_reads_ratings_with_a_declared_per_user_bound(cli, tmp_path):
    rng = np.random.default_rng(4)
    rows = [(u, i, float(rng.integers(1, 6))) for u in range(200) for i in rng.choice(8, 5, replace=False)]
    path = tmp_path / "ratings.csv"
    path.write_text("userId,movieId,rating\n" + "".join(f"{u},m{i},{r}\n" for u, i, r in rows))
    items = tmp_path / "items.txt"
    items.write_text("".join(f"m{i}\n" for i in range(8)))
    code, out, err = cli("top-k", path, "--k", "3", "--epsilon", "0.5", "--max-pairs", "4", "--items", items,
                         "--seed", "2")
    assert code == 0, err
    assert "read ratings (user,item,rating)" in err and "at most 4 per user" in err
    assert "2-DP per user" in out  # 4 pairs x 0.5, the declared bound
    code, _, err = cli("rank", tmp_path / "ratings.csv", "--epsilon", "1", "--max-pairs", "3", "--seed", "2")
    assert code == 0, err
    first = _ledger_fingerprints(cli)
    code, _, err = cli("rank", tmp_path / "ratings.csv", "--epsilon", "1", "--max-pairs", "3")
    assert code == 0 and len(set(_ledger_fingerprints(cli))) == len(set(first))  # one data set, however drawn


def _ledger_fingerprints(cli):
    import json
    code, out, _ = cli("ledger", "show", "--format", "json")
    assert code == 0
    return [r["fingerprint"] for r in json.loads(out)["releases"]]


def test_a_numpy_structured_array_is_a_table_of_its_fields():
    records = np.array([("a", "b", 1), ("b", "c", -1), ("a", "c", 0)],
                       dtype=[("item_a", "U8"), ("item_b", "U8"), ("outcome", "i1")])
    comps = pr.read_comparisons(records)
    assert comps.items == ("a", "b", "c") and comps.n_records == 3
    assert pr.fit_btl(records).items == comps.items


@pytest.mark.parametrize("source", [np.array([[0, 1, 1], [1, 2, -1]]), np.array(["votes.csv"]), 7, None,
                                    [["a", "b", 1]], b"votes.csv"])
def test_what_is_not_a_path_is_never_read_as_one(source):
    for read in (pr.read_comparisons, pr.read_rankings):
        with pytest.raises(InputError, match="is not a file path") as err:
            read(source)
        assert "votes.csv" not in str(err.value) and "[[" not in str(err.value)  # never echoes the data
    if isinstance(source, np.ndarray):
        assert "from_indices" in str(err.value)
