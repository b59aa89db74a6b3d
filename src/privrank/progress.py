"""Progress bars (through :mod:`tqdm`): drawn on standard error when it is a terminal, silent otherwise.

Used by ``privrank reproduce`` (cells of a study) and by the stream engine (records read), whose
``progress(done, total)`` callback :class:`RecordsBar` implements. tqdm is imported when a bar is
made, so ``privrank --help`` stays fast.
"""
from __future__ import annotations

import sys


def progress_bar(total: int | None, label: str, unit: str, *, stream=None, enabled: bool = True):
    """A tqdm bar of ``total`` steps (None: unknown) on ``stream`` (default stderr), off on a non-terminal."""
    from tqdm import tqdm

    stream = sys.stderr if stream is None else stream
    return tqdm(total=total, desc=label, unit=unit, file=stream, unit_scale=unit == "records",
                disable=not (enabled and stream is not None and stream.isatty()), dynamic_ncols=True,
                mininterval=0.2)


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
