"""Every foreseeable failure of a release is refused before the charge: an output that cannot be
written, a ledger journal that cannot be written (the ledger records nothing)."""
import pytest

from privrank.ledger import Ledger


def _refused(code, err, private_ledger):
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err
    assert "recorded in the ledger" not in err
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_an_unwritable_output_is_refused_before_the_charge(cli, pairs, tmp_path, private_ledger):
    for target in ("/proc/version", "/proc/privrank.csv", tmp_path):
        code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", target, "--force")
        assert "nothing was released" in err
        _refused(code, err, private_ledger)


def test_an_unwritable_journal_is_refused_before_the_charge(cli, pairs, monkeypatch, private_ledger):
    monkeypatch.setenv("PRIVRANK_STATE", "/proc/privrank-state")
    code, _, err = cli("rank", pairs, "--epsilon", "1")
    assert "ledger journal" in err and "nothing was recorded" in err
    _refused(code, err, private_ledger)


def test_a_full_output_file_system_is_refused_before_the_charge(cli, pairs, small_fs, private_ledger):
    small_fs.fill()
    code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", small_fs.path / "r.csv")
    assert "No space left" in err
    _refused(code, err, private_ledger)


@pytest.mark.parametrize("engine", ["local", "stream", "dask"])
def test_a_file_without_records_is_refused_before_the_charge(cli, tmp_path, private_ledger, engine):
    # regression (issue 38): --engine stream and dask charged the release, then found no comparisons
    if engine == "dask":
        pytest.importorskip("dask.dataframe")
    comparisons, rankings = tmp_path / "header.csv", tmp_path / "ballots.csv"
    comparisons.write_text("user,item_a,item_b,outcome\n")
    rankings.write_text("a,b,c\n")
    for argv in (("rank", comparisons, "--epsilon", "1"), ("top-k", comparisons, "--k", "1", "--mechanism", "rr",
                                                           "--epsilon", "1"),
                 ("aggregate", rankings, "--method", "ldp-matrix", "--epsilon", "1")):
        code, _, err = cli(*argv, "--engine", engine)
        assert "has a header but no" in err
        _refused(code, err, private_ledger)
