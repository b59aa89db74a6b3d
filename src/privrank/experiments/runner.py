"""Experiment runner shared by the paper reproductions (``privrank reproduce STUDY``).

Writing a study
---------------
A study is a module ``privrank.experiments.<name>`` providing one function::

    def build(quick: bool = False, reps: int | None = None) -> Study: ...

``build`` declares everything before anything runs; ``quick`` selects a smaller grid (with
enough replications for every claim to hold), ``reps`` overrides every replication count.
``privrank reproduce <name>`` finds the module by its name. A :class:`Study` has a name, a
title and a description (the head of ``summary.md``) and holds

* :class:`Experiment` s: a name, a grid of cells (dicts of settings, see :func:`grid`), a
  replication count, a per-replication function ``replicate(cell, rng) -> {metric: value}``
  and, for experiments on optional data, ``requires()``, which loads what the experiment needs
  and raises :class:`~privrank.errors.InputError` (e.g. ``DatasetNotFound``) when it is
  missing: the experiment is then skipped and reported, never a crash. ``replicate`` must be a
  module-level function (worker processes receive it by reference) that draws every random
  number from ``rng`` and may return any number of metrics (for several methods run on the
  same simulated data, name them e.g. ``"l2.debiased"``). Setup shared by the replications of
  a cell (a loaded data set, a generated profile) can be cached in the study module with
  :func:`functools.lru_cache`, keyed by the cell's settings; if it is random, seed it from a
  setting of the cell so that it stays a function of the cell.
* claims (:class:`~privrank.experiments.claims.Less`, ``Within``, ``Never``, in
  :mod:`privrank.experiments.claims`): one-sided statistical tests on
  cell means (:class:`Mean`, :class:`Ratio`, :class:`Slope`, or a fitted :class:`Coefficient`)
  with tolerances in standard errors, declared before the run. Those with
  ``required=False`` are observations: statements of the paper reported against the data,
  not expected to hold.
* :class:`~privrank.experiments.figures.Figure` s (:mod:`privrank.experiments.figures`): panels of curves, each curve the mean of a metric against a setting
  (default ``L``) with its 95% confidence band.

:func:`run` runs the study and writes ``results/<study>/``:

* ``results.csv`` - the tidy table: one row per cell x replication x metric, with columns
  ``experiment``, the settings of every experiment (blank where a setting does not apply),
  ``rep``, ``metric``, ``value``;
* one PNG per figure (needs matplotlib, the ``plot`` extra; skipped with a message without);
* ``claims.csv`` (``id,claim,expected,observed,holds``; ``holds`` is True, False or skipped),
  and ``observations.csv`` in the same form when the study has observations;
* ``summary.md`` - each figure next to its claims, then the cell means with 95% confidence
  intervals (mean +- 1.96 standard errors);
* ``cells.jsonl`` - finished cells, so that a re-run skips them (``fresh=True`` recomputes).

Seeding
-------
Replication ``r`` of a cell draws from ``numpy.random.SeedSequence(seed, spawn_key=(h, r))``
where ``h`` is a SHA-256 hash of the experiment name and the cell's settings. Results are
therefore identical whatever the number of worker processes, the order cells finish in, or
which cells were resumed from an earlier run, and adding replications keeps the earlier ones.

Standard errors
---------------
A cell's standard error is ``sd / sqrt(reps)`` over its replications. A selection
(:class:`Sel`) of several cells is pooled with equal weight per cell: the mean of the cell
means, with standard error ``sqrt(sum se_c^2) / n_cells``. A selection with ``worst`` (e.g. the
worst case over a family of inputs) first keeps, of the cells that differ only in that setting,
the one with the largest mean. Two statistics compared by a claim must come from disjoint cells
(independent), or be means of different metrics over the same cells, which are compared
replication by replication (paired). Cells of one experiment may return different metrics
(a method that applies to some cells only).
"""
from __future__ import annotations

import csv
import hashlib
import importlib
import io
import json
import multiprocessing
import os
import pkgutil
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from itertools import product
from pathlib import Path

import numpy as np

from ..files import write_text_atomic
from ..errors import InputError
from ..progress import progress_bar
from .claims import CellResult, Results, Z95, mean_se
from .figures import plot_figure


# --------------------------------------------------------------------------------------------
# declarations
# --------------------------------------------------------------------------------------------

def grid(**axes) -> tuple[dict, ...]:
    """Cells of the Cartesian product of the axes, in the order given (last axis fastest)."""
    names = list(axes)
    values = [[v.item() if isinstance(v, np.generic) else v for v in axes[n]] for n in names]
    return tuple(dict(zip(names, combo)) for combo in product(*values))


@dataclass(frozen=True)
class Experiment:
    """A grid of cells, each replicated ``reps`` times by ``replicate(cell, rng)``."""

    name: str
    title: str
    cells: tuple
    reps: int
    replicate: Callable
    requires: Callable | None = None


@dataclass(frozen=True)
class Study:
    """Everything a reproduction declares before it runs (see module docstring)."""

    name: str
    title: str
    experiments: tuple
    claims: tuple = ()
    figures: tuple = ()
    description: str = ""

    def __post_init__(self):
        names = [e.name for e in self.experiments]
        ids = [c.id for c in self.claims]
        figs = {f.id for f in self.figures}
        if len(set(names)) != len(names) or len(set(ids)) != len(ids):
            raise InputError(f"study {self.name}: experiment names and claim ids must be unique")
        for f in self.figures:
            if f.experiment not in names:
                raise InputError(f"study {self.name}: figure {f.id} draws an unknown experiment")
        for c in self.claims:
            if c.figure is not None and c.figure not in figs:
                raise InputError(f"study {self.name}: claim {c.id} names an unknown figure")

    def experiment(self, name: str) -> Experiment:
        for e in self.experiments:
            if e.name == name:
                return e
        raise KeyError(name)


# --------------------------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------------------------

def cell_key(experiment: str, cell: Mapping) -> str:
    """Stable identity of a cell: experiment name and settings."""
    return experiment + " " + json.dumps(cell, sort_keys=True)


def replication_seed(seed: int, key: str, rep: int) -> np.random.SeedSequence:
    """The seed sequence of replication ``rep`` of the cell ``key`` (see module docstring)."""
    digest = hashlib.sha256(key.encode()).digest()
    words = [int.from_bytes(digest[k:k + 4], "little") for k in range(0, 16, 4)]
    return np.random.SeedSequence(int(seed), spawn_key=(*words, int(rep)))


def run_cell(replicate: Callable, cell: dict, key: str, seed: int, reps: int) -> dict:
    """All replications of one cell: ``{metric: [values]}`` and the warnings raised."""
    values: dict[str, list] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for r in range(reps):
            out = replicate(dict(cell), np.random.default_rng(replication_seed(seed, key, r)))
            if r == 0:
                values = {name: [] for name in out}
            if set(out) != set(values):
                raise InputError(f"{key}: replication {r} returned different metrics")
            for name, v in out.items():
                values[name].append(float(v))
    counts: dict[str, int] = {}
    for w in caught:
        msg = f"{w.category.__name__}: {w.message}"
        counts[msg] = counts.get(msg, 0) + 1
    return {"key": key, "seed": int(seed), "reps": int(reps), "values": values, "warnings": counts}


def _load_store(path: Path) -> dict:
    """Finished cells of earlier runs, by (key, seed, reps); a torn last line is ignored."""
    done = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                rec = json.loads(line)
                done[(rec["key"], rec["seed"], rec["reps"])] = rec
            except (json.JSONDecodeError, KeyError, TypeError):
                continue
    return done


def run_cells(study: Study, out: Path, *, seed: int = 0, jobs: int = 2, fresh: bool = False,
              progress: bool = True) -> Results:
    """Run every cell not already stored in ``out/cells.jsonl`` and return all cell results."""
    if int(seed) < 0:
        raise InputError("seed must be a non-negative integer")
    if int(jobs) < 1:
        raise InputError("jobs must be >= 1")
    out.mkdir(parents=True, exist_ok=True)
    store_path = out / "cells.jsonl"
    if fresh and store_path.exists():
        store_path.unlink()
    store = _load_store(store_path)
    skipped, todo, records = {}, [], {}
    for exp in study.experiments:
        if exp.requires is not None:
            try:
                exp.requires()
            except InputError as exc:
                skipped[exp.name] = str(exc)
                continue
        for cell in exp.cells:
            key = cell_key(exp.name, cell)
            rec = store.get((key, int(seed), int(exp.reps)))
            if rec is None:
                todo.append((exp, cell, key))
            else:
                records[key] = rec
    resumed = len(records)
    bar = progress_bar(len(todo), f"privrank reproduce {study.name}", "cell", enabled=progress and bool(todo))
    with store_path.open("a", encoding="utf-8") as fh:
        def finished(rec):
            records[rec["key"]] = rec
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            bar.update(1)

        try:
            if jobs == 1 or len(todo) <= 1:
                for exp, cell, key in todo:
                    finished(run_cell(exp.replicate, cell, key, seed, exp.reps))
            else:
                _run_parallel(todo, seed, jobs, finished)
        finally:
            bar.close()
    cells: dict[str, list[CellResult]] = {}
    for exp in study.experiments:
        if exp.name in skipped:
            continue
        cells[exp.name] = []
        for cell in exp.cells:
            key = cell_key(exp.name, cell)
            rec = records[key]
            cells[exp.name].append(CellResult(exp.name, dict(cell), key,
                                              {k: np.asarray(v, dtype=float) for k, v in rec["values"].items()},
                                              rec["warnings"]))
    return Results(cells, skipped, len(todo), resumed)


ONE_THREAD_ENV = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def _run_parallel(todo, seed, jobs, finished) -> None:
    """Run cells in ``jobs`` fresh worker processes, each with a single-threaded BLAS.

    Every worker keeps one core busy, so a multithreaded BLAS in each of them would oversubscribe
    the cores, and dense linear algebra (Newton steps on hundreds of items) then runs many times
    slower. A BLAS reads its thread count when it is loaded, so the workers are started afresh
    ("spawn") with :data:`ONE_THREAD_ENV` in their environment; the caller's environment is
    restored afterwards.
    """
    saved = {name: os.environ.get(name) for name in ONE_THREAD_ENV}
    os.environ.update(ONE_THREAD_ENV)
    try:
        with ProcessPoolExecutor(max_workers=int(jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
            pending = {pool.submit(run_cell, exp.replicate, cell, key, seed, exp.reps) for exp, cell, key in todo}
            try:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        finished(fut.result())
            except BaseException:
                pool.shutdown(wait=False, cancel_futures=True)
                raise
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# --------------------------------------------------------------------------------------------
# outputs
# --------------------------------------------------------------------------------------------

def tidy_rows(results: Results) -> tuple[list[str], list[list]]:
    """Header and rows of the tidy table (one row per cell x replication x metric)."""
    params: list[str] = []
    for cells in results.cells.values():
        for c in cells:
            params += [k for k in c.cell if k not in params]
    header = ["experiment", *params, "rep", "metric", "value"]
    rows = []
    for name, cells in results.cells.items():
        for c in cells:
            settings = [c.cell.get(k, "") for k in params]
            for metric, v in c.values.items():
                rows += [[name, *settings, r, metric, repr(float(x))] for r, x in enumerate(v)]
    return header, rows


def _csv_text(header, rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    w.writerows(rows)
    return buf.getvalue()


def _md_table(header, rows) -> list[str]:
    def esc(v):
        return str(v).replace("|", "\\|")
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + \
        ["| " + " | ".join(esc(v) for v in r) + " |" for r in rows]


def _claim_rows(rows) -> list[list]:
    return [[r["id"], r["claim"], r["expected"], r["observed"], r["holds"]] for r in rows]


def summary_markdown(study: Study, results: Results, claims: list[dict], observations: list[dict],
                     figures: dict, *, command: str, seconds: float) -> str:
    """The report: run facts, claims next to their figures, warnings, cell means with 95% CIs."""
    by_id = {c.id: c for c in study.claims}
    req = [r for r in claims if r["holds"] != "skipped"]
    held = sum(r["holds"] is True for r in req)
    lines = [f"# {study.title}", "", study.description, "",
             f"Command: `{command}`. {results.computed} cells computed, {results.resumed} resumed "
             f"from an earlier run; {seconds:.0f} s in all.", "",
             f"**Claims: {held} of {len(req)} hold**"
             + (f" ({len(claims) - len(req)} skipped)" if len(req) < len(claims) else "") + ".", ""]
    for name, reason in results.skipped.items():
        lines += [f"*Experiment {name} skipped: {reason}*", ""]
    header = ["id", "claim", "expected", "observed", "holds"]
    placed = set()
    for fig in study.figures:
        lines += [f"## {fig.title}", ""]
        status = figures.get(fig.id)
        if status is True:
            lines += [f"![{fig.title}]({fig.id}.png)", ""]
        elif status:
            lines += [f"*Figure not drawn: {status}*", ""]
        if fig.caption:
            lines += [fig.caption, ""]
        mine = [r for r in claims if by_id[r["id"]].figure == fig.id]
        obs = [r for r in observations if by_id[r["id"]].figure == fig.id]
        if mine:
            lines += ["Claims:", ""] + _md_table(header, _claim_rows(mine)) + [""]
        if obs:
            lines += ["Observations (the paper's statements checked on these data; not required to hold):", ""]
            lines += _md_table(["id", "statement", "test", "observed", "agrees"], _claim_rows(obs)) + [""]
        placed |= {r["id"] for r in mine + obs}
    rest = [r for r in claims + observations if r["id"] not in placed]
    if rest:
        lines += ["## Other claims", ""] + _md_table(header, _claim_rows(rest)) + [""]
    noisy = [(name, msg, n) for name, cells in results.cells.items() for c in cells
             for msg, n in c.warnings.items()]
    if noisy:
        lines += ["## Warnings raised during the run", ""]
        totals: dict = {}
        for name, msg, n in noisy:
            totals[(name, msg)] = totals.get((name, msg), 0) + n
        lines += [f"- {name}: {msg} ({n} times)" for (name, msg), n in totals.items()] + [""]
    lines += ["## Cell means with 95% confidence intervals", ""]
    for exp in study.experiments:
        if exp.name not in results.cells:
            continue
        cells = results.cells[exp.name]
        metrics = list(dict.fromkeys(mt for c in cells for mt in c.values))
        params = list(cells[0].cell)
        lines += [f"### {exp.title} ({exp.reps} replications per cell)", ""]
        rows = []
        for c in cells:
            stats = [mean_se(c.values[mt]) if mt in c.values else None for mt in metrics]
            rows.append([c.cell[p] for p in params]
                        + ["" if st is None else f"{st[0]:.4g} [{st[0] - Z95 * st[1]:.4g}, {st[0] + Z95 * st[1]:.4g}]"
                           for st in stats])
        lines += _md_table(params + metrics, rows) + [""]
    return "\n".join(lines)


def run(study: Study, out, *, seed: int = 0, jobs: int = 2, fresh: bool = False, progress: bool = True,
        command: str = "") -> dict:
    """Run ``study`` and write every output file to ``out`` (see module docstring).

    Returns a dict with the claim and observation rows, the figures drawn (id -> True or the
    reason they were not), the experiments skipped and the counts of computed and resumed cells.
    """
    t0 = time.monotonic()
    out = Path(out)
    results = run_cells(study, out, seed=seed, jobs=jobs, fresh=fresh, progress=progress)
    header, rows = tidy_rows(results)
    write_text_atomic(out / "results.csv", _csv_text(header, rows), force=True)
    evaluated = [(c, c.evaluate(results)) for c in study.claims]
    claims = [r for c, r in evaluated if c.required]
    observations = [r for c, r in evaluated if not c.required]
    cols = ["id", "claim", "expected", "observed", "holds"]
    write_text_atomic(out / "claims.csv", _csv_text(cols, _claim_rows(claims)), force=True)
    if observations:
        write_text_atomic(out / "observations.csv", _csv_text(cols, _claim_rows(observations)), force=True)
    figures: dict[str, str | bool] = {}
    for fig in study.figures:
        if fig.experiment in results.skipped:
            figures[fig.id] = f"experiment {fig.experiment} skipped"
            continue
        try:
            plot_figure(fig, results, out / f"{fig.id}.png")
            figures[fig.id] = True
        except ImportError:
            figures[fig.id] = "matplotlib is not installed (pip install matplotlib)"
    seconds = time.monotonic() - t0
    text = summary_markdown(study, results, claims, observations, figures, seconds=seconds,
                            command=command or f"privrank reproduce {study.name} --seed {seed}")
    write_text_atomic(out / "summary.md", text, force=True)
    return dict(claims=claims, observations=observations, figures=figures, skipped=results.skipped,
                computed=results.computed, resumed=results.resumed, seconds=seconds)


def studies() -> list[str]:
    """Names of the study modules of :mod:`privrank.experiments` (modules with ``build``)."""
    from .. import experiments

    names = []
    for info in pkgutil.iter_modules(experiments.__path__):
        if info.name != "runner" and hasattr(importlib.import_module(f"{experiments.__name__}.{info.name}"),
                                             "build"):
            names.append(info.name)
    return sorted(names)


def load_study(name: str, *, quick: bool = False, reps: int | None = None) -> Study:
    """Build the study ``privrank.experiments.<name>``."""
    if reps is not None and int(reps) < 2:
        raise InputError("reps must be >= 2 (standard errors need two replications)")
    module = None
    if name.isidentifier() and name != "runner":
        try:
            module = importlib.import_module(f"{__package__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__package__}.{name}":
                raise
    if module is None or not hasattr(module, "build"):
        raise InputError(f"unknown study {name!r}; available: {', '.join(studies())}")
    return module.build(quick=quick, reps=reps)
