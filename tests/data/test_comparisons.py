"""The comparisons container and its sufficient statistics (per-pair sums, exact tally)."""
import numpy as np
import pytest

from privrank.data.comparisons import PairwiseComparisons
from privrank.data.pair_counts import PairCounts, group_sums
from privrank.data.tally import ComparisonTally, EpsilonLevels, folded_counts, record_codes
from privrank.errors import InputError
from privrank.pairwise.release import check_claim, local_guarantee


def test_labels_sorted_and_counts():
    c = PairwiseComparisons.from_labels(["z", "a", "z"], ["a", "m", "m"], [1, 0, -1], user=[2, 1, 2])
    assert c.items == ("a", "m", "z") and c.users == (1, 2)
    pc = c.pair_counts()
    W, N = pc.to_dense()
    # z beat a once; a vs m tie; m beat z once
    assert W[2, 0] == 1 and W[0, 2] == 0
    assert W[0, 1] == 0.5 and W[1, 0] == 0.5
    assert W[1, 2] == 1 and N[1, 2] == 1
    np.testing.assert_allclose(pc.borda(), W.sum(1))
    assert "z" not in repr(c)


def test_sparse_and_dense_statistic_paths_agree():
    rng = np.random.default_rng(0)
    m, n = 3000, 500  # m*m large relative to n: the unique-based path
    a = rng.integers(0, m, n)
    b = (a + 1 + rng.integers(0, m - 1, n)) % m
    v = rng.random(n)
    big = PairCounts.from_records(m, a, b, v)
    W = {}
    for x, y, val in zip(a, b, v):
        key = (min(x, y), max(x, y))
        W[key] = W.get(key, 0.0) + (val if x < y else 1 - val)
    assert big.n_pairs == len(W)
    for i, j, w in zip(big.i, big.j, big.wins):
        assert w == pytest.approx(W[(i, j)])


@pytest.mark.parametrize("kwargs,match", [
    (dict(item_a=[], item_b=[], outcome=[]), "empty"),
    (dict(item_a=["a", "b"], item_b=["a", "a"], outcome=[1, 1]), "itself"),
    (dict(item_a=["a"], item_b=["a"], outcome=[1]), "two distinct items"),
    (dict(item_a=["a"], item_b=["b"], outcome=[3]), "outcome"),
    (dict(item_a=["a"], item_b=["b"], outcome=[np.nan]), "outcome"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, None]), "record 1: outcome must be 1, -1 or 0"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, "x"]), "outcome must be numeric"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, [1]]), "outcome must be numeric"),
    (dict(item_a=["a"], item_b=["b"], outcome=[1, 1]), "outcome must give one value per comparison"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1]), "outcome must give one value per comparison"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=np.array([1, 2])), "record 1: outcome must be 1, -1 or 0"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, 2]), "record 1: outcome must be 1, -1 or 0"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, 0.5]), "record 1: outcome must be 1, -1 or 0"),
    (dict(item_a=["a", "b"], item_b=["b", "c"], outcome=[1, 2 ** 70]), "record 1: outcome must be 1, -1 or 0"),
    (dict(item_a=["a"], item_b=["b", "c"], outcome=[1]), "length"),
    (dict(item_a=["a"], item_b=["q"], outcome=[1], items=["a", "b"]), "not in the given item list"),
    (dict(item_a=["a"], item_b=["b"], outcome=[1], epsilon=[0.0]), "epsilon"),
    (dict(item_a=["a"], item_b=["b"], outcome=[1], user=[1, 2]), "user"),
])
def test_validation(kwargs, match):
    with pytest.raises(InputError, match=match):
        PairwiseComparisons.from_labels(**kwargs)


def test_components():
    c = PairwiseComparisons.from_labels(["a", "c"], ["b", "d"], [1, 1])
    assert c.pair_counts().n_components() == 2


def test_tally_counts_by_hand():
    # pairs in sorted label order: (a, m), (a, z), (m, z); a tie is 1 in wins2, a win 2
    c = PairwiseComparisons.from_labels(["z", "a", "z", "a", "m"], ["a", "m", "m", "z", "z"], [1, 0, -1, 1, 1],
                                        user=[2, 1, 2, 1, 1])
    t = c.tally()
    assert t.items == ("a", "m", "z") and t.epsilons is None and not t.seeded
    # (a, m): one tie; (a, z): z beat a, a beat z; (m, z): m beat z twice
    assert (t.i.tolist(), t.j.tolist(), t.n.tolist(), t.wins2.tolist()) == ([0, 0, 1], [1, 2, 2], [1, 2, 2], [1, 2, 4])
    pc = t.pair_counts()
    np.testing.assert_array_equal(pc.wins, c.pair_counts().wins)
    np.testing.assert_array_equal(pc.totals, c.pair_counts().totals)


def test_tally_of_reports_per_level_and_user():
    c = PairwiseComparisons.from_labels(["a", "b", "a", "b"], ["b", "a", "b", "a"], [1, 1, -1, 1],
                                        user=["u", "v", "w", "x"], epsilon=[0.5, 2.0, 0.5, 0.5])
    t = c.tally()
    assert t.epsilons.tolist() == [0.5, 2.0] and t.level.tolist() == [0, 1]
    assert t.n.tolist() == [3, 1] and t.wins2.tolist() == [2, 0]  # at 0.5: a won once of three
    assert t.level_records().tolist() == [3, 1]


def test_tally_codes_may_repeat_and_come_in_any_order():
    rng = np.random.default_rng(2)
    m, n = 9, 5000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    v = rng.integers(0, 3, n)
    items = tuple(range(m))
    codes = record_codes(m, a, b, v)
    one = ComparisonTally.from_codes(items, None, codes)
    perm = rng.permutation(n)
    grouped, counts = np.unique(codes[perm], return_counts=True)
    for other in (ComparisonTally.from_codes(items, None, codes[perm]),
                  ComparisonTally.from_codes(items, None, grouped, counts)):
        for f in ("level", "i", "j", "n", "wins2"):
            np.testing.assert_array_equal(getattr(other, f), getattr(one, f))
    # swapping the two items of every record and mirroring its value changes nothing
    np.testing.assert_array_equal(np.sort(record_codes(m, b, a, 2 - v)), np.sort(codes))


@pytest.mark.parametrize("m, levels", [(9, 1), (200, 1), (200, 3)])
def test_tally_by_sorting_equals_the_dense_count(m, levels):
    # 5,000 records in a large code space (m = 200) are tallied by sorting 32-bit codes; a small one
    # by one dense count: both must give the tally of the dense count of every code
    rng = np.random.default_rng(5)
    n = 5000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    v = rng.integers(0, 3, n)
    level = rng.integers(0, levels, n) if levels > 1 else 0
    items, epsilons = tuple(range(m)), None if levels == 1 else np.arange(1.0, levels + 1)
    codes = record_codes(m, a, b, v, level)
    dense = ComparisonTally.from_dense(items, epsilons, np.bincount(codes, minlength=levels * m * m * 3))
    tally = ComparisonTally.from_codes(items, epsilons, codes)
    for f in ("level", "i", "j", "n", "wins2"):
        np.testing.assert_array_equal(getattr(tally, f), getattr(dense, f))
        assert getattr(tally, f).dtype == np.int64
    assert tally.n.sum() == n and np.all(tally.i < tally.j)


def test_row_sums_equal_bincount_sorted_or_not():
    rng = np.random.default_rng(6)
    m = 50
    i = np.sort(rng.integers(0, m - 1, 400))
    j = i + 1 + rng.integers(0, m - 1 - i)
    values = rng.normal(size=i.size)
    for order in (np.arange(i.size), rng.permutation(i.size)):  # sorted by i (runs), and not
        pc = PairCounts(m, i[order], j[order], values[order], np.ones(i.size))
        np.testing.assert_allclose(pc.row_sums(values[order]), np.bincount(i, values, m), rtol=1e-12, atol=1e-12)
    assert pc.row_sums(values[order])[m - 1] == 0.0  # an item with no pair of its own row sums to 0


@pytest.mark.parametrize("levels", [1, 3])
def test_counting_in_record_order_and_folding_gives_the_canonical_counts(levels):
    rng = np.random.default_rng(4)
    m, n = 7, 3000
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    v = rng.integers(0, 3, n)
    level = rng.integers(0, levels, n).astype(np.int8) if levels > 1 else 0
    size = levels * m * m * 3
    canonical = np.bincount(record_codes(m, a, b, v, level), minlength=size)
    np.testing.assert_array_equal(folded_counts(m, a, b, v, level, size), canonical)
    # a control that folds without mirroring the value is caught
    per = np.bincount(a * 3 * m + b * 3 + v + np.asarray(level, dtype=np.int64) * 3 * m * m,
                      minlength=size).reshape(-1, m, m, 3)
    wrong = (per + per.transpose(0, 2, 1, 3)) * np.triu(np.ones((m, m), dtype=np.int64), 1)[None, :, :, None]
    assert not np.array_equal(wrong.reshape(-1), canonical)


def test_epsilon_levels_carried_by_reports_equal_the_hashed_column():
    rng = np.random.default_rng(5)
    n_users, m = 40, 6
    user = rng.integers(0, n_users, 2000)
    user_eps = rng.choice([0.5, 1.0, 2.0], n_users)
    user_eps[3] = 7.0  # a user with no record adds no level
    user[user == 3] = 4
    levels = EpsilonLevels.of_groups(user_eps, user)
    assert 7.0 not in levels.values
    np.testing.assert_array_equal(levels.column(user.size), user_eps[user])
    runs = np.sort(user)  # grouped by user: each user's index repeated over its run
    repeated = EpsilonLevels.of_groups(user_eps, runs, np.bincount(runs, minlength=n_users), grouped=True)
    np.testing.assert_array_equal(repeated.index, EpsilonLevels.of_groups(user_eps, runs).index)
    a = rng.integers(0, m, user.size)
    b = (a + rng.integers(1, m, user.size)) % m
    comps = PairwiseComparisons.from_indices(tuple(range(m)), a, b, rng.choice([1, -1], user.size),
                                             user=user, users=tuple(range(n_users)))
    reports = comps.with_outcomes(comps.outcome, levels)
    hashed = comps.with_outcomes(comps.outcome, user_eps[user])
    assert reports.levels is not None and hashed.levels is None
    assert reports.is_randomized and reports._epsilon is None  # no per-record column until one is read
    one, other = reports.tally(), hashed.tally()
    for f in ("epsilons", "level", "i", "j", "n", "wins2"):
        np.testing.assert_array_equal(getattr(one, f), getattr(other, f))
    per_user = float(np.bincount(user, user_eps[user]).max())
    for held in (per_user, per_user * 0.99):  # a per-user claim is checked without keeping the column
        claim = local_guarantee(float(user_eps.max()), held, "debiased randomized response")
        if held < per_user:
            with pytest.raises(InputError, match="states more protection"):
                check_claim(claim, reports, one.epsilons)
        else:
            check_claim(claim, reports, one.epsilons)
    assert reports._epsilon is None
    np.testing.assert_array_equal(reports.epsilon, hashed.epsilon)
    assert reports.epsilon is reports.epsilon and not reports.epsilon.flags.writeable
    kept = reports.select_users(np.arange(10))
    np.testing.assert_array_equal(kept.epsilon, hashed.select_users(np.arange(10)).epsilon)
    with pytest.raises(InputError, match="same length"):
        PairwiseComparisons(comps.items, a, b, comps.outcome, levels=EpsilonLevels(levels.values, levels.index[1:]))


def test_group_sums_dense_and_sparse_agree():
    rng = np.random.default_rng(3)
    key = rng.integers(0, 50, 1000)
    w = rng.random(1000)
    dense = group_sums(key, 50, None, w)  # small key space: bincount
    sparse = group_sums(key * 10 ** 6, 50 * 10 ** 6, None, w)  # large key space: unique
    np.testing.assert_array_equal(dense[0] * 10 ** 6, sparse[0])
    np.testing.assert_array_equal(dense[1][0], sparse[1][0])
    np.testing.assert_allclose(dense[1][1], sparse[1][1], rtol=1e-15)


def test_select_users_keeps_their_records_and_renumbers():
    c = PairwiseComparisons.from_labels(["a", "b", "a", "c"], ["b", "c", "c", "a"], [1, -1, 0, 1],
                                        user=["u", "v", "w", "v"])  # users sorted: u=0, v=1, w=2
    sub = c.select_users([2, 1])
    assert sub.users == ("w", "v") and sub.items == c.items
    assert sub.n_records == 3 and list(sub.user) == [1, 0, 1]
    assert list(sub.outcome) == [-1, 0, 1]
    for bad in ([], [0, 0], [3]):
        with pytest.raises(InputError):
            c.select_users(bad)
    with pytest.raises(InputError):
        PairwiseComparisons.from_labels(["a"], ["b"], [1]).select_users([0])


def test_records_per_user_whether_or_not_grouped_by_user():
    rng = np.random.default_rng(7)
    grouped = np.sort(rng.integers(0, 50, 1000))
    for user in (grouped, rng.permutation(grouped)):  # counted by boundaries, and by bincount
        c = PairwiseComparisons.from_indices((0, 1), np.zeros(1000, dtype=int), np.ones(1000, dtype=int),
                                             np.ones(1000, dtype=int), user=user, users=tuple(range(60)))
        np.testing.assert_array_equal(c.records_per_user(), np.bincount(user, minlength=60))


@pytest.mark.parametrize("columns, items, error", [
    ([["b", "a", "c"], ["a", "c", "b"]], None, None),
    ([["b", "a", "c"], ["a", "c", "b"]], ["c", "b", "a", "d"], None),
    ([["b", "a", "c"], ["a", "c", "z"]], ["a", "b", "c"], "not in the given item list"),
    ([["b", "", "c"], ["a", "c", "b"]], None, "record 2: empty or missing item"),
    ([["b", "a", "c"], ["a", "c", None]], None, "record 3: empty or missing item"),
    ([["b", "a", 3], ["a", "c", "b"]], None, None),
])
def test_label_codes_of_few_strings_match_arrow(monkeypatch, columns, items, error):
    """A few string labels are encoded by a dict: the same labels, codes and errors as Arrow's."""
    from privrank.data import comparisons

    answers = []
    for small in (0, 2048):  # Arrow, then the dict
        monkeypatch.setattr(comparisons, "SMALL_RECORDS", small)
        try:
            comps = PairwiseComparisons.from_labels(*columns, [1, -1, 0], items=items)
            answers.append((comps.items, comps.item_a.tolist(), comps.item_b.tolist()))
        except InputError as exc:
            answers.append(str(exc))
    assert answers[0] == answers[1]
    assert isinstance(answers[0], tuple) if error is None else error in answers[0]


def test_pair_counts_of_many_records_by_the_tally(monkeypatch):
    """Above ``SMALL_RECORDS`` records the outcomes are summed by the tally: the same statistic."""
    from privrank.data import comparisons

    rng = np.random.default_rng(3)
    a = rng.integers(0, 6, 500)
    comps = PairwiseComparisons.from_indices(tuple("abcdef"), a, (a + rng.integers(1, 6, 500)) % 6,
                                             rng.integers(-1, 2, 500), items_declared=False)
    got = []
    for small in (10_000, 100):
        monkeypatch.setattr(comparisons, "SMALL_RECORDS", small)
        got.append(comps.pair_counts())
    for name in ("i", "j", "wins", "totals"):
        np.testing.assert_array_equal(getattr(got[0], name), getattr(got[1], name))
    assert got[1].items == got[0].items == tuple("abcdef") and not got[1].items_declared


@pytest.mark.parametrize("n, users, squared", [(300_000, 70_000, True), (600_000, 100_000, False)])
def test_first_answers_keep_each_users_first_records_in_data_order_past_16_bit_user_indices(n, users, squared):
    rng = np.random.default_rng(3)
    k = 3  # user indices beyond 2^16; uniform users: more than 2^16 of them above k, both passes of the sort by halves
    user = rng.integers(0, users, n)
    if squared:  # uneven: some users far above k records, many below
        user = user ** 2 % users
    c = PairwiseComparisons.from_indices((0, 1), np.zeros(n, dtype=int), np.ones(n, dtype=int),
                                         rng.choice([1, -1, 0], n), user=user, users=tuple(range(users)))
    seen = np.zeros(users, dtype=int)
    keep = np.zeros(n, dtype=bool)
    for r, u in enumerate(user.tolist()):  # the definition, record by record
        keep[r] = seen[u] < k
        seen[u] += 1
    kept = c.first_answers(k)
    np.testing.assert_array_equal(kept.user, user[keep])
    np.testing.assert_array_equal(kept.outcome, c.outcome[keep])


def test_outcome_lists_of_whole_numbers_floats_and_numpy_scalars_read_alike():
    want = PairwiseComparisons.from_labels(["a", "b", "c"], ["b", "c", "a"], np.array([1, -1, 0])).outcome
    for outcome in ([1, -1, 0], [1.0, -1.0, 0.0], [np.int64(1), np.int8(-1), 0], [True, -1, False]):
        got = PairwiseComparisons.from_labels(["a", "b", "c"], ["b", "c", "a"], outcome).outcome
        assert got.dtype == np.int8 and got.tolist() == want.tolist()


@pytest.mark.parametrize("args,kwargs,match", [
    ((3, [0, 1], [0, 2], [1.0, 0.0]), {}, "compares an item with itself"),
    ((3, [0, 5], [1, 2], [1.0, 0.0]), {}, "an item index is out of range"),
    ((3, [0, 1], [1, 2], [1.0]), {}, "the same length"),
    ((3, [0], [1], [np.nan]), {}, "every value must be a finite number"),
    ((3, [0, 1], [1, 2], [1.0, 0.0]), {"weights": [1.0, -1.0]}, "every weight must be a finite number >= 0"),
    ((3, [0, 1], [1, 2], [1.0, 0.0]), {"items": ["a", "b"]}, "2 item labels given for m = 3 items"),
    ((10 ** 12, [0], [1], [1.0]), {}, "m \\(the number of items\\) must be at most"),
])
def test_pair_counts_from_records_refuses_bad_records(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        PairCounts.from_records(*args, **kwargs)


def test_from_indices_and_from_labels_refuse_bad_flags_outcomes_and_user_ids():
    with pytest.raises(InputError, match="items_declared must be True or False"):
        PairwiseComparisons.from_indices(["a", "b", "c"], [0, 1], [1, 2], [1, -1], items_declared=np.array([1, 0]))
    with pytest.raises(InputError, match="outcome must be numeric"):
        PairwiseComparisons.from_labels(["a", "b"], ["b", "c"], [10 ** 400, -1])
    with pytest.raises(InputError, match="a user id is not hashable"):
        PairwiseComparisons.from_labels(["a", "b"], ["b", "c"], [1, -1], user=[[0, 1], [2]])


@pytest.mark.parametrize("m, n", [(6, 300), (6, 5000), (120, 5000), (150, 100_000), (4000, 1000), (4000, 5000)])
def test_pair_counts_of_raw_outcomes_by_every_route_are_the_records_sums(m, n):
    """Raw outcomes are summed by one count of dense pair keys (many records per pair too), by
    distinct keys (few records, many pairs) or by the tally (many records folding a small table;
    many more pairs than records): the validated sums of :meth:`PairCounts.from_records`, to the
    last bit."""
    rng = np.random.default_rng(m)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    comps = PairwiseComparisons.from_indices(tuple(range(m)), a, b, rng.integers(-1, 2, n))
    got = comps.pair_counts()
    want = PairCounts.from_records(m, a, b, comps.preference_values(), items=comps.items)
    for name in ("i", "j", "wins", "totals"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        assert getattr(got, name).dtype == getattr(want, name).dtype


def test_object_arrays_of_labels_read_as_lists():
    """A text column as pandas hands it over (a numpy object array) gives the lists' comparisons,
    missing labels refused alike."""
    xs, ys = ["b", "a", "c", "a"], ["a", "c", "b", "b"]
    from_lists = PairwiseComparisons.from_labels(xs, ys, [1, -1, 0, 1])
    from_arrays = PairwiseComparisons.from_labels(np.array(xs, dtype=object), np.array(ys, dtype=object),
                                                  np.array([1, -1, 0, 1]))
    assert from_arrays.items == from_lists.items
    for name in ("item_a", "item_b", "outcome"):
        np.testing.assert_array_equal(getattr(from_arrays, name), getattr(from_lists, name))
    with pytest.raises(InputError, match="record 2: empty or missing item"):
        PairwiseComparisons.from_labels(np.array(xs, dtype=object), np.array(["a", None, "b", "b"], dtype=object),
                                        [1, -1, 0, 1])
