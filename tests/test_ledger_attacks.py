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
