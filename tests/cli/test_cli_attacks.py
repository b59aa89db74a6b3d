"""Attacks on the ledger through the command line: a release that escapes its data set's budget, or
an output that destroys a file the command reads or keeps."""
import numpy as np
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


@pytest.mark.parametrize("how", ["path", "symlink", "export", "wal"])
def test_an_output_is_never_written_over_the_ledger(cli, pairs, tmp_path, private_ledger, how):
    assert cli("rank", pairs, "--epsilon", "0.5", "-o", tmp_path / "first.csv")[0] == 0
    before = private_ledger.read_bytes()
    target = {"path": private_ledger, "export": private_ledger, "wal": f"{private_ledger}-wal",
              "symlink": tmp_path / "link"}[how]
    if how == "symlink":
        target.symlink_to(private_ledger)
    argv = ("ledger", "export") if how == "export" else ("rank", pairs, "--epsilon", "0.5")
    code, _, err = cli(*argv, "-o", target, "--force")
    _refused(code, err)
    assert "would overwrite the privacy ledger" in err
    assert private_ledger.read_bytes() == before
    with Ledger(private_ledger) as led:
        assert len(led.releases()) == 1  # the refused release was not charged


def test_an_output_is_never_written_over_the_ledger_journal(cli, pairs, tmp_path, private_ledger):
    assert cli("rank", pairs, "--epsilon", "0.5", "-o", tmp_path / "first.csv")[0] == 0
    (entry,) = (tmp_path / "state" / "datasets").iterdir()
    before = entry.read_bytes()
    code, _, err = cli("rank", pairs, "--epsilon", "0.5", "-o", entry, "--force")
    _refused(code, err)
    assert "would overwrite the privacy ledger's journal" in err and entry.read_bytes() == before
    with Ledger(private_ledger) as led:
        assert len(led.releases()) == 1


def test_an_output_is_never_written_over_the_item_list(cli, pairs, pairs_items, tmp_path, private_ledger):
    items = pairs_items.read_text()
    code, _, err = cli("rank", pairs, "--mechanism", "laplace", "--items", pairs_items, "--epsilon", "0.5",
                       "-o", pairs_items, "--force")
    _refused(code, err)
    assert "item list" in err and pairs_items.read_text() == items
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_the_ranking_and_its_plot_are_not_one_file(cli, pairs, tmp_path, private_ledger):
    pytest.importorskip("matplotlib")
    target = tmp_path / "r.png"
    code, _, err = cli("rank", pairs, "--epsilon", "0.5", "-o", target, "--plot", target, "--force")
    _refused(code, err)
    assert "the same file" in err and not target.exists()
    with Ledger(private_ledger) as led:
        assert led.releases() == []


@pytest.mark.parametrize("device", ["/dev/null", "fifo"])
def test_a_ledger_that_is_not_a_regular_file_is_refused(cli, pairs, tmp_path, device):
    import os

    if device == "fifo":
        device = tmp_path / "fifo"
        os.mkfifo(device)
    code, _, err = cli("rank", pairs, "--epsilon", "0.5", "--ledger", device, "-o", tmp_path / "r.csv")
    _refused(code, err)
    assert f"the ledger {device} is not a regular file" in err


def _users_file(path, users, records):
    path.write_text("user,item_a,item_b,outcome\n" + "".join(f"{u},{a},{b},{o}\n" for u, (a, b, o) in
                                                             zip(users, records)))
    return path


@pytest.mark.parametrize("regroup", [False, True])
def test_a_budget_per_user_refuses_the_records_regrouped_under_other_users(cli, tmp_path, private_ledger, regroup):
    """Rewriting the user column keeps the fingerprint (it leaves users out, so renaming them keeps
    the budget); made each comparison its own "user", the records of 3-answer people were charged 0.9
    per user against a budget of 1 per user, 2.7 per person. Renaming users, consistently, is allowed."""
    rng = np.random.default_rng(3)
    records = [(f"i{a}", f"i{(a + d) % 6}", int(o)) for a, d, o in
               zip(rng.integers(0, 6, 300), rng.integers(1, 6, 300), rng.choice([1, -1], 300))]
    people = [k // 3 for k in range(300)]
    original = _users_file(tmp_path / "people.csv", people, records)
    assert cli("ledger", "set-budget", original, "--epsilon", "1", "--unit", "user")[0] == 0
    users = list(range(300)) if regroup else [f"p{999 - u}" for u in people]
    copy = _users_file(tmp_path / "copy.csv", users[::-1], records[::-1])  # and the rows in another order
    out = tmp_path / "out.csv"
    code, _, err = cli("rank", copy, "--user-epsilon", "0.9", "--seed", "1", "-o", out)
    with Ledger(private_ledger) as led:
        if regroup:
            _refused(code, err)
            assert "grouped into users otherwise" in err and not out.exists() and led.releases() == []
        else:
            assert code == 0, err
            assert out.exists() and len(led.releases()) == 1


def test_parquet_to_a_text_only_standard_output_is_refused_before_the_charge(pairs, private_ledger):
    """A notebook or an IDE stands in for standard output with a text stream: Parquet written there
    ended in an AttributeError traceback, after the release was charged."""
    import contextlib
    import io

    from privrank.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["rank", str(pairs), "--epsilon", "1", "--format", "parquet"])
    _refused(code, err.getvalue())
    assert "text-only" in err.getvalue() and out.getvalue() == ""
    with Ledger(private_ledger) as led:
        assert led.releases() == []


@pytest.mark.parametrize("option", ["--ledger", "--items"])
def test_a_path_the_system_refuses_is_an_error_not_a_traceback(cli, pairs, tmp_path, option):
    """A ledger name too long for the file system, or a file that fails to read (an I/O error), gave a
    traceback and exit 1."""
    path = tmp_path / ("x" * 300 + ".sqlite") if option == "--ledger" else "/proc/self/mem"
    code, _, err = cli("rank", pairs, "--epsilon", "1", option, path)
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err
