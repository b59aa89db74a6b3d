"""The epsilon column of randomized reports takes the range of a release's --epsilon: out of it a
file is refused with the record's line (never its value), in it every release is finite and quiet."""
import math
import warnings

import numpy as np
import pytest

import privrank as pr
from privrank.errors import EPSILON_RANGE
from privrank.errors import InputError
from privrank.pairwise.release import paper_lambda, release_from_reports

ROWS = [("u1", "A", "B", 1), ("u2", "B", "C", -1), ("u3", "A", "C", 1), ("u4", "C", "B", 1), ("u5", "A", "B", -1)]


def reports_file(tmp_path, epsilons, name="reports.csv", users=True):
    path = tmp_path / name
    lines = ["user,item_a,item_b,outcome,epsilon"] + [f"{u},{a},{b},{o},{e}" for (u, a, b, o), e in zip(ROWS, epsilons)]
    if not users:  # the stream engine reads reports without user ids (it keeps nothing per respondent)
        lines = [line.split(",", 1)[1] for line in lines]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("bad", ["1000", "1e-300", "100.5", "9e-7"])
def test_a_file_out_of_range_is_refused_at_its_line(tmp_path, bad):
    path = reports_file(tmp_path, ["1", "1", bad, "1", "1"])
    with pytest.raises(InputError, match=r"line 4: epsilon must be finite and > 0, in \[1e-06, 100\]") as refused:
        pr.read_comparisons(path)
    assert bad not in str(refused.value)


@pytest.mark.parametrize("bad", ["1000", "1e-300"])
@pytest.mark.parametrize("options", [[], ["--lambda", "paper"], ["--engine", "stream"], ["--ci"]])
def test_cli_refuses_out_of_range_reports_without_numpy_noise(tmp_path, cli, bad, options):
    code, out, err = cli("rank", reports_file(tmp_path, [bad] * 5), *options)
    assert code == 2 and out == ""
    assert err.startswith("privrank: error: line 2: ") and "in [1e-06, 100]" in err
    assert "warning" not in err and "lam must" not in err and bad not in err


@pytest.mark.parametrize("edge", [EPSILON_RANGE[0], EPSILON_RANGE[1]])
@pytest.mark.parametrize("options", [[], ["--lambda", "paper"], ["--weights", "inverse_variance"],
                                     ["--engine", "stream"]])
def test_cli_ranks_reports_at_the_edges_of_the_range(tmp_path, cli, edge, options):
    code, out, err = cli("rank", reports_file(tmp_path, [repr(edge)] * 5, users="stream" not in options), *options)
    assert code == 0 and "warning" not in err and "nan" not in out.lower(), err


def test_debiasing_in_memory_refuses_out_of_range_epsilons():
    comps = pr.PairwiseComparisons.from_labels(*zip(*[r[1:] for r in ROWS]), epsilon=[1000.0] * len(ROWS))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow on the way
        with pytest.raises(InputError, match=r"in \[1e-06, 100\]"):
            release_from_reports(comps)
        with pytest.raises(InputError, match=r"in \[1e-06, 100\]"):
            pr.fit_btl(comps)


@pytest.mark.parametrize("eps", [EPSILON_RANGE[0], 1e-3, 1.0, EPSILON_RANGE[1]])
def test_paper_lambda_is_accurate_over_the_range(eps):
    x = math.expm1(eps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert paper_lambda(np.array([eps])) == pytest.approx((x + 2) ** 2 / x, rel=1e-13)
