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
