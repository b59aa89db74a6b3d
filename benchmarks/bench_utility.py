"""The utility frontier: every private method's distance to a known truth, on one grid.

A private method is good if its answer is close to the truth, not if it solves its own noisy
statistic well. This script runs every private method of each family on the same data, against
the truth the data were drawn from (or, for real data, the full-data non-private consensus):

* rankings (``privrank aggregate --method``), central: ``noisy-borda`` (noisy Borda scores), ``noisy-matrix`` (the released
  noisy pairwise matrix solved by the default ``auto`` solver), ``noisy-matrix+kwiksort``,
  ``noisy-matrix+borda`` and ``noisy-matrix+copeland`` (the *same* release, same seed, solved by
  KwikSort, Borda or Copeland instead: post-processing, free), ``hay-quicksort``,
  ``dp-kwiksort``, ``exponential`` (m <= 8 only), ``dp-footrule``, ``dp-ptas``; local:
  ``ldp-kwiksort``, ``ldp-matrix``, ``ldp-footrule``;
* pairwise comparisons (``privrank rank --mechanism``), local: ``debiased-rr`` and ``laplace``
  (each followed by the BTL fit); central: ``objective-perturbation`` and ``noisy-copeland``.
  ``n`` is the number of comparisons, each of a uniformly drawn pair, and epsilon protects one
  comparison;
* a reference row per data set, method ``none``: the non-private answer on the same data (exact
  Kemeny of the sampled rankings; the BTL maximum-likelihood fit of the sampled comparisons), the
  floor no private method can be expected to beat: it shows how much of the error is sampling.

Metrics: the normalised Kendall distance to the truth (the fraction of the m(m-1)/2 pairs
misordered, :func:`privrank.kendall_distance`) and the top-k recall (k = max(1, m // 10), one
minus :func:`privrank.top_k_hamming`), mean and standard error over seeds (each seed draws new
data and new noise; every method sees the same data at a seed, and the four ``noisy-matrix``
rows the same release), and the mean seconds per run.

``--out DIR`` writes ``frontier.json`` (default: ``src/privrank/frontier.json``, shipped with the
package and read by the planner), ``frontier.md`` and ``frontier.png`` (default: ``docs/``);
``--readme`` rewrites the ``utility`` section of README.md; ``--quick`` runs a tiny grid in
seconds (the test's); ``--seeds N`` sets the seeds (default 6); ``--models`` runs a subset. Every
finished point is appended to ``frontier.partial.jsonl`` beside the page, so ``--resume`` continues
a run that was stopped; ``--from-json PATH`` runs nothing and rewrites the page, the plot and (with
``--readme``) the README section from a results file. Per-run seconds are CPU (process) time, with
one BLAS thread: the wall time of a shared machine says little.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from collections.abc import Callable

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # one core: set before numpy loads
    os.environ.setdefault(_var, "1")

import numpy as np
import spread

import privrank as pr
from privrank.aggregation import private_footrule as pf
from privrank.aggregation import private_kemeny as pk
from privrank.aggregation.private_borda import noisy_borda
from privrank.aggregation.kemeny import borda, copeland, wfas_solver
from privrank.data.comparisons import PairwiseComparisons
from privrank.data.datasets import DatasetNotFound, load_llmfao, load_nfl, load_sushi
from privrank.data.rankings import Rankings
from privrank.errors import InputError
from privrank.metrics import kendall_distance, top_k_hamming
from privrank.pairwise import central, local
from privrank.simulate import sample_mallows

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "src" / "privrank" / "frontier.json"
DOCS = ROOT / "docs"

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
MS = (5, 10, 20, 50, 100, 200)
NS = (100, 1000, 10_000, 100_000)
SEEDS = 6
PHI_CONCENTRATED, PHI_DISPERSED = 0.8, 0.95
SCORE_RANGE = 4.0  # BTL / Plackett-Luce log-strengths evenly spaced from +2 to -2

MODELS = {
    "mallows-0.8": (f"Mallows rankings around the order 0, 1, ..., m-1, phi = {PHI_CONCENTRATED} "
                    "(concentrated: an adjacent pair is in the central order's sense with probability "
                    "about 1/(1 + phi) = 0.56, far pairs almost always); truth: the central order"),
    "mallows-0.95": (f"Mallows rankings, phi = {PHI_DISPERSED} (dispersed: adjacent pairs 0.51); "
                     "truth: the central order"),
    "plackett-luce": (f"Plackett-Luce rankings (Gumbel-max on log-weights evenly spaced over a range of "
                      f"{SCORE_RANGE:g}, best item first); truth: the order of the weights"),
    "btl": (f"n comparisons, each of a uniformly drawn pair, outcome by BTL with scores evenly spaced over "
            f"a range of {SCORE_RANGE:g} (best beats worst with probability 0.98); epsilon per comparison; "
            "truth: the order of the scores"),
    "sushi": ("PrefLib sushi (00014-00000001): 5,000 complete rankings of 10 sushi; truth: the exact Kemeny "
              "order of all 5,000; each seed releases the same data with new noise"),
    "llmfao": ("LLMFAO crowd comparisons (shipped): 8,931 comparisons of 59 LLMs, ties as half wins, the list of "
               "59 models declared public; truth: the non-private BTL fit of all of them; each seed new noise"),
    "nfl-2019": ("NFL 2019 season games (shipped, FiveThirtyEight): 267 games of 32 teams; truth: the "
                 "non-private BTL fit of the season; each seed new noise"),
}

#: the main models first, so that a run cut short has them
RUN_ORDER = ("mallows-0.8", "btl", "sushi", "llmfao", "nfl-2019", "mallows-0.95", "plackett-luce")

QUICK = {"ms": (5, 12), "ns": (200,), "epsilons": (1.0, 8.0), "seeds": 2,
         "models": ("mallows-0.8", "btl", "nfl-2019")}


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------

def sample_plackett_luce(log_weights, n: int, rng) -> Rankings:
    """``n`` Plackett-Luce rankings (best first): the Gumbel-max trick, each ranking the items by
    log-weight plus an independent standard Gumbel draw."""
    w = np.asarray(log_weights, dtype=float)
    keys = w[None, :] + rng.gumbel(size=(int(n), w.size))
    return Rankings.from_orders(np.argsort(-keys, axis=1))


def true_scores(m: int) -> np.ndarray:
    """Scores of the synthetic truth: item 0 best, then 1, ..., strictly decreasing."""
    return SCORE_RANGE / 2 - SCORE_RANGE * np.arange(m) / max(1, m - 1)


def sample_rankings(model: str, m: int, n: int, rng) -> Rankings:
    if model == "plackett-luce":
        return sample_plackett_luce(true_scores(m), n, rng)
    return sample_mallows(m, phi=PHI_CONCENTRATED if model == "mallows-0.8" else PHI_DISPERSED, n=n, rng=rng)


def sample_btl(m: int, n: int, rng) -> PairwiseComparisons:
    """``n`` comparisons, each of a uniformly drawn pair ``i != j``, won by BTL with :func:`true_scores`.

    A design that leaves an item uncompared is drawn again (no estimator can rank such an item;
    :func:`comparison_skip` keeps the grid to points where that is rare)."""
    theta = true_scores(m)
    for _ in range(100):
        a = rng.integers(0, m, n)
        b = (a + rng.integers(1, m, n)) % m
        if np.unique(np.concatenate([a, b])).size == m:
            break
    win = rng.random(n) < 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    return PairwiseComparisons.from_indices(tuple(range(m)), a, b, np.where(win, 1, -1))


def order_scores(order) -> np.ndarray:
    """Scores of an order (best first): the best item m - 1 ... the last 0."""
    order = np.asarray(order, dtype=np.int64)
    s = np.empty(order.size)
    s[order] = np.arange(order.size, 0, -1, dtype=float)
    return s


# --------------------------------------------------------------------------------------------
# methods
# --------------------------------------------------------------------------------------------

@dataclass
class Method:
    name: str
    trust: str  # "central", "local" or "none" (the non-private reference)
    run: Callable  # (data, epsilon, rng) -> scores
    skip: Callable = lambda m, n: None  # (m, n) -> reason it is not run, or None
    release: int = 0  # methods with the same release key get the same noise seed


def _kemeny(solver="auto", **kw):
    def run(d, eps, rng):
        return order_scores(pk.private_kemeny(d.pairs, epsilon=eps, solver=solver, certify_seconds=0,
                                              rng=rng, **kw).order)
    return run


def _result(fn, attr="positions", **kw):
    return lambda d, eps, rng: order_scores(fn(getattr(d, attr), epsilon=eps, rng=rng, **kw).order)


def _no_local_at(m, n):
    if n < m:
        return "LDPKwikSort needs n >= m (one group of voters per item)"
    return None


def _local_matrix_cost(m, n):
    if n * m * (m - 1) / 2 > 2.5e6:
        return (f"every voter's report has m(m-1)/2 = {m * (m - 1) // 2} entries: about {n * m * (m - 1) / 2e7:.1f} s "
                "a run, over the time budget (n m(m-1)/2 <= 2.5e6)")
    return None


def _local_footrule_cost(m, n):
    if n * m * m > 5e5:
        return (f"every voter's tree report has about 2 m^2 entries: about {n * m * m * 4.6e-7:.1f} s a run, over the "
                "time budget (n m^2 <= 5e5)")
    return None


def _exponential_skip(m, n):
    return None if m <= pk.EXPONENTIAL_MAX_ITEMS else f"enumerates all m! orders (m <= {pk.EXPONENTIAL_MAX_ITEMS})"


def _ptas_skip(m, n):
    return None if m <= 20 else ("its exact solver refuses m > 25 and falls back to local search, about 4 s a run at "
                                 "m = 50: over the time budget (m <= 20)")


RANKING_METHODS = [
    Method("noisy-matrix", "central", _kemeny("auto"), release=1),
    Method("noisy-matrix+kwiksort", "central", _kemeny("kwiksort"), release=1),
    Method("noisy-matrix+borda", "central", _kemeny(borda, clip=False), release=1),
    Method("noisy-matrix+copeland", "central", _kemeny(copeland, clip=False), release=1),
    Method("hay-quicksort", "central", _result(pk.hay_quicksort, "pairs")),
    Method("dp-kwiksort", "central", _result(pk.dp_kwiksort, "pairs")),
    Method("exponential", "central", _result(pk.exponential_kemeny, "pairs"), _exponential_skip),
    Method("dp-footrule", "central", _result(pf.dp_footrule, "positions")),
    Method("dp-ptas", "central", _result(pf.dp_ptas, "rankings"), _ptas_skip),
    Method("ldp-kwiksort", "local", _result(pk.ldp_kwiksort, "rankings"), _no_local_at),
    Method("ldp-matrix", "local", _result(pk.ldp_matrix, "rankings", certify_seconds=0), _local_matrix_cost),
    Method("ldp-footrule", "local", _result(pf.ldp_footrule, "rankings"), _local_footrule_cost),
    Method("noisy-borda", "central", _result(noisy_borda, "pairs")),  # last: the others keep their noise seeds
]


def _btl_fit(release_fn):
    return lambda d, eps, rng: pr.fit_btl(release_fn(d.comparisons, eps, rng=rng)).scores


def _central(fn):
    return lambda d, eps, rng: fn(d.counts, epsilon=eps, rng=rng).scores


COMPARISON_METHODS = [
    Method("debiased-rr", "local", _btl_fit(local.debiased_randomized_response)),
    Method("laplace", "local", _btl_fit(local.local_laplace)),
    Method("objective-perturbation", "central", _central(central.perturbed_mle)),
    Method("noisy-copeland", "central", _central(central.noisy_copeland)),
]


class RankingData:
    """One profile and its sufficient statistics (computed once, shared by every method)."""

    def __init__(self, rankings: Rankings):
        self.rankings = rankings
        self.m, self.n = rankings.n_items, rankings.n_voters
        stats = pr.sufficient_statistics(rankings, kind="rankings")
        self.pairs = self.positions = stats

    def reference(self) -> np.ndarray:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return order_scores(wfas_solver("exact")(self.pairs.pairwise_matrix()))


class ComparisonData:
    def __init__(self, comparisons: PairwiseComparisons):
        self.comparisons = comparisons
        self.counts = comparisons.pair_counts()
        self.m, self.n = comparisons.n_items, comparisons.n_records

    def reference(self) -> np.ndarray:
        return pr.fit_btl(self.comparisons).scores


# --------------------------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------------------------

def ranking_points(ms, ns):
    """(m, n) points of the ranking models: n = 100,000 only for m <= 50, m = 200 only up to n = 10,000."""
    return [(m, n) for m in ms for n in ns if not (n >= 100_000 and m > 50)]


def comparison_skip(m, n):
    """Why a comparison point is not run: too few comparisons to compare every item."""
    if n < m / 2 * math.log(20 * m):
        return f"n < (m/2) ln(20 m): some of the m = {m} items would go uncompared in most draws"
    return None


def comparison_points(ms, ns):
    """(m, n) points of the BTL model: n = 100,000 only for m <= 100 (the Laplace baseline's fit takes seconds)."""
    return [(m, n) for m in ms for n in ns if comparison_skip(m, n) is None and not (n >= 100_000 and m > 100)]


def _seed(*parts) -> np.random.Generator:
    return np.random.default_rng([int(p) for p in parts])


def _mean_se(values):
    v = np.asarray(values, dtype=float)
    se = float(v.std(ddof=1) / math.sqrt(v.size)) if v.size > 1 else 0.0
    return float(v.mean()), se


def evaluate(datasets, methods, epsilons, truth_of, family, model, m, n, progress, only=None):
    """Rows of every method (of ``only``, when given) at every epsilon on ``datasets`` (one per seed)."""
    k = max(1, m // 10)
    rows, skipped = [], []
    results = {}
    ref = {"kendall": [], "recall": [], "seconds": []}
    for s, data in enumerate(datasets):
        truth = truth_of(data)
        start = time.process_time()
        scores = data.reference()
        ref["seconds"].append(time.process_time() - start)
        ref["kendall"].append(kendall_distance(scores, truth))
        ref["recall"].append(1.0 - top_k_hamming(scores, truth, k))
        for mi, method in enumerate(methods):
            reason = method.skip(m, n)
            if reason or (only and method.name not in only):
                continue
            for e, eps in enumerate(epsilons):
                rng = _seed(s, e, method.release or 100 + mi, m, n)
                r = results.setdefault((method.name, eps), {"kendall": [], "recall": [], "seconds": [], "failed": []})
                start = time.process_time()
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        scores = method.run(data, eps, rng)
                except InputError as exc:  # counted and said, never averaged in
                    r["failed"].append(f"{type(exc).__name__}: {exc}")
                    continue
                took = time.process_time() - start
                r["kendall"].append(kendall_distance(scores, truth))
                r["recall"].append(1.0 - top_k_hamming(scores, truth, k))
                r["seconds"].append(took)
    base = {"family": family, "model": model, "m": m, "n": n}
    seeds = len(datasets)
    for method in methods:
        reason = method.skip(m, n)
        if reason:
            skipped.append({**base, "method": method.name, "reason": reason})
    rows.append(_row(base, "none", None, "none", ref, seeds))
    for method in methods:
        for eps in epsilons:
            r = results.get((method.name, eps))
            if r is None:
                continue
            if r["kendall"]:
                rows.append(_row(base, method.trust, eps, method.name, r, len(r["kendall"])))
            if r["failed"]:
                skipped.append({**base, "method": method.name, "epsilon": eps,
                                "reason": f"{len(r['failed'])} of {seeds} runs failed ({r['failed'][0]})"})
    progress(f"{family} {model} m={m} n={n}: {sum(sum(r['seconds']) for r in results.values()):.1f} s")
    return rows, skipped


def _row(base, trust, eps, name, r, seeds):
    kendall, kendall_se = _mean_se(r["kendall"])
    recall, recall_se = _mean_se(r["recall"])
    return {"family": base["family"], "trust": trust, "model": base["model"], "m": base["m"], "n": base["n"],
            "epsilon": eps, "method": name, "kendall": round(kendall, 5), "kendall_se": round(kendall_se, 5),
            "recall": round(recall, 4), "recall_se": round(recall_se, 4), "seeds": seeds,
            "seconds": round(float(np.mean(r["seconds"])), 5)}


class Checkpoint:
    """Every finished grid point, one JSON line each, so that a run cut short resumes where it stopped
    (``--resume``); a point is keyed by its model, m, n, seeds and epsilons."""

    def __init__(self, path: Path, resume: bool):
        self.path, self.done = path, {}
        if resume and path.exists():
            for line in path.read_text().splitlines():
                entry = json.loads(line)
                self.done[json.dumps(entry["key"])] = (entry["rows"], entry["skipped"])
        elif path.exists():
            path.unlink()

    def point(self, key, compute):
        key = json.dumps([key[0], key[1], key[2], key[3], list(key[4])])
        if key in self.done:
            return self.done[key]
        rows, skipped = compute()
        with self.path.open("a") as f:
            f.write(json.dumps({"key": json.loads(key), "rows": rows, "skipped": skipped}) + "\n")
        return rows, skipped


def run_grid(ms, ns, epsilons, seeds, models, progress, checkpoint, only=None):
    rows, skipped, missing = [], [], []
    for model in sorted(models, key=RUN_ORDER.index):
        if model in ("mallows-0.8", "mallows-0.95", "plackett-luce"):
            points = ranking_points(ms, ns)
            for m, n in points:
                r, s_ = checkpoint.point(
                    (model, m, n, seeds, epsilons),
                    lambda model=model, m=m, n=n: evaluate([RankingData(sample_rankings(model, m, n, _seed(s, 7, m, n))) for s in range(seeds)],
                                     RANKING_METHODS, epsilons, lambda d: true_scores(d.m), "rankings", model, m, n,
                                     progress, only))
                rows += r
                skipped += s_
        elif model == "btl":
            for m, n in [(m, n) for m in ms for n in ns if comparison_skip(m, n)]:
                skipped.append({"family": "comparisons", "model": model, "m": m, "n": n, "method": "every method",
                                "reason": comparison_skip(m, n)})
            for m, n in comparison_points(ms, ns):
                r, s_ = checkpoint.point(
                    (model, m, n, seeds, epsilons),
                    lambda model=model, m=m, n=n: evaluate([ComparisonData(sample_btl(m, n, _seed(s, 8, m, n))) for s in range(seeds)],
                                     COMPARISON_METHODS, epsilons, lambda d: true_scores(d.m), "comparisons", model,
                                     m, n, progress, only))
                rows += r
                skipped += s_
        else:
            try:
                loaded = {"sushi": load_sushi, "llmfao": load_llmfao, "nfl-2019": lambda: load_nfl(2019)}[model]()
            except DatasetNotFound as exc:
                missing.append(f"{model}: {exc}")
                progress(f"skipped {model}: {exc}")
                continue
            if model == "llmfao":  # its 59 models are a published list: declared public, as central releases need
                loaded = replace(loaded, items_declared=True)
            if model == "sushi":
                data = RankingData(loaded)
                methods, family = RANKING_METHODS, "rankings"
            else:
                data = ComparisonData(loaded)
                methods, family = COMPARISON_METHODS, "comparisons"
            truth = data.reference()
            r, s_ = checkpoint.point((model, data.m, data.n, seeds, epsilons),
                                     lambda data=data, truth=truth, methods=methods, family=family, model=model: evaluate(
                                         [data] * seeds, methods, epsilons, lambda d: truth, family, model, data.m,
                                         data.n, progress, only))
            rows += r
            skipped += s_
    return rows, skipped, missing


# --------------------------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------------------------

def write_json(path: Path, rows, skipped, missing, grid, command, took, generated=None):
    head = {"generated": generated or datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "command": command, "took": took, "machine": f"{platform.machine()}, {spread.load()}",
            "grid": grid, "metrics": {
                "kendall": "normalised Kendall distance of the method's order to the truth (fraction of pairs misordered)",
                "recall": "top-k recall, k = max(1, m // 10): the fraction of the true top k in the method's top k",
                "_se": "standard error of the mean over seeds", "seconds": "mean CPU seconds of one run (process time, one BLAS thread; the machine was shared, so wall time says little)",
                "method none": ("the non-private answer on the same data (exact Kemeny; the BTL fit): the floor; "
                                "its epsilon is null and its trust 'none'")},
            "models": {k: v for k, v in MODELS.items() if k in grid["models"]},
            "not_run": skipped, "missing_data": missing}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "rows": [')
    lines.append(",\n".join(f"    {json.dumps(r)}" for r in rows))
    lines.append("  ]")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n")


def _key(r):
    return (r["family"], r["model"], r["m"], r["n"], r["epsilon"])


def best_by_point(rows, trust=None):
    """{point: (best row, runner-up row or None)} over the private methods (of one trust model, if given),
    by mean Kendall distance (ties by recall, then seconds)."""
    points = {}
    for r in rows:
        if r["method"] != "none" and trust in (None, r["trust"]):
            points.setdefault(_key(r), []).append(r)
    out = {}
    for point, rs in points.items():
        rs = sorted(rs, key=lambda r: (r["kendall"], -r["recall"], r["seconds"]))
        out[point] = (rs[0], rs[1] if len(rs) > 1 else None)
    return out


def references(rows):
    return {(r["family"], r["model"], r["m"], r["n"]): r for r in rows if r["method"] == "none"}


def _fmt(r):
    return f"{r['kendall']:.3f} ± {r['kendall_se']:.3f}"


def summary_table(rows, model, epsilons, trust=None):
    """Markdown: per (m, n), per epsilon, the best private method, its distance and its margin."""
    best, refs = best_by_point(rows, trust), references(rows)
    points = sorted({(m, n) for (f, mo, m, n, e) in best if mo == model})
    head = "| m | n | non-private | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |"
    out = [head, "|---" * (3 + len(epsilons)) + "|"]
    for m, n in points:
        fam = next(f for (f, mo, mm, nn, e) in best if mo == model and (mm, nn) == (m, n))
        ref = refs.get((fam, model, m, n))
        cells = []
        for e in epsilons:
            b = best.get((fam, model, m, n, e))
            if b is None:
                cells.append("-")
                continue
            first, second = b
            margin = ""
            if second:
                gap = second["kendall"] - first["kendall"]
                noise = 2 * math.hypot(first["kendall_se"], second["kendall_se"])
                margin = f", +{gap:.3f} to {second['method']}" + (" (within 2 se)" if gap <= noise else "")
            cells.append(f"**{first['method']}** {first['kendall']:.3f}{margin}")
        out.append(f"| {m} | {n:,} | {ref['kendall']:.3f} | " + " | ".join(cells) + " |")
    return out


def detail_table(rows, model, epsilons):
    """Markdown: every method's Kendall distance (± se) per point; the best per point in bold."""
    sel = [r for r in rows if r["model"] == model]
    methods = list(dict.fromkeys(r["method"] for r in sel if r["method"] != "none"))
    best = best_by_point(rows)
    refs = references(rows)
    out = ["| m | n | ε | " + " | ".join(f"`{x}`" for x in methods) + " |", "|---" * (3 + len(methods)) + "|"]
    by = {(r["m"], r["n"], r["epsilon"], r["method"]): r for r in sel}
    for m, n in sorted({(r["m"], r["n"]) for r in sel}):
        fam = sel[0]["family"]
        ref = refs.get((fam, model, m, n))
        out.append(f"| {m} | {n:,} | non-private | " + f"{_fmt(ref)} | " + " | ".join("" for _ in methods[1:]) + " |")
        for e in epsilons:
            b = best.get((fam, model, m, n, e))
            cells = []
            for x in methods:
                r = by.get((m, n, e, x))
                if r is None:
                    cells.append("not run")
                else:
                    text = _fmt(r)
                    cells.append(f"**{text}**" if b and r["method"] == b[0]["method"] else text)
            out.append(f"| {m} | {n:,} | {e:g} | " + " | ".join(cells) + " |")
    return out


def plot(rows, path: Path, panels):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [p for p in panels if any((r["model"], r["m"], r["n"]) == p for r in rows)]
    if not panels:
        return False
    cols = min(3, len(panels))
    nrows = math.ceil(len(panels) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.9 * nrows), squeeze=False)
    names = [m.name for m in RANKING_METHODS + COMPARISON_METHODS]
    colours = {name: plt.get_cmap("tab20")(k % 20) for k, name in enumerate(names)}
    for ax, (model, m, n) in zip(axes.ravel(), panels):
        sel = [r for r in rows if (r["model"], r["m"], r["n"]) == (model, m, n)]
        for method in dict.fromkeys(r["method"] for r in sel):
            rs = sorted((r for r in sel if r["method"] == method), key=lambda r: r["epsilon"] or 0)
            if method == "none":
                ax.axhline(rs[0]["kendall"], color="black", ls=":", lw=1, label="non-private")
                continue
            eps = [r["epsilon"] for r in rs]
            ax.errorbar(eps, [r["kendall"] for r in rs], yerr=[r["kendall_se"] for r in rs], marker="o", ms=3,
                        lw=1.2, capsize=2, label=method, ls="--" if rs[0]["trust"] == "local" else "-",
                        color=colours.get(method))
        ax.set_xscale("log")
        ax.set_title(f"{model}, m = {m}, n = {n:,}", fontsize=10)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("Kendall distance to the truth")
        ax.set_ylim(-0.02, 0.55)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6.5, ncol=2)
    for ax in axes.ravel()[len(panels):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return True


PANELS = [("mallows-0.8", 10, 1000), ("mallows-0.8", 50, 10_000), ("mallows-0.8", 200, 10_000),
          ("mallows-0.95", 20, 10_000), ("plackett-luce", 50, 10_000), ("sushi", 10, 5000),
          ("btl", 20, 10_000), ("btl", 100, 100_000), ("llmfao", 59, 8931)]


def wins_table(rows):
    """Markdown: per family and trust model, how many grid points each method wins (best mean Kendall
    distance among that trust model's methods), and how many more it ties (within 2 standard errors of the best)."""
    groups = {}
    for r in rows:
        if r["method"] != "none":
            groups.setdefault((r["family"], r["trust"], r["model"], r["m"], r["n"], r["epsilon"]), []).append(r)
    wins, ties, points = {}, {}, {}
    for (family, trust, *_), rs in groups.items():
        rs = sorted(rs, key=lambda r: (r["kendall"], -r["recall"], r["seconds"]))
        best = rs[0]
        points[family, trust] = points.get((family, trust), 0) + 1
        wins[family, trust, best["method"]] = wins.get((family, trust, best["method"]), 0) + 1
        for r in rs[1:]:
            if r["kendall"] - best["kendall"] <= 2 * math.hypot(r["kendall_se"], best["kendall_se"]):
                ties[family, trust, r["method"]] = ties.get((family, trust, r["method"]), 0) + 1
    out = ["| family | trust | method | best at | within 2 se of the best at | of points |", "|---|---|---|---|---|---|"]
    methods = sorted({key for key in [*wins, *ties]}, key=lambda k: (k[0] != "rankings", k[1], -wins.get(k, 0), -ties.get(k, 0), k[2]))
    for family, trust, method in methods:
        out.append(f"| {family} | {trust} | `{method}` | {wins.get((family, trust, method), 0)} | "
                   f"{ties.get((family, trust, method), 0)} | {points[family, trust]} |")
    return out


def far_from_floor(rows, epsilon=1.0, gap=0.1):
    """Points at ``epsilon`` where even the best private method is more than ``gap`` above the non-private floor."""
    best, refs = best_by_point(rows), references(rows)
    out = []
    for (family, model, m, n, e), (first, _) in sorted(best.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][3])):
        ref = refs.get((family, model, m, n))
        if e == epsilon and ref and first["kendall"] - ref["kendall"] > gap:
            out.append(f"{model} m={m} n={n:,} ({first['kendall']:.2f} against {ref['kendall']:.2f})")
    return out


#: what the committed run says, written from its numbers (a rerun rewrites the tables, not this text)
FINDINGS = """
**Rankings, central: noisy Borda.** Releasing every item's Borda score with noise of the score
vector's exact sensitivity (l1 floor(m^2/2)/n; `noisy-borda`, added after this frontier showed room)
is the most accurate central method on most of the grid from m = 10 up, on all three ranking
models, and by a wide margin from m = 50: at m = 50, n = 1,000 and epsilon 1 it misorders 3.3% of
the pairs of the concentrated Mallows profile, where the best of the papers' methods (Hay's
quicksort) misorders 14% and the noisy matrix 21%; at m = 200, n = 10,000, epsilon 1, 1.4% against
6% and 14%. It releases m numbers where the noisy matrix releases m(m - 1)/2: Borda computed from
the noisy matrix sums m - 1 noisy entries and carries about sqrt(m) times its noise. Like every
positional rule it estimates the Borda order, which on real rankings can differ from the Kemeny
order (sushi: in 2 of 45 pairs), so with little noise the Kemeny methods are closer to a Kemeny
reference there.

**Rankings, central: the papers' methods.** Hay et al.'s budgeted quicksort (`hay-quicksort`) is
the most accurate of them on most of the grid from m = 20 up: at m = 200, n = 10,000 and epsilon 1
it misorders 6% of the pairs where the noisy matrix misorders 14% and DPKwikSort 32%. Its
comparisons are few (q = 2(m + 1)H_m - 4m, about 2 m ln m) and get the whole budget, so each
carries Laplace noise of scale q/(eps n); the noisy matrix pays m(m - 1)/2/(eps n) on every entry,
and DPKwikSort about 3.1 m ln m/(eps n/2) per comparison (its cap is a tail bound, and half of the
budget is kept for the fallback), four times Hay's. Hay's weakness is the one its analysis states:
groups it cannot finish within its budget stay in random order, so its error does not reach 0 as n
grows: at m = 10 and n = 100,000 it misorders 1% to 8% of the pairs at every epsilon, where every
other central method is exact from epsilon 0.5 up.

**One release, four answers.** On the same released matrix, Borda or Copeland scores do as well as
the Kemeny solve of the default solver or better wherever the noise is large: solving the noisy
matrix exactly fits the noise. With little noise all four agree. The fast heuristic solver
(`noisy-matrix+kwiksort`, one KwikSort run) loses much from m = 50 up (0.43 against 0.14 at m = 200,
n = 10,000, epsilon 1). `dp-footrule` trails the noisy matrix at every size, and `dp-ptas` (its
`auto` variant picks `buckets` when n epsilon is small, whose marginals are released the simple way,
not by the projection mechanisms its rate needs) trails it badly at small epsilon. The exponential
mechanism (m = 5 only) is among the best at m = 5 and nowhere else to be had.

**Rankings, local.** No local method comes near the central ones. `ldp-matrix` is the best local
method wherever it runs (its reports have m(m - 1)/2 entries, so it is capped at n m(m-1)/2 <= 2.5e6
here); `ldp-kwiksort` is close to a random order (0.4 to 0.5) at nearly every point with m >= 10:
voters are split into m groups and each answer is randomized at epsilon/(2 tau) (tau = 15 at m = 10,
so epsilon 0.033 per answer at epsilon 1) from n/m voters. `ldp-footrule` is the slowest method
(every voter's tree report has about 2 m^2 entries) and behind `ldp-matrix`.

**Comparisons.** Central: noisy Copeland counts win at small epsilon (<= 1) and on small or sparse
designs; objective perturbation wins once n epsilon is large (epsilon >= 2 at n >= 10,000), where
it comes within 0.01 of the non-private fit's floor at n = 100,000. Copeland counts assume a
balanced design: on LLMFAO, where one model was compared 2,762 times and the median one 174 times,
`noisy-copeland` stays at 0.44 even at epsilon 8, and so do Copeland counts without any noise (0.44
from the BTL fit: wins measure how often a model was shown), while objective perturbation reaches
0.15 at epsilon 1 and 0.06 at epsilon 8. Local: debiased randomized response beats the Laplace
baseline at almost every point, as Xu et al. predict; the two tie at epsilon 0.1 with few
comparisons, where both are near random.

**Where nothing private helps.** With n = 100 rankings of m >= 10 items no private method comes
within 0.18 of the truth at epsilon 1 (noisy Borda: 0.19 at m = 10, 0.27 at m = 50), where the
non-private answer is (nearly) exact; at m = 200 the papers' methods need n epsilon of about 10,000 to misorder fewer than 10% of the
pairs with the papers' methods (`hay-quicksort`: 0.085 at n = 1,000 and epsilon 8, 0.06 at n = 10,000 and epsilon 1),
and noisy Borda gets there with n epsilon of about 1,000 (0.13 at n = 1,000 and epsilon 1). On the real data the
floor is 0 by construction (the truth is the full data's own answer), so the distance is all privacy
noise: sushi (5,000 rankings of 10) is within 0.05 of its Kemeny order at every epsilon; the NFL
season (267 games) is at 0.20 at epsilon 1 and needs epsilon 4 to come within 0.07.
"""


def docs_page(rows, skipped, missing, epsilons, command, took, png) -> str:
    models = [m for m in MODELS if any(r["model"] == m for r in rows)]
    lines = ["# The utility frontier", "",
             "How close is each private method's answer to the truth? This page is written by "
             f"`{command}` (`benchmarks/bench_utility.py`; {took}, "
             f"{datetime.date.today().isoformat()}). Every private method of each family runs on the same "
             "data, drawn from a model whose truth is known (or real data, against the full-data non-private "
             "consensus); the error is the **normalised Kendall distance to the truth** (the fraction of item "
             "pairs in the wrong order: 0 is perfect, 0.5 is a random order), mean ± standard error over "
             f"{rows[0]['seeds']} seeds (each seed new data and new noise). The same numbers, with the top-k recall "
             "(k = max(1, m // 10)) and the seconds per run, are in `privrank/frontier.json`, which ships with "
             "the package and which the planner reads.", "",
             "A method is judged by its distance to the truth, never by how well it solves its own noisy "
             "statistic. The row `non-private` is the same data's non-private answer (exact Kemeny of the "
             "sampled rankings; the BTL fit of the sampled comparisons): the part of the error that is sampling, "
             "a floor no private method can be expected to beat.", "",
             "Methods are the names of `privrank aggregate --method` and `privrank rank --mechanism`. "
             "`noisy-matrix` is the released noisy pairwise matrix solved by the default solver (`auto`: exact up "
             "to 20 items, local search above, here without the `certify_seconds` polish); `noisy-matrix+kwiksort`, "
             "`+borda` and `+copeland` are the *same release* (same seed) solved by KwikSort (`--solver "
             "kwiksort`), by Borda or by Copeland scores instead: post-processing, at no privacy cost. Epsilon "
             "protects one ranking (rankings) or one comparison (comparisons; n is then the number of "
             "comparisons, each of a uniformly drawn pair).", "",
             "## Data", ""]
    for model in models:
        lines.append(f"* `{model}`: {MODELS[model]}.")
    for text in missing:
        lines.append(f"* not run (data missing): {text}")
    lines += ["", "## What it says", "", FINDINGS.strip(), "",
              "How often each method is the best of its trust model (central methods against central ones, local "
              "against local), over every grid point and epsilon, and how often it is within two standard errors "
              "of that best:", "", *wins_table(rows), ""]
    far = far_from_floor(rows)
    if far:
        lines += [f"At epsilon 1, no private method comes within 0.1 of the non-private floor at {len(far)} points: "
                  + "; ".join(far) + ".", ""]
    lines += ["", f"![Kendall distance to the truth against epsilon]({png})", "",
              "Solid lines are central methods, dashed lines local ones; the dotted line is the non-private "
              "answer on the same data.", "", "## Best method per grid point", "",
              "Each cell names the private method closest to the truth on average (central methods against "
              "central ones, local against local), its Kendall distance, and how much further the runner-up is "
              "(a margin within two standard errors is marked: a tie at this number of seeds).", ""]
    for model in models:
        for trust in ("central", "local"):
            if any(r["model"] == model and r["trust"] == trust for r in rows):
                lines += [f"### {model}, {trust} methods", "", *summary_table(rows, model, epsilons, trust), ""]
    lines += ["## Every method", "", "Kendall distance to the truth, mean ± standard error; the best per row "
              "in bold.", ""]
    for model in models:
        lines += [f"### {model}", "", *detail_table(rows, model, epsilons), ""]
    if skipped:
        lines += ["## Not run", ""]
        reasons = {}
        for s in skipped:
            reasons.setdefault((s["method"], s["reason"]), []).append(f"{s['model']} m={s['m']} n={s['n']:,}")
        for (method, reason), where in reasons.items():
            lines.append(f"* `{method}`, {reason}: {len(where)} points ({', '.join(where[:4])}"
                         f"{', ...' if len(where) > 4 else ''}).")
        lines.append("")
    return "\n".join(lines)


def readme_table(rows, epsilons):
    """Small table: best method per epsilon at a few points of the main models."""
    best, refs = best_by_point(rows), references(rows)
    pick = [("rankings", "mallows-0.8", 10, 1000), ("rankings", "mallows-0.8", 50, 10_000),
            ("rankings", "mallows-0.8", 200, 10_000), ("comparisons", "btl", 20, 10_000),
            ("comparisons", "btl", 100, 100_000)]
    pick = [p for p in pick if p in refs] or sorted(refs)[:4]
    out = ["| data | non-private | " + " | ".join(f"ε = {e:g}" for e in epsilons) + " |",
           "|---" * (2 + len(epsilons)) + "|"]
    for fam, model, m, n in pick:
        cells = []
        for e in epsilons:
            b = best.get((fam, model, m, n, e))
            cells.append(f"{b[0]['method']} {b[0]['kendall']:.3f}" if b else "-")
        out.append(f"| {model}, m = {m}, n = {n:,} | {refs[fam, model, m, n]['kendall']:.3f} | " + " | ".join(cells) + " |")
    return out


CUTS = ["n = 100,000 only for m <= 50 (rankings) and m <= 100 (btl; the Laplace baseline's fit takes seconds there)",
        "btl: only where n >= (m/2) ln(20 m), so that every item is compared (a design leaving one out is redrawn)",
        "ldp-matrix only where n m(m-1)/2 <= 2.5e6, ldp-footrule only where n m^2 <= 5e5, ldp-kwiksort where n >= m",
        "dp-ptas only for m <= 20; exponential only for m <= 8",
        "noisy-matrix and ldp-matrix with certify_seconds = 0 (no certification polish after local search)"]


def write_outputs(rows, skipped, missing, grid, command, took, json_path, docs, readme, generated=None):
    """The JSON (unless ``json_path`` is None: the rows were read from one), the page, the plot and
    (``readme``) the README section, from the rows of a run."""
    if json_path is not None:
        write_json(json_path, rows, skipped, missing, grid, command, took, generated)
    png = "frontier.png"
    quick = len(grid["epsilon"]) < len(EPSILONS)
    plotted = plot(rows, docs / png, PANELS if not quick else sorted({(r["model"], r["m"], r["n"]) for r in rows})[:3])
    (docs / "frontier.md").write_text(docs_page(rows, skipped, missing, grid["epsilon"], command, took,
                                                png if plotted else ""))
    if readme:
        table = "\n".join(["Kendall distance to the truth of the best private method, central or local (fraction "
                           f"of pairs misordered; mean of {grid['seeds']} seeds; where several reach 0.000 the first "
                           "named is one of them), and of the non-private answer on the same data:", "",
                           *readme_table(rows, grid["epsilon"])])
        spread.readme_section("utility", table, command,
                              note=f"{took}; mean over seeds (each seed new data and new noise).")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny grid, in seconds (the test's)")
    parser.add_argument("--out", type=Path, help="directory of frontier.json, frontier.md and frontier.png "
                                                 "(default: the package's frontier.json and docs/)")
    parser.add_argument("--seeds", type=int, help=f"seeds per point (default {SEEDS}; --quick 2)")
    parser.add_argument("--models", help="comma-separated subset of " + ", ".join(MODELS))
    parser.add_argument("--readme", action="store_true", help="rewrite the utility section of README.md")
    parser.add_argument("--resume", action="store_true",
                        help="reuse the points of an interrupted run (frontier.partial.jsonl beside the page)")
    parser.add_argument("--methods", help="comma-separated methods to (re)measure; their rows replace theirs in the "
                                          "existing frontier.json, whose other rows are kept (their data and noise "
                                          "seeds are the same)")
    parser.add_argument("--from-json", type=Path, metavar="PATH",
                        help="run nothing: rewrite the page, the plot (and with --readme the README) from a frontier.json, "
                             "left as it is")
    args = parser.parse_args(argv)
    json_path = JSON_PATH if args.out is None else args.out / "frontier.json"
    docs = DOCS if args.out is None else args.out
    docs.mkdir(parents=True, exist_ok=True)
    if args.from_json:
        data = json.loads(args.from_json.read_text())
        grid = data["grid"]
        write_outputs(data["rows"], data["not_run"], data["missing_data"], grid, data["command"], data["took"],
                      None, docs, args.readme, data["generated"])
        print(f"rewrote {docs / 'frontier.md'} from {args.from_json}, which is left as it is")
        return
    if args.quick:
        ms, ns, epsilons, seeds, models = QUICK["ms"], QUICK["ns"], QUICK["epsilons"], QUICK["seeds"], QUICK["models"]
    else:
        ms, ns, epsilons, seeds, models = MS, NS, EPSILONS, SEEDS, tuple(MODELS)
    seeds = args.seeds or seeds
    if args.models:
        models = tuple(args.models.split(","))
        unknown = set(models) - set(MODELS)
        if unknown:
            parser.error(f"unknown models: {', '.join(sorted(unknown))}")
    only = None
    if args.methods:
        only = set(args.methods.split(","))
        unknown = only - {m.name for m in RANKING_METHODS + COMPARISON_METHODS}
        if unknown:
            parser.error(f"unknown methods: {', '.join(sorted(unknown))}")
    command = spread.command()
    print(f"# before: {spread.load()}", flush=True)
    start, cpu_start = time.perf_counter(), time.process_time()
    checkpoint = Checkpoint(docs / "frontier.partial.jsonl", args.resume)
    rows, skipped, missing = run_grid(ms, ns, epsilons, seeds, models,
                                      lambda text: print(f"[{time.perf_counter() - start:7.1f} s wall, "
                                                          f"{time.process_time() - cpu_start:7.1f} s CPU] {text}", flush=True),
                                      checkpoint, only)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    print(f"# after: {spread.load()}; {seconds:.0f} s wall, {cpu:.0f} s CPU", flush=True)
    grid = {"m": list(ms), "n": list(ns), "epsilon": list(epsilons), "seeds": seeds, "models": list(models),
            "cuts": [] if args.quick else CUTS}
    took = (f"{cpu / 60:.0f} minutes of CPU in one process ({seconds / 60:.0f} minutes of wall time on a shared "
            "2-core machine)")
    if only:  # the other methods' rows, the reference rows and the rest of the head are the existing file's
        old = json.loads(json_path.read_text())
        rows = [r for r in old["rows"] if r["method"] not in only] + [r for r in rows if r["method"] in only]
        skipped = [s_ for s_ in old["not_run"] if s_["method"] not in only] + skipped
        grid, command, took = old["grid"], old["command"] + f"; {command}", old["took"] + f"; then {took}"
    write_outputs(rows, skipped, missing, grid, command, took, json_path, docs, args.readme)
    checkpoint.path.unlink(missing_ok=True)
    print(f"wrote {json_path} ({len(rows)} rows), {docs / 'frontier.md'}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
