"""The epsilons of randomized reports are a declared public parameter, and a respondent reports a pair once.

The attacks: 1,000 honest respondents answer 9 of the 45 pairs of 10 items at epsilon 1; one fake
respondent's 9 reports, at epsilon 0.01, say the leader loses to every other item (debiasing weighs
each ~400 times an honest report), or 7 fakes each repeat "the runner-up beats the leader" 9 times.
Both move the leader when they are accepted; both files are refused, in Python and by ``privrank rank``.
"""
import json

import numpy as np
import pytest

import privrank as pr
from privrank.data.io import comparisons_to_csv
from privrank.engines import sufficient_statistics
from privrank.errors import InputError
from privrank.pairwise.release import release_from_reports

M, RESPONDENTS, PER = 10, 1000, 9
ITEMS = [f"i{k}" for k in range(M)]  # i0 leads: theta decreases with the index
LEADER = "i0"
UNDECLARED = "none was declared"
NOT_DECLARED = "not declared"
REPEATED = "more than one report of the same pair"


def honest_reports(seed=0):
    """Each respondent's answers to 9 distinct pairs (BTL, theta from 1 to -1), randomized at epsilon 1."""
    rng = np.random.default_rng(seed)
    theta = np.linspace(1.0, -1.0, M)
    pairs = np.array([(i, j) for i in range(M) for j in range(i + 1, M)])
    asked = pairs[rng.random((RESPONDENTS, len(pairs))).argsort(axis=1)[:, :PER].ravel()]
    swap = rng.random(len(asked)) < 0.5
    a, b = np.where(swap, asked[:, 1], asked[:, 0]), np.where(swap, asked[:, 0], asked[:, 1])
    wins = rng.random(a.size) < 1 / (1 + np.exp(theta[b] - theta[a]))
    comps = pr.PairwiseComparisons.from_indices(ITEMS, a, b, np.where(wins, 1, -1),
                                                user=np.repeat(np.arange(RESPONDENTS), PER),
                                                users=[f"r{u:04d}" for u in range(RESPONDENTS)])
    return pr.randomized_response(comps, epsilon=1.0, rng=seed + 1)


@pytest.fixture(scope="module")
def honest_csv():
    return comparisons_to_csv(honest_reports())


def tiny_epsilon_fake(users=True):
    """One fake respondent's 9 reports at epsilon 0.01: the leader loses to every other item."""
    return "".join(("fake," if users else "") + f"{LEADER},i{k},-1,0.01\n" for k in range(1, M))


def repeating_fakes(users=True):
    """7 fakes, each reporting "i1 beats the leader" 9 times at epsilon 1."""
    return "".join((f"fake{f}," if users else "") + f"i1,{LEADER},1,1.0\n" for f in range(7) for _ in range(PER))


def write(tmp_path, text, name="reports.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def without_users(text):
    return "".join(line.split(",", 1)[1] for line in text.splitlines(True))


def leader_rank(reports, **kwargs) -> int:
    return pr.fit_btl(release_from_reports(reports, **kwargs)).ranking.index(LEADER) + 1


def test_honest_reports_rank_the_leader_first(honest_csv, tmp_path):
    reports = pr.read_comparisons(write(tmp_path, honest_csv))
    assert reports.declared_epsilons is None and leader_rank(reports) == 1
    assert leader_rank(reports, epsilons=1) == 1


def test_one_fake_at_a_tiny_epsilon_is_refused(honest_csv, tmp_path):
    reports = pr.read_comparisons(write(tmp_path, honest_csv + tiny_epsilon_fake()))
    with pytest.raises(InputError, match=UNDECLARED) as refused:
        pr.fit_btl(reports)
    with pytest.raises(InputError, match=f"{NOT_DECLARED} \\(1\\)"):
        release_from_reports(reports, epsilons=1.0)
    with pytest.raises(InputError, match=NOT_DECLARED):
        reports.with_declared_epsilons([1])
    assert "0.01" not in str(refused.value) and "fake" not in str(refused.value)
    # the attack is real: declared by mistake, the fake's epsilon moves the leader from first to last
    assert leader_rank(reports, epsilons=[0.01, 1]) == M


def test_one_fake_at_a_tiny_epsilon_is_refused_by_the_cli(cli, honest_csv, tmp_path):
    path = write(tmp_path, honest_csv + tiny_epsilon_fake())
    for declared in ([], ["--epsilon", "1"]):
        code, out, err = cli("rank", path, *declared)
        assert code == 2 and out == "" and err.startswith("privrank: error: ")
        assert (UNDECLARED if not declared else NOT_DECLARED) in err
        assert "Traceback" not in err and "0.01" not in err and "fake" not in err
    code, out, _ = cli("rank", write(tmp_path, honest_csv, "honest.csv"), "--format", "json")
    assert code == 0 and json.loads(out)["ranking"][0]["item"] == LEADER


def test_a_repeated_pair_is_refused(honest_csv, tmp_path):
    with pytest.raises(InputError, match=REPEATED) as refused:
        pr.read_comparisons(write(tmp_path, honest_csv + repeating_fakes()))
    assert "fake" not in str(refused.value) and "i1" not in str(refused.value)
    # the attack is real: without user ids the repeats cannot be told apart, and the top changes
    unchecked = pr.read_comparisons(write(tmp_path, without_users(honest_csv + repeating_fakes()), "no_users.csv"))
    assert leader_rank(unchecked) > 1


def test_a_repeated_pair_is_refused_in_memory_and_by_the_cli(cli, honest_csv, tmp_path):
    with pytest.raises(InputError, match=REPEATED):
        pr.PairwiseComparisons.from_labels(["a", "b"], ["b", "a"], [1, 1], user=["u", "u"], epsilon=[1.0, 1.0])
    path = write(tmp_path, honest_csv + repeating_fakes())
    for declared in ([], ["--epsilon", "1"]):
        code, out, err = cli("rank", path, *declared)
        assert code == 2 and out == "" and REPEATED in err and "Traceback" not in err
    # raw answers may repeat a pair (each is randomized when it is released), and so may reports
    # privrank draws from them
    raw = pr.PairwiseComparisons.from_labels(["a", "b"], ["b", "a"], [1, 1], user=["u", "u"])
    assert pr.randomized_response(raw, 1.0, rng=0).n_records == 2


def test_the_stream_and_dask_engines_refuse_reports_with_user_ids(honest_csv, tmp_path):
    path = write(tmp_path, honest_csv)
    for engine in ("stream", "dask"):
        with pytest.raises(InputError, match="engine='local'"):
            sufficient_statistics(path, engine=engine)
    unchecked = write(tmp_path, without_users(honest_csv), "no_users.csv")
    tally = sufficient_statistics(unchecked, engine="stream")
    assert tally.declared_epsilons is None and tally.with_declared_epsilons(1).declared_epsilons == (1.0,)


def test_several_declared_epsilons():
    comps = pr.PairwiseComparisons.from_labels(["a", "a", "b", "c"], ["b", "c", "c", "a"], [1, 1, 0, 1],
                                               user=["u1", "u1", "u2", "u2"])
    reports = pr.randomized_response(comps, {"u1": 0.5, "u2": 1.0}, rng=0)
    assert reports.declared_epsilons == (0.5, 1.0)  # the randomizer declares the epsilons it drew at
    received = pr.PairwiseComparisons.from_labels(["a", "a", "b", "c"], ["b", "c", "c", "a"], reports.outcome,
                                                  user=["u1", "u1", "u2", "u2"], epsilon=reports.epsilon)
    with pytest.raises(InputError, match=UNDECLARED):
        release_from_reports(received)
    declared = received.with_declared_epsilons([1, 0.5, 1])
    assert declared.declared_epsilons == (0.5, 1.0) and declared.tally().declared_epsilons == (0.5, 1.0)
    assert sufficient_statistics(declared).declared_epsilons == (0.5, 1.0)
    g = release_from_reports(declared).guarantee
    assert g.epsilon == 1.0 and "one of the declared epsilons (0.5, 1)" in g.note
    # a declaration larger than the epsilons the reports carry states its largest epsilon
    g = release_from_reports(received, epsilons=[0.5, 1, 2]).guarantee
    assert g.epsilon == 2.0
    with pytest.raises(InputError, match="differ"):
        declared.with_declared_epsilons([0.5, 1, 2])


def test_a_single_epsilon_declares_itself_and_the_guarantee_says_so(honest_csv, tmp_path):
    reports = pr.read_comparisons(write(tmp_path, honest_csv))
    implied = release_from_reports(reports).guarantee.note
    assert "randomized once, on its respondent's device, at epsilon 1, the one all the reports carry" in implied
    assert "none was declared" in implied
    declared = release_from_reports(reports, epsilons=1).guarantee.note
    assert "at the declared epsilon 1." in declared


@pytest.mark.parametrize("bad,match", [
    ([], "at least one"), (["x"], "numbers"), ([0.0], "finite and > 0"), ([1.0, float("nan")], "finite and > 0"),
    ([1000.0], r"in \[1e-06, 100\]"),
])
def test_bad_declarations(bad, match):
    reports = pr.PairwiseComparisons.from_labels(["a"], ["b"], [1], epsilon=[1.0])
    with pytest.raises(InputError, match=match):
        reports.with_declared_epsilons(bad)
    with pytest.raises(InputError, match=match):
        reports.tally().with_declared_epsilons(bad)


def test_raw_comparisons_declare_no_epsilons():
    raw = pr.PairwiseComparisons.from_labels(["a"], ["b"], [1])
    for data in (raw, raw.tally()):
        with pytest.raises(InputError, match="randomized reports"):
            data.with_declared_epsilons(1.0)
