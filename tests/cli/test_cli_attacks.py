"""Attacks on the ledger through the command line: a release that escapes its data set's budget, or
an output that destroys a file the command reads or keeps."""
import pytest

from privrank.ledger import Ledger


def _refused(code, err):
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err


def test_raw_data_given_an_epsilon_column_is_not_released_as_randomized_reports(cli, pairs, tmp_path,
                                                                               private_ledger):
    """A column of epsilons does not make raw answers randomized: the records of a budgeted data set
    debiased as reports would be released without noise, and without a charge."""
    rows = pairs.read_text().splitlines()
    raw = tmp_path / "raw.csv"  # randomized response never outputs a tie: the reports' file has none
    raw.write_text("\n".join([rows[0]] + [r for r in rows[1:] if not r.endswith(",0")]) + "\n")
    assert cli("ledger", "set-budget", raw, "--epsilon", "1", "--unit", "comparison")[0] == 0
    fake = tmp_path / "fake.csv"
    fake.write_text("\n".join([rows[0] + ",epsilon"] + [r + ",50" for r in raw.read_text().splitlines()[1:]]) + "\n")
    out = tmp_path / "out.csv"
    code, _, err = cli("rank", fake, "-o", out)
    _refused(code, err)
    assert "budget" in err and "randomized reports" in err and not out.exists()
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_randomized_reports_without_a_budget_are_still_debiased(cli, pairs, tmp_path):
    reports = tmp_path / "reports.csv"
    assert cli("randomize", pairs, "--epsilon", "1", "--seed", "1", "-o", reports)[0] == 0
    code, out, err = cli("rank", reports, "--seed", "2", "--format", "csv")
    assert code == 0 and out.startswith("rank,item")
