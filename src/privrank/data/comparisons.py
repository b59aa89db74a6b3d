"""Pairwise comparisons: the records, their outcome constants and their item labels.

:class:`PairwiseComparisons` holds records ``(user, item_a, item_b, outcome)`` with outcome
``1`` (item_a preferred), ``-1`` (item_b preferred) or ``0`` (tie / no preference), and
optionally a per-record ``epsilon``: a record with an epsilon is a *randomized report* that a
respondent already privatised on their own device (outcome then in {1, -1}); privrank debiases
such reports and never randomizes them again. Their sufficient statistic is
:class:`~privrank.data.pair_counts.PairCounts` (:meth:`PairwiseComparisons.pair_counts`), in
exact integer form :class:`~privrank.data.tally.ComparisonTally` (:meth:`PairwiseComparisons.tally`).

Items are indexed 0..m-1 in sorted label order (so the same input gives the same indices
whatever order the records arrive in); results are mapped back to labels.
"""
from __future__ import annotations

import array

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np

from ..errors import EPSILON_FLOOR, InputError, check_flag, check_labels, index_array, real_array
from ..html_cards import Shown
from .pair_counts import PairCounts
from .arrow_columns import label_indices
from .tally import ComparisonTally, EpsilonLevels, declared_set, epsilon_levels, folds

OUTCOME_A = 1
OUTCOME_B = -1
OUTCOME_TIE = 0
SMALL_RECORDS = 2048  # up to this many records, a dict and plain sums beat the set-up of Arrow and of the tally


def sorted_labels(values) -> tuple:
    labels = set(values)
    try:
        return tuple(sorted(labels))
    except TypeError:  # mixed types: order by string form
        return tuple(sorted(labels, key=str))


def first_missing(labels) -> int | None:
    """Position of the first missing label (None, NaN or an empty string), or None."""
    return next((k for k, x in enumerate(labels) if x is None or x == "" or x != x), None)  # x != x: NaN


def label_codes(columns, items=None, name: str = "item") -> tuple[tuple, list]:
    """``(labels, codes)``: the labels (``items``, or every label of ``columns`` in
    :func:`sorted_labels` order) and each column as int64 indices into them. Columns of one Arrow
    type are encoded by Arrow (:func:`~privrank.data.arrow_columns.label_indices`: strings, integers,
    10x faster than a dict); anything else (mixed types, missing labels) by a dict, and so are lists
    or object arrays of at most ``SMALL_RECORDS`` strings (Arrow's set-up costs more). A label not in
    ``items`` is an :class:`InputError` (``KeyError`` on the dict path), and so is a missing
    label (None, NaN or an empty string), named ``name`` in the message."""
    if max(map(len, columns)) <= SMALL_RECORDS and all(_python_objects(c) for c in columns):
        return _dict_codes(columns, items, name)
    strings = all(isinstance(c, list) and c and isinstance(c[0], str) for c in columns)
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        if strings:
            # Python strings straight into dictionary arrays: hashed while converted (1.4x
            # faster than converting, then encoding); a non-string raises and takes the dict path
            # dictionary arrays (pyarrow's stubs type what pa.array returns as a plain Array)
            arrays: list[Any] = [pa.array(c, type=pa.dictionary(pa.int32(), pa.string())) for c in columns]
            kind: pa.DataType = pa.string()
            seen = [x for a in arrays for x in a.dictionary.to_pylist()]
        else:
            plain = [pa.array(c) for c in columns]
            kind = plain[0].type
            encoded = pc.dictionary_encode(pa.chunked_array(plain))  # one dictionary shared by the chunks
            arrays = list(encoded.chunks)
            seen = arrays[-1].dictionary.to_pylist()  # the last chunk's holds every label (the memo only grows)
        if any(x.type != arrays[0].type or x.null_count for x in arrays) or not (
                pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_integer(kind)):
            raise TypeError
        if "" in seen:
            raise TypeError  # the dict path finds the record
        labels = sorted_labels(seen) if items is None else tuple(items)
        pa.array(labels, type=kind)  # the item list takes the columns' type, or the dict path reads it
    except (TypeError, ValueError, OverflowError, pa.ArrowException):
        return _dict_codes(columns, items, name)
    return labels, [label_indices(x, labels) for x in arrays]


def _python_objects(column) -> bool:
    """Whether ``column`` holds Python strings: a list of them or a numpy object array (as pandas
    gives a text column), which a dict maps faster than Arrow sets up for a few thousand records."""
    return len(column) > 0 and isinstance(column[0], str) and (
        isinstance(column, list) or isinstance(column, np.ndarray) and column.dtype == object)


def _dict_codes(columns, items, name: str) -> tuple[tuple, list]:
    """:func:`label_codes` by a dict from label to index: any hashable labels."""
    values = [list(c) for c in columns]
    distinct = [set(c) for c in values]
    for c, seen in zip(values, distinct):
        if first_missing(seen) is not None:  # the distinct labels are checked; the record is looked up
            record = first_missing(c)
            assert record is not None  # a missing label among the distinct ones is in the column
            raise InputError(f"record {record + 1}: empty or missing {name} (None, NaN or '')")
    labels = sorted_labels(set().union(*distinct)) if items is None else tuple(items)
    index = {lab: k for k, lab in enumerate(labels)}
    return labels, [np.fromiter(map(index.__getitem__, c), dtype=np.int64, count=len(c)) for c in values]


@dataclass(frozen=True, eq=False)
class PairwiseComparisons(Shown):
    """Validated pairwise comparisons with item labels and optional user ids.

    Build with :meth:`from_labels` (labels in, validated) rather than directly.

    Attributes
    ----------
    items : tuple
        Item labels; item ``k`` internally is ``items[k]``.
    item_a, item_b : ndarray of int64
        Internal indices of the two items of each record (never equal).
    outcome : ndarray of int8
        1 if item_a was preferred, -1 if item_b, 0 for a tie.
    user : ndarray of int64 or None
        Internal user index per record, into ``users``.
    users : tuple or None
        User labels.
    epsilon : ndarray of float or None
        Per-record epsilon of randomized reports (see module docstring), else None. Reports
        made from ``levels`` (as the randomizers make them) build this column when it is first
        read: their tally and release read the levels.
    items_declared : bool
        True when the caller gave the item list; False when it was read off the labels that
        occur in the data. Central mechanisms refuse undeclared items: which items occur is a
        fact of the data (one person's only comparison naming an item would decide whether it
        appears in the output).
    levels : EpsilonLevels or None
        The distinct values of ``epsilon`` and each record's index into them, when the code that
        made the reports knew them (the randomizers do) or a declaration found them: the tally then
        reads them instead of hashing the epsilon column, and reports made from them hold no
        epsilon column until one is read.
    seeded : bool
        Randomized reports drawn with a seed: research output, not a release (whatever is
        computed from them says so in its guarantee).
    pairs_from_ratings : bool
        The pairs were drawn from the items each user rated
        (:func:`~privrank.data.ratings.comparisons_from_ratings`): which items a user rated is
        part of the data, and a local release, which randomizes answers and sends the pairs as
        they are, says that it does not hide it.
    max_answers : int or None
        The declared quota of randomized reports per respondent (a public parameter, e.g. of the
        survey that collected them; see :meth:`with_quota`): every respondent sent at most this
        many, so each is protected at ``max_answers`` times the largest epsilon. None: no quota
        declared (a per-comparison guarantee only).
    declared_epsilons : tuple of float or None
        The declared epsilons of randomized reports, increasing (a public parameter, like the
        quota; see :meth:`with_declared_epsilons`): every report carries one of them. The
        randomizers declare the epsilons they drew at. None: none declared.

    Randomized reports with user ids hold at most one report per respondent and pair: a
    respondent who sent one pair twice is refused when the reports are built (:meth:`from_labels`,
    :meth:`from_indices`, the readers), as the survey server refuses it. Without user ids this
    cannot be checked.

    Examples
    --------
    >>> import privrank as pr
    >>> comps = pr.PairwiseComparisons.from_labels(
    ...     ["a", "a", "b", "c"], ["b", "c", "c", "a"], [1, 1, 0, 1], user=["u1", "u1", "u2", "u2"],
    ...     items=["a", "b", "c"])
    >>> comps.n_records, comps.n_items, comps.n_users
    (4, 3, 2)
    >>> comps.item_a, comps.item_b, comps.outcome
    (array([0, 0, 1, 2]), array([1, 2, 2, 0]), array([1, 1, 0, 1], dtype=int8))
    >>> comps.items_declared, comps.is_randomized
    (True, False)
    """

    items: tuple
    item_a: np.ndarray
    item_b: np.ndarray
    outcome: np.ndarray
    user: np.ndarray | None = None
    users: tuple | None = None
    _epsilon: np.ndarray | None = None
    items_declared: bool = True
    levels: "EpsilonLevels | None" = field(default=None, repr=False)
    seeded: bool = False
    pairs_from_ratings: bool = False
    max_answers: int | None = None
    declared_epsilons: tuple | None = None

    def __post_init__(self):
        columns = (self.item_a, self.item_b, self.outcome) + tuple(
            c for c in (self.user, self._epsilon) if c is not None)
        shape = getattr(self.item_a, "shape", ())
        if self.levels is not None and not isinstance(self.levels, EpsilonLevels):
            raise InputError("levels must be the EpsilonLevels of the records, or None")
        level = () if self.levels is None else np.shape(self.levels.index)  # () when all share one level
        if any(not isinstance(c, np.ndarray) or c.shape != shape for c in columns) or len(shape) != 1 or (
                level not in ((), shape)):
            raise InputError("item_a, item_b, outcome (and user, epsilon) must be 1-d arrays of the same length; "
                             "build comparisons with PairwiseComparisons.from_labels or from_indices")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_labels(cls, item_a, item_b, outcome, *, user=None, epsilon=None, items=None):
        """Validate labelled records and build the container.

        Parameters
        ----------
        item_a, item_b : sequence of hashable labels
        outcome : sequence of int in {1, -1, 0}
        user : sequence of hashable user ids, optional
        epsilon : sequence of float, optional
            Per-record epsilon: marks the records as randomized reports (outcome in {1, -1}); with
            ``user``, a respondent may report each pair once.
        items : sequence of labels, optional
            The full item set (default: every label that occurs, sorted). Items listed here but
            never compared are allowed in the container; estimators refuse them.
        """
        item_a, item_b = (_column(x, name) for x, name in ((item_a, "item_a"), (item_b, "item_b")))
        user = None if user is None else _column(user, "user")
        n = len(item_a)
        if n == 0:
            raise InputError("no comparisons given: the data set is empty")
        if len(item_b) != n:
            raise InputError("item_a and item_b must have the same length")
        out = _as_outcome(outcome, n)
        items = None if items is None else check_labels(items)
        if items is not None and len(set(items)) != len(items):
            raise InputError("the item list has a repeated label")
        try:
            labels, (a, b) = label_codes([item_a, item_b], items)
        except KeyError:
            raise InputError("a comparison names an item that is not in the given item list") from None
        except TypeError:  # the dict path hashes every label
            raise InputError("an item label is not hashable (a list or a dict?): labels are text or numbers") from None
        u = users = None
        if user is not None:
            if len(user) != n:
                raise InputError("user must have one id per comparison")
            try:
                users, (u,) = label_codes([user], None, "user")
            except TypeError:  # the dict path hashes every id
                raise InputError("a user id is not hashable (a list or a dict?): user ids are text or numbers") from None
        return cls._checked(labels, a, b, out, u, users, epsilon, items is not None)._one_report_per_pair()

    @classmethod
    def from_indices(cls, items, item_a, item_b, outcome, *, user=None, users=None, epsilon=None,
                     items_declared: bool = True):
        """Build from internal indices (fast path for simulation and readers)."""
        a = index_array(item_a, name="item_a", what="item indices")
        b = index_array(item_b, name="item_b", what="item indices")
        if a.ndim != 1 or b.ndim != 1:
            raise InputError("item_a and item_b must be 1-d arrays of item indices")
        out = _as_outcome(outcome, a.size)
        u = None if user is None else index_array(user, name="user", what="user indices")
        if u is not None and users is None:
            if u.size and (u.min() < 0 or u.max() >= u.size):  # codes of at most one user per record
                raise InputError("user indices must run from 0 up, below the number of comparisons (one code per "
                                 "user); pass users= to name users with other ids")
            users = tuple(range(int(u.max()) + 1)) if u.size else ()
        return cls._checked(items, a, b, out, u, users, epsilon,  # _checked checks the labels
                            check_flag(items_declared, name="items_declared"))._one_report_per_pair()

    @classmethod
    def _checked(cls, labels, a, b, out, u, users, epsilon, items_declared=True, records_checked=False):
        """Validate and build; ``records_checked``: the items and users are those of a checked
        data set (new outcomes for its records), so only the outcomes and epsilons are checked;
        ``epsilon``: one per record, or the :class:`EpsilonLevels` of the records (their values
        checked; the reports keep them and no column)."""
        labels = check_labels(labels)
        m = len(labels)
        n = a.size
        if out.size != n:
            raise InputError("item_a, item_b and outcome must have the same length")
        if not records_checked:
            if n == 0:
                raise InputError("no comparisons given: the data set is empty")
            if m < 2:
                raise InputError("at least two distinct items are needed to rank anything")
            if b.size != n:
                raise InputError("item_a, item_b and outcome must have the same length")
            if a.min() < 0 or b.min() < 0 or a.max() >= m or b.max() >= m:
                raise InputError("an item index is out of range")
            same = a == b
            if same.any():
                raise InputError(f"record {int(same.argmax())} compares an item with itself")
            if u is not None:
                if u.shape != (n,):
                    raise InputError("user must have one id per comparison")
                users = check_labels(users, name="user") if users is not None else None
                if users is None or (u.size and (u.min() < 0 or u.max() >= len(users))):
                    raise InputError("a user index is out of range")
        eps: np.ndarray | None = None
        levels = epsilon if isinstance(epsilon, EpsilonLevels) else None
        if epsilon is not None:
            if levels is not None:
                values = levels.values
            else:
                eps = real_array(epsilon, name="epsilon", what="one number per comparison")
                if eps.shape != (n,):
                    raise InputError("epsilon must give one value per comparison")
                values = eps[:1] if eps.strides == (0,) else eps  # a broadcast view: one epsilon, checked once
            bad = np.flatnonzero(~np.isfinite(values) | (values < EPSILON_FLOOR))
            if bad.size:
                what = f"epsilon must be finite and at least {EPSILON_FLOOR:g}"
                raise InputError(f"record {int(bad[0])}: {what}" if values is eps else what)
            if np.count_nonzero(out) < n:  # a tie (OUTCOME_TIE is 0): counted without a copy, then found
                tie = int(np.flatnonzero(out == OUTCOME_TIE)[0])
                raise InputError(f"record {tie}: a randomized report must be 1 or -1, "
                                 "not a tie (randomized response never outputs a tie)")
        for arr in (a, b, out) + ((u,) if u is not None else ()) + ((eps,) if eps is not None else ()):
            arr.setflags(write=False)
        return cls(labels, a, b, out, u, users, eps, bool(items_declared), levels)

    # ------------------------------------------------------------------ properties
    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_records(self) -> int:
        return int(self.item_a.size)

    @property
    def n_users(self) -> int | None:
        return None if self.users is None else len(self.users)

    @property
    def is_randomized(self) -> bool:
        """True when the records are randomized reports carrying their own epsilon."""
        return self._epsilon is not None or self.levels is not None

    @property
    def epsilon(self) -> np.ndarray | None:
        """The epsilon of each record of randomized reports (read-only), else None; built from
        :attr:`levels` when first read (a broadcast view when all share one)."""
        if self._epsilon is None and self.levels is not None:
            column = self.levels.column(self.n_records)
            column.setflags(write=False)
            object.__setattr__(self, "_epsilon", column)  # a cache: the reports are unchanged
        return self._epsilon

    @cached_property
    def users_grouped(self) -> bool:
        """True when the records come grouped by user, in the order of the users (each user's
        records one run); False without user ids."""
        u = self.user
        return u is not None and bool(np.all(u[1:] >= u[:-1]))

    def records_per_user(self) -> np.ndarray:
        """Number of records of each user (requires user ids)."""
        if self.user is None or self.users is None:
            raise InputError("the data have no user ids")
        if self.users_grouped:  # count by the boundaries of the runs
            return np.diff(np.searchsorted(self.user, np.arange(len(self.users) + 1)))
        return np.bincount(self.user, minlength=len(self.users))

    def select_users(self, users) -> "PairwiseComparisons":
        """The records of the users at internal indices ``users`` (distinct), renumbered in that order."""
        if self.user is None or self.users is None:
            raise InputError("the data have no user ids")
        idx = np.asarray(users, dtype=np.int64).ravel()
        n = len(self.users)
        if idx.size == 0 or idx.min() < 0 or idx.max() >= n or np.unique(idx).size != idx.size:
            raise InputError(f"users must be distinct indices between 0 and {n - 1}")
        new = np.full(n, -1, dtype=np.int64)
        new[idx] = np.arange(idx.size)
        keep = new[self.user] >= 0
        eps = None if self.epsilon is None else self.epsilon[keep]
        return self._derived(type(self)._checked(self.items, self.item_a[keep], self.item_b[keep], self.outcome[keep],
                                                 new[self.user[keep]], tuple(self.users[k] for k in idx), eps,
                                                 self.items_declared))

    def first_answers(self, max_answers) -> "PairwiseComparisons":
        """Each user's first ``max_answers`` records in data order: a declared per-user bound applied.

        Which records are kept depends on each user's own records only, so the selection is
        applied user by user and a per-user guarantee covers it.
        """
        if self.user is None:
            raise InputError("a bound on answers per user needs user ids in the data")
        try:
            m = int(max_answers)
        except (TypeError, ValueError, OverflowError):
            raise InputError("max_answers must be a whole number >= 1") from None
        if m != max_answers or m < 1:
            raise InputError("max_answers must be a whole number >= 1")
        count = np.bincount(self.user)
        over = count > m
        if not over.any():
            return self
        rows = np.flatnonzero(over[self.user])  # the records of users over the bound, in data order
        user = (np.cumsum(over) - 1)[self.user[rows]]  # those users numbered 0, 1, ...
        # stable sort by user, by 16-bit halves: numpy sorts those by radix (3x faster)
        order = np.argsort((user & 0xFFFF).astype(np.uint16), kind="stable")
        if over.sum() > 1 << 16:
            order = order[np.argsort((user[order] >> 16).astype(np.uint16), kind="stable")]
        place = np.arange(order.size) - (np.cumsum(count[over]) - count[over])[user[order]]
        keep = np.ones(self.n_records, dtype=bool)
        keep[rows[order[place >= m]]] = False
        eps = None if self.epsilon is None else self.epsilon[keep]
        return self._derived(type(self)._checked(self.items, self.item_a[keep], self.item_b[keep], self.outcome[keep],
                                                 self.user[keep], self.users, eps, self.items_declared))

    def with_quota(self, max_answers) -> "PairwiseComparisons":
        """These randomized reports with the declared quota ``max_answers`` of reports per respondent.

        In the local model the collector sees how many reports each respondent sent, so the
        quota is checked here: a respondent with more reports, or a quota other than one already
        declared, is refused (the message names no respondent and no count).
        """
        if not self.is_randomized:
            raise InputError("a quota of answers per respondent (max_answers) is declared with randomized "
                             "reports; raw comparisons take it when they are randomized")
        if isinstance(max_answers, bool) or not isinstance(max_answers, (int, np.integer)) or max_answers < 1:
            raise InputError("max_answers must be a whole number >= 1")
        k = int(max_answers)
        if self.max_answers is not None and self.max_answers != k:
            raise InputError("the declared quota of answers per respondent differs from the one the reports "
                             "carry (their max_answers column); give the same number")
        if self.user is None:
            raise InputError("a quota of answers per respondent needs the respondents' ids (a user column)")
        if int(self.records_per_user().max()) > k:
            raise InputError("a respondent sent more reports than the declared quota of answers per respondent "
                             "(max_answers): the per-respondent guarantee would not hold")
        return replace(self, max_answers=k)

    def with_declared_epsilons(self, epsilons) -> "PairwiseComparisons":
        """These randomized reports with the declared epsilons ``epsilons`` (one number or several):
        the epsilons the survey asked its respondents to use, a public parameter.

        Every report must carry one of them (exactly), and a declaration the reports already carry
        must be the same (:func:`~privrank.data.tally.declared_set`); the message names no report
        and no count. The tally of the reports carries the declaration.

        Examples
        --------
        >>> import privrank as pr
        >>> reports = pr.PairwiseComparisons.from_labels(["a", "a", "b"], ["b", "c", "c"], [1, -1, 1],
        ...                                              epsilon=[1.0, 0.5, 1.0])
        >>> reports.with_declared_epsilons([1, 0.5]).declared_epsilons
        (0.5, 1.0)
        >>> try:
        ...     reports.with_declared_epsilons(1)
        ... except pr.InputError as exc:
        ...     print(str(exc)[:55])
        some reports carry an epsilon that was not declared (1)
        """
        if not self.is_randomized:
            raise InputError("epsilons are declared for randomized reports; raw comparisons take an epsilon when "
                             "they are randomized")
        levels = self.levels if self.levels is not None else epsilon_levels(self.epsilon, self.n_records)
        return replace(self, levels=levels,
                       declared_epsilons=declared_set(epsilons, levels.values, self.declared_epsilons))

    def _one_report_per_pair(self) -> "PairwiseComparisons":
        """These comparisons, refused when they are randomized reports with user ids in which a
        respondent reported one pair more than once."""
        if not self.is_randomized or self.user is None or self.users is None:
            return self
        m = self.n_items
        lo, hi = np.minimum(self.item_a, self.item_b), np.maximum(self.item_a, self.item_b)
        if len(self.users) * m * m < 2 ** 63:  # one int64 code per (respondent, pair): sorted, repeats are neighbours
            key = self.user * np.int64(m * m) + lo * np.int64(m) + hi
            key.sort()
            repeated = bool((key[1:] == key[:-1]).any())
        else:
            repeated = np.unique(np.stack([self.user, lo, hi], axis=1), axis=0).shape[0] < self.n_records
        if repeated:
            raise InputError("a respondent sent more than one report of the same pair: a pair is randomized once "
                             "per respondent (reports drawn again from one answer average its noise away, and one "
                             "respondent repeating a pair could move the ranking), so the reports are refused; keep "
                             "one report per respondent and pair")
        return self

    def _derived(self, new: "PairwiseComparisons") -> "PairwiseComparisons":
        """``new``, made from these records, with their marks (seeded, pairs from ratings, quota,
        declared epsilons)."""
        reports = new.is_randomized
        return replace(new, seeded=self.seeded, pairs_from_ratings=self.pairs_from_ratings,
                       max_answers=self.max_answers if reports else None,
                       declared_epsilons=self.declared_epsilons if reports else None)

    def preference_values(self) -> np.ndarray:
        """Value of each record for "item_a beats item_b": 1, 0, or 1/2 for a tie."""
        return (self.outcome.astype(float) + 1.0) / 2.0

    def with_outcomes(self, outcome, epsilon) -> "PairwiseComparisons":
        """Same records and users with new outcomes and per-record epsilons (randomized reports):
        one per record, or their :class:`EpsilonLevels` (the reports keep the levels, and build a
        column only when one is read). New epsilons carry no declaration (whoever made them
        declares them)."""
        new = self._derived(type(self)._checked(self.items, self.item_a, self.item_b,
                                                _as_outcome(outcome, self.n_records), self.user, self.users, epsilon,
                                                self.items_declared, records_checked=True))
        return replace(new, declared_epsilons=None)

    def pair_counts(self, values=None, weights=None) -> "PairCounts":
        """The per-pair sufficient statistic of record ``values`` (default: the outcomes, whose sums
        of halves are exact in any order: counted by pair key, or by the :meth:`tally` when many
        records fill a small table or many more pairs than records are possible)."""
        m, n = self.n_items, self.n_records
        if values is None and weights is None and not self.is_randomized:
            if n > SMALL_RECORDS and (folds(3 * m * m, n) or m * m > max(4 * n, 1 << 16)):
                return self.tally().pair_counts()  # a small table folded, or a sort of 32-bit codes
            return PairCounts.of_outcomes(m, self.item_a, self.item_b, self.outcome, items=self.items,
                                          items_declared=self.items_declared)
        if values is None:
            values = self.preference_values()
        return PairCounts.from_records(m, self.item_a, self.item_b, values, weights, items=self.items,
                                       items_declared=self.items_declared)

    def tally(self) -> "ComparisonTally":
        """The exact integer tally of the records (see :class:`ComparisonTally`)."""
        tally = ComparisonTally.from_records(self.items, self.item_a, self.item_b, self.outcome + 1,
                                             epsilon=self.levels if self.levels is not None else self.epsilon)
        return replace(tally, seeded=self.seeded, items_declared=self.items_declared,
                       declared_epsilons=self.declared_epsilons)

    def __repr__(self) -> str:  # never print raw preferences
        users = "" if self.users is None else f", {len(self.users)} users"
        kind = "randomized reports" if self.is_randomized else "comparisons"
        return f"PairwiseComparisons({self.n_records} {kind}, {self.n_items} items{users})"

    def _card(self) -> dict:  # what the repr says: never raw preferences
        kind = "randomized reports" if self.is_randomized else "comparisons"
        return {"summary": f"{self.n_records:,} {kind}",
                "facts": [("items", f"{self.n_items:,}" + ("" if self.items_declared else " (read off the data)")),
                          ("users", None if self.users is None else f"{len(self.users):,}")]}


def _column(values, name: str):
    """A column of labels as it is (a sequence with a length) or as a list (any other iterable)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise InputError(f"{name} must be a sequence of labels, one per comparison")
    return values if hasattr(values, "__len__") else list(values)


def _as_outcome(outcome, n) -> np.ndarray:
    given = np.asarray(outcome) if isinstance(outcome, np.ndarray) else None
    if isinstance(outcome, list):
        try:  # a list of whole numbers, read with no type discovery and no float copy (1.6x fromiter)
            given = np.frombuffer(array.array("q", outcome), dtype=np.int64)
        except (TypeError, OverflowError):
            pass  # floats and anything else: read, and refused, as below
    if given is not None and given.dtype.kind in "iu" and given.shape == (n,):
        if n and (given.min() < -1 or given.max() > 1):  # integers: two reductions, no float copy
            bad = np.flatnonzero((given < -1) | (given > 1))
            raise InputError(f"record {int(bad[0])}: outcome must be 1, -1 or 0")
        return given.astype(np.int8)
    arr = None
    if isinstance(outcome, list):
        try:  # a list of numbers: 3x faster than asarray, which first discovers the list's type
            arr = np.fromiter(outcome, float, len(outcome))
        except (TypeError, ValueError, OverflowError):
            pass  # anything else is read, and refused, as below
    try:
        arr = np.asarray(outcome, dtype=float) if arr is None else arr
    except (TypeError, ValueError, OverflowError):
        raise InputError("outcome must be numeric: 1 (item_a preferred), -1 (item_b), 0 (tie)") from None
    if arr.shape != (n,):
        raise InputError("outcome must give one value per comparison")
    bad = np.flatnonzero(~np.isin(arr, (1.0, -1.0, 0.0)))
    if bad.size:
        raise InputError(f"record {int(bad[0])}: outcome must be 1, -1 or 0")
    return arr.astype(np.int8)
