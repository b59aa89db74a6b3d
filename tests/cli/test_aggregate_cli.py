"""End-to-end tests of ``privrank aggregate``."""
import csv
import glob
import io
import itertools
import json
import time

import numpy as np
import pytest

from privrank.aggregation.kemeny_exact import exact_dp
from privrank.cli import main
from privrank.cli.aggregate import METHODS
from privrank.exports import GUARANTEE_COLUMNS
from privrank.data import datasets
from privrank.data.io import read_rankings
from privrank.metrics import footrule_cost, kemeny_cost
from privrank.simulate import sample_mallows

PRIVATE = ["noisy-borda", "noisy-matrix", "dp-kwiksort", "exponential", "hay-quicksort", "ldp-kwiksort",
           "ldp-matrix", "dp-footrule", "ldp-footrule", "dp-ptas"]


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def ballots(tmp_path):
    rng = np.random.default_rng(0)
    p = tmp_path / "ballots.csv"
    rows = ["voter,rank1,rank2,rank3,rank4,rank5"]
    for v in range(40):
        rows.append(f"{v}," + ",".join("ABCDE"[i] for i in rng.permutation(5)))
    p.write_text("\n".join(rows) + "\n")
    return p


def brute_force_cost(W):
    return min(kemeny_cost(np.array(p), W) for p in itertools.permutations(range(W.shape[0])))


def test_method_table_serves_both_papers():
    assert set(PRIVATE) | {"exact", "kwiksort", "borda", "copeland", "footrule"} == set(METHODS)


@pytest.mark.parametrize("method", ["exact", "kwiksort", "borda", "copeland", "footrule"])
def test_non_private_methods_report_kemeny_and_footrule_cost(capsys, ballots, method):
    code, out, _ = run(capsys, "aggregate", ballots, "--method", method, "--seed", 1, "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert [r["rank"] for r in doc["ranking"]] == [1, 2, 3, 4, 5]
    assert sorted(r["item"] for r in doc["ranking"]) == list("ABCDE")
    assert doc["guarantee"]["private"] is False
    R = read_rankings(ballots)
    W = R.pairwise_matrix()
    order = _order(doc, R)
    assert doc["kemeny_cost"] == pytest.approx(kemeny_cost(order, W))
    assert doc["footrule_cost"] == pytest.approx(footrule_cost(order, R))
    if method == "exact":
        assert doc["kemeny_cost"] == pytest.approx(brute_force_cost(W))
    if method == "footrule":
        assert doc["footrule_cost"] == pytest.approx(min(footrule_cost(p, R) for p in _perms(5)))


def _order(doc, R):
    index = {label: k for k, label in enumerate(R.items)}
    return np.array([index[r["item"]] for r in doc["ranking"]])


def _perms(m):
    return np.array(list(itertools.permutations(range(m))))


def exhaustive_footrule_optimum(R):
    """Least footrule cost over all orders, by exhaustive search: over all m! orders for m <= 8,
    else over subsets (the best cost of filling the first |S| positions with the items S; m <= 16)."""
    m = R.n_items
    pos = np.repeat(R.positions, R.weights, axis=0)
    C = np.abs(pos[:, :, None] - np.arange(m)).mean(axis=0)  # C[item, position], from the definition
    if m <= 8:
        perms = _perms(m)
        return float(C[perms, np.arange(m)].sum(axis=1).min())
    best = np.full(1 << m, np.inf)
    best[0] = 0.0
    for S in range(1, 1 << m):
        j = bin(S).count("1") - 1  # the position the last-placed item of S takes
        best[S] = min(best[S & ~(1 << q)] + C[q, j] for q in range(m) if S >> q & 1)
    return float(best[-1])


@pytest.mark.parametrize("method", PRIVATE)
def test_private_methods_print_no_exact_statistic(capsys, ballots, method):
    code, out, err = run(capsys, "aggregate", ballots, "--method", method, "--epsilon", 1,
                         "--seed", 2, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    g = doc["guarantee"]
    assert g["private"] is True and g["unit"] == "one ranking" and g["epsilon"] == 1
    assert g["model"] == ("local" if method.startswith("ldp") else "central")
    assert "kemeny_cost" not in doc and "footrule_cost" not in doc
    code, out, err = run(capsys, "aggregate", ballots, "--method", method, "--epsilon", 1,
                         "--seed", 2, "--format", "json", "--non-private-diagnostics")
    doc = json.loads(out)
    assert doc["guarantee"]["private"] is False and "kemeny_cost" in doc and "footrule_cost" in doc
    assert "NOT private" in err and "NOT PRIVATE" in doc["guarantee"]["description"]


def test_footrule_options_reach_the_methods(capsys, ballots):
    code, out, _ = run(capsys, "aggregate", ballots, "--method", "dp-ptas", "--epsilon", 1, "--variant",
                       "buckets", "--buckets", 2, "--solver", "kwiksort", "--seed", 0, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["variant"] == "buckets" and doc["buckets"] == 2
    assert doc["guarantee"]["mechanism"] == "dp-ptas/buckets (Laplace)"
    code, out, _ = run(capsys, "aggregate", ballots, "--method", "dp-footrule", "--epsilon", 1, "--delta",
                       1e-6, "--kappa", 1.5, "--seed", 0, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["kappa"] == 1.5 and doc["noise"] == "gaussian" and doc["guarantee"]["delta"] == 1e-6


def test_table_output_and_unresolved_labels(capsys, ballots):
    code, out, _ = run(capsys, "aggregate", ballots, "--method", "hay-quicksort", "--epsilon", 1,
                       "--seed", 4)
    assert code == 0 and out.startswith("rank  item") and "guarantee: 1-DP, central model" in out
    code, out, _ = run(capsys, "aggregate", ballots, "--method", "dp-kwiksort", "--epsilon", 1,
                       "--delta", 1e-6, "--seed", 4, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0])[:2] == ["rank", "item"] and len(rows) == 5
    assert all(r["guarantee_detail"].startswith("(1, 1e-06)-DP") and r["delta"] == "1e-06" for r in rows)


@pytest.mark.parametrize("argv,match", [
    (["--method", "dp-kwiksort"], "needs --epsilon"),
    (["--method", "exact", "--epsilon", "1"], "not private"),
    (["--method", "ldp-kwiksort", "--epsilon", "1", "--delta", "1e-6"], "pure"),
    (["--method", "exponential", "--epsilon", "1", "--delta", "1e-6"], "pure"),
    (["--method", "exact", "--solver", "kwiksort"], "--solver applies"),
    (["--method", "dp-kwiksort", "--epsilon", "1", "--kappa", "0.5"], "--kappa applies"),
    (["--method", "dp-footrule", "--epsilon", "1", "--variant", "buckets"], "--variant applies"),
    (["--method", "ldp-footrule", "--epsilon", "1", "--delta", "1e-6"], "pure"),
    (["--method", "dp-footrule", "--epsilon", "1", "--kappa", "2"], "kappa"),
    (["--method", "footrule", "--epsilon", "1"], "not private"),
    (["--method", "kwiksort", "--best-of", "0"], "best-of"),
    (["--method", "noisy-matrix", "--epsilon", "-1"], "epsilon"),
])
def test_errors(capsys, ballots, argv, match):
    code, _, err = run(capsys, "aggregate", ballots, *argv)
    assert code == 2 and match in err


@pytest.mark.parametrize("method", ["noisy-matrix", "ldp-matrix", "dp-footrule", "ldp-footrule"])
def test_ci_columns(capsys, ballots, method):
    code, out, err = run(capsys, "aggregate", ballots, "--method", method, "--epsilon", 2, "--seed", 3, "--ci",
                         "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    columns = ["rank", "item", "rank_lower", "rank_upper", *GUARANTEE_COLUMNS]
    assert list(rows[0])[:len(columns)] == columns and "intervals" in rows[0]  # then the method's notes
    assert all(1 <= int(r["rank_lower"]) <= int(r["rank"]) <= int(r["rank_upper"]) <= 5 for r in rows)
    code, again, _ = run(capsys, "aggregate", ballots, "--method", method, "--epsilon", 2, "--seed", 3, "--ci",
                         "--format", "csv")
    assert again == out  # the seed covers the bootstrap too


def test_ci_json_level_and_plot(capsys, ballots, tmp_path):
    code, out, err = run(capsys, "aggregate", ballots, "--method", "noisy-matrix", "--epsilon", 1, "--delta", 1e-6,
                         "--seed", 1, "--ci", "--ci-level", 0.8, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["intervals"].startswith("80% intervals for the ranks in the Kemeny aggregate")
    assert {"rank_lower", "rank_upper"} <= set(doc["ranking"][0]) and doc["guarantee"]["delta"] == 1e-6
    pytest.importorskip("matplotlib")
    plot = tmp_path / "ranks.png"
    code, out, err = run(capsys, "aggregate", ballots, "--method", "dp-footrule", "--epsilon", 1, "--plot", plot)
    assert code == 0, err
    assert plot.stat().st_size > 1000 and "rank_lower" in out and "intervals: 95% intervals" in out


@pytest.mark.parametrize("argv,match", [
    (["--method", "exact", "--ci"], "adds none"),
    (["--method", "dp-kwiksort", "--epsilon", "1", "--ci"], "releases only an order"),  # before the charge
    (["--method", "noisy-matrix", "--epsilon", "1", "--ci-level", "0.9"], "applies with --ci"),
])
def test_ci_errors(capsys, ballots, argv, match):
    code, _, err = run(capsys, "aggregate", ballots, *argv)
    assert code == 2 and match in err
    with pytest.raises(SystemExit):  # score intervals do not exist for a consensus ranking
        main(["aggregate", str(ballots), "--method", "noisy-matrix", "--epsilon", "1", "--ci-method", "bootstrap"])


def test_partial_ballots(capsys, tmp_path):
    p = tmp_path / "p.soi"
    p.write_text("# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: x\n# ALTERNATIVE NAME 2: y\n"
                 "# ALTERNATIVE NAME 3: z\n5: 1,2,3\n3: 2\n")
    code, _, err = run(capsys, "aggregate", p)
    assert code == 2 and "--partial" in err
    code, out, _ = run(capsys, "aggregate", p, "--partial", "drop", "--format", "json")
    assert [r["item"] for r in json.loads(out)["ranking"]] == ["x", "y", "z"]
    code, out, _ = run(capsys, "aggregate", p, "--partial", "randomize", "--seed", 0, "--format", "json")
    assert code == 0 and json.loads(out)["ranking"][0]["item"] in ("x", "y")


def _files(folder):
    root = datasets.data_dir()
    found = [] if root is None else sorted(glob.glob(str(root / folder / "*.soc")))
    if not found:
        pytest.skip(f"{folder} not available (../shared/data or PRIVRANK_DATA)")
    return found


@pytest.mark.slow
def test_exact_on_every_small_complete_and_netflix_soc_file(capsys):
    """The command returns an exact Kemeny ranking on every .soc file of both folders."""
    for f in _files("preflib_small_complete") + _files("preflib_netflix"):
        code, out, _ = run(capsys, "aggregate", f, "--format", "json")
        assert code == 0
        W = read_rankings(f).pairwise_matrix()
        best = brute_force_cost(W) if W.shape[0] <= 6 else kemeny_cost(exact_dp(W), W)
        assert json.loads(out)["kemeny_cost"] == pytest.approx(best, abs=1e-12)


@pytest.mark.slow
def test_exact_mallows_m100_from_a_file_within_60_seconds(capsys, tmp_path):
    R = sample_mallows(100, phi=0.8, n=1000, rng=7)
    p = tmp_path / "mallows.csv"
    header = ",".join(f"rank{k + 1}" for k in range(100))
    p.write_text(header + "\n" + "\n".join(",".join(f"i{x:03d}" for x in o) for o in R.orders) + "\n")
    t0 = time.perf_counter()
    code, out, _ = run(capsys, "aggregate", p, "--format", "json")
    assert code == 0 and time.perf_counter() - t0 < 60
    W = read_rankings(p).pairwise_matrix()
    iu = np.triu_indices(100, 1)
    # the cost attains the lower bound sum_{i<j} min(w_ij, w_ji): optimal
    assert json.loads(out)["kemeny_cost"] == pytest.approx(np.minimum(W, W.T)[iu].sum())


@pytest.mark.slow
def test_footrule_equals_the_exhaustive_optimum_on_real_files(capsys):
    """--method footrule on real PrefLib files: the least footrule cost over all orders."""
    files = (_files("preflib_small_complete") + _files("preflib_mturk_dots_puzzle")
             + _files("preflib_netflix")[::20])
    for f in files:
        code, out, _ = run(capsys, "aggregate", f, "--method", "footrule", "--format", "json")
        assert code == 0
        R = read_rankings(f)
        doc = json.loads(out)
        best = exhaustive_footrule_optimum(R)
        assert doc["footrule_cost"] == pytest.approx(best, abs=1e-12)
        assert footrule_cost(_order(doc, R), R) == pytest.approx(best, abs=1e-12)


@pytest.mark.slow
def test_dp_footrule_approaches_the_optimum_as_epsilon_grows(capsys):
    """Netflix election 196 (1,814 rankings of 4 movies): the mean excess footrule cost of the
    private order over 30 seeds falls as epsilon grows and is 0 at epsilon = 100. At eps = 0.01 the
    excess is ~2.2 (sd ~1.5, SE ~0.27), at eps = 0.1 ~0.04 (SE ~0.01): more than 2 SE apart."""
    f = next((p for p in _files("preflib_netflix") if p.endswith("00004-00000196.soc")), None)
    if f is None:
        pytest.skip("Netflix election 196 is not in the data directory")
    R = read_rankings(f)
    best = exhaustive_footrule_optimum(R)
    stats = []
    for eps in (0.01, 0.1, 100):
        excess = []
        for seed in range(30):
            code, out, _ = run(capsys, "aggregate", f, "--method", "dp-footrule", "--epsilon", eps, "--seed", seed,
                               "--format", "json")
            assert code == 0
            excess.append(footrule_cost(_order(json.loads(out), R), R) - best)
        excess = np.array(excess)
        assert np.all(excess >= -1e-12)
        stats.append((excess.mean(), excess.std(ddof=1) / np.sqrt(excess.size)))
    (m0, s0), (m1, s1), (m2, _) = stats
    assert m0 > m1 + 2 * np.hypot(s0, s1) and m1 > 2 * s1
    assert m2 == 0.0


def test_epsilon_without_method_runs_auto_and_says_which_and_why(capsys, tmp_path):
    from privrank.plan import choose_aggregation

    R = sample_mallows(6, phi=0.6, n=400, rng=2)
    path = tmp_path / "r.csv"
    path.write_text("rank1,rank2,rank3,rank4,rank5,rank6\n" + "".join(
        ",".join("ABCDEF"[i] for i in order) + "\n" for order in R.expanded()))
    items = tmp_path / "items.txt"
    items.write_text("A\nB\nC\nD\nE\nF\n")
    code, out, err = run(capsys, "aggregate", path, "--items", items, "--epsilon", 1, "--seed", 1, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    expected = choose_aggregation(6, 400, 1.0)
    assert doc["method"] == expected.method and doc["chosen_because"] == expected.reason
    assert doc["guarantee"]["private"] and doc["guarantee"]["epsilon"] == 1.0
    # the choice reads only public numbers: the reversed rankings (same items, count, epsilon) get the same method
    path.write_text("rank1,rank2,rank3,rank4,rank5,rank6\n" + "".join(
        ",".join("ABCDEF"[i] for i in order[::-1]) + "\n" for order in R.expanded()))
    code, out, err = run(capsys, "aggregate", path, "--items", items, "--method", "auto", "--epsilon", 1,
                         "--new-data", "reversed", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["method"] == expected.method
    code, _, err = run(capsys, "aggregate", path, "--items", items, "--method", "auto", "--epsilon", 1, "--solver",
                       "exact")
    assert code == 2 and "name the method" in err
    code, _, err = run(capsys, "aggregate", path, "--method", "auto")
    assert code == 2 and "needs --epsilon" in err


@pytest.mark.parametrize("engine", ["local", "stream"])
@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_comparisons_file_given_to_aggregate_is_named_as_such(capsys, tmp_path, engine, suffix):
    """A file of comparisons is no file of ballots: the error says what it holds and which command reads it,
    not that its ranks must be numbers."""
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pa.table({"user": [1, 2, 3], "item_a": ["a", "b", "a"], "item_b": ["b", "c", "c"], "outcome": [1, -1, 1]})
    path = tmp_path / f"comparisons.{suffix}"
    (pacsv.write_csv if suffix == "csv" else pq.write_table)(table, path)
    code, out, err = run(capsys, "aggregate", path, "--epsilon", 1, "--seed", 1, "--engine", engine)
    assert code == 2 and not out
    assert "holds pairwise comparisons, not rankings: rank them with privrank rank" in err
    assert "ranks must be numbers" not in err
