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
    (m x m per privacy level), whatever the file size -- plus, only when a per-user bound or
    budget is requested, one counter per user (below). The default for files.
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
a counter-based CSPRNG (AES-128 in counter mode) under a key derived once from ``rng``
(:func:`privrank.mechanisms.randomized_response.randomize_records`), so a seeded release is the
same whatever the engine, the batch size or the partitioning. Seeded runs are for research and
tests; a real release leaves ``rng=None``. The key is drawn once and sent with every task: like
the raw records, it must stay where the records are (whoever holds it and the reports learns which
reports are truthful); privrank never writes it anywhere.

What is kept per user. Nothing, unless a declared bound on answers per user (``max_answers``:
each user's first ``K`` records in file order are used) or a personal budget of the local model
(``user_epsilon``: each user's budget split evenly over that user's records) is requested. Then
the engines keep one counter per user label (:mod:`privrank.engines.users`): memory grows with
the number of users, never with the number of records. The stream engine counts as it reads (a
first pass over the file gives each user's total for ``user_epsilon``); the Dask engine counts
every partition's users in its first pass and gives each task the counts of the partitions
before it. The counts decide which records are used and at which epsilon, exactly as the
in-memory path decides them; they are not a released statistic -- never printed, written or
returned -- and the records used are numbered as the in-memory path numbers them after its cut,
so a seeded release is still the same on every engine.

Adding a kind. A kind is a module of this package registered in ``KINDS`` that provides

* ``CONTAINER``, the in-memory data type; ``read(path, options)``, a whole file as one; and
  ``in_memory(data, options, rng)``, its statistic (the local engine);
* ``item_list(items)``: the caller's item list, checked;
* ``open_file(path, options=None)``: an object with ``batches(batch_size)``, ``validate(table, first)``,
  ``n_records()``, ``format``, ``path`` and ``names`` (the columns to read), like
  :class:`~privrank.data.io.ComparisonFile`;
* ``check(source, options)``: refuse requests that make no sense for the source;
* ``records(batch)``: how many records a batch holds (a file with none is refused before any charge);
* ``partial(batch, options)``, ``combine(partials)`` and ``finish(partial, options)``: the map,
  an exact and associative sum, and the final statistic.

The file object also tells the Dask engine where each partition starts: ``extent(table)``
(how far a table of its ``extent_columns`` reaches: records, or rows and voters) and
``validate(table, first)`` taking the sum of the extents before it.

Rankings (:mod:`privrank.engines.rankings`) fit the same mould: the pairwise counts, the footrule
position counts and the sum of the voters' fixed-point local reports are sums over rankings of
per-ranking contributions, so their ``partial`` reduces a batch of rankings and their
``combine`` is an integer addition.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..data.io import DEFAULT_BATCH_SIZE
from ..data.parts import DataParts
from ..data.pinned import PinnedFile
from .._rng import is_seeded
from ..errors import InputError, check_epsilon, check_whole
from ..guarantees import UNIT_COMPARISON, UNIT_RANKING, UNIT_USER, Guarantee
from ..mechanisms.randomized_response import record_key
from ..release import charge, private_release
from . import comparisons, rankings
from .users import Users

if TYPE_CHECKING:
    import distributed

    from ..data.comparisons import PairwiseComparisons
    from ..data.rankings import Rankings, RankingTally
    from ..data.tabular import TableLike
    from ..data.tally import ComparisonTally
    from ..guarantees import Accountant
    from ..ledger import Ledger

ENGINES = ("local", "stream", "dask")
KINDS = {"comparisons": comparisons, "rankings": rankings}


@dataclass(frozen=True)
class Options:
    """What every partial statistic needs to know, shipped with each task.

    ``items``: a fixed item list (None: the sorted labels that occur); ``epsilon``: randomize
    every record at this epsilon (None: no randomization); ``key``: the AES key of that
    randomization; ``statistic`` and ``kappa``: what a ranking contributes (rankings only);
    ``seeded``: the key came from a seed (the tally says so); ``max_answers`` and ``user_epsilon``:
    comparisons only, a per-user bound and a personal budget (:mod:`privrank.engines.users`).
    """

    items: tuple | None = None
    epsilon: float | None = None
    max_answers: int | None = None
    user_epsilon: float | None = None
    key: np.ndarray | None = None
    statistic: str | None = None
    kappa: float | None = None
    seeded: bool = False


#: the largest batch the stream engine reads at once (2^31 records: Arrow's slice bound)
MAX_BATCH_SIZE = 2 ** 31


@private_release
def sufficient_statistics(source: str | os.PathLike[str] | PairwiseComparisons | Rankings | TableLike,
                          kind: str = "comparisons", *, engine: str | None = None,
                          items: Sequence[Hashable] | None = None, epsilon: float | None = None,
                          user_epsilon: float | None = None, max_answers: int | None = None,
                          statistic: str | None = None, kappa: float | None = None,
                          rng: int | np.random.Generator | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                          scheduler: str | distributed.Client | None = None,
                          progress: Callable[[int, int | None], object] | None = None, fingerprint: str | None = None,
                          ledger: Ledger | str | os.PathLike[str] | None = None, accountant: Accountant | None = None,
                          new_data: str | None = None) -> ComparisonTally | RankingTally:
    """Compute the sufficient statistic of ``source`` on an engine (see the module docstring).

    Parameters
    ----------
    source : str, Path or in-memory data
        A file (CSV, Parquet or Arrow, see :mod:`privrank.data.io`; for rankings the local
        engine also reads PrefLib files), a directory or glob pattern naming a data set of many
        such files, read as one (:mod:`privrank.data.parts`), or, for the local engine, the
        in-memory container of the kind (:class:`~privrank.data.comparisons.PairwiseComparisons`,
        :class:`~privrank.data.rankings.Rankings`).
    kind : {"comparisons", "rankings"}
        What the records are: pairwise comparisons, or complete strict rankings (one ballot per
        row, the layouts of :class:`~privrank.data.io.RankingFile`).
    engine : {"local", "stream", "dask"}, optional
        Default: ``stream`` for a file, ``local`` for in-memory data.
    items : sequence, optional
        Comparisons: the item list, in index order (default: the labels that occur, sorted).
        Rankings name every item in every ballot and take their item list from the file.
    epsilon : float, optional
        Comparisons: randomize every raw answer with randomized response at this epsilon before
        it is counted (Xu, Sun, Cheng §2.1): the statistic is then eps-local DP per comparison,
        and per user by basic composition over that user's comparisons. Refused for randomized
        reports (files with an epsilon column), which are counted as they are. Rankings: every
        voter sends one Duchi et al. l2 report of its vector for ``statistic`` -- the centred
        pair vector (Alabi et al. Theorem 8, ``ldp_matrix``) or the weighted binary-tree vector
        of its positions (Hillebrand et al. §4, ``ldp_footrule``) -- and the tally holds their
        fixed-point sum: eps-local DP per ranking, ``n`` public.
    user_epsilon : float, optional
        Comparisons only, instead of ``epsilon``: each user's budget, split evenly over that user's
        comparisons (a user with ``c`` answers each randomized at ``user_epsilon / c``), as
        :func:`~privrank.pairwise.local.randomized_response` splits it: ``user_epsilon``-local DP per
        user. Needs a user column; the stream engine reads the file twice (the users' counts first).
    max_answers : int, optional
        Comparisons only: a declared bound on answers per user; each user's first ``max_answers``
        records in file order are counted (and randomized, with ``epsilon``), as
        :meth:`~privrank.data.comparisons.PairwiseComparisons.first_answers` keeps them. The tally
        declares the bound and the number of records given, which the central mechanisms read
        (``privrank.perturbed_mle(tally, user_epsilon=..., max_answers=...)``).
    statistic : {"pairwise", "positions"}, optional
        Rankings only: the pairwise counts (the matrix w of the Kemeny methods), the position
        counts (footrule), or by default both; with ``epsilon``, the one the voters randomize.
    kappa : float, optional
        Rankings with ``epsilon`` and ``statistic="positions"``: the tree weight (default
        sqrt(2), :data:`privrank.mechanisms.tree.DEFAULT_KAPPA`).
    rng : None, int or numpy.random.Generator
        Source of the randomization key (used only with ``epsilon``;
        :func:`~privrank.mechanisms.randomized_response.record_key`).
    batch_size : int
        Records per batch of the stream engine (bounds its memory; a batch of rankings also
        holds at most 2^20 ranking cells).
    scheduler : None, str or distributed.Client
        Dask engine only: None for Dask's current default scheduler, a scheduler address such as
        ``"tcp://10.0.0.5:8786"``, or a Client.
    progress : callable, optional
        Stream engine: called as ``progress(records_done, records_total_or_None)`` after each
        batch.
    fingerprint : str, optional
        Dask engine: the ledger's fingerprint of the file (:func:`privrank.ledger.fingerprint`);
        the records the workers read, which they read by path, must have it, else
        :class:`~privrank.data.pinned.FileChangedError` (the file changed after it was
        fingerprinted) and no statistic.

    Returns
    -------
    ComparisonTally or RankingTally
        For ``kind="comparisons"``: exact integer counts per privacy level and pair, identical
        for every engine. ``privrank.fit_btl`` takes it directly (reports are debiased, raw
        answers give the non-private fit); see also
        :func:`privrank.pairwise.release.release_from_reports`. For ``kind="rankings"``: the
        number of voters and the int64 statistics (or the sum of the local reports), identical
        for every engine; the algorithms that read only one of them take it in place of the
        profile (``privrank.private_kemeny``, ``privrank.dp_kwiksort``, ``privrank.dp_footrule``,
        ``privrank.footrule_optimal_order``, ...; ``privrank.ldp_matrix`` and
        ``privrank.ldp_footrule`` for the voters' reports).

    Examples
    --------
    >>> import privrank as pr
    >>> from privrank.data.datasets import load_llmfao
    >>> tally = pr.sufficient_statistics(load_llmfao())
    >>> tally.n_items, tally.n_records, tally.is_randomized
    (59, 8931, False)
    >>> pr.fit_btl(tally).top_k(3)
    ['GPT 4', 'Platypus-2 Instruct (70B)', 'command']
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise InputError(f"kind must be one of {', '.join(KINDS)}")
    module = KINDS[kind]
    in_memory = isinstance(source, module.CONTAINER)
    if not in_memory and not isinstance(source, (str, Path, PinnedFile, DataParts)):
        raise InputError(f"source must be a file path or {module.CONTAINER.__name__}")
    engine = engine or ("local" if in_memory else "stream")
    if not isinstance(engine, str) or engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}")
    if in_memory and engine != "local":
        raise InputError(f"in-memory data are processed by the local engine; give a file for engine={engine!r} (CLI: --engine {engine})")
    if scheduler is not None and engine != "dask":
        raise InputError("a scheduler is used only by the dask engine")
    if not (isinstance(batch_size, (int, np.integer)) and 1 <= batch_size <= MAX_BATCH_SIZE):
        raise InputError(f"batch_size must be a whole number from 1 to {MAX_BATCH_SIZE:,} (records per batch; "
                         f"default {DEFAULT_BATCH_SIZE:,})")
    eps = None if epsilon is None else check_epsilon(epsilon)
    options = Options(items=None if items is None else module.item_list(items), epsilon=eps,
                      statistic=statistic, kappa=kappa, **_per_user_budget(kind, eps, user_epsilon, max_answers))
    drawn = None if eps is None and options.user_epsilon is None else \
        local_guarantee(kind, eps, statistic, options.user_epsilon, options.max_answers)
    # everything that can be refused is refused before the charge: a file without records too
    if in_memory or engine == "local":
        data = source if in_memory else module.read(source, options)
        module.check(data, options)
        if drawn is not None:
            charge(drawn)
        return module.in_memory(data, options, rng)
    file = module.open_file(source, options)
    module.check(file, options)
    _refuse_empty(module, file, min(int(batch_size), _FIRST_BATCH))
    totals = _user_totals(file, options, int(batch_size)) if engine == "stream" else None
    if drawn is not None:
        charge(drawn)
        options = replace(options, key=record_key(rng), seeded=is_seeded(rng))
    if engine == "stream":
        return _stream(module, file, options, int(batch_size), progress, totals)
    from .dask_engine import run_dask

    return run_dask(module, file, options, scheduler, fingerprint)


def _per_user_budget(kind: str, epsilon, user_epsilon, max_answers) -> dict:
    """``max_answers`` and ``user_epsilon`` checked (comparisons only; a bound goes with a budget per
    comparison, a personal budget already bounds each user)."""
    if user_epsilon is None and max_answers is None:
        return {}
    if kind != "comparisons":
        raise InputError("user_epsilon and max_answers apply to kind='comparisons'")
    if user_epsilon is not None and (epsilon is not None or max_answers is not None):
        raise InputError("user_epsilon is a budget per user, split over that user's comparisons: give it without "
                         "epsilon and max_answers (max_answers goes with epsilon per comparison)")
    return {"user_epsilon": None if user_epsilon is None else check_epsilon(user_epsilon, name="user_epsilon"),
            "max_answers": None if max_answers is None else check_whole(max_answers, name="max_answers")}


def local_guarantee(kind: str, epsilon: float | None, statistic: str | None, user_epsilon: float | None = None,
                    max_answers: int | None = None) -> Guarantee:
    """The guarantee of the reports the engines draw: per comparison (per user with a bound or a
    personal budget), or per ranking (``n`` public)."""
    if kind == "comparisons" and user_epsilon is not None:
        return Guarantee(epsilon=user_epsilon, model="local", unit=UNIT_USER, mechanism="randomized response",
                         note="Each user's budget is split evenly over that user's comparisons.")
    assert epsilon is not None, "rankings are randomized at one epsilon"
    if kind == "comparisons":
        return Guarantee(epsilon=epsilon, model="local", unit=UNIT_COMPARISON, mechanism="randomized response",
                         epsilon_per_comparison=epsilon,
                         epsilon_per_user=None if max_answers is None else epsilon * max_answers)
    vector = "pairwise vector" if statistic == "pairwise" else "weighted tree vector of positions"
    return Guarantee(epsilon=epsilon, model="local", unit=UNIT_RANKING,
                     mechanism=f"one-round Duchi et al. l2 randomizer of the {vector}",
                     note="Every voter sends one report.")


#: the most records a batch of :func:`_refuse_empty` holds
_FIRST_BATCH = 4096


def _refuse_empty(module, file, batch_size: int) -> None:
    """Read a file up to its first record: a file with a header and none is refused, before any charge."""
    for batch in file.batches(batch_size):
        if module.records(batch):
            return
    raise InputError(f"{file.path} has a header but no {module.KIND}: there is nothing to release")


def _user_totals(file, options: Options, batch_size: int) -> Users | None:
    """Stream engine, personal budget: each user's number of records, from a first pass over the
    file (before the charge: a record refused is refused before anything is spent)."""
    if options.user_epsilon is None:
        return None
    users = Users(budget=options.user_epsilon)
    for batch in _read_ahead(file.batches(batch_size)):
        users.add(users.codes(batch.user))
    return users


def _stream(module, file, options: Options, batch_size: int, progress, users: Users | None = None):
    total = file.n_records() if progress else None
    if users is None and options.max_answers is not None:
        users = Users(max_answers=options.max_answers)
    running = None
    done = 0
    for batch in _read_ahead(file.batches(batch_size)):
        part = module.partial(batch, options) if users is None else module.partial(batch, options, users)
        running = part if running is None else module.combine([running, part])
        done += len(batch)
        if progress:
            progress(done, total)
    tally = module.finish(running, options)
    return tally if options.max_answers is None else module.bounded(tally, options, done)


def _read_ahead(batches):
    """The batches, each read in a background thread while the previous one is reduced."""
    from concurrent.futures import ThreadPoolExecutor

    end = object()
    with ThreadPoolExecutor(1) as reader:
        upcoming = reader.submit(next, batches, end)
        while (batch := upcoming.result()) is not end:
            upcoming = reader.submit(next, batches, end)
            yield batch
