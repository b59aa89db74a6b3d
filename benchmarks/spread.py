"""Timings that show their spread: interleaved rounds, median and min-max, the machine's load.

Every benchmark script measures through this module, so that a figure is never one lucky run:

* ``interleaved`` runs every contender once per round, in an order rotated from round to round
  (a contender is never always first after a pause, or always last on a warm cache), and keeps
  each round's time;
* ``spread`` prints a list of values as ``median (min-max)``; ``ratios`` pairs two contenders'
  times round by round, so that a ratio compares runs made under the same load;
* ``load`` is the machine's load average and core count, printed before and after a run;
* ``readme_section`` puts a generated table into ``README.md`` between the markers
  ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->`` with the command and the date that made
  it (``make bench`` passes ``--readme`` to every script).
"""
from __future__ import annotations

import datetime
import os
import shlex
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Hashable

README = Path(__file__).resolve().parents[1] / "README.md"
ROUNDS = 5


def load() -> str:
    """The load average over 1, 5 and 15 minutes and the number of cores, as one line."""
    return f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores"


def interleaved(contenders: dict[Hashable, Callable[[], object]], rounds: int = ROUNDS,
                repeat: int = 1, clock: Callable[[], float] = time.perf_counter
                ) -> tuple[dict[Hashable, list[float]], dict[Hashable, object]]:
    """Time every contender once per round, in an order rotated each round.

    Returns ``(times, outputs)``: each contender's seconds per round (the best of ``repeat``
    calls within the round) and its last output, for the answers to be compared. ``clock``:
    wall time by default; ``time.process_time`` counts the CPU seconds of single-threaded
    contenders, which other processes on a shared machine do not inflate.
    """
    keys = list(contenders)
    times: dict[Hashable, list[float]] = {key: [] for key in keys}
    outputs: dict[Hashable, object] = {}
    for r in range(rounds):
        shift = r % len(keys)
        for key in keys[shift:] + keys[:shift]:
            best = float("inf")
            for _ in range(repeat):
                start = clock()
                outputs[key] = contenders[key]()
                best = min(best, clock() - start)
            times[key].append(best)
    return times, outputs


def ratios(theirs: list[float], ours: list[float]) -> list[float]:
    """Round-by-round ratios ``theirs / ours`` (how many times faster ours was in each round)."""
    return [t / o for t, o in zip(theirs, ours)]


def spread(values: list[float], fmt: str = "{:.3g}") -> str:
    """``median (min-max)`` of ``values``, each number written with ``fmt``."""
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}-{fmt.format(max(values))})"


def command() -> str:
    """The command line this script was run with, as a user would type it from the repository's root."""
    return shlex.join(["python", f"benchmarks/{Path(sys.argv[0]).name}", *sys.argv[1:]])


def readme_section(name: str, table: str, command: str, path: Path = README,
                   note: str = "median (min-max) over interleaved rounds.") -> None:
    """Replace the README's text between ``<!-- bench:name -->`` and its closing marker.

    The new text is ``table`` followed by a line naming ``command``, today's date, the load and
    ``note`` (what the figures are; by default the timings' median and range).
    A README without the markers is an error, so that a renamed section is not silently skipped.
    """
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    text = path.read_text()
    if text.count(start) != 1 or text.count(end) != 1:
        raise SystemExit(f"{path.name} has no single {start} ... {end} section to update")
    before, rest = text.split(start)
    _, after = rest.split(end)
    made = f"`{command}` on {datetime.date.today().isoformat()}, {load()}; {note}"
    path.write_text(f"{before}{start}\n{table.strip()}\n\n{made}\n{end}{after}")
