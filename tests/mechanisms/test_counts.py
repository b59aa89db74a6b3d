"""Central releases of integer counts: what :func:`privrank.mechanisms.counts.noisy_counts` refuses."""
import math

import numpy as np
import pytest

from privrank.errors import InputError
from privrank.mechanisms.counts import noisy_counts


def test_counts_must_be_integers_of_one_shape():
    # a ragged list escaped as numpy's ValueError
    with pytest.raises(InputError, match=r"counts must be integers .*\(real, of one shape\)"):
        noisy_counts([[1, 2], [3]], epsilon=1.0, unit="one vote", rng=0)
    with pytest.raises(InputError, match="counts must be integers .*whole numbers, not fractions"):
        noisy_counts([1.5, 2.0], epsilon=1.0, unit="one vote", rng=0)


def test_the_most_negative_int64_count_is_refused():
    # its absolute value is itself, negative: it passed the 2^53 bound and was released
    with pytest.raises(InputError, match=r"counts must be at most 2\^53 in absolute value"):
        noisy_counts(np.array([3, -2 ** 63]), epsilon=1.0, unit="one vote", rng=0)


def test_unit_must_be_text():
    # an array was tested for truth first: numpy's "truth value ... is ambiguous"
    with pytest.raises(InputError, match="unit must name the protected unit"):
        noisy_counts([3, 4], epsilon=1.0, unit=np.array(["one", "vote"]), rng=0)


def test_a_subnormal_delta_calibrates_the_gaussian():
    # rho came out 0 (1 / 5e-324 overflows) and the scale divided by zero
    rel = noisy_counts([3, 4], epsilon=1.0, delta=5e-324, unit="one vote", rng=0)
    L = -math.log(5e-324)
    assert rel.noise == "discrete-gaussian"
    assert rel.scale == pytest.approx(1.0 / math.sqrt(2.0 * (math.sqrt(L + 1.0) - math.sqrt(L)) ** 2))
