"""``privrank rank`` of randomized reports: the manipulation margin beside the ranking, and the
per-respondent statement of a reports file (``--max-answers``, the ``max_answers`` column)."""
import csv
import io
import json
import warnings
from dataclasses import replace

import numpy as np
import pytest

import privrank as pr
from privrank.exports import GUARANTEE_COLUMNS
from privrank.data.datasets import load_llmfao
from privrank.data.io import comparisons_to_csv, read_comparisons


@pytest.fixture(scope="module")
def llmfao_reports():
    """LLMFAO's comparisons among its first 20 items, randomized: the margin of every adjacent pair
    (``--margin pairs``) takes a second on these, a minute on all 59 items."""
    data = load_llmfao()
    labels, users = np.array(data.items), np.array(data.users)
    keep = (data.item_a < 20) & (data.item_b < 20)
    few = pr.PairwiseComparisons.from_labels(labels[data.item_a[keep]], labels[data.item_b[keep]],
                                             data.outcome[keep], user=users[data.user[keep]])
    return pr.randomized_response(few, 1.0, rng=3)


@pytest.fixture
def reports_file(tmp_path, llmfao_reports):
    """The reports without their user column: LLMFAO's workers compared some pairs twice (two answers,
    each randomized), which a file with user ids may not hold; and the stream engine reads it."""
    path = tmp_path / "reports.csv"
    path.write_text(comparisons_to_csv(replace(llmfao_reports, user=None, users=None)))
    return path


@pytest.fixture
def quota_file(tmp_path, pairs):
    """The small pairs file randomized, each respondent's 3 answers, written with max_answers=3."""
    reps = pr.randomized_response(read_comparisons(pairs), 1.0, rng=4)
    path = tmp_path / "quota.csv"
    path.write_text(comparisons_to_csv(reps, max_answers=3))
    return path


def _rows(out):
    return list(csv.DictReader(io.StringIO(out)))


def test_margin_in_every_format(cli, reports_file, llmfao_reports):
    expected = pr.manipulation_margin(llmfao_reports)
    code, out, _ = cli("rank", reports_file)
    assert code == 0
    lines = out.splitlines()
    at = next(k for k, line in enumerate(lines) if line.startswith("manipulation margin: "))
    assert lines[at - 2].startswith("guarantee: ")  # beside the guarantee
    assert lines[at] == "manipulation margin: " + expected.describe()
    code, out, _ = cli("rank", reports_file, "--format", "json")
    doc = json.loads(out)["manipulation_margin"]
    assert doc["fakes"] == expected.top.fakes and isinstance(doc["fakes"], int)
    assert doc["item"] == expected.top.item and doc["unit"] == "fake report" and doc["max_answers"] is None
    code, out, _ = cli("rank", reports_file, "--format", "csv")
    rows = _rows(out)
    assert {r["manipulation_margin"] for r in rows} == {expected.describe()}
    assert list(rows[0]) == ["rank", "item", "score", *GUARANTEE_COLUMNS, "manipulation_margin"]  # no pairs column


def test_margin_pairs_column(cli, reports_file, llmfao_reports):
    expected = pr.manipulation_margin(llmfao_reports, pairs=True)
    code, out, _ = cli("rank", reports_file, "--margin", "pairs", "--format", "csv")
    rows = _rows(out)
    assert code == 0 and rows[0]["margin_at_least"] == rows[0]["margin_fakes"] == ""
    assert [(int(r["margin_at_least"]), int(r["margin_fakes"])) for r in rows[1:]] == [
        (p.at_least, p.fakes) for p in expected.pairs]
    code, out, _ = cli("top-k", reports_file, "--mechanism", "debiased-rr", "--k", "4", "--margin", "pairs",
                       "--format", "json")
    doc = json.loads(out)
    assert [r["margin_fakes"] for r in doc["ranking"]] == [None] + [p.fakes for p in expected.pairs[:3]]
    assert [r["margin_at_least"] for r in doc["ranking"]] == [None] + [p.at_least for p in expected.pairs[:3]]
    assert len(doc["manipulation_margin"]["pairs"]) == 3
    code, out, _ = cli("rank", reports_file, "--margin", "pairs")
    lines = out.splitlines()
    assert code == 0 and lines[0].split() == ["rank", "item", "score", "margin"]
    assert lines[2].split()[-1] == expected.pairs[0].shown  # N, or L..N: proven at least L, N found


def test_cli_attack_on_a_written_file(cli, reports_file):
    """The attack the CLI prints, as literal rows appended to the file, changes the top item; one
    fake fewer does not; and the text states the proven end too."""
    doc = json.loads(cli("rank", reports_file, "--format", "json")[1])
    margin = doc["manipulation_margin"]
    top, n = doc["ranking"][0]["item"], margin["fakes"]
    assert n >= 2 and 1 <= margin["at_least"] <= n
    assert f"fewer than {margin['at_least']} cannot" in margin["description"] or "exactly" in margin["description"]
    base = reports_file.read_text()

    def top_after(fakes):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerows([w, l, 1, margin["epsilon"]]
                                                       for _ in range(fakes) for w, l in margin["reports"])
        reports_file.write_text(base + buf.getvalue())
        return json.loads(cli("rank", reports_file, "--format", "json")[1])["ranking"][0]["item"]
    assert top_after(n) != top and top_after(n - 1) == top


def test_stream_engine_prints_the_same_margin(cli, reports_file):
    code, local, _ = cli("rank", reports_file, "--margin", "pairs", "--format", "json")
    assert code == 0
    assert cli("rank", reports_file, "--margin", "pairs", "--format", "json", "--engine", "stream")[1] == local


def test_no_margin_for_raw_comparisons_or_central_releases(cli, pairs, pairs_items):
    for argv in (("--mechanism", "none"), ("--epsilon", "1", "--seed", "1"),
                 ("--mechanism", "noisy-copeland", "--epsilon", "1", "--seed", "1", "--items", pairs_items)):
        code, out, _ = cli("rank", pairs, *argv)
        assert code == 0 and "manipulation" not in out
        code, out, _ = cli("rank", pairs, *argv, "--format", "json")
        assert "manipulation_margin" not in json.loads(out)


def test_max_answers_on_a_reports_file(cli, tmp_path, pairs):
    reps = pr.randomized_response(read_comparisons(pairs), 1.0, rng=4)
    path = tmp_path / "reports.csv"
    path.write_text(comparisons_to_csv(reps))
    code, out, _ = cli("rank", path, "--max-answers", "5", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    g = doc["guarantee"]
    assert g["epsilon_per_comparison"] == 1.0 and g["epsilon_per_user"] == 5.0 and g["unit"] == "one comparison"
    assert doc["manipulation_margin"]["max_answers"] == 5 and doc["manipulation_margin"]["reports_per_fake"] == 3
    assert doc["manipulation_margin"]["unit"] == "fake respondent"
    code, out, _ = cli("rank", path, "--max-answers", "5")
    assert "5-DP per user" in out
    # each respondent sent 3 reports: a quota of 2 is refused, without counts or ids
    code, _, err = cli("rank", path, "--max-answers", "2")
    assert code == 2 and err.startswith("privrank: error: ") and "more reports than the declared quota" in err
    assert "3" not in err


def test_max_answers_column_round_trip(cli, quota_file):
    header = quota_file.read_text().splitlines()[0]
    assert header == "user,item_a,item_b,outcome,epsilon,max_answers"
    assert read_comparisons(quota_file).max_answers == 3
    code, out, _ = cli("rank", quota_file, "--format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["guarantee"]["epsilon_per_user"] == 3.0
    assert doc["manipulation_margin"]["max_answers"] == 3
    assert cli("rank", quota_file, "--max-answers", "3", "--format", "json")[1] == out  # agreeing
    code, _, err = cli("rank", quota_file, "--max-answers", "4")
    assert code == 2 and "differs from the one the reports carry" in err
    code, _, err = cli("rank", quota_file, "--engine", "stream")
    assert code == 2 and "--engine local" in err


@pytest.mark.parametrize("values, message", [
    (["3", "4"], "same whole number"), (["0", "0"], "same whole number"), (["2.5", "2.5"], "same whole number"),
    (["x", "x"], "must be a number"), (["", "3"], "empty"), (["2", "2"], "more reports than the declared quota")])
def test_bad_max_answers_column(cli, tmp_path, values, message):
    rows = ["user,item_a,item_b,outcome,epsilon,max_answers"]
    for u in range(2):
        rows += [f"{u},A,B,1,1.0,{values[u]}", f"{u},B,C,-1,1.0,{values[u]}", f"{u},A,C,1,1.0,{values[u]}"]
    path = tmp_path / "bad.csv"
    path.write_text("\n".join(rows) + "\n")
    code, _, err = cli("rank", path)
    assert code == 2 and message in err and "Traceback" not in err


def test_max_answers_column_needs_reports(cli, tmp_path):
    path = tmp_path / "raw.csv"
    path.write_text("user,item_a,item_b,outcome,max_answers\n0,A,B,1,3\n0,B,C,1,3\n")
    code, _, err = cli("rank", path, "--mechanism", "none")
    assert code == 2 and "randomized reports" in err


def test_writer_refuses_a_quota_it_cannot_state(pairs):
    comps = read_comparisons(pairs)
    with pytest.raises(pr.InputError, match="randomized reports"):
        comparisons_to_csv(comps, max_answers=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pr.PrivacyWarning)
        reps = pr.randomized_response(comps, 1.0, max_answers=2, rng=0)  # the reports carry the quota
    assert comparisons_to_csv(reps).splitlines()[1].endswith(",2")
    with pytest.raises(pr.InputError, match="more reports than the declared quota"):
        comparisons_to_csv(pr.randomized_response(comps, 1.0, rng=0), max_answers=2)


def test_margin_pairs_refused_where_no_margin_is_stated(cli, pairs, reports_file):
    for argv in ((pairs, "--mechanism", "none"), (pairs, "--epsilon", "1"),
                 (pairs, "--epsilon", "1", "--engine", "stream"), (reports_file, "--mechanism", "penalised-mle")):
        code, _, err = cli("rank", *argv, "--margin", "pairs")
        assert code == 2 and "--margin applies to rankings of a file of randomized reports" in err
