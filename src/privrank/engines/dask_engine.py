"""The ``dask`` engine: one partial statistic per partition, added by a tree reduction.

Each task reads its own partition: a Parquet file's row group (read and validated in full by the
file's reader, as the other engines read it), or a block of ``CSV_BLOCKSIZE`` of a CSV file read by
``dask.dataframe`` with every field as text (Dask splits CSV at line breaks, so quoted fields must
not contain any); a data set of many files (:mod:`privrank.data.parts`) has the partitions of every
part, part after part. A first computation measures each partition
(``file.extent``: its records; for rankings, its rows and voters), which gives every partition
the file position of its first record (needed by the counter-based randomization and by error
messages) and, when a per-user bound or budget is requested, counts each partition's users: the
client turns them, ``MEASURE_CHUNK`` partitions at a time, into a :class:`~privrank.engines.users.Plan`
(each user's total, or where each user's bound is reached), one node of the graph that every
task reads; the second reduces each partition to its partial statistic and adds the partials
``SPLIT_EVERY`` at a time. Each task is a pure function of its partition, so when a worker dies
the scheduler runs its tasks again elsewhere and the result does not change.

The workers read the file by its path, once per pass. The first pass also returns the digest of
the columns it read of each partition (:func:`~privrank.data.arrow_columns.columns_digest`), and
each task of the second digests the same columns of its partition before computing anything from
it: a partition that differs (a file changed, or swapped and swapped back, between the passes,
which would misnumber records or let a user's records escape the plan's bound or budget) is
refused (:class:`~privrank.data.pinned.FileChangedError`). The records of the second pass are
checked against the ledger's fingerprint (:func:`run_dask`).

A ``--scheduler`` address is checked (``[protocol://]host:port``) before connecting; the
connection waits at most ``CONNECT_TIMEOUT``, and any failure becomes an
:class:`~privrank.errors.InputError`, with the client closed so the process exits.
"""
from __future__ import annotations

import numpy as np

from ..data.arrow_columns import columns_digest
from ..data.parts import DataParts
from ..data.pinned import FileChangedError, PinnedFile
from ..errors import InputError
from ..fingerprints import digest_fingerprint, records_digest
from .users import Plan, partition_users

SPLIT_EVERY = 8
#: partitions whose users are counted per computation (the client holds their counts at once)
MEASURE_CHUNK = 32
CSV_BLOCKSIZE = "16MB"
CONNECT_TIMEOUT = "30s"


def run_dask(module, file, options, scheduler, fingerprint=None):
    """Compute ``module``'s statistic of ``file`` with Dask (see the module docstring).

    The workers read the file (every part of a data set) by its path, not through a pinned file's
    descriptor; so every partition also returns the :func:`~privrank.fingerprints.records_digest` of
    the records it used, and with ``fingerprint`` (the ledger's, from the pass that read the pinned
    file) their sum must give that fingerprint: records other than those fingerprinted are refused
    (:class:`~privrank.data.pinned.FileChangedError`) before the statistic is returned.
    """
    try:
        import dask
        import dask.dataframe as dd
    except ImportError:
        raise InputError("the dask engine needs dask: pip install 'dask[distributed]'") from None
    if isinstance(file.source, PinnedFile):
        if file.source.path is None:
            raise InputError("the dask engine's workers read the data by its path: save standard input to a file "
                             "and give that file")
        file = module.open_file(file.source.path, options)
    elif isinstance(file.source, DataParts) and file.source.pinned:
        file = module.open_file(file.source.unpinned(), options)  # the parts fingerprinted, by their paths
    users = getattr(module, "per_user", lambda options: False)(options)
    measured = file.extent_columns + ([file.header[file.columns.user]] if users else [])
    if file.format == "parquet":  # read and validated by the file's own reader, one row group per partition
        groups = range(file.row_groups())
        extent_parts = [dask.delayed(file.row_group)(k, measured) for k in groups]
        parts = [dask.delayed(file.row_group)(k, file.names) for k in groups]
    elif file.format == "csv":
        paths = list(file.source.paths) if isinstance(file.source, DataParts) else file.path
        frame = dd.read_csv(paths, usecols=file.names, dtype=str, keep_default_na=False,
                            encoding="utf-8-sig", blocksize=CSV_BLOCKSIZE)
        extent_parts = [dask.delayed(_from_pandas)(part) for part in frame[measured].to_delayed()]
        parts = [dask.delayed(_from_pandas)(part) for part in frame.to_delayed()]
    else:
        raise InputError("the dask engine reads Parquet and CSV files; convert Arrow files to Parquet")
    client, owned = _client(scheduler)
    try:
        with file.reading():  # a damaged file fails in a task: refused as the other engines refuse it
            extents, digests, plan = _measured(dask, file, extent_parts, measured, users, options, client)
            starts = np.concatenate([np.zeros_like(extents[:1]), np.cumsum(extents, axis=0)[:-1]])
            if plan is not None:  # one node of the graph, which every task reads
                plan = dask.delayed(plan, pure=False, traverse=False)
            partials = [dask.delayed(_partial)(module.partial, file, part, (measured, digest), start.tolist(),
                                               options, plan, k)
                        for k, (part, start, digest) in enumerate(zip(parts, starts, digests))]
            while len(partials) > 1:
                partials = [dask.delayed(_combine)(module.combine, partials[k:k + SPLIT_EVERY])
                            for k in range(0, len(partials), SPLIT_EVERY)]
            ((total, (digest_total, digest_count)),) = dask.compute(partials[0], scheduler=client)
    finally:
        if owned:
            client.close()
    if fingerprint is not None and digest_fingerprint(digest_total, digest_count, module.KIND) != fingerprint:
        raise FileChangedError(f"{file.path} changed while the dask workers read it (their records are not those "
                               "fingerprinted): nothing computed from it was written")
    tally = module.finish(total, options)
    return module.bounded(tally, options, int(extents[:, -1].sum())) if users else tally


def _measured(dask, file, parts, columns, users: bool, options, client):
    """``(extents, digests, plan)``: every partition's extent, the digest of its ``columns`` (those
    read) and, when users are counted, the :class:`~privrank.engines.users.Plan` built from their
    counts -- computed ``MEASURE_CHUNK`` partitions at a time, so that the client holds one chunk's
    user counts beside the plan."""
    extents, digests = [], []
    step = MEASURE_CHUNK if users else max(len(parts), 1)

    def counted():
        for start in range(0, len(parts), step):
            for extent, digest, part_users in dask.compute(*[dask.delayed(_measure)(file, part, columns, users)
                                                             for part in parts[start:start + step]], scheduler=client):
                extents.append(extent)
                digests.append(digest)
                yield part_users
    if users:
        plan = Plan.of(counted(), options.max_answers, options.user_epsilon)
    else:
        plan = None
        for _ in counted():
            pass
    return np.array(extents), digests, plan


def _measure(file, table, columns, users: bool):
    """``(extent, digest, users)``: how far a partition reaches (``file.extent``), the digest of its
    ``columns`` (:func:`~privrank.data.arrow_columns.columns_digest`) and, when asked, its users and
    their numbers of records (:func:`~privrank.engines.users.partition_users`)."""
    return (file.extent(table.select(file.extent_columns)), columns_digest(table, columns),
            partition_users(file, table) if users else None)


def _from_pandas(frame):
    """A partition of Dask's CSV reader (text columns) as a pyarrow table."""
    import pyarrow as pa

    return pa.Table.from_pandas(frame, preserve_index=False)


def _partial(partial, file, table, measured, first, options, plan=None, partition=0):
    """A partition's partial statistic and the digest of its records (:func:`~privrank.fingerprints.records_digest`);
    with a per-user ``plan`` (:class:`~privrank.engines.users.Plan`), of the records it selects.
    ``measured``: ``(columns, digest)`` of the first pass; a partition whose columns have another
    digest is refused (:class:`~privrank.data.pinned.FileChangedError`) before anything is computed."""
    columns, digest = measured
    if columns_digest(table, columns) != digest:
        raise FileChangedError(f"{file.path} changed between the dask engine's passes over it (a partition differs "
                               "from its first read): nothing computed from it was written")
    batch = file.validate(table, first)
    part = partial(batch, options) if plan is None else partial(batch, options, plan.users(partition))
    return part, records_digest(batch)


def _combine(combine, parts):
    """The partial statistics combined, and their records' digests added."""
    total = sum(int(d[0]) for _, d in parts) % 2 ** 64
    return combine([p for p, _ in parts]), (total, sum(int(d[1]) for _, d in parts))


def _client(scheduler):
    """``(client or None, whether we opened it)`` for a scheduler argument."""
    if scheduler is None or not isinstance(scheduler, str):
        return scheduler, False
    try:
        from distributed import Client
    except ImportError:
        raise InputError("a Dask scheduler (scheduler=; CLI: --scheduler) needs dask.distributed: pip install 'dask[distributed]'") from None
    _check_address(scheduler)
    try:
        return Client(scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False), True
    except (OSError, ValueError, TypeError):  # a failed Client closes its own loop and connections
        raise InputError(f"no Dask scheduler answered at {scheduler} within {CONNECT_TIMEOUT}: start one "
                         "(dask scheduler) or pass its address, e.g. scheduler='tcp://host:8786' (CLI: --scheduler)") from None


def _check_address(scheduler: str) -> None:
    """Refuse a scheduler address that is not ``[protocol://]host:port`` before connecting to it."""
    from distributed.comm.addressing import parse_address, parse_host_port

    bad = InputError(f"the scheduler {scheduler!r} is not a Dask scheduler address: give "
                     "[tcp://]host:port, e.g. tcp://127.0.0.1:8786")
    try:
        protocol, location = parse_address(scheduler)
        if protocol in ("tcp", "tls"):
            _, port = parse_host_port(location)
            if not 0 < int(port) < 65536:
                raise bad
    except (ValueError, TypeError):
        raise bad from None
