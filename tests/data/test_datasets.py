"""Loaders for shipped and optional data sets."""
import pytest

from privrank.data import datasets
from privrank.data.datasets import DatasetNotFound


def test_shipped_llmfao():
    c = datasets.load_llmfao()
    assert (c.n_records, c.n_items, c.n_users) == (8931, 59, 124)
    assert int((c.outcome == 0).sum()) == 3471


def test_shipped_nfl():
    c = datasets.load_nfl(2019)
    assert c.n_items == 32 and 260 <= c.n_records <= 270
    with pytest.raises(Exception):
        datasets.load_nfl(1990)


def test_missing_optional_dataset_says_where(monkeypatch, tmp_path):
    monkeypatch.setenv("PRIVRANK_DATA", str(tmp_path))
    with pytest.raises(DatasetNotFound, match="PRIVRANK_DATA"):
        datasets.load_cems()


def test_cems_if_available():
    try:
        c = datasets.load_cems()
    except DatasetNotFound as exc:
        pytest.skip(str(exc))
    assert (c.n_records, c.n_items, c.n_users) == (4454, 6, 303)
    assert int((c.outcome == 0).sum()) == 487


def test_movielens_if_available():
    try:
        c = datasets.load_movielens_top40()
    except DatasetNotFound as exc:
        pytest.skip(str(exc))
    assert c.n_items == 40 and c.n_users == 610 and c.n_records == 610 * 780
    assert c.items[0] and "Forrest Gump (1994)" in c.items
    assert abs((c.outcome == 0).mean() - 0.544) < 0.002  # ties incl. both unrated (notes §5)
