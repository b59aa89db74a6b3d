"""One data set written in every format the engines read, and a tally comparison."""
import csv

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
feather = pytest.importorskip("pyarrow.feather")

N, M, USERS = 6000, 25, 120
USER_EPSILONS = (0.5, 1.0, 2.0)


def make_records(n=N, m=M, users=USERS, seed=0, reports=False):
    """Columns of a comparison data set (labels as strings, ties unless ``reports``). Reports carry
    their epsilon and no user column: the stream and dask engines refuse reports with user ids, which
    only the local engine checks (one report per respondent and pair)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    outcome = rng.choice([1, -1] if reports else [1, -1, 0], n)
    user = rng.integers(0, users, n)
    cols = {"user": user, "item_a": np.array([f"item {k:02d}" for k in a]),
            "item_b": np.array([f"item {k:02d}" for k in b]), "outcome": outcome}
    if reports:
        cols["epsilon"] = np.array(USER_EPSILONS)[cols.pop("user") % len(USER_EPSILONS)]
    return cols


def write_all(directory, cols, row_group=700):
    """The same records as CSV, Parquet (string and dictionary labels) and Arrow files."""
    names = list(cols)
    paths = {"csv": directory / "data.csv", "parquet": directory / "data.parquet",
             "parquet_dict": directory / "data_dict.parquet", "arrow": directory / "data.arrow"}
    with paths["csv"].open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        w.writerows(zip(*(cols[c].tolist() for c in names)))
    table = pa.table({c: [str(u) for u in cols[c]] if c == "user" else cols[c] for c in names})
    pq.write_table(table, paths["parquet"], row_group_size=row_group)
    feather.write_feather(table, paths["arrow"], chunksize=row_group)
    dict_table = table.set_column(0, "user", pa.array(cols["user"])) if "user" in cols else table  # integer ids
    for c in ("item_a", "item_b"):
        dict_table = dict_table.set_column(dict_table.schema.get_field_index(c), c,
                                           pa.array(cols[c]).dictionary_encode())
    pq.write_table(dict_table, paths["parquet_dict"], row_group_size=row_group)
    return paths


def make_counted(cols, seed=2):
    """``(counted, rows)``: the records with a ``count`` column of 0 to 3 (about one row in four of
    count 0) and a last row of count 0 naming an item and a user no other row names, and the
    comparisons the file stands for, each row repeated its count times in file order."""
    last = {"user": USERS, "item_a": "item zz", "item_b": "item 00", "outcome": 1, "epsilon": USER_EPSILONS[0]}
    cols = {k: np.append(v, last[k]) for k, v in cols.items()}
    counts = np.random.default_rng(seed).integers(0, 4, len(cols["outcome"]))
    counts[-1] = 0
    return {**cols, "count": counts}, {k: np.repeat(v, counts) for k, v in cols.items()}


def assert_same_tally(t, ref):
    """Identical tallies: same items, levels, integer counts and seededness (exactly)."""
    assert t.items == ref.items
    assert (t.epsilons is None) == (ref.epsilons is None)
    if ref.epsilons is not None:
        np.testing.assert_array_equal(t.epsilons, ref.epsilons)
    for field in ("level", "i", "j", "n", "wins2"):
        np.testing.assert_array_equal(getattr(t, field), getattr(ref, field), err_msg=field)
    assert t.seeded == ref.seeded and t.declared_epsilons == ref.declared_epsilons


RANK_ITEMS = ("kiwi", "apple", "mango", "fig", "pear", "date")  # sorted order differs from this one
RANKING_ROWS = 800


def make_rankings(rows=RANKING_ROWS, items=RANK_ITEMS, seed=0):
    """Orders (indices into ``items``, best first) and counts 0..3 of a ranking data set."""
    rng = np.random.default_rng(seed)
    scores = np.linspace(1.0, -1.0, len(items))
    orders = np.argsort(-(scores + rng.gumbel(size=(rows, len(items)))), axis=1)  # Plackett-Luce
    return orders, rng.integers(0, 4, rows)


def write_rankings(directory, orders, counts, items=RANK_ITEMS, row_group=200):
    """The same ballots in both layouts: order layout (rank1.. labels) as CSV, Parquet with string
    and dictionary labels and Arrow; rank layout (one rank column per item) as CSV and Parquet.
    Every file has a ``count`` column and an ignored ``voter`` column."""
    labels = np.asarray(items)[orders]
    ranks = np.argsort(orders, axis=1) + 1
    voter = np.arange(len(counts))
    order_cols = {"voter": voter, **{f"rank{k + 1}": labels[:, k] for k in range(len(items))}, "count": counts}
    rank_cols = {"voter": voter, **{item: ranks[:, q] for q, item in enumerate(items)}, "count": counts}
    paths = {name: directory / f"{name}.{ext}" for name, ext in (
        ("order_csv", "csv"), ("order_parquet", "parquet"), ("order_dict", "parquet"), ("order_arrow", "arrow"),
        ("rank_csv", "csv"), ("rank_parquet", "parquet"))}
    for key, cols in (("order_csv", order_cols), ("rank_csv", rank_cols)):
        with paths[key].open("w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(cols))
            w.writerows(zip(*(c.tolist() for c in cols.values())))
    table = pa.table(order_cols)
    pq.write_table(table, paths["order_parquet"], row_group_size=row_group)
    feather.write_feather(table, paths["order_arrow"], chunksize=row_group)
    pq.write_table(pa.table({k: pa.array(v).dictionary_encode() if k.startswith("rank") else v
                             for k, v in order_cols.items()}), paths["order_dict"], row_group_size=row_group)
    pq.write_table(pa.table(rank_cols), paths["rank_parquet"], row_group_size=row_group)
    return paths


def assert_same_ranking_tally(t, ref):
    """Identical ranking tallies: items, voters and every integer array, exactly."""
    assert t.items == ref.items and t.n_voters == ref.n_voters
    assert (t.statistic, t.epsilon, t.kappa) == (ref.statistic, ref.epsilon, ref.kappa)
    for field in ("pair_counts", "position_counts", "reports"):
        a, b = getattr(t, field), getattr(ref, field)
        assert (a is None) == (b is None), field
        if b is not None:
            assert a.dtype == np.int64
            np.testing.assert_array_equal(a, b, err_msg=field)
