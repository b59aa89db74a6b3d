"""Readers and writers for comparison and ranking files: the public entry points.

The readers live by source -- :mod:`~privrank.data.comparison_files`,
:mod:`~privrank.data.ranking_files`, :mod:`~privrank.data.preflib`, with the shared file checks
and batched reader in :mod:`~privrank.data.tabular` and the partial-ballot policy in
:mod:`~privrank.data.ballots` -- and this module gathers what callers use.

Comparisons come from CSV (also gzip'd, ``.csv.gz``), Parquet (``.parquet``, ``.pq``) or Arrow
IPC / Feather files or streams (``.arrow``, ``.feather``, ``.ipc``, ``.arrows``), from data sets of
many such files read as one (a directory, a Hive-partitioned directory or a glob pattern such as
``"votes/*.parquet"``: :mod:`~privrank.data.parts`), or from tables in
memory: a pandas or polars DataFrame, a pyarrow Table, a DuckDB result -- anything that speaks the
Arrow PyCapsule stream protocol. Every source goes through one reader, Arrow's
(:class:`ComparisonFile`), and comes in one of these layouts, recognised from the column names
(matched case-insensitively):

* long format ``user,item_a,item_b,outcome`` with outcome 1 (item_a preferred), -1 (item_b)
  or 0 (tie). ``respondent``, ``worker`` (also with ``_id``) and ``judge`` (LMSYS arena's
  rater) are accepted for ``user``, ``result`` for ``outcome``; the user column is optional.
* ``winner,loser`` (optionally with ``user``): every record is a win for ``winner``.
* evalica and crowd-kit's ``left,right,winner`` (crowd-kit: ``label``) and LMSYS-arena style
  ``model_a,model_b,winner``: the winner column says ``left``/``right`` (``model_a``/
  ``model_b``), ``tie`` (also ``draw``, ``tie (bothbad)``) or names the winning item.
* ratings ``user,item,rating`` (MovieLens: ``userId,movieId,rating``): each user's pairs of
  rated items, at most a declared number per user (:func:`comparisons_from_ratings`).

A table whose columns have other names says which is which: ``read_comparisons(df, left=...,
right=..., winner=... or outcome=..., user=...)``. Every function that takes comparisons or
rankings also takes such a table directly.

An optional multiplicity column, ``count`` (also ``counts``, ``weight``, ``weights`` or
``multiplicity``: pre-aggregated data such as arena exports and evalica's ``weights``), says how
many comparisons a row stands for. A row of count ``c`` is ``c`` comparisons, exactly as if it
were repeated ``c`` times: on every engine (each repeats the rows as it reads them, in batches of
bounded size), in seeded randomization (comparisons are numbered in file order, the row's ``c``
one after another) and in the ledger's fingerprint. With a user column they are ``c`` comparisons
of that user (a per-user bound such as ``max_answers`` counts ``c``); the privacy unit is
unchanged. A count is a whole number from 0 to 2^53: an integer column, a float column holding
whole numbers, or in CSV an integer (``3``, not ``3.0``); rows of count 0 are dropped; a file has
at most one such column. The comparisons a file's counts stand for are bounded by
``PRIVRANK_MAX_COUNTED_RECORDS`` and, read in memory, by the memory they take
(``PRIVRANK_MAX_MEMORY_MB``; :mod:`privrank.limits`), and refused before they are built. In a file
of randomized reports (below) a count is that many respondents who sent the same report, the same
as the row repeated; with a user column a count above 1 is one respondent reporting a pair more
than once, which is refused.

An optional ``epsilon`` column marks the records as randomized reports (respondents already
applied randomized response with that epsilon on their device): they will be debiased, never
randomized again, at most one per respondent and pair when a user column names the respondents,
and each at an epsilon the release declares (see
:meth:`~privrank.data.comparisons.PairwiseComparisons.with_declared_epsilons`). Errors name the offending line (CSV) or record number but never echo its
contents.

:class:`ComparisonFile` reads any source in batches of bounded size (the streaming and Dask
engines of :mod:`privrank.engines` use it, and :class:`RankingFile` for rankings);
:func:`read_comparisons` reads it whole into memory through the same batches. CSV fields are
text with surrounding whitespace removed (so labels are strings); Parquet, Arrow and in-memory
columns keep their types (text may be ``string``, ``large_string``, ``string_view`` or a dictionary
of them, as polars writes it). Every batch read from a Parquet or Arrow file is validated in full
before use: a damaged or truncated file is an :class:`~privrank.errors.InputError` naming the file.

Rankings (:func:`read_rankings`) come from PrefLib files (``.soc`` complete strict orders,
``.soi`` strict incomplete orders, ``.toc`` complete orders with ties; the 2022 PrefLib format
with ``# ALTERNATIVE NAME k: label`` headers and lines ``count: a,b,{c,d},e``) or from CSV with
one ranking per row (see :func:`read_rankings`). Kemeny and footrule aggregation need complete
strict rankings; the ``partial`` policy says what to do with a ballot that has ties or unranked
items:

``"error"`` (default)
    refuse the file, saying how many ballots are affected and which options exist;
``"drop"``
    keep only the complete strict ballots;
``"randomize"``
    complete every such voter's ballot independently and uniformly at random: each tied group
    is put in a uniformly random order, and the unranked items follow the ranked ones in a
    uniformly random order. A pair the voter did not order then counts as "i before j" with
    probability 1/2, i.e. as no preference in expectation. The completion depends only on that
    voter's own ballot, so neighbouring profiles (one ballot changed) stay neighbours and every
    privacy guarantee of the aggregation holds for the original ballots.
"""
from __future__ import annotations

from .ballots import PARTIAL_POLICIES
from .comparison_files import (ComparisonBatch, ComparisonColumns, ComparisonFile, as_comparisons,
                               comparisons_to_csv, read_comparisons)
from .ratings import comparisons_from_ratings
from .parts import ARROW_SUFFIXES, PARQUET_SUFFIXES, PREFLIB_SUFFIXES, DataParts, data_source, file_format
from .pinned import check_data_file
from .ranking_files import (RANKING_BATCH_CELLS, RankingBatch, RankingFile, different_items_error, holds_rankings,
                            read_ballots, read_item_list, read_rankings)
from .tabular import DEFAULT_BATCH_SIZE, MAX_DECLARED_ITEMS, MAX_EXACT_COUNT, check_items, item_list

__all__ = ["ARROW_SUFFIXES", "DEFAULT_BATCH_SIZE", "MAX_DECLARED_ITEMS", "MAX_EXACT_COUNT", "PARQUET_SUFFIXES",
           "PARTIAL_POLICIES", "PREFLIB_SUFFIXES", "RANKING_BATCH_CELLS", "ComparisonBatch", "ComparisonColumns",
           "ComparisonFile", "DataParts", "RankingBatch", "RankingFile", "as_comparisons", "check_data_file",
           "check_items", "comparisons_from_ratings", "comparisons_to_csv", "data_source",
           "different_items_error", "file_format", "holds_rankings", "item_list", "read_ballots", "read_comparisons",
           "read_item_list", "read_rankings"]
