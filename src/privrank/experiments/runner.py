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
* claims (:class:`Less`, :class:`Within`, :class:`Never`): one-sided statistical tests on
  cell means (:class:`Mean`, :class:`Ratio`, :class:`Slope`, or a fitted :class:`Coefficient`)
  with tolerances in standard errors, declared before the run. Those with
  ``required=False`` are observations: statements of the paper reported against the data,
  not expected to hold.
* :class:`Figure` s: panels of curves, each curve the mean of a metric against a setting
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
import math
import multiprocessing
import os
import pkgutil
import time
import warnings
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from itertools import product
from pathlib import Path

import numpy as np

from ..files import write_text_atomic
from ..errors import InputError
from ..progress import progress_bar

Z95 = 1.959963984540054
MAX_TICK_LABELS = 7


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


class Sel:
    """The cells of ``experiment`` whose settings match ``where``, and one ``metric`` of them.

    A ``where`` value that is a tuple or list matches any of its elements. With ``worst`` (the
    name of a setting), cells that differ only in that setting are reduced to the one with the
    largest mean: the envelope, e.g. the worst case over a family of inputs. Its standard error
    is that cell's; the selection biases the envelope upwards by at most about one standard
    error where several cells are nearly tied.
    """

    def __init__(self, experiment: str, metric: str, *, worst: str | None = None, **where):
        self.experiment = experiment
        self.metric = metric
        self.worst = worst
        self.where = where

    def match(self, cell: Mapping) -> bool:
        for k, v in self.where.items():
            allowed = v if isinstance(v, (tuple, list)) else (v,)
            if k not in cell or cell[k] not in allowed:
                return False
        return True

    def cells(self, results) -> list:
        if self.experiment in results.skipped:
            raise _Unavailable(results.skipped[self.experiment])
        found = [c for c in results.cells.get(self.experiment, []) if self.match(c.cell)]
        if not found:
            raise InputError(f"no cell of {self.experiment} matches {_settings(self.where)}")
        missing = [c for c in found if self.metric not in c.values]
        if missing:
            raise InputError(f"{self.experiment} has no metric {self.metric!r}")
        if self.worst is None:
            return found
        envelope: dict[str, CellResult] = {}
        for c in found:
            rest = json.dumps({k: v for k, v in c.cell.items() if k != self.worst}, sort_keys=True)
            if rest not in envelope or c.values[self.metric].mean() > envelope[rest].values[self.metric].mean():
                envelope[rest] = c
        return list(envelope.values())

    def label(self) -> str:
        where = f" at {_settings(self.where)}" if self.where else ""
        worst = f"worst over {self.worst} of " if self.worst else ""
        return f"{worst}{self.metric}{where}"


class _Unavailable(Exception):
    """A claim's cells were not run (their experiment was skipped)."""


class _Undefined(Exception):
    """The results leave a claim's statistic undefined (e.g. the log of a zero mean)."""


def _settings(where: Mapping) -> str:
    def fmt(v):
        return "|".join(map(str, v)) if isinstance(v, (tuple, list)) else str(v)
    return ", ".join(f"{k}={fmt(v)}" for k, v in where.items())


@dataclass(frozen=True)
class Mean:
    """Pooled mean of a selection (equal weight per cell)."""

    sel: Sel

    def value(self, results) -> tuple[float, float]:
        cells = self.sel.cells(results)
        stats = [_mean_se(c.values[self.sel.metric]) for c in cells]
        mean = float(np.mean([s[0] for s in stats]))
        se = math.sqrt(sum(s[1] ** 2 for s in stats)) / len(stats)
        return mean, se

    def label(self) -> str:
        return f"mean {self.sel.label()}"


@dataclass(frozen=True)
class Ratio:
    """``Mean(num) / Mean(den)``, standard error by the delta method."""

    num: Sel
    den: Sel

    def value(self, results) -> tuple[float, float]:
        _check_disjoint(self.num.cells(results), self.den.cells(results))
        a, sa = Mean(self.num).value(results)
        b, sb = Mean(self.den).value(results)
        r = a / b
        return r, abs(r) * math.hypot(sa / a, sb / b)

    def label(self) -> str:
        return f"mean {self.num.label()} / mean {self.den.label()}"


@dataclass(frozen=True)
class Slope:
    """Log-log slope of cell means against the setting ``x``.

    Cells that share all other settings (but the selection's ``worst``) form a group with its
    own intercept; one common slope is fitted by weighted least squares with weights
    ``(mean / se)^2`` (the inverse variance of a log mean by the delta method), and its standard
    error is ``1 / sqrt(sum w (x - xbar_g)^2)``.
    """

    sel: Sel
    x: str = "L"

    def value(self, results) -> tuple[float, float]:
        groups: dict[str, list] = {}
        for c in self.sel.cells(results):
            rest = json.dumps({k: v for k, v in c.cell.items() if k not in (self.x, self.sel.worst)},
                              sort_keys=True)
            mean, se = _mean_se(c.values[self.sel.metric])
            if c.cell[self.x] <= 0:
                raise InputError(f"{self.label()}: log-log slope needs positive {self.x}")
            if mean <= 0:
                raise _Undefined(f"a mean of {mean:.3g} at {_settings(c.cell)} has no logarithm")
            if not se > 0:
                raise _Undefined(f"the replications at {_settings(c.cell)} do not vary: no weight for the fit")
            groups.setdefault(rest, []).append((math.log(c.cell[self.x]), math.log(mean), (mean / se) ** 2))
        sxy = sxx = 0.0
        for pts in groups.values():
            x, y, w = (np.array(v) for v in zip(*pts))
            dx = x - np.sum(w * x) / w.sum()
            sxy += float(np.sum(w * dx * (y - np.sum(w * y) / w.sum())))
            sxx += float(np.sum(w * dx * dx))
        if sxx <= 0:
            raise InputError(f"{self.label()}: needs at least two values of {self.x} in a group")
        return sxy / sxx, 1.0 / math.sqrt(sxx)

    def label(self) -> str:
        return f"log-log slope in {self.x} of {self.sel.label()}"


@dataclass(frozen=True)
class Coefficient:
    """One coefficient of a weighted least-squares fit of cell means on functions of the settings.

    The means ``y_c`` of the cells of every selection in ``sels`` (their own metrics, from one
    or several experiments) are fitted by ``sum_t b_t x_t(c)``, where ``terms`` maps each term's
    name to ``x_t``, a function of a cell's settings (give a constant term for an intercept).
    Weights are ``1 / se_c^2``. The value is ``b[term]``; its standard error is
    ``sqrt([(X'WX)^-1]_tt)``, multiplied by ``sqrt(chi2 / dof)`` of the residuals when that is
    above 1, so that a model that does not fit the means widens the error instead of hiding it.
    """

    sels: tuple
    terms: Mapping
    term: str

    def value(self, results) -> tuple[float, float]:
        rows, y, w = [], [], []
        for sel in self.sels:
            for c in sel.cells(results):
                mean, se = _mean_se(c.values[sel.metric])
                rows.append([float(f(c.cell)) for f in self.terms.values()])
                y.append(mean)
                w.append(1.0 / max(se, 1e-300) ** 2)
        X, y, w = np.array(rows), np.array(y), np.array(w)
        dof = X.shape[0] - X.shape[1]
        if dof < 1 or np.linalg.matrix_rank(X) < X.shape[1]:
            raise InputError(f"{self.label()}: the cells do not determine every term")
        cov = np.linalg.inv(X.T @ (w[:, None] * X))
        b = cov @ (X.T @ (w * y))
        chi2 = float(np.sum(w * (y - X @ b) ** 2))
        t = list(self.terms).index(self.term)
        return float(b[t]), math.sqrt(cov[t, t] * max(1.0, chi2 / dof))

    def label(self) -> str:
        metrics = "/".join(dict.fromkeys(s.metric for s in self.sels))
        return f"coefficient of {self.term} in mean {metrics} ~ {' + '.join(self.terms)}"


def _check_disjoint(a: list, b: list) -> None:
    if {c.key for c in a} & {c.key for c in b}:
        raise InputError("statistics compared by a claim must come from disjoint cells")


def _mean_se(v: np.ndarray) -> tuple[float, float]:
    n = v.size
    return float(v.mean()), (float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan)


@dataclass(frozen=True, kw_only=True)
class Claim:
    """A statement tested on the results. ``required=False`` makes it an observation.

    A claim whose statistic the results leave undefined (a log-log slope through a zero mean)
    does not hold.
    """

    id: str
    text: str
    figure: str | None = None
    required: bool = True

    def evaluate(self, results) -> dict:
        try:
            expected, observed, holds = self._test(results)
        except _Unavailable as exc:
            expected, observed, holds = self._expected(), f"skipped: {exc}", None
        except _Undefined as exc:
            expected, observed, holds = self._expected(), f"undefined: {exc}", False
        return dict(id=self.id, claim=self.text, expected=expected, observed=observed,
                    holds="skipped" if holds is None else bool(holds))


@dataclass(frozen=True, kw_only=True)
class Less(Claim):
    """``a < b`` by more than ``k`` standard errors of the difference (``b`` may be a number)."""

    a: Mean | Ratio | Slope | Coefficient
    b: Mean | Ratio | Slope | Coefficient | float
    k: float = 2.0

    def _expected(self) -> str:
        b = f"{self.b:g}" if isinstance(self.b, (int, float)) else self.b.label()
        return f"{self.a.label()} < {b} by more than {self.k:g} SE"

    def _test(self, results):
        va, sa = self.a.value(results)
        if isinstance(self.b, (int, float)):
            vb, sb = float(self.b), 0.0
            se = sa
        else:
            vb, sb = self.b.value(results)
            se = self._paired_se(results)
            if se is None:
                ca, cb = (self._cells(s, results) for s in (self.a, self.b))
                _check_disjoint(ca, cb)
                se = math.hypot(sa, sb)
        diff = vb - va
        z = diff / se if se > 0 else math.copysign(math.inf, diff) if diff else 0.0
        observed = f"{va:.4g} vs {vb:.4g} (difference {diff:.3g} = {z:.1f} SE)"
        return self._expected(), observed, diff > self.k * se

    @staticmethod
    def _cells(stat, results) -> list:
        if isinstance(stat, Ratio):
            return stat.num.cells(results) + stat.den.cells(results)
        if isinstance(stat, Coefficient):
            return [c for sel in stat.sels for c in sel.cells(results)]
        return stat.sel.cells(results)

    def _paired_se(self, results) -> float | None:
        """SE of the paired difference when ``a`` and ``b`` are means over the same cells."""
        if not (isinstance(self.a, Mean) and isinstance(self.b, Mean)):
            return None
        ca, cb = self.a.sel.cells(results), self.b.sel.cells(results)
        if [c.key for c in ca] != [c.key for c in cb]:
            return None
        ses = [_mean_se(c.values[self.b.sel.metric] - c.values[self.a.sel.metric])[1] for c in ca]
        return math.sqrt(sum(s ** 2 for s in ses)) / len(ses)


@dataclass(frozen=True, kw_only=True)
class Within(Claim):
    """``lo < stat < hi`` with ``k`` standard errors to spare on each side (None: unbounded)."""

    stat: Mean | Ratio | Slope | Coefficient
    lo: float | None = None
    hi: float | None = None
    k: float = 2.0

    def _expected(self) -> str:
        lo = "-inf" if self.lo is None else f"{self.lo:g}"
        hi = "inf" if self.hi is None else f"{self.hi:g}"
        return f"{self.stat.label()} in [{lo}, {hi}] with {self.k:g} SE to spare"

    def _test(self, results):
        v, se = self.stat.value(results)
        ok = (self.lo is None or v - self.k * se > self.lo) and (self.hi is None or v + self.k * se < self.hi)
        return self._expected(), f"{v:.4g} (SE {se:.2g})", ok


@dataclass(frozen=True, kw_only=True)
class Never(Claim):
    """Every replication of the selection has a value <= ``above`` (an exact identity)."""

    sel: Sel
    above: float = 0.0

    def _expected(self) -> str:
        return f"{self.sel.label()} <= {self.above:g} in every replication"

    def _test(self, results):
        v = np.concatenate([c.values[self.sel.metric] for c in self.sel.cells(results)])
        worst = float(v.max())
        return self._expected(), f"max {worst:.3g} over {v.size} replications", worst <= self.above


@dataclass(frozen=True)
class Curve:
    """Mean of ``metric`` over the cells matching ``where``, against the panel's x setting."""

    label: str
    metric: str
    where: Mapping = field(default_factory=dict)


@dataclass(frozen=True)
class Panel:
    """One plot: its curves against the setting ``x`` on a log axis (``logy``: log-log)."""

    title: str
    curves: tuple
    x: str = "L"
    ylabel: str = ""
    logy: bool = False


@dataclass(frozen=True)
class Figure:
    """One PNG ``<id>.png`` of panels (three per row) drawn from one experiment."""

    id: str
    title: str
    experiment: str
    panels: tuple
    caption: str = ""


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

@dataclass
class CellResult:
    experiment: str
    cell: dict
    key: str
    values: dict
    warnings: dict


@dataclass
class Results:
    """Cell results by experiment (in grid order) and the experiments skipped, with reasons."""

    cells: dict
    skipped: dict
    computed: int = 0
    resumed: int = 0


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
    cells = {}
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


def plot_figure(fig: Figure, results: Results, path: Path) -> None:
    """Draw ``fig`` to ``path`` (PNG). Raises ImportError without matplotlib."""
    from matplotlib.figure import Figure as MplFigure

    cells = results.cells[fig.experiment]
    ncol = min(3, len(fig.panels))
    nrow = math.ceil(len(fig.panels) / ncol)
    height = 2.9 * nrow + 0.5
    mfig = MplFigure(figsize=(3.6 * ncol, height))
    mfig.subplots_adjust(left=0.07, right=0.98, bottom=0.62 / height, top=1 - 0.55 / height,
                         wspace=0.28, hspace=0.45)
    axes = mfig.subplots(nrow, ncol, squeeze=False).ravel()
    for ax, panel in zip(axes, fig.panels):
        for curve in panel.curves:
            sel = Sel(fig.experiment, curve.metric, **curve.where)
            pts = sorted((c.cell[panel.x], *_mean_se(c.values[curve.metric])) for c in cells
                         if sel.match(c.cell) and curve.metric in c.values)
            if len({p[0] for p in pts}) != len(pts):
                raise InputError(f"figure {fig.id}: curve {curve.label!r} matches several cells per {panel.x}")
            x = np.array([p[0] for p in pts], dtype=float)
            y = np.array([p[1] for p in pts])
            half = Z95 * np.array([p[2] for p in pts])
            (line,) = ax.plot(x, y, marker="o", ms=3, lw=1.2, label=curve.label)
            ax.fill_between(x, y - half, y + half, color=line.get_color(), alpha=0.2, lw=0)
        ax.set_xscale("log")
        if panel.logy:
            ax.set_yscale("log")
        ticks = sorted({c.cell[panel.x] for c in cells})
        step = math.ceil(len(ticks) / MAX_TICK_LABELS)  # a tick at every setting, a label at every step-th
        ax.set_xticks(ticks, [f"{t:g}" if k % step == 0 else "" for k, t in enumerate(ticks)])
        ax.set_xticks([], minor=True)
        ax.set_title(panel.title, fontsize=9)
        ax.set_xlabel(panel.x, fontsize=8)
        ax.set_ylabel(panel.ylabel, fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=6.5, frameon=False)
    for ax in axes[len(fig.panels):]:
        ax.set_visible(False)
    mfig.suptitle(fig.title, fontsize=10)
    mfig.savefig(path, dpi=80)


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
            stats = [_mean_se(c.values[mt]) if mt in c.values else None for mt in metrics]
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
    figures = {}
    for fig in study.figures:
        if fig.experiment in results.skipped:
            figures[fig.id] = f"experiment {fig.experiment} skipped"
            continue
        try:
            plot_figure(fig, results, out / f"{fig.id}.png")
            figures[fig.id] = True
        except ImportError:
            figures[fig.id] = "matplotlib is not installed (pip install 'privrank[plot]')"
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
