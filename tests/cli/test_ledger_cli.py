"""``privrank ledger`` and the ledger hook of ``rank``/``top-k``, including crash safety.

Crash tests run the real command in a subprocess and SIGKILL it at a chosen point (the patch lives
in the test's script, not in privrank). The invariant: every output file that exists has a ledger
entry naming it. A command that writes before it records (the broken variant) must fail the same
check.
"""
import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from privrank.data.io import read_comparisons
from privrank.guarantees import UNIT_USER, Guarantee
from privrank.ledger import Ledger, fingerprint

KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys
    import privrank.files as files
    import privrank.ledger as ledger
    point, argv = sys.argv[1], sys.argv[2:]
    die = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    write = files.Output.write_text
    if point == "after-record":
        record = ledger.Ledger.record
        ledger.Ledger.record = lambda self, *a, **k: (record(self, *a, **k), die())
    elif point == "inside-transaction":
        ledger._now = die
    elif point == "after-output":
        files.Output.write_text = lambda *a, **k: (write(*a, **k), die())
    elif point == "broken-order":  # a ledger that records nothing
        ledger.Ledger.record = lambda self, *a, **k: 0
        files.Output.write_text = lambda *a, **k: (write(*a, **k), die())
    from privrank.cli import main
    sys.exit(main(argv))
""")


def run_killed(point, argv, ledger_path):
    env = {**os.environ, "PRIVRANK_LEDGER": str(ledger_path)}
    proc = subprocess.run([sys.executable, "-c", KILL_SCRIPT, point, *map(str, argv)], env=env,
                          capture_output=True, text=True, timeout=120)
    return proc.returncode


def written(path) -> bool:
    """An output holds released data."""
    return path.exists() and path.stat().st_size > 0


def under_counted(ledger_path, outputs):
    """Output files holding data without a ledger entry naming them."""
    with Ledger(ledger_path) as ledger:
        recorded = {r["output"] for r in ledger.releases()}
    return [str(p) for p in outputs if written(p) and str(p) not in recorded]


def test_crash_between_recording_and_output_never_under_counts(pairs, tmp_path):
    ledger_path = tmp_path / "crash.sqlite"
    outputs = {p: tmp_path / f"{p}.csv" for p in ("after-record", "inside-transaction", "after-output",
                                                  "broken-order")}
    for point in ("after-record", "inside-transaction", "after-output"):
        argv = ["rank", pairs, "--epsilon", "1", "--seed", "1", "-o", outputs[point]]
        assert run_killed(point, argv, ledger_path) == -signal.SIGKILL
    assert not written(outputs["after-record"])  # killed after the charge: over-counts, the safe side
    assert not written(outputs["inside-transaction"])  # killed before the commit: neither charge nor output
    assert written(outputs["after-output"])
    with Ledger(ledger_path) as ledger:
        assert sorted(r["output"] for r in ledger.releases()) == sorted(
            str(outputs[p]) for p in ("after-record", "after-output"))
    assert under_counted(ledger_path, outputs.values()) == []
    # the broken variant writes before it records: the same check catches it
    argv = ["rank", pairs, "--epsilon", "1", "--seed", "1", "-o", outputs["broken-order"]]
    assert run_killed("broken-order", argv, ledger_path) == -signal.SIGKILL
    assert under_counted(ledger_path, outputs.values()) == [str(outputs["broken-order"])]
    with Ledger(ledger_path) as ledger:  # the killed transaction left the file usable
        ledger.record("f" * 64, Guarantee.non_private())
        assert len(ledger.releases()) == 3


def test_budget_refusal_writes_nothing(cli, pairs, tmp_path, private_ledger):
    assert cli("ledger", "set-budget", pairs, "--epsilon", "5", "--unit", "user")[0] == 0
    target = tmp_path / "r.csv"
    code, _, err = cli("rank", pairs, "--epsilon", "1", "--seed", "0", "-o", target)  # no declared bound per user
    assert code == 2 and "states no guarantee per user" in err and not target.exists()
    code, _, err = cli("rank", pairs, "--epsilon", "1", "--max-answers", "3", "--seed", "0", "-o", target)
    assert code == 0 and target.exists()  # 3 answers per user at most: 3 per user
    out2 = tmp_path / "r2.csv"
    code, _, err = cli("rank", pairs, "--epsilon", "1", "--max-answers", "3", "--seed", "0", "-o", out2)
    assert code == 2 and "refused" in err and "only 2 of the data set's budget of 5 per user" in err
    assert not out2.exists()
    code, _, err = cli("rank", pairs, "--mechanism", "none")
    assert code == 2 and "not private" in err
    items = tmp_path / "items.txt"
    items.write_text("\n".join(read_comparisons(pairs).items))
    assert cli("top-k", pairs, "--k", "1", "--user-epsilon", "2", "--max-answers", "3", "--items", items,
               "--seed", "0")[0] == 0
    code, out, _ = cli("ledger", "show", pairs, "--format", "json")
    doc = json.loads(out)
    assert [b["spent_epsilon"] for b in doc["budgets"]] == [5.0] and len(doc["releases"]) == 2
    code, out, _ = cli("ledger", "show")
    assert code == 0 and "per user: epsilon 5 total, 5 spent, 0 left" in out and "releases: 2" in out
    code, out, _ = cli("ledger", "export")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["command"] for r in rows] == ["rank", "top-k"] and rows[0]["output"] == str(target)
    assert json.loads(cli("ledger", "export", "--format", "json")[1])[1]["unit"] == "all comparisons of one user"


def test_existing_output_is_refused_before_charging(cli, pairs, tmp_path, private_ledger):
    out = tmp_path / "r.csv"
    out.write_text("keep me\n")
    code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", out)
    assert code == 2 and "nothing was released" in err and out.read_text() == "keep me\n"
    with Ledger(private_ledger) as ledger:
        assert ledger.releases() == []


def test_what_a_release_would_refuse_after_its_draw_is_refused_before_the_charge(cli, pairs, pairs_items, tmp_path,
                                                                                  private_ledger):
    one = tmp_path / "one.soc"
    one.write_text("# NUMBER ALTERNATIVES: 1\n# ALTERNATIVE NAME 1: x\n3: 1\n")
    unseen = tmp_path / "abcd.txt"
    unseen.write_text("A\nB\nC\nD\n")
    selfpair = tmp_path / "self.csv"
    selfpair.write_text(pairs.read_text() + "99,C,C,1\n")
    refused = [
        (("top-k", pairs, "--k", "4", "--items", pairs_items, "--epsilon", "1"), "between 1 and the number of items"),
        (("top-k", pairs, "--k", "0", "--epsilon", "1"), "at least 1"),
        (("top-k", pairs, "--k", "2", "--items", pairs_items, "--mechanism", "noisy-copeland", "--user-epsilon", "1",
          "--max-answers", "3", "--ci"), "--respondents"),
        (("rank", pairs, "--items", unseen, "--epsilon", "1"), "appear in no comparison"),
        (("rank", selfpair, "--epsilon", "1", "--engine", "stream", "--batch-size", "50"), "with itself"),
    ]
    for argv, message in refused:
        code, _, err = cli(*argv)
        assert code == 2 and message in err, (argv, err)
    ballots = tmp_path / "ballots.soc"
    ballots.write_text(SOC)
    for argv in (("rank", pairs, "--epsilon", "1", "-o", pairs, "--force"),
                 ("randomize", pairs, "--epsilon", "1", "-o", pairs, "--force")):
        before = pairs.read_text()
        code, _, err = cli(*argv)
        assert code == 2 and "overwrite the input" in err and pairs.read_text() == before
    code, _, err = cli("aggregate", ballots, "--method", "exact", "--delta", "0.1")
    assert code == 2 and "drop --epsilon and --delta" in err
    assert cli("ledger", "set-budget", ballots, "--epsilon", "3")[0] == 0
    code, _, err = cli("aggregate", ballots, "--method", "noisy-matrix", "--epsilon", "1", "--non-private-diagnostics")
    assert code != 0 and "before anything was spent" in err
    with Ledger(private_ledger) as ledger:
        assert ledger.releases() == []
    for extra in ((), ("--ci",)):  # no pair: that item, at rank 1 beyond doubt
        code, out, err = cli("aggregate", one, "--method", "noisy-matrix", "--epsilon", "1", *extra)
        assert code == 0 and out.splitlines()[1].split()[:2] == ["1", "x"], err


def test_ledger_option_overrides_environment(cli, pairs, tmp_path):
    path = tmp_path / "other.sqlite"
    assert cli("rank", pairs, "--epsilon", "1", "--ledger", path)[0] == 0
    with Ledger(path) as ledger:
        assert len(ledger.releases()) == 1


SOC = ("# NUMBER ALTERNATIVES: 3\n# ALTERNATIVE NAME 1: x\n# ALTERNATIVE NAME 2: y\n# ALTERNATIVE NAME 3: z\n"
       "30: 1,2,3\n20: 2,1,3\n10: 3,2,1\n")


def test_aggregate_releases_are_charged_per_ranking(cli, tmp_path, private_ledger):
    ballots = tmp_path / "ballots.soc"
    ballots.write_text(SOC)
    code, out, err = cli("ledger", "set-budget", ballots, "--epsilon", "3")
    assert code == 0 and "per ranking: epsilon 3 total, 0 spent, 3 left" in out, err
    code, _, err = cli("ledger", "set-budget", ballots, "--epsilon", "3", "--unit", "user")
    assert code == 2 and "use --unit ranking" in err
    first = tmp_path / "a.csv"
    assert cli("aggregate", ballots, "--method", "noisy-matrix", "--epsilon", "2", "--ci", "-o", first)[0] == 0
    code, _, err = cli("aggregate", ballots, "--method", "dp-footrule", "--epsilon", "1", "--delta", "1e-6")
    assert code == 2 and "needs a delta" in err
    second = tmp_path / "b.csv"
    code, _, err = cli("aggregate", ballots, "--method", "ldp-matrix", "--epsilon", "1.5", "-o", second)
    assert code == 2 and "only 1 of the data set's budget of 3 per ranking remains" in err and not second.exists()
    code, _, err = cli("aggregate", ballots)  # the exact Kemeny ranking is not private
    assert code == 2 and "not private" in err
    assert cli("ledger", "set-budget", ballots, "--epsilon", "4", "--delta", "1e-5")[0] == 0
    assert cli("aggregate", ballots, "--method", "dp-footrule", "--epsilon", "1", "--delta", "1e-6")[0] == 0
    code, out, _ = cli("ledger", "show", ballots)
    assert "per ranking: epsilon 4 total, 3 spent, 1 left; delta 1e-05 total, 1e-06 spent" in out
    assert "noisy pairwise matrix (Laplace), central, epsilon 2, protecting one ranking -> " + str(first) in out


def test_aggregate_crash_never_under_counts(tmp_path):
    ballots = tmp_path / "ballots.soc"
    ballots.write_text(SOC)
    ledger_path = tmp_path / "crash.sqlite"
    outputs = {p: tmp_path / f"{p}.csv" for p in ("after-output", "broken-order")}
    for point, out in outputs.items():  # both killed right after the output is written
        argv = ["aggregate", ballots, "--method", "dp-footrule", "--epsilon", "1", "--seed", "1", "-o", out]
        assert run_killed(point, argv, ledger_path) == -signal.SIGKILL
        assert out.exists()
    # the broken variant (aggregate writes without recording) leaves output without a charge: caught
    assert under_counted(ledger_path, outputs.values()) == [str(outputs["broken-order"])]


def test_a_release_that_fails_after_its_draw_stays_charged(cli, tmp_path, private_ledger):
    # regression (issue 15, finding 3): intervals raised after the noise was drawn, before the charge;
    # 10 seeded runs drew epsilon 1.2 and recorded 0.6. Now the charge precedes the draw.
    rows = ["user,item_a,item_b,outcome"] + [f"{u},A,B,1" for u in range(30)] + [f"{u},B,C,1" for u in range(30)]
    path = tmp_path / "lopsided.csv"
    path.write_text("\n".join(rows) + "\n")
    failed = 0
    seeds = (1, 2, 3)  # two releases that fail, one that succeeds (the intervals take seconds)
    for seed in seeds:
        code, _, err = cli("rank", path, "--epsilon", "0.1", "--ci", "--bias-corrected", "--seed", seed)
        failed += code == 2
    assert failed >= 1  # the ridge-free estimate does not exist on these noisy releases
    with Ledger(private_ledger) as ledger:
        assert len(ledger.releases()) == len(seeds)  # every run that drew noise is recorded, failed or not


def test_randomize_is_charged_and_a_dropped_column_keeps_the_budget(cli, pairs, tmp_path, private_ledger):
    # regression (issue 15, finding 4): randomize was never charged; dropping the user column gave a fresh budget
    assert cli("ledger", "set-budget", pairs, "--epsilon", "2", "--unit", "comparison")[0] == 0
    out = tmp_path / "reports.csv"
    assert cli("randomize", pairs, "--epsilon", "1.5", "--seed", "0", "-o", out)[0] == 0
    with Ledger(private_ledger) as ledger:
        (row,) = ledger.releases()
    assert row["command"] == "randomize" and row["epsilon"] == 1.5 and row["output"] == str(out)
    no_users = tmp_path / "no_users.csv"
    no_users.write_text("".join(",".join(line.split(",")[1:]) + "\n" for line in pairs.read_text().splitlines()))
    code, _, err = cli("rank", no_users, "--epsilon", "1", "--seed", "0")
    assert code == 2 and "refused" in err  # the same data set: 1.5 of 2 spent already


def test_a_ledger_with_a_damaged_page_is_a_clear_error_and_is_kept(cli, pairs, tmp_path, private_ledger):
    with Ledger(private_ledger) as ledger:
        fp = fingerprint(pairs)
        ledger.set_budget(fp, "user", 100.0, dataset=str(pairs))
        for _ in range(200):
            ledger.record(fp, Guarantee(0.01, model="local", unit=UNIT_USER, mechanism="rr"), dataset=str(pairs),
                          output="x" * 200)
    assert not private_ledger.with_name(private_ledger.name + "-wal").exists()  # all in the file
    page = int.from_bytes(private_ledger.read_bytes()[16:18], "big")  # SQLite's page size, in its header
    with open(private_ledger, "r+b") as fh:  # a page in the middle of the file gets bytes of no page
        fh.seek(page * (private_ledger.stat().st_size // page // 2))
        fh.write(bytes(range(256)) * (page // 256))
    damaged = private_ledger.read_bytes()
    out = tmp_path / "r.csv"
    for argv in (["rank", pairs, "--user-epsilon", "1", "-o", out], ["ledger", "show"],
                 ["ledger", "show", "--format", "json"], ["ledger", "set-budget", pairs, "--epsilon", "5"],
                 ["ledger", "export"]):
        code, _, err = cli(*argv)
        assert code == 2 and f"the ledger {private_ledger} is damaged" in err and "restore it from a backup" in err
    assert private_ledger.read_bytes() == damaged and not out.exists()  # not replaced by a fresh ledger


def test_ledger_show_states_no_epsilon_for_a_release_that_is_not_private(cli, pairs):
    assert cli("rank", pairs, "--mechanism", "none")[0] == 0
    code, out, _ = cli("ledger", "show", "--format", "json")
    release = json.loads(out, parse_constant=lambda name: pytest.fail(f"JSON holds {name}"))["releases"][0]
    assert code == 0 and release["private"] is False and release["epsilon"] is None


@pytest.mark.parametrize("header, message", [
    ("user,item_a,item_b,outcome,winner,loser", "two layouts"),
    ("user,user,item_a,item_b,outcome", "'user' appears more than once"),
    ("user,item_a,item_b,outcome,ITEM_A", "'item_a' appears more than once"),
])
@pytest.mark.parametrize("command", [("ledger", "set-budget", "--epsilon", "5"), ("ledger", "show"),
                                     ("rank", "--epsilon", "1", "--engine", "stream")])
def test_a_comparisons_header_with_a_mistake_is_refused_as_comparisons(cli, tmp_path, private_ledger, header,
                                                                       message, command):
    """Such a file was taken for rankings: set-budget said "use --unit ranking", and every command
    "ranks must be numbers" (a ballot's message) instead of what is wrong with the header."""
    path = tmp_path / "both.csv"
    fields = len(header.split(","))
    path.write_text(header + "\n" + "\n".join(",".join(["u1", "A", "B", "1", "A", "B"][:fields]) for _ in range(3)) + "\n")
    code, out, err = cli(*command[:2], path, *command[2:]) if command[0] == "ledger" else cli(command[0], path, *command[1:])
    assert code == 2 and message in err and "ranks must be numbers" not in err and "--unit ranking" not in err
