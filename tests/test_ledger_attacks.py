"""Attacks on the ledger's fingerprint: the same records re-encoded must keep their budget."""
import pytest

from privrank.data.io import read_comparisons
from privrank.ledger import fingerprint

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


@pytest.mark.parametrize("suffix", ["parquet", "arrow"])
def test_float_labels_have_one_fingerprint_in_every_format(tmp_path, suffix):
    """Items labelled by floats (1.0, 2.5, ...) are the same records in a CSV file, a Parquet or Arrow
    file and in memory: a columnar copy of the CSV must not get a budget of its own."""
    rows = [(u, a, b, 1 if (u + i) % 3 else -1) for u in range(20)
            for i, (a, b) in enumerate([(1.0, 2.5), (2.5, 3.0), (1.0, 3.0)])]
    df = pd.DataFrame(rows, columns=["user", "item_a", "item_b", "outcome"])
    csv = tmp_path / "floats.csv"
    df.to_csv(csv, index=False)
    columnar = tmp_path / f"floats.{suffix}"
    if suffix == "parquet":
        df.to_parquet(columnar)
    else:
        df.to_feather(columnar)
    assert fingerprint(columnar) == fingerprint(csv) == fingerprint(read_comparisons(columnar))


def test_a_ratings_file_keeps_its_fingerprint_when_its_users_are_renamed(tmp_path):
    """Users renamed (or their ids re-typed) are the same ratings: each user's (item, rating) records
    make the fingerprint, not the user's name. One rating moved to another user changes it."""
    import numpy as np

    rng = np.random.default_rng(7)
    df = pd.DataFrame({"user": np.repeat(np.arange(12), 4), "item": np.tile(list("abcd"), 12),
                       "rating": rng.integers(1, 6, 48)})
    paths = {name: tmp_path / f"{name}.csv" for name in ("ids", "renamed", "moved")}
    df.to_csv(paths["ids"], index=False)
    renamed = df.assign(user="respondent-" + (100 - df.user).astype(str)).sample(frac=1, random_state=3)
    renamed.to_csv(paths["renamed"], index=False)
    moved = df.copy()
    moved.loc[0, "user"] = 1  # user 0's rating of a goes to user 1, who rated a too
    moved.to_csv(paths["moved"], index=False)
    prints = {name: fingerprint(path) for name, path in paths.items()}
    assert prints["renamed"] == prints["ids"] != prints["moved"]


def _grouped(users, records):
    return pd.DataFrame([(u, *r) for u, r in zip(users, records)], columns=["user", "item_a", "item_b", "outcome"])


def test_the_users_digest_is_the_grouping_not_the_names_and_a_regrouped_copy_is_refused(tmp_path, private_ledger):
    """The same records grouped alike -- users renamed, rows reordered, CSV, Parquet or in memory --
    have one users digest; one record moved to another user changes it. A budget per user set with
    the digest refuses a release from the regrouped copy (same fingerprint) before it draws."""
    import privrank as pr
    from privrank.ledger import Ledger, users_digest

    records = [(f"i{k % 5}", f"i{(k + 1 + k // 5 % 4) % 5}", 1 if k % 3 else -1) for k in range(60)]
    people = [k // 4 for k in range(60)]
    base = _grouped(people, records)
    base.to_csv(tmp_path / "base.csv", index=False)
    renamed = _grouped([f"x{100 - u}" for u in people], records).iloc[::-1]
    renamed.to_parquet(tmp_path / "renamed.parquet")
    moved = _grouped([1] + people[1:], records)  # the first record to another person
    digest = users_digest(tmp_path / "base.csv")
    assert digest == users_digest(tmp_path / "renamed.parquet") == users_digest(read_comparisons(tmp_path / "base.csv"))
    assert users_digest(moved) != digest and users_digest(_grouped(range(60), records)) != digest
    assert fingerprint(moved) == fingerprint(tmp_path / "base.csv")  # why the digest is needed
    assert users_digest(base.drop(columns="user")) is None

    with Ledger(private_ledger) as led:
        led.set_budget(fingerprint(base), "user", 1.0, users=digest)
        regrouped = read_comparisons(_grouped(range(60), records))
        with pytest.raises(pr.BudgetExceededError, match="grouped into users otherwise"):
            pr.debiased_randomized_response(regrouped, user_epsilon=0.9, rng=1, ledger=led)
        pr.debiased_randomized_response(read_comparisons(renamed), user_epsilon=0.9, rng=1, ledger=led)
        assert len(led.releases()) == 1


def _survey(seed, users=60, answers=5):
    """Comparisons of eight items with mixed-case labels, a few random pairs per user, no ties."""
    import numpy as np

    rng = np.random.default_rng(seed)
    items = ["Apple", "Banana", "Cherry", "Damson", "Elder", "Fig", "Grape", "Hazel"]
    pairs = [(a, b) for i, a in enumerate(items) for b in items[i + 1:]]
    rows = [(f"U{u}", *pairs[k], int(rng.choice([-1, 1])))
            for u in range(users) for k in rng.choice(len(pairs), answers, replace=False)]
    return pd.DataFrame(rows, columns=["user", "item_a", "item_b", "outcome"])


def test_labels_are_compared_normalised_in_every_fingerprint(tmp_path):
    """Case, Unicode compatibility forms and surrounding spaces of item labels and user ids change no
    fingerprint: comparisons in memory, CSV and Parquet, rankings and ratings."""
    from privrank.ledger import identify

    base = _survey(1)
    upper = base.assign(item_a=" " + base.item_a.str.upper(), item_b=base.item_b.str.upper().str.replace("A", "Ａ"),
                        user=base.user.str.lower())
    base.to_csv(tmp_path / "base.csv", index=False)
    upper.to_parquet(tmp_path / "upper.parquet")
    ids = [identify(x) for x in (tmp_path / "base.csv", tmp_path / "upper.parquet", read_comparisons(upper), upper)]
    assert len({i.labels for i in ids}) == 1 and len({i.users for i in ids}) == 1
    assert ids[0].legacy != ids[1].legacy  # the labels as written differ
    soc = ("# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: {}\n# ALTERNATIVE NAME 2: y\n"
           "# ALTERNATIVE NAME 3: z\n2: 1,2,3\n1: 3,1,2\n")
    (tmp_path / "a.soc").write_text(soc.format("Xylo"))
    (tmp_path / "b.soc").write_text(soc.format("XYLO "))
    (tmp_path / "c.csv").write_text("rank1,rank2,rank3\nz,xylo,y\nxylo,y,z\nxylo,y,z\n")
    assert fingerprint(tmp_path / "a.soc") == fingerprint(tmp_path / "b.soc") == fingerprint(tmp_path / "c.csv")
    ratings = pd.DataFrame({"user": [1, 1, 2, 2], "item": ["Tea", "Coffee", "Tea", "Coffee"], "rating": [5, 3, 2, 4]})
    ratings.to_csv(tmp_path / "r1.csv", index=False)
    ratings.assign(item=ratings.item.str.upper()).to_csv(tmp_path / "r2.csv", index=False)
    assert fingerprint(tmp_path / "r1.csv") == fingerprint(tmp_path / "r2.csv")


def test_the_structure_is_the_same_under_any_renaming_and_tells_data_sets_apart(tmp_path):
    """Items and users renamed by a bijection keep the structural fingerprint (comparisons, ratings,
    rankings); another survey, or one answer changed, does not."""
    import numpy as np

    from privrank.ledger import identify

    base = _survey(1)
    code = dict(zip(sorted(set(base.item_a) | set(base.item_b)), np.random.default_rng(3).permutation(8)))
    renamed = base.assign(item_a=base.item_a.map(code), item_b=base.item_b.map(code),
                          user="p" + base.user.str[1:].astype(int).mul(7).astype(str)).iloc[::-1]
    changed = base.copy()
    changed.loc[5, "outcome"] *= -1
    ids = {k: identify(v) for k, v in {"base": base, "renamed": renamed, "changed": changed,
                                       "other": _survey(2)}.items()}
    assert ids["renamed"].structure == ids["base"].structure and ids["renamed"].labels != ids["base"].labels
    assert len({ids[k].structure for k in ("base", "changed", "other")}) == 3
    rng = np.random.default_rng(4)
    ratings = pd.DataFrame({"user": np.repeat(np.arange(20), 4), "item": np.tile(list("abcd"), 20),
                            "rating": rng.integers(1, 6, 80)})
    ratings.to_csv(tmp_path / "r.csv", index=False)
    ratings.assign(user=ratings.user * 3 + 100, item=ratings.item.map(dict(zip("abcd", "dcab")))).to_csv(
        tmp_path / "renamed.csv", index=False)
    ratings.assign(rating=np.roll(ratings.rating, 1)).to_csv(tmp_path / "other.csv", index=False)
    r = {k: identify(tmp_path / f"{k}.csv") for k in ("r", "renamed", "other")}
    assert r["r"].structure == r["renamed"].structure != r["other"].structure
    orders = rng.permuted(np.tile(np.arange(5), (40, 1)), axis=1)
    from privrank.data.rankings import Rankings

    a = Rankings.from_orders(orders, items=list("vwxyz"))
    b = Rankings.from_orders(orders, items=list("zyxwv"))
    c = Rankings.from_orders(np.roll(orders, 1, axis=1), items=list("vwxyz"))
    assert identify(a).structure == identify(b).structure != identify(c).structure


def test_the_sketch_sees_rows_doubled_appended_or_dropped_and_not_another_survey():
    from privrank.fingerprints import NEAR_DUPLICATE, shared
    from privrank.ledger import identify

    base = _survey(1)
    near = {"doubled": pd.concat([base, base]), "appended": pd.concat([base, base.iloc[:1].assign(user="new")]),
            "dropped": base.iloc[1:], "doubled, users renamed": pd.concat([base, base.assign(user=base.user + "b")]),
            "no user column, one row dropped": base.iloc[1:].drop(columns="user")}
    b = identify(base)
    b_users = identify(base.drop(columns="user"))
    for name, frame in near.items():
        i = identify(frame)
        ref = b_users if "no user" in name else b
        assert shared(i.sketch, i.size, ref.sketch, ref.size)[0] >= 0.9, name
    for seed in (2, 3, 4):
        o = identify(_survey(seed))
        assert shared(o.sketch, o.size, b.sketch, b.size)[0] < NEAR_DUPLICATE


def test_the_library_refuses_a_near_duplicate_unless_new_data_says_why(tmp_path, private_ledger):
    """``new_data=`` on a release is the CLI's ``--new-data``: without it a near-duplicate of a
    budgeted data set is refused before the release draws; with it the release goes on, and the
    reason is recorded with it."""
    import privrank as pr
    from privrank.ledger import Ledger, identify

    base = _survey(1)
    with Ledger(private_ledger) as led:
        led.set_budget(identify(base), "comparison", 1.0, dataset="wave-1")
        doubled = read_comparisons(pd.concat([base, base]))
        with pytest.raises(pr.BudgetExceededError, match=r"about 100%.*'wave-1'.*new_data"):
            pr.debiased_randomized_response(doubled, 0.5, ledger=led)
        with pytest.raises(pr.InputError, match="needs a reason"):
            pr.debiased_randomized_response(doubled, 0.5, ledger=led, new_data=" ")
        with pytest.raises(pr.InputError, match="give ledger="):
            pr.debiased_randomized_response(doubled, 0.5, new_data="why")
        assert led.releases() == []
        pr.debiased_randomized_response(doubled, 0.5, ledger=led, new_data="the second wave, other people")
        (release,) = led.releases()
        assert release["new_data"] == "the second wave, other people"
        upper = read_comparisons(base.assign(item_a=base.item_a.str.upper(), item_b=base.item_b.str.upper()))
        pr.debiased_randomized_response(upper, 0.75, ledger=led)  # the budget's own data, relabelled
        with pytest.raises(pr.BudgetExceededError, match="only 0.25"):
            pr.debiased_randomized_response(read_comparisons(base), 0.5, ledger=led)


def test_a_renamed_copy_is_refused_under_a_budget_per_user(tmp_path, private_ledger):
    """A budget per user counts the people as its file's user column names them: records matched by their
    structure alone (items renamed, their grouping unknowable) are refused under it, before they draw."""
    import privrank as pr
    from privrank.ledger import Ledger, identify

    base = _survey(1)
    renamed = base.assign(item_a="i-" + base.item_a, item_b="i-" + base.item_b)
    with Ledger(private_ledger) as led:
        led.set_budget(identify(base), "user", 1.0, dataset="wave-1")
        with pytest.raises(pr.BudgetExceededError, match="renamed"):
            pr.debiased_randomized_response(read_comparisons(renamed), user_epsilon=0.5, ledger=led)
        pr.debiased_randomized_response(read_comparisons(base.iloc[::-1]), user_epsilon=0.5, ledger=led)
        assert len(led.releases()) == 1


def test_the_sketch_of_a_pair_written_both_ways_round_is_the_same_in_one_batch_and_in_many():
    """Without a user column the sketch's elements are the records, the j-th copy of one its own.
    Read in one batch, "a beats b" written as (a, b, 1) and as (b, a, -1) were two cells whose
    copies were counted apart, so the sketch of a file differed with the batches it was read in."""
    import numpy as np

    from privrank.data.io import ComparisonFile
    from privrank.fingerprints import _Comparisons
    from privrank.ledger import identify

    rows = pd.DataFrame({"item_a": ["a", "b"] * 50, "item_b": ["b", "a"] * 50, "outcome": [1, -1] * 50})
    many = _Comparisons()
    for batch in ComparisonFile(rows).batches(batch_size=7):
        many.add_batch(batch)
    one = identify(rows)
    assert np.array_equal(one.sketch, many.identity().sketch) and one.size == many.identity().size == 100
