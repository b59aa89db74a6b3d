"""Progress bars (through :mod:`tqdm.auto`): a widget in a notebook, text on a terminal, silent otherwise.

Used by ``privrank reproduce`` and :func:`privrank.experiments.runner.run` (cells of a study) and by
the stream engine (records read), whose ``progress(done, total)`` callback :class:`RecordsBar`
implements. A bar is drawn on a terminal, and in a notebook (its stream is the kernel's output):
there ``tqdm.auto`` draws an ipywidgets bar when ipywidgets is installed, else the same text bar
(without tqdm's warning that ipywidgets is missing). Anywhere else (a pipe, a file, a log) it is
silent. tqdm is imported when a bar is made, so ``privrank --help`` stays fast.
"""
from __future__ import annotations

import sys
import warnings


def progress_bar(total: int | None, label: str, unit: str, *, stream=None, enabled: bool = True):
    """A ``tqdm.auto`` bar of ``total`` steps (None: unknown) on ``stream`` (default stderr), drawn
    when ``stream`` is a terminal or a notebook kernel's output, silent otherwise."""
    with warnings.catch_warnings():  # without ipywidgets, a notebook's bar is text: no need to say so
        from tqdm import TqdmWarning

        warnings.simplefilter("ignore", TqdmWarning)
        from tqdm.auto import tqdm

    stream = sys.stderr if stream is None else stream
    shown = enabled and stream is not None and (stream.isatty() or in_notebook(stream))
    return tqdm(total=total, desc=label, unit=unit, file=stream, unit_scale=unit == "records",
                disable=not shown, dynamic_ncols=True, mininterval=0.2)


def in_notebook(stream) -> bool:
    """True when ``stream`` is the output of a Jupyter kernel (ipykernel's ``OutStream``): a notebook
    shows what is written there, carriage returns included, although it is not a terminal."""
    return type(stream).__module__.startswith("ipykernel.")


class RecordsBar:
    """The engines' ``progress(records_done, records_total_or_None)`` callback as a tqdm bar."""

    def __init__(self, stream=None, label: str = "reading"):
        self.bar = progress_bar(None, label, "records", stream=stream)

    def __call__(self, done: int, total: int | None) -> None:
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()
