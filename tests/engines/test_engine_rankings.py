"""The engines compute identical ranking statistics and identical seeded local releases (issue 8)."""
import numpy as np
import pytest
from engine_data import (RANK_ITEMS, assert_same_ranking_tally, make_rankings, write_rankings)

import privrank as pr
from privrank.aggregation.private_footrule import ldp_footrule
from privrank.data.rankings import RankingTally
from privrank.engines import dask_engine, sufficient_statistics
from privrank.errors import InputError

dd = pytest.importorskip("dask.dataframe")

SORTED = tuple(sorted(RANK_ITEMS))
#: (statistic, epsilon) of every tally compared across engines
REQUESTS = [(None, None), ("pairwise", 0.8), ("positions", 0.8)]


def brute_force(orders, counts, items):
    """Pairwise and position counts by a loop over ballots, items in the given label order."""
    m = len(RANK_ITEMS)
    index = [items.index(label) for label in RANK_ITEMS]  # generation index -> label index
    N, P = np.zeros((m, m), dtype=np.int64), np.zeros((m, m), dtype=np.int64)
    for order, c in zip(orders, counts):
        for x, a in enumerate(order):
            P[index[a], x] += c
            for b in order[x + 1:]:
                N[index[a], index[b]] += c
    return N, P


@pytest.mark.parametrize("layout,items", [("order", SORTED), ("rank", RANK_ITEMS)])
def test_local_tally_matches_a_loop_over_ballots(ranking_files, layout, items):
    # order layout: items in sorted label order; rank layout: in column order (as read_rankings)
    orders, counts = make_rankings()
    t = sufficient_statistics(ranking_files[f"{layout}_csv"], kind="rankings", engine="local")
    N, P = brute_force(orders, counts, list(items))
    assert t.items == items and t.n_voters == counts.sum()
    np.testing.assert_array_equal(t.pair_counts, N)
    np.testing.assert_array_equal(t.position_counts, P)
    assert t.reports is None and "RankingTally(" in repr(t)


@pytest.mark.parametrize("statistic,epsilon", REQUESTS)
def test_engines_formats_and_batchings_give_identical_tallies(ranking_files, statistic, epsilon):
    refs = {}
    for name, path in ranking_files.items():
        layout = name.split("_")[0]
        kwargs = dict(kind="rankings", statistic=statistic, epsilon=epsilon, rng=5)
        ref = refs.setdefault(layout, sufficient_statistics(ranking_files[f"{layout}_csv"], engine="local", **kwargs))
        assert_same_ranking_tally(sufficient_statistics(path, engine="local", **kwargs), ref)
        for size in (97, 4096):
            assert_same_ranking_tally(sufficient_statistics(path, engine="stream", batch_size=size, **kwargs), ref)
        if not name.endswith("arrow"):
            assert_same_ranking_tally(sufficient_statistics(path, engine="dask", **kwargs), ref)
    # both layouts hold the same ballots: the same statistics up to the order of the items
    order, rank = refs["order"], refs["rank"]
    if statistic is None:
        perm = [SORTED.index(label) for label in RANK_ITEMS]
        np.testing.assert_array_equal(rank.pair_counts, order.pair_counts[np.ix_(perm, perm)])
        np.testing.assert_array_equal(rank.position_counts, order.position_counts[perm])


def test_partitionings_agree(ranking_files, tmp_path, monkeypatch):
    orders, counts = make_rankings()
    kwargs = dict(kind="rankings", statistic="positions", epsilon=1.5, rng=2)
    ref = sufficient_statistics(ranking_files["order_csv"], engine="local", **kwargs)
    few = write_rankings(tmp_path, orders[:150], counts[:150])["order_parquet"]  # one ballot per batch,
    assert_same_ranking_tally(sufficient_statistics(few, engine="stream", batch_size=1, **kwargs),  # count 0 too
                              sufficient_statistics(few, engine="local", **kwargs))
    for row_group in (37, 1000):
        directory = tmp_path / f"rg{row_group}"
        directory.mkdir()
        path = write_rankings(directory, orders, counts, row_group=row_group)["order_dict"]
        assert_same_ranking_tally(sufficient_statistics(path, engine="dask", **kwargs), ref)
    monkeypatch.setattr(dask_engine, "CSV_BLOCKSIZE", 4_000)  # several CSV partitions
    assert dd.read_csv(ranking_files["order_csv"], blocksize=4_000).npartitions > 3
    assert_same_ranking_tally(sufficient_statistics(ranking_files["order_csv"], engine="dask", **kwargs), ref)


def test_seeded_local_releases_are_those_of_the_in_memory_algorithms(ranking_files):
    # voter v of the file is voter v of the in-memory profile; ldp_matrix draws the key from its
    # Generator, ldp_footrule derives it from the seed, and the engines take it from rng
    R = pr.read_rankings(ranking_files["order_csv"])
    seen = []

    def solver(W):
        seen.append(W)
        return np.arange(W.shape[0])

    pr.ldp_matrix(R, epsilon=1.0, solver=solver, clip=False, rng=7)
    for path, engine in ((ranking_files["order_dict"], "dask"), (ranking_files["order_parquet"], "stream")):
        tally = sufficient_statistics(path, kind="rankings", engine=engine, batch_size=50, statistic="pairwise",
                                      epsilon=1.0, rng=np.random.default_rng(7))
        pr.ldp_matrix(tally, epsilon=1.0, solver=solver, clip=False, rng=0)
        np.testing.assert_array_equal(seen[-1], seen[0])
    rel = ldp_footrule(R, epsilon=1.0, rng=7).release
    t = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", engine="stream", batch_size=33,
                              statistic="positions", epsilon=1.0, rng=7)
    np.testing.assert_array_equal(ldp_footrule(t, epsilon=1.0).release.aggregates, rel.aggregates)
    other = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", statistic="positions",
                                  epsilon=1.0, rng=8)
    assert not np.array_equal(other.reports, t.reports)


def test_engine_randomization_is_the_duchi_mechanism(tmp_path):
    # Two items, so each voter's centred pair vector is +-1/2 (D = 1) and the Duchi et al. report
    # is +-B with B = r coth(eps/2), r = 1/2; in fixed point exactly +-2^30 units. 40,000 voters
    # all put item a first: the share of positive reports is e^eps/(1 + e^eps) within 4
    # standard errors, SE = sqrt(q(1-q)/n). The same check catches the engine randomizing at
    # 2 eps (too little noise) while the claim is eps.
    n, eps = 40_000, 1.0
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path = tmp_path / "two.parquet"
    pq.write_table(pa.table({"rank1": ["a"] * (n // 2), "rank2": ["b"] * (n // 2), "count": [2] * (n // 2)}), path,
                   row_group_size=3000)
    q = np.exp(eps) / (1 + np.exp(eps))
    se = np.sqrt(q * (1 - q) / n)

    def share(epsilon):
        t = sufficient_statistics(path, kind="rankings", engine="stream", batch_size=2500, statistic="pairwise",
                                  epsilon=epsilon, rng=1)
        assert t.n_voters == n
        return (t.reports[0] / 2 ** 30 + n) / 2 / n
    assert abs(share(eps) - q) < 4 * se
    assert abs(share(2 * eps) - q) > 4 * se


def test_kemeny_algorithms_take_a_tally(ranking_files):
    R = pr.read_rankings(ranking_files["order_csv"])
    t = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", statistic="pairwise")
    np.testing.assert_array_equal(t.pairwise_matrix(), R.pairwise_matrix())
    for fn, kwargs in ((pr.private_kemeny, {}), (pr.dp_kwiksort, {}), (pr.hay_quicksort, {}),
                       (pr.exponential_kemeny, {}), (pr.private_kemeny, dict(delta=1e-6, solver="kwiksort"))):
        a, b = fn(R, epsilon=1.0, rng=3, **kwargs), fn(t, epsilon=1.0, rng=3, **kwargs)
        np.testing.assert_array_equal(a.order, b.order)
        assert a.guarantee == b.guarantee and a.details == b.details
    with pytest.raises(InputError, match="the rankings themselves"):
        pr.ldp_kwiksort(t, epsilon=1.0)
    with pytest.raises(InputError, match="no local reports of the pairwise statistic"):
        pr.ldp_matrix(t, epsilon=1.0)
    local = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", statistic="pairwise", epsilon=2.0)
    with pytest.raises(InputError, match="at epsilon 2: give that epsilon"):
        pr.ldp_matrix(local, epsilon=1.0)
    with pytest.raises(InputError, match="no exact pairwise counts"):
        pr.private_kemeny(local, epsilon=1.0)
    assert isinstance(sufficient_statistics(R, kind="rankings"), RankingTally)


def test_footrule_functions_take_a_tally(ranking_files):
    R = pr.read_rankings(ranking_files["order_csv"])
    t = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", statistic="positions")
    np.testing.assert_array_equal(pr.footrule_cost_matrix(t), pr.footrule_cost_matrix(R))
    order = pr.footrule_optimal_order(t)
    np.testing.assert_array_equal(order, pr.footrule_optimal_order(R))
    assert pr.footrule_cost(order, t) == pr.footrule_cost(order, R)
    for delta in (0.0, 1e-6):
        a, b = pr.dp_footrule(R, epsilon=1.0, delta=delta, rng=3), pr.dp_footrule(t, epsilon=1.0, delta=delta, rng=3)
        np.testing.assert_array_equal(a.release.aggregates, b.release.aggregates)
        assert a.guarantee == b.guarantee and a.details == b.details
    with pytest.raises(InputError, match="no local reports of the positions statistic"):
        pr.ldp_footrule(t, epsilon=1.0)
    local = sufficient_statistics(ranking_files["order_parquet"], kind="rankings", statistic="positions",
                                  epsilon=1.0, kappa=1.2)
    with pytest.raises(InputError, match="have kappa 1.2"):
        pr.ldp_footrule(local, epsilon=1.0, kappa=1.5)
    with pytest.raises(InputError, match="no exact position counts"):
        pr.dp_footrule(local, epsilon=1.0)
    with pytest.raises(InputError, match="the rankings themselves"):
        pr.dp_ptas(t, epsilon=1.0)


@pytest.mark.parametrize("kwargs,match", [
    (dict(items=["a", "b"]), "give no items"),
    (dict(epsilon=1.0), "give statistic='pairwise'"),
    (dict(statistic="kendall"), "statistic must be one of"),
    (dict(kappa=1.3, statistic="positions"), "kappa is the tree weight"),
    (dict(engine="stream", scheduler="tcp://127.0.0.1:1"), "only by the dask engine"),
])
def test_bad_requests(ranking_files, kwargs, match):
    with pytest.raises(InputError, match=match):
        sufficient_statistics(ranking_files["order_csv"], kind="rankings", **kwargs)


def test_statistic_and_kappa_belong_to_rankings(raw_files):
    with pytest.raises(InputError, match="apply to kind='rankings'"):
        sufficient_statistics(raw_files["csv"], statistic="pairwise")


def test_incomplete_ballots_are_refused_with_their_record(tmp_path):
    tied = tmp_path / "tied.csv"
    tied.write_text("a,b,c\n1,2,3\n1,1,2\n")
    short = tmp_path / "short.csv"
    short.write_text("rank1,rank2,rank3\nx,y,z\nx,y,\n")
    apart = tmp_path / "apart.csv"
    apart.write_text("rank1,rank2\nx,y\ny,z\n")
    preflib = tmp_path / "p.soc"
    preflib.write_text("# NUMBER ALTERNATIVES: 2\n1: 1,2\n")
    cases = [("stream", tied, 1, "record 2: a ballot with ties"), ("stream", short, 2, "record 2: a ballot with ties"),
             ("stream", short, 1, "do not all rank the same items"),  # complete within its own batch
             ("stream", apart, 1, "do not all rank the same items"), ("stream", preflib, 1, "PrefLib files are read whole"),
             ("dask", tied, 1, "record 2: a ballot with ties"), ("dask", short, 1, "record 2: a ballot with ties"),
             ("dask", preflib, 1, "PrefLib files are read whole")]
    for engine, path, size, match in cases:
        with pytest.raises(InputError, match=match):
            sufficient_statistics(path, kind="rankings", engine=engine, batch_size=size)
    assert sufficient_statistics(preflib, kind="rankings", engine="local").n_voters == 1  # local reads PrefLib
    empty = tmp_path / "empty.parquet"
    pa = pytest.importorskip("pyarrow")
    pytest.importorskip("pyarrow.parquet").write_table(pa.table({"rank1": ["x"], "rank2": ["y"], "count": [0]}), empty)
    with pytest.raises(InputError, match="no rankings"):
        sufficient_statistics(empty, kind="rankings")


def test_ledger_fingerprints_columnar_rankings_like_the_same_ballots(ranking_files, raw_files):
    from privrank.data.io import holds_rankings
    from privrank.ledger import fingerprint

    R = pr.read_rankings(ranking_files["order_csv"])
    assert holds_rankings(ranking_files["order_parquet"]) and not holds_rankings(raw_files["parquet"])
    expected = fingerprint(R)
    for name in ("order_csv", "order_parquet", "order_dict", "order_arrow"):
        assert fingerprint(ranking_files[name]) == expected, name
    orders, counts = make_rankings()

    def generated(c):  # the generated ballots, labelled in generation order
        return fingerprint(pr.Rankings.from_orders(orders[c > 0], items=RANK_ITEMS, weights=c[c > 0]))
    assert generated(counts) == expected
    more = counts.copy()
    more[np.flatnonzero(more)[0]] += 1  # one more voter: another data set
    assert generated(more) != expected
