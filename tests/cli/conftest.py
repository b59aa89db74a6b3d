"""Fixtures of the command-line tests: a small comparisons file, the shared data files, and a runner."""
import pytest

from privrank.data import datasets


def shared_file(folder, name):
    root = datasets.data_dir()
    path = None if root is None else root / folder / name
    if path is None or not path.exists():
        pytest.skip(f"{folder} data not available (../shared/data or PRIVRANK_DATA)")
    return str(path)


@pytest.fixture
def cems_file():
    return shared_file("cems_university", "cems_comparisons.csv")


@pytest.fixture
def immig_file():
    return shared_file("immigration_attitudes", "immig_comparisons.csv")


@pytest.fixture
def pairs(tmp_path):
    p = tmp_path / "pairs.csv"
    rows = ["user,item_a,item_b,outcome"]
    for u in range(60):
        rows += [f"{u},A,B,1", f"{u},B,C,1", f"{u},A,C,{1 if u % 3 else 0}"]
    p.write_text("\n".join(rows) + "\n")
    return p


@pytest.fixture
def pairs_items(pairs):
    """The public item list of ``pairs``: what the central mechanisms need declared."""
    p = pairs.parent / "pairs_items.txt"
    p.write_text("A\nB\nC\n")
    return p
