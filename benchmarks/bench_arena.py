"""Arena leaderboard at scale: privrank's private release with intervals against the scikit-learn recipe.

Data (written once to ``benchmarks/.data/``, git-ignored): ``--battles`` (default 1e7) battles of
``--models`` (default 1,000) models in the LMSYS dump's columns ``model_a, model_b, winner`` (``model_a``,
``model_b`` or ``tie``) and ``judge``. Model strengths are N(0, 1) log-strengths; a battle's two models
are drawn by popularity proportional to ``rank^-0.8`` (uneven battle counts, as in a real arena: the
rarest model has ~1/250 of the busiest one's battles); 15% of battles are ties (a simple draw rule: a tie
with probability 0.15, else Bradley-Terry); judges vote in proportion to ``rank^-1`` (one judge per 20
battles, a few very busy ones). The public model list is written beside the file.

Contenders, each a fresh process (wall time from start to exit, peak resident memory from ``wait4``):

* ``privrank private``: ``privrank rank FILE --mechanism objective-perturbation --user-epsilon E
  --max-answers K --respondents J --items MODELS --ci``, reading included. An arena
  holds its judges' raw votes, so the central model applies, and a judge casts many votes, so the unit is
  the judge (each judge's first K votes, a declared bound). Objective perturbation (Cai, Chakraborty,
  Wang, Algorithm 1) fits the Bradley-Terry likelihood itself, so a model is credited for whom it beat;
  noisy Copeland counts wins and would favour models that happened to meet weak opponents, and local
  randomized response would randomize every vote. The intervals are sandwich intervals (analytic;
  ``--bias-corrected`` costs one more solve, and needs a release not too noisy to correct). J, the number
  of judges, is declared public.
* ``privrank non-private``: ``privrank rank FILE --mechanism none --lambda 0 --ci``: the Bradley-Terry
  maximum-likelihood estimate with ties as half a win each way, and its sandwich intervals.
* ``sklearn``: the public Chatbot Arena recipe, ``LogisticRegression(fit_intercept=False, penalty=None,
  tol=1e-6)`` on one row per battle (+1 in model_a's column, -1 in model_b's; the label is "model_a
  won"), a tie as two rows of weight 1/2 (one won, one lost: the notebook's duplicated rows, with
  weights), design matrix sparse (dense would be 80 GB at 1e7 battles), Elo = 400/ln(10) coef + 1000.
  One fit is timed, then ``--refits`` bootstrap refits (battles resampled with replacement); the time of
  the recipe's 100-refit bootstrap is EXTRAPOLATED from them and printed as such.

Answers: Kendall tau between privrank's non-private scores and the recipe's (the same model: same
likelihood, same ties), and between the private and the non-private scores. Timings are the median
(min-max) over ``--rounds`` interleaved rounds (``benchmarks/spread.py``), the recipe over
``--recipe-rounds`` (default 3, to keep the run under an hour).

    python benchmarks/bench_arena.py                       # 1e7 battles, 1,000 models
    python benchmarks/bench_arena.py --battles 1e6 --refits 3 --rounds 3
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import spread  # noqa: E402

DATA = Path(__file__).resolve().parent / ".data"
ROOT = Path(__file__).resolve().parents[1]
ROW_GROUP = 1 << 20
TIE_SHARE = 0.15
BATTLES_PER_JUDGE = 20
ELO = 400.0 / np.log(10.0)
BOOTSTRAP = 100

RECIPE = r"""
import json, sys, time
import numpy as np, pandas as pd, scipy.sparse
from sklearn.linear_model import LogisticRegression
path, refits = sys.argv[1], int(sys.argv[2])
start = time.perf_counter()
df = pd.read_parquet(path, columns=["model_a", "model_b", "winner"])
models = np.unique(np.concatenate([df["model_a"].unique(), df["model_b"].unique()]))
a = np.searchsorted(models, df["model_a"].to_numpy())
b = np.searchsorted(models, df["model_b"].to_numpy())
won = (df["winner"] == "model_a").to_numpy()
tie = df["winner"].isin(["tie", "tie (bothbad)"]).to_numpy()
read = time.perf_counter() - start

def fit(a, b, won, tie):
    # one row per battle; a tie twice, once won and once lost, with weight 1/2 each
    t = np.flatnonzero(tie)
    rows_a, rows_b = np.concatenate([a, a[t]]), np.concatenate([b, b[t]])
    y = np.concatenate([won | tie, np.zeros(t.size, bool)])
    w = np.where(np.concatenate([tie, np.ones(t.size, bool)]), 0.5, 1.0)
    n = rows_a.size
    X = scipy.sparse.csr_matrix((np.tile([1.0, -1.0], n), np.stack([rows_a, rows_b], 1).ravel(),
                                 np.arange(0, 2 * n + 1, 2)), shape=(n, models.size))
    lr = LogisticRegression(fit_intercept=False, penalty=None, tol=1e-6)
    lr.fit(X, y, sample_weight=w)
    return lr.coef_[0]

t = time.perf_counter()
coef = fit(a, b, won, tie)
fit_s = time.perf_counter() - t
rng = np.random.default_rng(0)
refit_s = []
for _ in range(refits):
    t = time.perf_counter()
    k = rng.integers(0, a.size, a.size)
    fit(a[k], b[k], won[k], tie[k])
    refit_s.append(time.perf_counter() - t)
print(json.dumps({"read_s": read, "fit_s": fit_s, "refit_s": refit_s, "models": models.tolist(),
                  "elo": (400 / np.log(10) * coef + 1000).tolist()}))
"""


def generate(path: Path, battles: int, models: int, seed: int = 0) -> None:
    """Write ``battles`` arena battles of ``models`` models to ``path`` (see the module docstring)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, models)
    popularity = rng.permutation(1.0 / np.arange(1, models + 1) ** 0.8)
    cdf = np.cumsum(popularity / popularity.sum())
    judges = max(1, battles // BATTLES_PER_JUDGE)
    activity = np.cumsum(1.0 / np.arange(1, judges + 1))
    names = pa.array([f"model-{k:04d}" for k in range(models)])
    words = pa.array(["model_a", "model_b", "tie"])
    schema = pa.schema([("model_a", pa.string()), ("model_b", pa.string()), ("winner", pa.string()),
                        ("judge", pa.string())])
    tmp = path.with_suffix(".partial")
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, battles, ROW_GROUP):
            size = min(ROW_GROUP, battles - start)
            a = np.minimum(np.searchsorted(cdf, rng.random(size)), models - 1)
            b = np.minimum(np.searchsorted(cdf, rng.random(size)), models - 1)
            same = np.flatnonzero(a == b)
            while same.size:  # a model never battles itself
                b[same] = np.minimum(np.searchsorted(cdf, rng.random(same.size)), models - 1)
                same = same[a[same] == b[same]]
            p = 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
            code = np.where(rng.random(size) < TIE_SHARE, 2, np.where(rng.random(size) < p, 0, 1))
            judge = np.minimum(np.searchsorted(activity, rng.random(size) * activity[-1]), judges - 1)
            writer.write_table(pa.table({
                "model_a": names.take(a), "model_b": names.take(b), "winner": words.take(code),
                "judge": pc.binary_join_element_wise("judge-", pa.array(judge).cast(pa.string()), "")},
                schema=schema), row_group_size=ROW_GROUP)
    tmp.rename(path)
    path.with_suffix(".models.txt").write_text("".join(f"model-{k:04d}\n" for k in range(models)))


def run(command: list[str], work: Path) -> tuple[float, float, str]:
    """Run ``command``; its wall time (s), peak resident memory (GB) and standard output. privrank's
    state lives in ``work/state``, not in the user's own, and apart from the outputs (which the CLI
    refuses to write inside its state directory)."""
    out = tempfile.TemporaryFile()
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=out, stderr=subprocess.DEVNULL, cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "PRIVRANK_STATE": str(work / "state")})
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{command[:4]} failed with exit code {child.returncode}")
    out.seek(0)
    return wall, usage.ru_maxrss / 2 ** 20, out.read().decode()


def scores_of(csv_path: Path) -> dict:
    """``{item: score}`` of a ``privrank rank --format csv`` output."""
    import csv
    with open(csv_path, newline="") as f:
        return {row["item"]: float(row["score"]) for row in csv.DictReader(f)}


def tau(x: dict, y: dict) -> float:
    from scipy.stats import kendalltau
    keys = sorted(x)
    return float(kendalltau([x[k] for k in keys], [y[k] for k in keys]).statistic)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=float, default=1e7)
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--user-epsilon", type=float, default=1.0, help="privacy budget per judge")
    parser.add_argument("--max-answers", type=int, default=50, help="declared bound on votes per judge")
    parser.add_argument("--rounds", type=int, default=spread.ROUNDS, help="rounds of the privrank runs")
    parser.add_argument("--recipe-rounds", type=int, default=3,
                        help="rounds of the scikit-learn recipe (0: privrank alone)")
    parser.add_argument("--refits", type=int, default=3, help="bootstrap refits timed (>= 3)")
    parser.add_argument("--readme", action="store_true", help="write the table into README.md")
    args = parser.parse_args(argv)
    battles = int(args.battles)
    if args.refits < 3:
        raise SystemExit("--refits must be at least 3")
    DATA.mkdir(exist_ok=True)
    path = DATA / f"arena_{battles}_{args.models}.parquet"
    if not path.exists():
        t = time.perf_counter()
        generate(path, battles, args.models)
        print(f"wrote {path} ({path.stat().st_size / 2 ** 20:.0f} MB) in {time.perf_counter() - t:.0f} s")
    with tempfile.TemporaryDirectory(prefix="bench_arena_") as work:  # outputs and ledger, removed at exit
        measure(args, path, battles, Path(work))


def measure(args, path: Path, battles: int, work: Path) -> None:
    """The interleaved privrank runs, then the recipe's; the table (and ``--readme``, README.md's section)."""
    judges = max(1, battles // BATTLES_PER_JUDGE)
    print(spread.load())
    py = sys.executable
    private = [py, "-m", "privrank", "rank", str(path), "--mechanism", "objective-perturbation",
               "--user-epsilon", str(args.user_epsilon), "--max-answers", str(args.max_answers),
               "--respondents", str(judges), "--items", str(path.with_suffix(".models.txt")), "--ci",
               "--format", "csv", "--force", "--seed", "1"]
    open_ = [py, "-m", "privrank", "rank", str(path), "--mechanism", "none", "--lambda", "0", "--ci",
             "--format", "csv", "--force"]
    memory: dict[str, list[float]] = {"private": [], "non-private": [], "sklearn": []}
    recipe: list[dict] = []

    def privrank_run(name, command):
        def go():
            out = work / f"{name}.csv"
            wall, peak, _ = run(command + ["--output", str(out), "--ledger", str(work / "ledger.sqlite")], work)
            memory[name].append(peak)
            return out
        return go

    def sklearn_run():
        wall, peak, text = run([py, "-c", RECIPE, str(path), str(args.refits)], work)
        memory["sklearn"].append(peak)
        recipe.append(json.loads(text))
        return wall

    contenders = {"private": privrank_run("private", private), "non-private": privrank_run("non-private", open_)}
    times, outputs = spread.interleaved(contenders, rounds=args.rounds)
    noisy, exact = scores_of(outputs["private"]), scores_of(outputs["non-private"])
    for name in contenders:
        print(f"privrank {name}: {spread.spread(times[name], '{:.2f}')} s, peak {max(memory[name]):.2f} GB")
    print(f"Kendall tau private vs non-private {tau(noisy, exact):.4f}; {spread.load()}", flush=True)
    if not args.recipe_rounds:
        return
    for _ in range(args.recipe_rounds):
        sklearn_run()
    print(spread.load())

    sk = recipe[-1]
    elo = dict(zip(sk["models"], sk["elo"]))
    tau_recipe, tau_private = tau(exact, elo), tau(noisy, exact)
    fit = [r["fit_s"] for r in recipe]
    refit = [float(np.mean(r["refit_s"])) for r in recipe]
    whole = [r["read_s"] + f + BOOTSTRAP * m for r, f, m in zip(recipe, fit, refit)]
    rows = [
        ("privrank private, 95% intervals (whole command)", spread.spread(times["private"], "{:.2f}") + " s",
         f"{max(memory['private']):.2f} GB"),
        ("privrank non-private MLE, 95% intervals (whole command)", spread.spread(times["non-private"], "{:.2f}")
         + " s", f"{max(memory['non-private']):.2f} GB"),
        ("scikit-learn recipe: reading and one fit", spread.spread([r["read_s"] + f for r, f in zip(recipe, fit)],
                                                                   "{:.1f}") + " s",
         f"{max(memory['sklearn']):.2f} GB"),
        (f"scikit-learn recipe: one bootstrap refit (mean of {args.refits})", spread.spread(refit, "{:.1f}") + " s",
         ""),
        (f"scikit-learn recipe with its {BOOTSTRAP}-refit bootstrap (EXTRAPOLATED)", spread.spread(whole, "{:.0f}")
         + " s", ""),
    ]
    speedup = statistics.median(whole) / statistics.median(times["private"])
    table = "\n".join(["| arena, %s battles of %s models | time | peak memory |" % (f"{battles:,}", f"{args.models:,}"),
                       "|---|---|---|"] + [f"| {a} | {b} | {c} |" for a, b, c in rows])
    table += (f"\n\nKendall tau: privrank non-private vs the recipe {tau_recipe:.4f}; private (judge-level "
              f"epsilon {args.user_epsilon:g}, at most {args.max_answers} votes per judge) vs non-private "
              f"{tau_private:.4f}. The recipe with its bootstrap (extrapolated) took "
              f"{speedup:.0f}x the private run's time (ratio of medians).")
    print(table)
    print(f"privrank private {spread.spread(times['private'], '{:.2f}')} s over {args.rounds} rounds; recipe over "
          f"{args.recipe_rounds} rounds")
    if args.readme:
        spread.readme_section("arena", table, spread.command())


if __name__ == "__main__":
    main()
