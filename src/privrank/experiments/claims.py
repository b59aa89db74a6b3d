"""Claims of a reproduction: one-sided tests on cell means, declared before the run (runner docstring),
and the results of the run they read (:class:`Results`, as figures do)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

Z95 = 1.959963984540054


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
        envelope: dict = {}  # settings but `worst` -> the cell with the largest mean
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
        stats = [mean_se(c.values[self.sel.metric]) for c in cells]
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
            mean, se = mean_se(c.values[self.sel.metric])
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
        rows, means, weights = [], [], []
        for sel in self.sels:
            for c in sel.cells(results):
                mean, se = mean_se(c.values[sel.metric])
                rows.append([float(f(c.cell)) for f in self.terms.values()])
                means.append(mean)
                weights.append(1.0 / max(se, 1e-300) ** 2)
        X, y, w = np.array(rows), np.array(means), np.array(weights)
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


def mean_se(v: np.ndarray) -> tuple[float, float]:
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

    def _test(self, results) -> tuple:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def _expected(self) -> str:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

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
        se: float | None
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
        ses = [mean_se(c.values[self.b.sel.metric] - c.values[self.a.sel.metric])[1] for c in ca]
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
