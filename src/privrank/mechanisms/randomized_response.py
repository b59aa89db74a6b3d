"""Binary randomized response on pairwise comparisons (local model).

Each comparison is one bit ``y`` = 1 if item_a is preferred. Randomized response keeps it
with probability ``e^eps / (1 + e^eps)`` and flips it with probability
``p_eps = 1 / (1 + e^eps)`` (Xu, Sun, Cheng §2.1), so for either output the likelihood ratio
between the two inputs is exactly ``e^eps``: eps-local DP for one comparison.

Ties. A tie (no preference) is first replaced by a fair coin, then randomized like any other
answer. The report space stays {1, -1}; for every input in {a, b, tie} the probability of each
report lies in ``[1/(1+e^eps), e^eps/(1+e^eps)]``, so the guarantee is the same eps over the
three-valued answer, and the debiased value has expectation 1/2 for a tie: half a win to each
item, the same as in the non-private likelihood.

Debiasing (eq. 1) maps a report ``y~`` in {0, 1} to ``z = ((e^eps + 1) y~ - 1) / (e^eps - 1)``,
an unbiased estimate of ``y`` (Lemma 2) with variance ``coth(eps/2)^2 / 4 - (P - 1/2)^2``.
Debiasing is post-processing and costs no privacy.

Counter-based randomness. Record ``r`` of a data set is randomized with the ``r``-th uniform of
an AES-128 counter-mode stream under a 128-bit key (a CSPRNG; ``randomgen.AESCounter``): the
uniform depends only on (key, r), so a seeded run gives the same reports whether the records are
randomized all at once, in batches, or on the partitions of a cluster in any order. The key
comes from ``rng`` (see :func:`record_key`); a seed makes the reports reproducible, which is
for research and tests: anyone who knows the seed can undo the randomization.
"""
from __future__ import annotations

import numbers
import secrets

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from .._rng import as_generator, is_seeded, secure_bits
from ..data.tally import EpsilonLevels, epsilon_levels
from ..errors import InputError, check_epsilon, check_epsilons, real_array
from ..draws import before_draw, noise_factor
from ..special import expit


#: records randomized per vectorised step (their uniforms and probabilities are the temporaries)
RECORD_CHUNK = 1 << 18  # 2 MB of uniforms: the temporaries stay in cache (1.7x faster than 1 << 22)


def flip_probability(epsilon: ArrayLike) -> np.ndarray | float:
    """Probability ``1 / (1 + e^eps)`` that randomized response flips a comparison.

    Examples
    --------
    >>> import privrank as pr
    >>> round(pr.flip_probability(1.0), 4), round(pr.flip_probability(4.0), 4)
    (0.2689, 0.018)
    """
    p = expit(-check_epsilons(epsilon))
    return float(p) if p.ndim == 0 else p


def record_key(rng=None) -> np.ndarray:
    """The 128-bit key (two uint64) of a randomization's AES counter stream, from ``rng``.

    ``None`` draws the key from the operating system (:func:`secrets.token_bytes`), an int seed
    derives it through :class:`numpy.random.SeedSequence`, and a :class:`numpy.random.Generator`
    supplies it from its stream (so successive calls with one Generator give independent
    randomizations).
    """
    if isinstance(rng, np.random.Generator):
        return rng.integers(0, 2 ** 64, size=2, dtype=np.uint64)
    if rng is None:
        return np.frombuffer(secrets.token_bytes(16), dtype=np.uint64).copy()
    as_generator(rng)  # validates the argument
    return np.random.SeedSequence(rng).generate_state(2, dtype=np.uint64)


def record_uniforms(key, first_record: int, n_records: int, per_record: int = 1) -> np.ndarray:
    """``(n_records, per_record)`` uniforms in [0, 1) of records ``first_record, ...`` under ``key``.

    Record ``r`` owns outputs ``r * per_record`` to ``(r + 1) * per_record - 1`` of the AES-128
    counter stream (a CSPRNG) under ``key``, so its uniforms depend only on (key, r, per_record),
    never on which other records are drawn with it.
    """
    return _record_stream(key, first_record, per_record).random(int(n_records) * int(per_record)).reshape(
        int(n_records), int(per_record))


def _record_stream(key, first_record: int, per_record: int = 1) -> np.random.Generator:
    """A generator whose next uniforms are those of records ``first_record, first_record + 1, ...``
    (``per_record`` each; see :func:`record_uniforms`), drawn in as many calls as one likes."""
    first, per = int(first_record), int(per_record)
    if first < 0:
        raise InputError("first_record must be >= 0")
    # AES counter mode yields two 64-bit outputs per counter value: output p sits at counter p // 2.
    block, skip = divmod(first * per, 2)
    gen = np.random.Generator(secure_bits(np.asarray(key, dtype=np.uint64).tobytes(), counter=block))
    gen.random(skip)
    return gen


def randomize_records(values2, epsilon, key, first_record: int = 0) -> np.ndarray:
    """Randomized response on answers given as twice their value, record by record.

    ``values2[k]`` is 2 (the answer is 1: item_a preferred), 0 (item_b preferred) or 1 (a tie,
    value 1/2) for record ``first_record + k`` of its data set. The record's report is 1 when
    its uniform ``u`` (the AES counter output at that record index under ``key``) is below the
    probability of reporting 1: ``1 - p_eps`` for a 1, ``p_eps`` for a 0 and 1/2 for a tie,
    where ``p_eps = 1 / (1 + e^eps)``. Each report is eps-local DP for its answer (module
    docstring). ``epsilon`` is a scalar, one value per answer, or
    :class:`~privrank.data.tally.EpsilonLevels` (its distinct values and each answer's
    index; the other forms are leveled here): the probabilities are computed per level, not per
    answer. Returns reports in {0, 1}.
    """
    v = np.asarray(values2)
    if v.size and (not np.issubdtype(v.dtype, np.integer) or v.min() < 0 or v.max() > 2):
        raise InputError("answers must be 0, 1 or 1/2 (tie)")
    if not isinstance(epsilon, EpsilonLevels):  # a scalar, or one value per answer: leveled by its values
        eps = check_epsilons(epsilon) if np.ndim(epsilon) else check_epsilon(epsilon)
        if np.ndim(eps):
            try:
                eps = np.broadcast_to(eps, v.shape).reshape(-1)
            except ValueError:
                raise InputError("epsilon must be one value, or one per answer") from None
        epsilon = epsilon_levels(eps, v.size)
    levels, level = check_epsilons(epsilon.values), epsilon.index
    if np.size(level) and (np.min(level) < 0 or np.max(level) >= levels.size):
        raise InputError("an epsilon level index is out of range")
    if np.size(level) not in (1, v.size):
        raise InputError("epsilon levels need one index per answer (or one for all)")
    before_draw()
    flat, out = v.reshape(-1), np.empty(v.size, dtype=np.int8)
    # P(report 1) per (level, answer): a small table
    p = np.atleast_1d(flip_probability(levels / noise_factor()))
    table = np.stack([p, np.full(p.size, 0.5), 1.0 - p], axis=1)
    shared = np.ndim(level) == 0
    if shared:
        table = table[int(level)]
    else:  # each answer's row of the table, in the smallest integers that hold it
        table = table.reshape(-1)
        code = np.int8 if table.size <= 127 else np.int16 if table.size <= 32767 else np.int64
        level, three = np.asarray(level).reshape(-1).astype(code, copy=False), code(3)
    stream = _record_stream(key, first_record)  # one generator, drawn chunk after chunk: the same stream
    uniforms = np.empty(min(flat.size, RECORD_CHUNK))
    above, step = np.empty(uniforms.size, dtype=np.int8), np.empty(uniforms.size, dtype=bool)
    for start in range(0, flat.size, RECORD_CHUNK):  # bounded temporaries; the same stream in any chunking
        part = flat[start:start + RECORD_CHUNK]
        u, report = stream.random(out=uniforms[:part.size]), out[start:start + part.size].view(bool)
        if shared:  # u < table[answer] <=> fewer than answer + 1 of the sorted thresholds are <= u (5x the lookup)
            n, k = above[:part.size], step[:part.size]
            np.greater_equal(u, table[0], out=n.view(bool))
            for threshold in table[1:]:
                n += np.greater_equal(u, threshold, out=k).view(np.int8)
            np.less_equal(n, part, out=report)
        else:
            np.less(u, table[level[start:start + part.size] * three + part], out=report)  # 6x np.take
    return out.reshape(v.shape)


def randomize_comparisons(comps, levels: EpsilonLevels, rng=None):
    """Randomized reports of a :class:`~privrank.data.comparisons.PairwiseComparisons`: record
    ``r`` answered by :func:`randomize_records` at its level under the key of ``rng``
    (:func:`record_key`), the reports carrying their epsilons as the levels (their tally reads
    them, and no per-record column is built unless one is read), declaring the epsilons they were
    drawn at, and marked ``seeded`` when ``rng`` is a seed."""
    bits = randomize_records(comps.outcome + np.int8(1), levels, record_key(rng))
    reports = comps.with_outcomes(2 * bits - np.int8(1), levels)
    return replace(reports, declared_epsilons=tuple(levels.values.tolist()), seeded=is_seeded(rng) or reports.seeded)


def randomize_bits(bits, epsilon, rng=None) -> np.ndarray:
    """Randomized response on an array of answers in {0, 1/2, 1} (1/2 = tie).

    The answers are records ``0, 1, ...`` of :func:`randomize_records` under the key of
    ``rng`` (:func:`record_key`). ``epsilon`` is a scalar or one value per answer. Returns
    reports in {0, 1}.
    """
    doubled = 2.0 * np.asarray(bits, dtype=float)
    if not np.all((doubled == 0) | (doubled == 1) | (doubled == 2)):
        raise InputError("answers must be 0, 1 or 1/2 (tie)")
    return randomize_records(doubled.astype(np.int8), epsilon, record_key(rng))


def randomize_counts(wins, n, epsilon, rng=None, *, ties=0) -> np.ndarray:
    """Number of reports "yes" when ``n`` answers, ``wins`` of them "yes", are randomized.

    ``ties`` of the other answers are ties, answered as a fair coin first (as in
    :func:`randomize_bits`). Each answer is then kept with probability ``e^eps/(1+e^eps)`` and
    flipped otherwise, independently, so with ``y = wins + Binomial(ties, 1/2)`` the count is
    ``Binomial(y, 1 - p) + Binomial(n - y, p)``, ``p`` the flip probability: exactly the
    distribution of summing :func:`randomize_bits` over those answers, in three draws however
    many answers there are. Arguments broadcast; ``epsilon`` is the same for the ``n`` answers
    behind one count. Used to simulate many respondents at once.
    """
    gen = as_generator(rng)
    w = np.asarray(wins, dtype=np.int64)
    t = np.asarray(ties, dtype=np.int64)
    total = np.asarray(n, dtype=np.int64)
    if np.any(w < 0) or np.any(t < 0) or np.any(w + t > total):
        raise InputError("wins and ties must be >= 0 and add up to at most n")
    p = flip_probability(check_epsilons(epsilon) / noise_factor())
    before_draw()
    yes = w + gen.binomial(t, 0.5)
    return gen.binomial(yes, 1.0 - p) + gen.binomial(total - yes, p)


def randomize_answer(outcome: int, epsilon: float, rng: int | np.random.Generator | None = None) -> int:
    """Respondent-side randomized response for one answer.

    Parameters
    ----------
    outcome : int
        1 if item_a is preferred, -1 if item_b, 0 for no preference.
    epsilon : float
        The respondent's privacy parameter for this answer.

    Returns
    -------
    int
        The report to send, 1 or -1. It satisfies ``epsilon``-local DP for this answer; send
        ``epsilon`` along with it so the collector can debias.

    Examples
    --------
    Xu, Sun, Cheng §2.1: an answer "item_a preferred" is kept with probability ``e/(1 + e)`` at
    epsilon 1:

    >>> import numpy as np
    >>> import privrank as pr
    >>> gen = np.random.default_rng(0)
    >>> reports = np.array([pr.randomize_answer(1, 1.0, rng=gen) for _ in range(2_000)])
    >>> round(float(np.mean(reports == 1)), 3), round(1 - pr.flip_probability(1.0), 3)
    (0.725, 0.731)
    """
    if isinstance(outcome, bool) or not isinstance(outcome, numbers.Real) or outcome not in (1, -1, 0):
        raise InputError("outcome must be 1, -1 or 0")
    bit = randomize_bits(np.array([(outcome + 1) / 2]), check_epsilon(epsilon), rng)[0]
    return 1 if bit else -1


def debias(reports01: ArrayLike, epsilon: ArrayLike, n: ArrayLike = 1) -> np.ndarray:
    """Debiasing transform of Xu, Sun, Cheng eq. (1): unbiased estimates of the true answers.

    ``reports01`` are reports in {0, 1}, or fractions in [0, 1] of "1" reports among answers
    randomized at the same epsilon (the transform is affine, so debiasing their mean is the mean
    of their debiased values); ``epsilon`` scalar or one per report. Values are
    ``-1/(e^eps - 1)`` for a 0 and ``e^eps/(e^eps - 1)`` for a 1. With ``n``, ``reports01``
    counts the 1s among ``n`` reports at that epsilon (0 to ``n``) and the result is the sum of
    their debiased values, ``((e^eps + 1) * reports01 - n) / (e^eps - 1)``.

    Examples
    --------
    Xu, Sun, Cheng eq. (1): a report of 1 at epsilon 1 is worth ``e/(e - 1)``, a 0 ``-1/(e - 1)``:

    >>> import numpy as np
    >>> import privrank as pr
    >>> np.round(pr.debias(np.array([0, 1]), 1.0), 4)
    array([-0.582,  1.582])
    >>> round(float(pr.debias(70, 1.0, n=100)), 4)
    93.2791
    """
    y = real_array(reports01, name="reports", what="0 or 1, or an array of them")
    n = real_array(n, name="n (the reports per count)", what="a number >= 0")
    eps = check_epsilons(epsilon)
    try:
        np.broadcast_shapes(y.shape, n.shape, eps.shape)
    except ValueError:
        raise InputError("reports, n and epsilon must have the same shape (or be single numbers)") from None
    if not np.all(np.isfinite(n) & (n >= 0)):
        raise InputError("n (the reports per count) must be finite and >= 0")
    if not np.all((y >= 0) & (y <= n)):
        raise InputError("reports must be 0 or 1, or fractions of 1-reports in [0, 1], or counts of "
                         "1-reports between 0 and n (map a report of -1 to 0 first)")
    with np.errstate(over="ignore"):  # e^eps = inf for huge eps: the report is the answer
        return y + (2.0 * y - n) / np.expm1(eps)


def variance_inflation(epsilon) -> np.ndarray:
    """``coth(eps/2)^2``: the worst-case variance of a debiased report divided by 1/4."""
    eps = check_epsilons(epsilon)
    return 1.0 / np.tanh(eps / 2.0) ** 2


def added_variance(epsilon) -> np.ndarray:
    """Variance debiasing adds to one answer: ``(coth^2(eps/2) - 1)/4 = 1 / (4 sinh^2(eps/2))``.

    Lemma 2 of Xu, Sun, Cheng gives ``Var z = coth^2(eps/2)/4 - (P - 1/2)^2``; subtracting the
    answer's own variance ``P(1 - P)`` leaves a term that does not depend on ``P``.
    """
    return 0.25 * (variance_inflation(epsilon) - 1.0)


def report_probability(p, epsilon) -> np.ndarray:
    """Probability that a randomized report says "first item wins" when the truth does w.p. ``p``.

    ``1/2 + tanh(eps/2) (p - 1/2)`` (Xu, Sun, Cheng Lemma 1).
    """
    return 0.5 + np.tanh(np.asarray(epsilon, dtype=float) / 2.0) * (np.asarray(p, dtype=float) - 0.5)
