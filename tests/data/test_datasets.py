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


def test_shipped_nfl_standings_order_each_season_by_win_share():
    standings = datasets.load_nfl_standings()
    assert (standings.n_voters, standings.n_items) == (11, 32)
    for season, order in zip(range(2010, 2021), standings.orders):
        games = datasets.load_nfl(season)
        wins = {team: 0.0 for team in games.items}
        played = dict.fromkeys(games.items, 0)
        for a, b, outcome in zip(games.item_a, games.item_b, games.outcome):
            wins[games.items[a]] += (1 + outcome) / 2
            wins[games.items[b]] += (1 - outcome) / 2
            played[games.items[a]] += 1
            played[games.items[b]] += 1
        ranked = standings.labels_of(order)
        share = [wins[t] / played[t] for t in ranked]
        assert all(s >= t for s, t in zip(share, share[1:])), season
        assert all(x < y for x, y, s, t in zip(ranked, ranked[1:], share, share[1:]) if s == t), season
    season_2019 = standings.labels_of(standings.orders[9])
    assert (season_2019[0], season_2019[-1]) == ("BAL", "CIN")  # 14-2 and 2-14


def test_shipped_nfl_declares_the_leagues_teams_for_central_releases():
    import privrank as pr

    games = datasets.load_nfl(2019)
    assert games.items_declared and len(games.items) == 32
    assert pr.perturbed_mle(games, epsilon=1.0, rng=5).guarantee.model == "central"
