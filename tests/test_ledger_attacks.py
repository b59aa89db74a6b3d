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
