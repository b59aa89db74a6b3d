"""Where sufficient statistics are computed: in memory, streamed from a file, or on a Dask cluster.

Every estimator in privrank needs only a small sufficient statistic, and in the local model every
record is randomized on its own, so computing a statistic is a map over records followed by a
sum. :func:`sufficient_statistics` runs that map and sum on one of three engines, with identical
results:

``local``
    The whole data set in memory (numpy): :func:`~privrank.data.io.read_comparisons`, then the
    same code as every in-memory release. The only engine for in-memory data.
``stream``
    The file read in batches of at most ``batch_size`` records (pyarrow; the next batch is read in
    a background thread while the current one is reduced), each batch reduced to a partial
    statistic and added to a running total: memory is bounded by two batches and the statistic
    (m x m per privacy level, plus one counter per user), whatever the file size. The default
    for files.
``dask``
    ``dask.dataframe`` reads the file in partitions; each partition is reduced to a partial
    statistic by a Dask task and the partials are added by a tree reduction. Runs on any Dask
    scheduler: the current default (an active ``distributed.Client``, else Dask's local
    threads), a ``distributed.Client``, or a cluster's address. Tasks are pure functions of
    their partition, so a task lost with a worker is simply run again.

Why the results are identical. Items are indexed in sorted label order in every engine (each
partial carries the labels it saw; adding two partials re-indexes both on the union), the
statistics are integer counts, which add up exactly in any order and grouping, and
everything after the statistic (debiasing, the guarantee, the fit, the output) is one code path.
Randomization is per record: record ``r`` of the file is randomized with the ``r``-th output of
a counter-based generator (Philox) under a key derived once from ``rng``
(:func:`privrank.mechanisms.randomized_response.randomize_records`), so a seeded release is the
same whatever the engine, the batch size or the partitioning. Seeded runs are for research and
tests; a real release leaves ``rng=None``. The key is drawn once and sent with every task: like
the raw records, it must stay where the records are (whoever holds it and the reports learns which
reports are truthful); privrank never writes it anywhere.

Adding a kind. A kind is a module of this package registered in ``KINDS`` that provides

* ``CONTAINER``, the in-memory data type; ``read(path, options)``, a whole file as one; and
  ``in_memory(data, options, rng)``, its statistic (the local engine);
* ``item_list(items)``: the caller's item list, checked;
* ``open_file(path)``: an object with ``batches(batch_size)``, ``validate(table, first_record)``,
  ``n_records()``, ``format``, ``path`` and ``names`` (the columns to read), like
  :class:`~privrank.data.io.ComparisonFile`;
* ``check(source, options)``: refuse requests that make no sense for the source;
* ``partial(batch, options)``, ``combine(partials)`` and ``finish(partial, options)``: the map,
  an exact and associative sum, and the final statistic.

Rankings fit the same mould: the pairwise matrix w and the footrule position counts are sums
over rankings of per-ranking contributions, so their ``partial`` is a ``bincount`` over a batch
of rankings and their ``combine`` an integer addition, and the engines are unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..data.io import DEFAULT_BATCH_SIZE
from ..errors import InputError, check_epsilon
from ..mechanisms.randomized_response import record_key
from . import comparisons

ENGINES = ("local", "stream", "dask")
KINDS = {"comparisons": comparisons}


@dataclass(frozen=True)
class Options:
    """What every partial statistic needs to know, shipped with each task.

    ``items``: a fixed item list (None: the sorted labels that occur); ``epsilon``: randomize raw
    answers with randomized response at this per-comparison epsilon (None: no randomization);
    ``key``: the Philox key of that randomization.
    """

    items: tuple | None = None
    epsilon: float | None = None
    key: np.ndarray | None = None


def sufficient_statistics(source, kind: str = "comparisons", *, engine: str | None = None, items=None,
                          epsilon=None, rng=None, batch_size: int = DEFAULT_BATCH_SIZE, scheduler=None,
                          progress=None):
    """Compute the sufficient statistic of ``source`` on an engine (see the module docstring).

    Parameters
    ----------
    source : str, Path or in-memory data
        A file (CSV, Parquet or Arrow, see :mod:`privrank.data.io`) or, for the local engine,
        the in-memory container of the kind (:class:`~privrank.data.comparisons.PairwiseComparisons`).
    kind : {"comparisons"}
        What the records are.
    engine : {"local", "stream", "dask"}, optional
        Default: ``stream`` for a file, ``local`` for in-memory data.
    items : sequence, optional
        The item list, in index order (default: the labels that occur, sorted).
    epsilon : float, optional
        Randomize every raw answer with randomized response at this epsilon before it is counted
        (Xu, Sun, Cheng §2.1): the statistic is then eps-local DP per comparison, and per user
        by basic composition over that user's comparisons. Refused for randomized reports
        (files with an epsilon column), which are counted as they are.
    rng : None, int or numpy.random.Generator
        Source of the randomization key (used only with ``epsilon``).
    batch_size : int
        Records per batch of the stream engine (bounds its memory).
    scheduler : None, str or distributed.Client
        Dask engine only: None for Dask's current default scheduler, a scheduler address such as
        ``"tcp://10.0.0.5:8786"``, or a Client.
    progress : callable, optional
        Stream engine: called as ``progress(records_done, records_total_or_None)`` after each
        batch.

    Returns
    -------
    ComparisonTally
        For ``kind="comparisons"``: exact integer counts per privacy level and pair, identical
        for every engine. ``privrank.fit_btl`` takes it directly (reports are debiased, raw
        answers give the non-private fit); see also
        :func:`privrank.pairwise.release.release_from_reports`.
    """
    try:
        module = KINDS[kind]
    except KeyError:
        raise InputError(f"kind must be one of {', '.join(KINDS)}") from None
    in_memory = isinstance(source, module.CONTAINER)
    if not in_memory and not isinstance(source, (str, Path)):
        raise InputError(f"source must be a file path or {module.CONTAINER.__name__}")
    engine = engine or ("local" if in_memory else "stream")
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}")
    if in_memory and engine != "local":
        raise InputError(f"in-memory data are processed by the local engine; give a file for --engine {engine}")
    if scheduler is not None and engine != "dask":
        raise InputError("a scheduler is used only by the dask engine")
    eps = None if epsilon is None else check_epsilon(epsilon)
    options = Options(items=None if items is None else module.item_list(items), epsilon=eps)
    if in_memory:
        module.check(source, options)
        return module.in_memory(source, options, rng)
    if engine == "local":
        data = module.read(source, options)
        module.check(data, options)
        return module.in_memory(data, options, rng)
    file = module.open_file(source)
    module.check(file, options)
    if eps is not None:
        options = Options(options.items, eps, record_key(rng))
    if engine == "stream":
        return _stream(module, file, options, int(batch_size), progress)
    from .dask_engine import run_dask

    return run_dask(module, file, options, scheduler)


def _stream(module, file, options: Options, batch_size: int, progress):
    total = file.n_records() if progress else None
    running = None
    done = 0
    for batch in _read_ahead(file.batches(batch_size)):
        part = module.partial(batch, options)
        running = part if running is None else module.combine([running, part])
        done += len(batch)
        if progress:
            progress(done, total)
    return module.finish(running, options)


def _read_ahead(batches):
    """The batches, each read in a background thread while the previous one is reduced."""
    from concurrent.futures import ThreadPoolExecutor

    end = object()
    with ThreadPoolExecutor(1) as reader:
        upcoming = reader.submit(next, batches, end)
        while (batch := upcoming.result()) is not end:
            upcoming = reader.submit(next, batches, end)
            yield batch
