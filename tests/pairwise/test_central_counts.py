"""Central releases of per-pair counts computed elsewhere, per respondent with a declared bound."""
from pathlib import Path

import numpy as np
import pytest

import privrank as pr
from privrank.data.datasets import load_llmfao
from privrank.errors import InputError
from privrank.guarantees import UNIT_EDGE, UNIT_USER

K = 20
SHIPPED = Path(pr.__file__).parent / "datasets_shipped" / "llmfao_crowd.csv"
UNCHECKED = "privrank cannot check it"


@pytest.fixture(scope="module")
def llmfao():
    comps = pr.read_comparisons(SHIPPED, items=load_llmfao().items)  # the public item list declared
    kept = comps.first_answers(K).pair_counts()
    return comps, kept


def declared(counts, bound=None):
    """The counts as read from a table: items declared, and the bound if given."""
    from dataclasses import replace
    return replace(counts, max_answers=bound)


@pytest.mark.parametrize("release, extra", [(pr.perturbed_mle, {"respondents": 124}), (pr.noisy_copeland, {})])
def test_counts_with_a_declared_bound_release_what_the_comparisons_cut_to_it_release(llmfao, release, extra):
    comps, kept = llmfao
    raw = release(comps, user_epsilon=1.0, max_answers=K, rng=7, **extra)
    for counts, bound in ((declared(kept, K), None), (declared(kept), K), (declared(kept, K), K)):
        got = release(counts, user_epsilon=1.0, max_answers=bound, rng=7, **extra)
        np.testing.assert_array_equal(got.scores, raw.scores)
        assert got.items == raw.items and got.params == raw.params
        g = got.guarantee
        assert (g.unit, g.epsilon, g.model) == (UNIT_USER, 1.0, "central")
        assert UNCHECKED in g.note and f"bound of {K} answers per respondent" in g.note
    assert UNCHECKED not in raw.guarantee.note


def test_a_per_comparison_release_of_counts_states_the_declared_bound(llmfao):
    _, kept = llmfao
    plain = pr.noisy_copeland(declared(kept), epsilon=0.5, rng=1)
    assert plain.guarantee.unit == UNIT_EDGE and plain.guarantee.epsilon_per_user is None
    assert UNCHECKED not in plain.guarantee.note and plain.params["n_comparisons"] == kept.totals.sum()
    for counts, bound in ((declared(kept, K), None), (declared(kept), K)):
        stated = pr.noisy_copeland(counts, epsilon=0.5, max_answers=bound, rng=1)
        np.testing.assert_array_equal(stated.scores, plain.scores)
        assert stated.guarantee.epsilon_per_user == 0.5 * K and UNCHECKED in stated.guarantee.note


def test_counts_need_their_bound_and_items_declared(llmfao):
    _, kept = llmfao
    with pytest.raises(InputError, match="per-respondent budget on counts needs the bound the query"):
        pr.noisy_copeland(declared(kept), user_epsilon=1.0, rng=0)
    with pytest.raises(InputError, match="max_answers = 10 differs from the bound the counts were read with"):
        pr.perturbed_mle(declared(kept, K), user_epsilon=1.0, max_answers=10, respondents=124, rng=0)
    with pytest.raises(InputError, match="max_answers = 10 differs"):
        pr.noisy_copeland(declared(kept, K), epsilon=1.0, max_answers=10, rng=0)
    from dataclasses import replace
    with pytest.raises(InputError, match="public item list"):
        pr.noisy_copeland(replace(kept, items_declared=False), user_epsilon=1.0, max_answers=K, rng=0)


def test_nothing_is_charged_when_counts_are_refused(llmfao):
    _, kept = llmfao
    accountant = pr.Accountant(pr.PureDP(10.0), unit=UNIT_USER)
    with pytest.raises(InputError):
        pr.noisy_copeland(declared(kept), user_epsilon=1.0, rng=0, accountant=accountant)
    assert accountant.spent is None
    pr.noisy_copeland(declared(kept, K), user_epsilon=1.0, rng=0, accountant=accountant)
    assert accountant.spent.epsilon == 1.0


def test_per_comparison_counts_release_what_the_comparisons_they_count_release(llmfao):
    comps, kept = llmfao
    counted = comps.first_answers(K)
    for release in (pr.perturbed_mle, pr.noisy_copeland):
        a, b = release(counted, epsilon=1.0, rng=3), release(declared(kept), epsilon=1.0, rng=3)
        np.testing.assert_array_equal(a.scores, b.scores)
        assert a.params == b.params and a.guarantee.note == b.guarantee.note
