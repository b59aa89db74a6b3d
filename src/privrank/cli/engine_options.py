"""``--engine``, ``--scheduler`` and ``--batch-size`` of ``rank`` and ``top-k``, and the progress bar.

``local`` reads the whole file into memory and supports every mechanism and budget. ``stream``
and ``dask`` compute the statistic batch by batch or partition by partition
(:mod:`privrank.engines`); they support the mechanisms whose release is a function of integer
counts (``none``, ``debiased-rr``, ``rr``) with a per-comparison ``--epsilon`` or a file of
randomized reports, and give output identical to ``local`` byte for byte.
"""
from __future__ import annotations

import sys
import time

from ..data.io import ComparisonFile
from ..engines import DEFAULT_BATCH_SIZE, ENGINES, sufficient_statistics
from ..errors import InputError
from ..pairwise.release import non_private_release, release_from_reports

COUNTING_MECHANISMS = ("none", "debiased-rr", "rr")


def add_engine_options(parser) -> None:
    parser.add_argument("--engine", choices=ENGINES, default="local",
                        help="where the statistic is computed: local (in memory, every mechanism), "
                             "stream (batches, bounded memory) or dask (a Dask cluster); default local")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="Dask scheduler address for --engine dask, e.g. tcp://10.0.0.5:8786 "
                             "(default: Dask's local threads)")
    parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE, metavar="N",
                        help=f"records per batch of --engine stream (default {DEFAULT_BATCH_SIZE})")


def engine_release(args, items=None):
    """The release of ``args.file`` for ``--mechanism`` computed by ``--engine stream`` or ``dask``
    (the same release, float for float, as the local engine's); ``items`` is the item list."""
    if args.engine != "dask" and args.scheduler is not None:
        raise InputError("--scheduler is used only with --engine dask")
    if args.mechanism not in COUNTING_MECHANISMS or args.user_epsilon is not None:
        raise InputError(f"--engine {args.engine} supports --mechanism {', '.join(COUNTING_MECHANISMS)} with "
                         "--epsilon per comparison; use --engine local for this mechanism or budget")
    reports = ComparisonFile(args.file).is_randomized
    if args.epsilon is not None and (args.mechanism == "none" or reports):
        raise InputError("--mechanism none is not private: drop --epsilon" if args.mechanism == "none" else
                         "the file holds randomized reports with their own epsilon column; they are "
                         "debiased as they are, so drop --epsilon")
    if args.mechanism != "none" and not reports and args.epsilon is None:
        raise InputError(f"--mechanism {args.mechanism} needs --epsilon with --engine {args.engine} "
                         "(or use --mechanism none for the non-private fit)")
    bar = ProgressBar(sys.stderr) if args.engine == "stream" and sys.stderr.isatty() else None
    try:
        tally = sufficient_statistics(args.file, engine=args.engine, items=items, epsilon=args.epsilon,
                                      rng=args.seed, batch_size=args.batch_size, scheduler=args.scheduler,
                                      progress=bar)
    finally:
        if bar:
            bar.close()
    if args.mechanism == "none":
        return non_private_release(tally)
    debiased = args.mechanism == "debiased-rr"
    return release_from_reports(tally, weights=args.weights if debiased else "uniform", debiased=debiased)


class ProgressBar:
    """A one-line progress bar on a terminal: ``progress(done, total)`` callback of the engines."""

    WIDTH = 30
    EVERY = 0.2  # seconds between redraws

    def __init__(self, stream):
        self.stream = stream
        self.start = time.monotonic()
        self.drawn = None

    def __call__(self, done: int, total: int | None) -> None:
        now = time.monotonic()
        if self.drawn is not None and now - self.drawn < self.EVERY and done != total:
            return
        self.drawn = now
        rate = f"{done / max(now - self.start, 1e-9):,.0f} records/s"
        if total:
            filled = int(self.WIDTH * done / total)
            line = f"[{'#' * filled}{'.' * (self.WIDTH - filled)}] {done / total:6.1%}  {done:,} records  {rate}"
        else:
            line = f"{done:,} records  {rate}"
        self.stream.write("\r" + line)
        self.stream.flush()

    def close(self) -> None:
        if self.drawn is not None:
            self.stream.write("\n")
            self.stream.flush()
