"""The release contract (issue 15): public parameters declared, every draw charged first, nothing
printed that the data decide.

Three guards that keep the whole class of bug from coming back:

* every private function of the public API is a release (:func:`privrank.release.private_release`)
  that charges its accountant or ledger *before* it draws: run with an accountant, each records
  exactly its guarantee; with its charge removed (the broken variant), its first draw raises;
* no code outside ``mechanisms/`` draws privacy noise from a generator, and only the modules
  listed here (with the reason) call the noise samplers;
* the command line prints nothing the raw data decide beyond what the release allows: two
  neighbouring data sets (differing in one protected unit) run with the same seed print the
  same guarantee and the same parameters; only the ranking and functions of the noisy release
  may differ.
"""
import ast
import contextlib
import inspect
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

import privrank as pr
from privrank.cli import main
from privrank.guarantees import Accountant, ApproxDP
from privrank.draws import UnchargedDrawError

SRC = Path(pr.__file__).parent


def comparisons():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 5, 120)
    b = (a + rng.integers(1, 5, 120)) % 5
    return pr.PairwiseComparisons.from_indices(tuple("ABCDE"), a, b, rng.choice([1, -1, 0], 120),
                                               user=np.arange(120) % 12)


def rankings():
    rng = np.random.default_rng(1)
    return pr.Rankings.from_orders(np.array([rng.permutation(5) for _ in range(40)]), items=tuple("ABCDE"))


C, R = comparisons(), rankings()
RELEASES = {
    "randomized_response": lambda **k: pr.randomized_response(C, 1.0, **k),
    "debiased_randomized_response": lambda **k: pr.debiased_randomized_response(C, 1.0, max_answers=5, **k),
    "classic_randomized_response": lambda **k: pr.classic_randomized_response(C, user_epsilon=2.0, **k),
    "local_laplace": lambda **k: pr.local_laplace(C, 1.0, **k),
    "noisy_copeland": lambda **k: pr.noisy_copeland(C, 1.0, **k),
    "perturbed_mle": lambda **k: pr.perturbed_mle(C, user_epsilon=1.0, max_answers=10, respondents=12, **k),
    "private_kemeny": lambda **k: pr.private_kemeny(R, epsilon=1.0, **k),
    "dp_kwiksort": lambda **k: pr.dp_kwiksort(R, epsilon=1.0, delta=1e-6, **k),
    "exponential_kemeny": lambda **k: pr.exponential_kemeny(R, epsilon=1.0, **k),
    "hay_quicksort": lambda **k: pr.hay_quicksort(R, epsilon=1.0, **k),
    "noisy_borda": lambda **k: pr.noisy_borda(R, epsilon=1.0, **k),
    "ldp_matrix": lambda **k: pr.ldp_matrix(R, epsilon=1.0, **k),
    "ldp_kwiksort": lambda **k: pr.ldp_kwiksort(R, epsilon=1.0, **k),
    "dp_footrule": lambda **k: pr.dp_footrule(R, epsilon=1.0, delta=1e-6, **k),
    "ldp_footrule": lambda **k: pr.ldp_footrule(R, epsilon=1.0, **k),
    "dp_ptas": lambda **k: pr.dp_ptas(R, epsilon=1.0, variant="lopsided", **k),
    "noisy_counts": lambda **k: pr.noisy_counts([3, 4], epsilon=1.0, unit="one count", **k),
    "approximate_median": lambda **k: pr.approximate_median([0, 1, 2, 2], 4, epsilon=1.0, **k),
    "footrule_cost_release": lambda **k: pr.footrule_cost_release(R.positions, epsilon=1.0, noise="local", **k),
    "sufficient_statistics": lambda **k: pr.sufficient_statistics(C, epsilon=1.0, **k),
}
#: where each release defines the ``charge`` it calls (the broken variant removes it there)
CHARGED_IN = {
    "randomized_response": "privrank.pairwise.local", "debiased_randomized_response": "privrank.pairwise.local",
    "classic_randomized_response": "privrank.pairwise.local", "local_laplace": "privrank.pairwise.local",
    "noisy_copeland": "privrank.pairwise.central", "perturbed_mle": "privrank.pairwise.central",
    "private_kemeny": "privrank.aggregation.private_kemeny", "dp_kwiksort": "privrank.aggregation.private_kemeny",
    "exponential_kemeny": "privrank.aggregation.private_kemeny", "hay_quicksort": "privrank.aggregation.private_kemeny",
    "noisy_borda": "privrank.aggregation.private_borda",
    "ldp_matrix": "privrank.aggregation.private_kemeny", "ldp_kwiksort": "privrank.aggregation.private_kemeny",
    "dp_footrule": "privrank.mechanisms.tree", "ldp_footrule": "privrank.mechanisms.tree",
    "dp_ptas": "privrank.aggregation.private_footrule", "noisy_counts": "privrank.mechanisms.counts",
    "approximate_median": "privrank.mechanisms.tree", "footrule_cost_release": "privrank.mechanisms.tree",
    "sufficient_statistics": "privrank.engines privrank.pairwise.local",  # in memory, it randomizes there
}


def _parameters(obj) -> set:
    try:
        return set(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return set()


def test_every_private_function_of_the_api_is_a_release():
    takes_budget = [n for n in pr.__all__ if inspect.isfunction(getattr(pr, n))
                    and {"epsilon", "rng"} <= _parameters(getattr(pr, n))]
    # the respondent-side primitive (one answer, no data set to charge), and the dispatcher that runs the
    # release it chooses from public parameters (which charges)
    not_releases = {"randomize_answer", "private_aggregate"}
    missing = [n for n in takes_budget if n not in not_releases and not getattr(getattr(pr, n), "is_release", False)]
    assert missing == []
    assert sorted(set(takes_budget) - not_releases) == sorted(RELEASES)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_release_charges_its_guarantee_before_it_draws(name, monkeypatch):
    acc = Accountant(ApproxDP(100.0, 0.5))
    result = RELEASES[name](accountant=acc, rng=0)
    assert len(acc.history) == 1  # exactly one charge
    g = getattr(result, "guarantee", None)
    if g is not None:  # a stated per-user epsilon is what a release costs an accountant without a unit
        assert acc.spent.epsilon == pytest.approx(g.epsilon if g.epsilon_per_user is None else g.epsilon_per_user)
    # the broken variant: the release forgets to charge; its first draw must refuse
    for module in CHARGED_IN[name].split():
        monkeypatch.setattr(f"{module}.charge", lambda guarantee: None)
    with pytest.raises(UnchargedDrawError):
        RELEASES[name](accountant=Accountant(ApproxDP(100.0, 0.5)), rng=0)


def test_a_refused_budget_draws_nothing(monkeypatch):
    acc = Accountant(ApproxDP(0.5, 0.0))
    drawn = []
    monkeypatch.setattr("privrank.draws.before_draw", lambda: drawn.append(1))
    with pytest.raises(pr.BudgetExceededError):
        pr.noisy_copeland(C, 1.0, accountant=acc)
    assert drawn == [] and acc.history == ()


@pytest.mark.parametrize("name", ["private_kemeny", "ldp_matrix"])
@pytest.mark.parametrize("bad", [{"best_of": 0}, {"best_of": 10 ** 9}, {"solver": "nonsense"}])
def test_bad_solver_arguments_are_refused_before_the_charge(name, bad):
    acc = Accountant(ApproxDP(100.0, 0.5))
    with pytest.raises(pr.InputError):
        RELEASES[name](accountant=acc, rng=0, **bad)
    assert acc.history == ()


def test_a_ledger_given_to_the_api_records_the_release(tmp_path):
    path = tmp_path / "ledger.sqlite"
    pr.noisy_copeland(C, 1.0, ledger=path)
    with pr.Ledger(path) as ledger:
        (row,) = ledger.releases()
    assert row["mechanism"] == "noisy Copeland counts" and row["epsilon"] == 1.0


def test_a_ledger_given_with_a_dataframe_identifies_its_records(tmp_path):
    pd = pytest.importorskip("pandas")
    from privrank.ledger import fingerprint

    frame = pd.DataFrame({"item_a": ["a", "b", "a"], "item_b": ["b", "c", "c"], "outcome": [1, -1, 0]})
    csv = tmp_path / "c.csv"
    frame.to_csv(csv, index=False)
    assert fingerprint(frame) == fingerprint(csv) == fingerprint(pr.read_comparisons(frame))
    path = tmp_path / "ledger.sqlite"
    pr.debiased_randomized_response(frame, 1.0, ledger=path)
    ballots = pd.DataFrame({"rank1": ["a", "b"], "rank2": ["b", "a"], "rank3": ["c", "c"]})
    pr.private_kemeny(ballots, epsilon=1.0, ledger=path)
    with pr.Ledger(path) as ledger:
        assert [r["fingerprint"] for r in ledger.releases()] == [fingerprint(csv), fingerprint(pr.read_rankings(ballots))]
    with pytest.raises(pr.InputError, match="records"):  # counts cannot be identified: refused before any draw
        pr.noisy_copeland(pr.read_comparisons(frame, items="abc").pair_counts(), 1.0, ledger=path)


def test_a_per_user_accountant_pays_a_per_comparison_release_by_its_declared_bound():
    from privrank.guarantees import UNIT_USER, PureDP

    acct = Accountant(PureDP(5.0), unit=UNIT_USER)
    comps = pr.PairwiseComparisons.from_labels(["a", "b", "a"], ["b", "c", "c"], [1, 1, -1], user=[1, 1, 2])
    pr.debiased_randomized_response(comps, 0.5, max_answers=4, accountant=acct)
    assert acct.spent.epsilon == pytest.approx(2.0)  # 4 answers x 0.5, as the ledger charges it
    with pytest.raises(pr.InputError, match="protects"):  # no declared bound: no per-user statement
        pr.debiased_randomized_response(comps, 0.5, accountant=acct)


def test_seeded_releases_say_they_are_not_releases():
    assert pr.noisy_copeland(C, 1.0, rng=3).guarantee.seeded
    g = pr.noisy_copeland(C, 1.0).guarantee
    assert not g.seeded and "SEEDED" not in g.describe()
    assert "SEEDED RUN" in pr.private_kemeny(R, epsilon=1.0, rng=1).guarantee.describe()


def test_reports_drawn_with_a_seed_say_so_in_what_is_fitted_to_them():
    reports = pr.randomized_response(C, 1.0, rng=0)
    assert reports.seeded and reports.tally().seeded
    assert reports.select_users([0]).seeded and reports.first_answers(1).seeded  # derived reports keep the mark
    for out in (pr.fit_btl(reports), pr.debiased_randomized_response(reports)):
        assert out.guarantee.seeded and "SEEDED RUN" in out.guarantee.describe()
    fresh = pr.randomized_response(C, 1.0)
    assert not fresh.seeded and not pr.fit_btl(fresh).guarantee.seeded


def test_inside_a_ledgers_block_noise_is_drawn_by_releases_only(tmp_path):
    from privrank.draws import simulating
    from privrank.mechanisms.noise import laplace
    from privrank.release import charging

    with pr.Ledger(tmp_path / "ledger.sqlite") as ledger, charging(ledger, fingerprint="f" * 64):
        with pytest.raises(UnchargedDrawError, match="outside a release"):
            laplace(1.0, 3, np.random.default_rng(0))  # would go unrecorded
        pr.noisy_copeland(C, 1.0)  # a release charges, then draws
        with simulating():  # replicates of released values spend nothing
            laplace(1.0, 3, np.random.default_rng(0))
        assert len(ledger.releases()) == 1
    laplace(1.0, 3, np.random.default_rng(0))  # outside any block: a primitive, for research
    assert not hasattr(pr.noisy_copeland, "__wrapped__")  # no way to the body that skips the charge
    assert not hasattr(pr.private_kemeny.__wrapped__, "__wrapped__")


# ------------------------------------------------------------------ where noise is drawn

#: generator methods that draw noise of a privacy mechanism
NOISE_METHODS = {"laplace", "normal", "standard_normal", "exponential", "standard_exponential", "gumbel",
                 "gamma", "logistic", "geometric", "poisson", "binomial", "multivariate_normal"}
#: the noise samplers of mechanisms/
SAMPLERS = {"laplace", "gaussian", "laplace_sum", "discrete_laplace", "discrete_gaussian", "laplace_release",
            "gaussian_release",
            "laplace_cells"}
#: modules outside mechanisms/ that may draw from noise distributions or call samplers, and why
ALLOWED = {
    "simulate.py": "synthetic data and simulated releases for experiments",
    "plan.py": "simulates planned studies on synthetic data",
    "inference/scores.py": "bootstrap: redraws the released noise law around a release (post-processing)",
    "inference/aggregates.py": "bootstrap: redraws the released noise law around a release (post-processing)",
    "pairwise/central.py": "objective perturbation and noisy Copeland call the samplers inside their charged releases",
    "pairwise/local.py": "the local Laplace baseline calls the grid release inside its charged release",
    "experiments": "reproductions of the papers on synthetic data",
    "audit": "the auditor",
}


def _allowed(rel: str) -> bool:
    return rel.startswith("mechanisms/") or any(rel == k or rel.startswith(k + "/") for k in ALLOWED)


def test_no_code_outside_the_mechanisms_draws_noise():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if _allowed(rel):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NOISE_METHODS:
                offenders.append(f"{rel}:{node.lineno} .{node.func.attr}()")
            if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("mechanisms.noise"):
                offenders += [f"{rel}:{node.lineno} imports {a.name}" for a in node.names if a.name in SAMPLERS]
    assert offenders == []


def test_the_guard_sees_a_draw_outside_the_mechanisms(tmp_path):
    """The broken variant: a module outside mechanisms/ that draws Laplace noise is reported."""
    bad = "import numpy as np\ndef leak(x, rng):\n    return x + rng.laplace(0, 1)\n"
    calls = [n for n in ast.walk(ast.parse(bad)) if isinstance(n, ast.Call)
             and isinstance(n.func, ast.Attribute) and n.func.attr in NOISE_METHODS]
    assert len(calls) == 1 and not _allowed("aggregation/leak.py")


# ------------------------------------------------------------------ nothing printed the data decide

def _write(path, rows):
    path.write_text("user,item_a,item_b,outcome\n" + "".join(f"{u},{a},{b},{o}\n" for u, a, b, o in rows))
    return path


def _comparison_files(tmp_path):
    rng = np.random.default_rng(5)
    rows = []
    for u in range(30):
        for _ in range(2 + u % 6):  # users answer 2..7 comparisons
            a, b = rng.choice(list("ABCDEF"), 2, replace=False)
            rows.append((f"u{u}", a, b, int(rng.choice([1, -1, 0]))))
    edge = list(rows)
    u, a, b, o = edge[7]
    edge[7] = (u, a, b, -o if o else 1)  # one outcome changed
    user = [r for r in rows if r[0] != "u29"] + [("u29", "A", "B", 1)] * 2  # busiest user: 7 answers -> 2
    answers = [(u, a, b, -o if u == "u3" else o) for u, a, b, o in rows]  # one user's answers, same pairs
    (tmp_path / "items.txt").write_text("\n".join("ABCDEF") + "\n")
    return {k: _write(tmp_path / f"{k}.csv", v) for k, v in
            (("base", rows), ("edge", edge), ("user", user), ("answers", answers))}


def _json(argv, ledger):
    out = []
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main([str(a) for a in argv] + ["--format", "json", "--seed", "4", "--ledger", str(ledger)])
    assert code == 0
    doc = json.loads(buf.getvalue())
    out.append(doc.pop("ranking"))
    return doc


#: fields that are functions of the noisy release (post-processing), allowed to differ
FROM_THE_RELEASE = {"converged", "gradient_norm", "queries", "fallback", "unresolved", "selected", "bounded",
                    "lopsided_pairs",
                    # a solver's certificate, computed from the released matrix alone
                    "solver_ran", "noisy_cost", "noisy_cost_lower_bound", "optimality_gap", "proved_optimal"}

RANK_CASES = [  # (neighbour, options): every per-comparison and per-user path of rank and top-k
    ("answers", ["--mechanism", "debiased-rr", "--epsilon", "1"]),
    ("answers", ["--mechanism", "rr", "--epsilon", "1", "--max-answers", "4"]),
    ("answers", ["--mechanism", "laplace", "--user-epsilon", "3"]),
    ("answers", ["--mechanism", "debiased-rr", "--user-epsilon", "3", "--weights", "inverse_variance"]),
    ("edge", ["--mechanism", "noisy-copeland", "--epsilon", "1"]),
    ("edge", ["--mechanism", "objective-perturbation", "--epsilon", "1"]),
    ("edge", ["--mechanism", "noisy-copeland", "--epsilon", "1", "--max-answers", "4"]),
    ("user", ["--mechanism", "noisy-copeland", "--user-epsilon", "2", "--max-answers", "4"]),
    ("user", ["--mechanism", "objective-perturbation", "--user-epsilon", "2", "--max-answers", "4",
              "--respondents", "30"]),
    ("user", ["--mechanism", "objective-perturbation", "--user-epsilon", "2", "--max-answers", "4",
              "--gamma", "20"]),
]


@pytest.mark.parametrize("neighbour,options", RANK_CASES)
def test_rank_prints_nothing_the_data_decide(tmp_path, neighbour, options):
    files = _comparison_files(tmp_path)
    extra = ["--items", tmp_path / "items.txt"]
    docs = [_json(["rank", files[k], *options, *extra], tmp_path / f"{k}.sqlite") for k in ("base", neighbour)]
    for doc in docs:
        for key in FROM_THE_RELEASE:
            doc.pop(key, None)
    assert docs[0] == docs[1]


SOC = "# NUMBER ALTERNATIVES: 5\n" + "".join(f"# ALTERNATIVE NAME {k + 1}: {c}\n" for k, c in enumerate("ABCDE"))
AGGREGATE_CASES = [["--method", m, "--epsilon", "1"] for m in
                   ("noisy-matrix", "dp-kwiksort", "exponential", "hay-quicksort", "ldp-matrix", "ldp-kwiksort",
                    "dp-footrule", "ldp-footrule", "dp-ptas")] + [
    ["--method", "noisy-matrix", "--epsilon", "1", "--delta", "1e-6"],
    ["--method", "dp-ptas", "--epsilon", "1", "--variant", "buckets"],
]


@pytest.mark.parametrize("options", AGGREGATE_CASES, ids=lambda o: " ".join(o[1:]))
def test_aggregate_prints_nothing_the_data_decide(tmp_path, options):
    rng = np.random.default_rng(2)
    ballots = [",".join(str(x + 1) for x in rng.permutation(5)) for _ in range(40)]
    other = list(ballots)
    other[0] = ",".join(reversed(ballots[0].split(",")))  # one voter's ranking replaced
    docs = []
    for k, b in (("base", ballots), ("other", other)):
        path = tmp_path / f"{k}.soc"
        path.write_text(SOC + "".join(f"1: {x}\n" for x in b))
        docs.append(_json(["aggregate", path, *options], tmp_path / f"{k}.sqlite"))
    for doc in docs:
        for key in FROM_THE_RELEASE:
            doc.pop(key, None)
    assert docs[0] == docs[1]


def test_partial_ballots_need_declared_items_and_no_dropping(tmp_path):
    """Regressions (issue 15, findings 1 and 2): ``--partial drop`` calibrated to the number of complete
    ballots; items named only in ballots decided the item list."""
    path = tmp_path / "ballots.csv"
    path.write_text("rank1,rank2,rank3\nA,B,C\nB,A,C\nC,B,\nA,C,B\nB,C,D\n")
    items = tmp_path / "items.txt"
    items.write_text("A\nB\nC\nD\n")
    for argv, message in ((["--partial", "drop"], "--partial randomize"),
                          (["--partial", "randomize"], "--items FILE")):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = main(["aggregate", str(path), "--method", "noisy-matrix", "--epsilon", "1", "--ledger",
                         str(tmp_path / "l.sqlite"), *argv])
        assert code == 2 and message in err.getvalue()
    doc = _json(["aggregate", path, "--method", "noisy-matrix", "--epsilon", "1", "--partial", "randomize",
                 "--items", items], tmp_path / "l.sqlite")
    assert "noise_scale" in doc and doc["guarantee"]["private"]


def _on_grid(values, scale) -> bool:
    """Every value is a multiple of a power of two far above the float resolution at ``scale``."""
    step = 2.0 ** (math.floor(math.log2(scale)) - 45)
    v = np.asarray(values, dtype=float) / step
    return bool(np.all(v == np.rint(v)))


@pytest.mark.parametrize("noise,extra", [("laplace", {}), ("gaussian", {"delta": 1e-6})])
def test_central_releases_of_real_values_lie_on_a_grid(noise, extra, monkeypatch):
    """Finding 6 (Mironov 2012): a value plus floating-point noise shows the value in its low bits.
    Tree releases (Laplace and Gaussian) are exact multiples of a power-of-two grid, matrix releases
    exact multiples of 1/n; the broken variant draws continuous noise and is caught."""
    rel = pr.footrule_cost_release(R.positions, epsilon=1.0, noise=noise, rng=0, **extra)
    assert _on_grid(rel.aggregates, rel.noise_scale)
    res = pr.private_kemeny(R, epsilon=1.0, rng=0, **extra)
    counts = res.release.matrix[np.triu_indices(5, 1)] * R.n_voters
    assert np.allclose(counts, np.rint(counts), rtol=0, atol=1e-9)
    from privrank.mechanisms import noise as samplers, tree

    def continuous(values, sensitivity, budget, rng=None, **_):  # the broken variant
        scale = sensitivity / (budget if noise == "laplace" else 1.0)
        return np.asarray(values) + samplers.gaussian(scale, np.shape(values), rng), scale

    monkeypatch.setattr(tree, f"{noise}_release", continuous)
    broken = pr.footrule_cost_release(R.positions, epsilon=1.0, noise=noise, rng=0, **extra)
    assert not _on_grid(broken.aggregates, broken.noise_scale)


#: the privacy boundary: a package never imports the packages listed for it
FORBIDDEN_IMPORTS = {"mechanisms": {"metrics", "pairwise", "aggregation", "engines"},
                     "engines": {"pairwise", "aggregation"}}


def _imported_packages(path: Path) -> set:
    """First component under ``privrank`` of every import in ``path`` (relative or absolute)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 2 and node.module:  # from ..x import y
                found.add(node.module.split(".")[0])
            elif node.level == 2:  # from .. import x
                found.update(alias.name for alias in node.names)
            elif node.level == 0 and (node.module or "").startswith("privrank."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("privrank."))
    return found


def test_the_privacy_boundary_holds():
    """Mechanisms draw and calibrate noise and import no estimator, solver, diagnostic or engine;
    engines call the mechanisms directly, never an estimator package."""
    crossing = {f"{pkg}/{path.name} imports {sorted(_imported_packages(path) & banned)}"
                for pkg, banned in FORBIDDEN_IMPORTS.items() for path in (SRC / pkg).glob("*.py")
                if _imported_packages(path) & banned}
    assert crossing == set()


def test_the_boundary_check_sees_a_crossing(tmp_path):
    bad = tmp_path / "m.py"
    bad.write_text("from ..metrics import kemeny_cost\nfrom ..pairwise.local import x\n")
    assert {"metrics", "pairwise"} <= _imported_packages(bad)


def test_a_weak_per_user_guarantee_warns():
    """Issue 18: composition to a large per-user epsilon is flagged (PrivacyWarning), a modest one is not."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", pr.PrivacyWarning)
        pr.debiased_randomized_response(C, 1.0, max_answers=10, rng=0)  # 10 per user: no warning
    with pytest.warns(pr.PrivacyWarning, match="epsilon 30 by composition"):
        pr.debiased_randomized_response(C, 3.0, max_answers=10, rng=0)


def test_the_audits_noise_factor_is_not_public_api():
    import privrank.draws as draws

    assert not hasattr(draws, "drawn_noise_factor") and not hasattr(pr, "drawn_noise_factor")
    importers = [p.relative_to(SRC).as_posix() for p in SRC.rglob("*.py")
                 if "import _drawn_noise_factor" in p.read_text()]
    assert importers == ["audit/registry.py"]


def test_a_release_drawing_less_noise_than_it_states_is_never_charged_as_private(tmp_path):
    from privrank.audit import run_audit
    from privrank.guarantees import PureDP
    from privrank.draws import _drawn_noise_factor
    from privrank.release import charging

    path, acct = tmp_path / "ledger.sqlite", Accountant(PureDP(5.0))
    with _drawn_noise_factor(0.01):  # the attack: nearly exact counts claiming 1-DP
        for pays in ({"ledger": path}, {"accountant": acct}):
            with pytest.raises(pr.InputError, match="not private"):
                pr.noisy_copeland(C, 1.0, **pays)
        with pytest.raises(pr.InputError, match="not private"):
            with charging(path):  # the CLI's way of paying
                pr.private_kemeny(R, epsilon=1.0)
        released = pr.noisy_copeland(C, 1.0)
        assert not released.guarantee.private and "NOT PRIVATE" in released.guarantee.describe()
    assert acct.history == ()
    with pr.Ledger(path) as ledger:
        assert ledger.releases() == []
    assert pr.noisy_copeland(C, 1.0, accountant=acct).guarantee.private  # factor 1: private, charged
    # the audits still run the releases under the factor and take the claim from their own epsilon
    for name in ("discrete-laplace-counts", "randomized-response"):
        assert run_audit(name, epsilon=1.0, factor=0.5, seed=5, trials=2000).violation
        assert not run_audit(name, epsilon=1.0, seed=5, trials=2000).violation
