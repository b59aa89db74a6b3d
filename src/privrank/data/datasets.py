"""Loaders for real data sets.

Shipped inside the package (permissive licences, see ``datasets_shipped/README.md``):

* :func:`load_llmfao` — LLMFAO crowd judgments of 59 LLMs by 124 workers (CC BY 4.0,
  Ustalov 2023). Workers are the users whose answers are protected.
* :func:`load_nfl` — NFL regular season and playoff games 2010-2020 (FiveThirtyEight, MIT), and
  :func:`load_nfl_standings`, the same games as one ranking of the 32 teams per season.

Read from a data directory (``$PRIVRANK_DATA``, else ``../shared/data`` next to the working
directory or the source tree) because their licences do not allow shipping them:
:func:`load_cems`, :func:`load_immigration`, :func:`load_movielens_top40`, and the PrefLib
rankings :func:`load_sushi` and :func:`load_netflix`. A missing data set raises
:class:`DatasetNotFound` saying where to put the files.
"""
from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

import numpy as np

from ..errors import InputError
from .comparisons import PairwiseComparisons
from .io import read_comparisons, read_item_list, read_rankings
from .rankings import Rankings


class DatasetNotFound(InputError):
    """An optional data set is not on this machine."""


def data_dir() -> Path | None:
    """The data directory: ``$PRIVRANK_DATA``, or the first ``shared/data`` found upwards."""
    env = os.environ.get("PRIVRANK_DATA")
    if env:
        return Path(env)
    for start in (Path.cwd(), Path(__file__).resolve()):
        for parent in [start, *start.parents]:
            cand = parent / "shared" / "data"
            if cand.is_dir():
                return cand
    return None


def _require(relative: str, name: str) -> Path:
    root = data_dir()
    path = None if root is None else root / relative
    if path is None or not path.exists():
        where = "$PRIVRANK_DATA" if os.environ.get("PRIVRANK_DATA") else "../shared/data (or set PRIVRANK_DATA)"
        raise DatasetNotFound(f"the {name} data set is not available: put {relative} under {where}")
    return path


def _shipped(name: str) -> Path:
    return Path(str(resources.files("privrank") / "datasets_shipped" / name))


def load_llmfao() -> PairwiseComparisons:
    """LLMFAO crowd judgments: 8,931 comparisons of 59 LLMs by 124 workers, 3,471 ties (CC BY 4.0)."""
    return read_comparisons(_shipped("llmfao_crowd.csv"))


def _nfl_games():
    """The shipped games as ``(season, team1, team2, result1, teams)``; ``teams`` are the league's
    32 teams (every season has them all), sorted."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    games = pcsv.read_csv(_shipped("nfl_2010_2020.csv"), convert_options=pcsv.ConvertOptions(
        include_columns=["season", "team1", "team2", "result1"],
        column_types={"season": pa.int64(), "team1": pa.string(), "team2": pa.string(), "result1": pa.float64()}))
    team1 = np.asarray(games.column("team1").to_pylist())
    team2 = np.asarray(games.column("team2").to_pylist())
    return (games.column("season").to_numpy(), team1, team2, games.column("result1").to_numpy(),
            np.unique(np.concatenate([team1, team2])))


def load_nfl(season: int = 2019, *, include_ties: bool = True) -> PairwiseComparisons:
    """One NFL season (2010-2020) as ``winner,loser`` games; tied games count as ties (MIT).

    The item list is the league's 32 teams (public, as central releases need).
    """
    seasons, team1, team2, result, teams = _nfl_games()
    keep = (seasons == int(season)) & (include_ties | (result != 0.5))
    if not keep.any():
        raise InputError("the shipped NFL data cover seasons 2010 to 2020")
    result = result[keep]
    return PairwiseComparisons.from_labels(team1[keep].tolist(), team2[keep].tolist(),
                                           np.where(result == 1, 1, np.where(result == 0, -1, 0)),
                                           items=teams.tolist())


def load_nfl_standings() -> Rankings:
    """The NFL seasons 2010-2020 as 11 complete rankings of the same 32 teams (MIT).

    Each season's teams are ordered by their share of the season's games won (regular season
    and playoffs; a tied game is half a win), teams with equal shares in alphabetical order of
    their codes. One ranking per season: a private aggregate protects one season's standings.
    """
    seasons, team1, team2, result, teams = _nfl_games()
    a, b = np.searchsorted(teams, team1), np.searchsorted(teams, team2)
    orders = []
    for year in np.unique(seasons):
        keep = seasons == year
        wins = np.bincount(a[keep], result[keep], teams.size) + np.bincount(b[keep], 1 - result[keep], teams.size)
        played = np.bincount(a[keep], minlength=teams.size) + np.bincount(b[keep], minlength=teams.size)
        orders.append(np.argsort(-wins / played, kind="stable"))  # teams sorted: ties stay alphabetical
    return Rankings.from_orders(np.array(orders), items=tuple(teams.tolist()))


def load_cems() -> PairwiseComparisons:
    """CEMS university preferences: 303 students x 15 pairs of 6 schools, 487 ties.

    The item list is the data set's published table of schools (declared, as central releases need).
    """
    return read_comparisons(_require("cems_university/cems_comparisons.csv", "CEMS"),
                            items=read_item_list(_require("cems_university/cems_items.csv", "CEMS")))


def load_immigration() -> PairwiseComparisons:
    """Immigration attitudes: 98 students, 4 statements, 503 comparisons (items: the published statements)."""
    return read_comparisons(_require("immigration_attitudes/immig_comparisons.csv", "immigration"),
                            items=read_item_list(_require("immigration_attitudes/immig_items.csv", "immigration")))


def load_movielens_top40(n_movies: int = 40) -> PairwiseComparisons:
    """MovieLens ml-latest-small as comparisons of the 40 most-rated movies (Xu, Sun, Cheng §5.4).

    Every one of the 610 users compares every pair of the movies: the higher rating wins; a
    rated movie beats an unrated one; equal ratings and two unrated movies are ties (outcome 0),
    which randomized response answers as a fair coin and the likelihood counts as half a win
    each. All 610 users are kept (the 30 who rated none of the movies give only ties).
    """
    root = _require("movielens/ml-latest-small", "MovieLens ml-latest-small")
    ratings = np.loadtxt(root / "ratings.csv", delimiter=",", skiprows=1, usecols=(0, 1, 2))
    users_all = np.unique(ratings[:, 0].astype(np.int64))
    movie = ratings[:, 1].astype(np.int64)
    ids, counts = np.unique(movie, return_counts=True)
    top = ids[np.lexsort((ids, -counts))][:n_movies]
    import pyarrow as pa
    import pyarrow.csv as pcsv

    movies = pcsv.read_csv(root / "movies.csv", convert_options=pcsv.ConvertOptions(
        include_columns=["movieId", "title"], column_types={"movieId": pa.int64(), "title": pa.string()}))
    titles = dict(zip(movies.column("movieId").to_pylist(), movies.column("title").to_pylist()))
    keep = np.isin(movie, top)
    uidx = np.searchsorted(users_all, ratings[keep, 0].astype(np.int64))
    midx = np.searchsorted(np.sort(top), movie[keep])
    order = np.argsort(top)  # column k of R is movie np.sort(top)[k]
    R = np.zeros((users_all.size, n_movies))  # 0 = unrated (ratings are >= 0.5)
    R[uidx, midx] = ratings[keep, 2]
    sorted_top = top[order]
    i, j = np.triu_indices(n_movies, 1)
    diff = R[:, i] - R[:, j]
    outcome = np.sign(diff).astype(np.int8).ravel()
    L = users_all.size
    a = np.broadcast_to(i, (L, i.size)).ravel()
    b = np.broadcast_to(j, (L, i.size)).ravel()
    user = np.repeat(np.arange(L), i.size)
    labels = tuple(titles.get(int(x), str(int(x))) for x in sorted_top)
    return PairwiseComparisons.from_indices(labels, a, b, outcome, user=user,
                                            users=tuple(int(u) for u in users_all))


def load_sushi() -> Rankings:
    """Kamishima's sushi preferences: 5,000 complete rankings of 10 sushi (PrefLib 00014-00000001).

    Research use only; never redistributed.
    """
    return read_rankings(_require("preflib_sushi/00014-00000001.soc", "PrefLib sushi"))


def load_netflix(election: int = 1) -> Rankings:
    """One of the 200 PrefLib Netflix elections (00004): 1-100 rank 3 movies, 101-200 rank 4."""
    k = int(election)
    if not 1 <= k <= 200:
        raise InputError("the Netflix elections are numbered 1 to 200")
    return read_rankings(_require(f"preflib_netflix/00004-{k:08d}.soc", "PrefLib Netflix"))
