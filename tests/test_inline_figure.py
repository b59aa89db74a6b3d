"""Every plot privrank returns shows itself in a notebook (a PNG from ``_repr_png_``), in a fresh kernel
without ``%matplotlib inline``; where matplotlib's own display is registered it steps aside, and it
stays a Figure a user can change, save and pickle, the backend and pyplot untouched."""
import pickle
import sys
from types import SimpleNamespace

import numpy as np
import pytest

import privrank as pr
from privrank.simulate import sample_debiased_release, sample_mallows

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def figures():
    fit = pr.fit_btl(sample_debiased_release(np.linspace(-1, 1, 6), 200, 1.0, rng=0))
    ci = pr.confidence_intervals(fit)
    agg = pr.private_kemeny(sample_mallows(5, phi=0.6, n=40, rng=1), epsilon=1.0, rng=2)
    from privrank.plan import Design, plot_curve, predict

    curve = [predict(Design(5, 50), eps, reps=20) for eps in (0.5, 1.0)]
    return {"plot_intervals": pr.plot_intervals(ci), "ConfidenceIntervals.plot": ci.plot(title="<t>"),
            "AggregateResult.plot": agg.plot(n_bootstrap=100, rng=3),
            "RankIntervals.plot": pr.aggregate_intervals(agg, n_bootstrap=100, rng=4).plot(),
            "plot_curve": plot_curve(curve, chosen=curve[1])}


def test_every_plot_shows_itself_as_a_png_and_stays_a_figure(tmp_path):
    import matplotlib.pyplot as plt

    backend, before = matplotlib.get_backend(), plt.get_fignums()
    for name, fig in figures().items():
        assert isinstance(fig, Figure), name
        png = fig._repr_png_()
        assert isinstance(png, bytes) and png.startswith(PNG) and len(png) > 5_000, name
    assert matplotlib.get_backend() == backend and plt.get_fignums() == before
    fig = figures()["ConfidenceIntervals.plot"]
    fig.axes[0].set_xlabel("changed by the user")
    fig.savefig(tmp_path / "f.svg")
    assert "changed by the user" in (tmp_path / "f.svg").read_text()
    again = pickle.loads(pickle.dumps(fig))
    assert again._repr_png_().startswith(PNG) and again.axes[0].get_xlabel() == "changed by the user"


def _shell(formatters):
    return SimpleNamespace(display_formatter=SimpleNamespace(formatters=formatters))


def test_a_notebooks_own_matplotlib_display_draws_the_figure_once(monkeypatch):
    IPython = pytest.importorskip("IPython")
    from IPython.core.formatters import PNGFormatter, SVGFormatter

    fig = figures()["plot_intervals"]
    svg, png = SVGFormatter(), PNGFormatter()
    monkeypatch.setattr(IPython, "get_ipython", lambda: _shell({"image/png": png, "image/svg+xml": svg}))
    assert fig._repr_png_().startswith(PNG)  # a kernel where matplotlib's display is not registered
    svg.for_type(Figure, lambda f: "<svg/>")  # as %matplotlib inline with figure_formats = {"svg"}
    assert fig._repr_png_() is None and svg(fig) == "<svg/>"  # drawn once, as the notebook asked
    monkeypatch.setitem(sys.modules, "IPython", None)  # no IPython at all
    assert fig._repr_png_().startswith(PNG)
