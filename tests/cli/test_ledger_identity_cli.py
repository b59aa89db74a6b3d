"""One identity for the same people's data through the command line: a copy of a budgeted data set
relabelled, renamed, or with rows doubled, appended or dropped is charged to its budget or refused
before anything is spent -- never given a budget of its own -- and genuinely different data is not."""
import csv

import numpy as np
import pytest

from privrank.ledger import Ledger

ITEMS = ["Apple", "Banana", "Cherry", "Damson", "Elder", "Fig", "Grape", "Hazel"]


def survey(seed, users=80, answers=5):
    """Rows ``(user, item_a, item_b, outcome)``: each user answers a few random pairs, no ties."""
    rng = np.random.default_rng(seed)
    rows = []
    for u in range(users):
        for k in rng.choice(len(ITEMS) * (len(ITEMS) - 1) // 2, answers, replace=False):
            a, b = [(i, j) for i in range(len(ITEMS)) for j in range(i + 1, len(ITEMS))][k]
            rows.append([f"U{u}", ITEMS[a], ITEMS[b], int(rng.choice([-1, 1]))])
    return rows


def write(path, rows, header=("user", "item_a", "item_b", "outcome")):
    with open(path, "w", newline="") as fh:
        csv.writer(fh).writerows([header, *rows])
    return path


def _refused(code, err):
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err, err


@pytest.fixture
def budgeted(cli, tmp_path, private_ledger):
    """A survey whose budget (epsilon 1 per comparison) is set, and its rows."""
    rows = survey(1)
    path = write(tmp_path / "survey.csv", rows)
    assert cli("ledger", "set-budget", path, "--epsilon", "1", "--unit", "comparison")[0] == 0
    return path, rows


def _bijection(rows):
    """Every item and every user renamed by a bijection (a shuffled code book)."""
    rng = np.random.default_rng(9)
    items = dict(zip(ITEMS, (f"x{k}" for k in rng.permutation(len(ITEMS)))))
    users = {u: f"person-{k}" for k, u in enumerate(rng.permutation(sorted({r[0] for r in rows})))}
    return [[users[u], items[a], items[b], o] for u, a, b, o in rows]


COPIES = {
    "upper-cased": lambda rows: [[u, a.upper(), b.upper(), o] for u, a, b, o in rows],
    "renamed": _bijection,
}


@pytest.mark.parametrize("copy", list(COPIES))
def test_a_relabelled_copy_spends_the_budget_of_its_data_set(cli, budgeted, tmp_path, private_ledger, copy):
    """Labels upper-cased, or items and users renamed by any bijection: the same people's answers,
    charged to the one budget, so the budget refuses what the two releases together exceed."""
    path, rows = budgeted
    twin = write(tmp_path / "twin.csv", COPIES[copy](rows))
    assert cli("rank", twin, "--epsilon", "0.75", "-o", tmp_path / "a.csv")[0] == 0
    code, _, err = cli("rank", path, "--epsilon", "0.5", "-o", tmp_path / "b.csv")
    _refused(code, err)
    assert "only 0.25 of the data set's budget of 1" in err and not (tmp_path / "b.csv").exists()
    with Ledger(private_ledger) as led:
        assert len(led.releases()) == 1 and led.budgets()[0]["spent_epsilon"] == pytest.approx(0.75)


NEAR = {
    "doubled": lambda rows: rows + rows,
    "one row appended": lambda rows: rows + [["U999", "Apple", "Hazel", 1]],
    "one row dropped": lambda rows: rows[:17] + rows[18:],
}


@pytest.mark.parametrize("edit", list(NEAR))
def test_a_near_duplicate_is_refused_before_anything_unless_declared_new(cli, budgeted, tmp_path, private_ledger,
                                                                        edit):
    """Rows doubled, one appended or one dropped: refused before any charge or output, naming the
    budgeted data set and a rounded share (no count); ``--new-data REASON`` lets the curator go on,
    and the reason is recorded with the release."""
    path, rows = budgeted
    near = write(tmp_path / "near.csv", NEAR[edit](rows))
    out = tmp_path / "out.csv"
    code, stdout, err = cli("rank", near, "--epsilon", "0.5", "-o", out)
    _refused(code, err)
    assert str(path) in err and "100%" in err and "--new-data" in err and not out.exists() and stdout == ""
    assert str(len(rows)) not in err
    with Ledger(private_ledger) as led:
        assert led.releases() == []
    code, _, err = cli("rank", near, "--epsilon", "0.5", "-o", out, "--new-data", "wave 2, other respondents")
    assert code == 0 and out.exists(), err
    with Ledger(private_ledger) as led:
        (release,) = led.releases()
        assert release["new_data"] == "wave 2, other respondents" and release["dataset"] == str(near)
    assert cli("rank", near, "--epsilon", "0.5", "-o", tmp_path / "again.csv")[0] == 0  # declared once


def test_a_blank_reason_is_refused(cli, budgeted, tmp_path):
    path, rows = budgeted
    near = write(tmp_path / "near.csv", rows + rows)
    code, _, err = cli("rank", near, "--epsilon", "0.5", "-o", tmp_path / "out.csv", "--new-data", "  ")
    _refused(code, err)
    assert "needs a reason" in err


def test_a_near_duplicate_cannot_be_given_a_budget_of_its_own(cli, budgeted, tmp_path):
    path, rows = budgeted
    near = write(tmp_path / "near.csv", rows[1:])
    code, _, err = cli("ledger", "set-budget", near, "--epsilon", "5", "--unit", "comparison")
    _refused(code, err)
    assert str(path) in err
    assert cli("ledger", "set-budget", near, "--epsilon", "5", "--unit", "comparison", "--new-data", "re-run")[0] == 0


def test_genuinely_different_data_is_not_refused(cli, budgeted, tmp_path, private_ledger):
    """Another survey of the same items, with the same user ids: a data set of its own."""
    other = write(tmp_path / "other.csv", survey(2))
    assert cli("rank", other, "--epsilon", "0.9", "-o", tmp_path / "a.csv")[0] == 0
    assert cli("rank", budgeted[0], "--epsilon", "0.9", "-o", tmp_path / "b.csv")[0] == 0
    with Ledger(private_ledger) as led:
        assert len({r["fingerprint"] for r in led.releases()}) == 2


@pytest.mark.parametrize("edit", ["lower-cased", "lower-cased, one row dropped"])
def test_raw_answers_relabelled_with_an_epsilon_column_are_not_ranked_as_reports(cli, budgeted, tmp_path,
                                                                                private_ledger, edit):
    """Raw answers whose data set has a budget, labels lower-cased and an epsilon column added, would be
    debiased as randomized reports with no noise and no charge: refused before any output."""
    path, rows = budgeted
    fake = [[u.lower(), a.lower(), b.lower(), o, 50] for u, a, b, o in rows]
    fake = write(tmp_path / "fake.csv", fake if edit == "lower-cased" else fake[1:],
                 header=("user", "item_a", "item_b", "outcome", "epsilon"))
    out = tmp_path / "out.csv"
    code, stdout, err = cli("rank", fake, "--mechanism", "debiased-rr", "-o", out)
    _refused(code, err)
    assert stdout == "" and not out.exists()
    code, stdout, err = cli("rank", fake, "--mechanism", "debiased-rr", "--format", "csv")
    _refused(code, err)
    assert stdout == ""
    with Ledger(private_ledger) as led:
        assert led.releases() == []
