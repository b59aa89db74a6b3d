"""The command line's outputs: reserved before the charge, written once, complete whatever signal comes."""
import signal
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import pytest

from privrank.ledger import Ledger

RUN = "import sys; from privrank.cli import main; sys.exit(main(sys.argv[1:]))"


def _rank(pairs, ledger, out, extra=()):
    return subprocess.run([sys.executable, "-c", RUN, "rank", str(pairs), "--epsilon", "1", "-o", str(out),
                           "--ledger", str(ledger), *extra], capture_output=True, text=True, timeout=120)


def test_concurrent_releases_to_one_output_charge_once(pairs, tmp_path):
    # regression (issue 16): six concurrent releases to one --output recorded five charges for one file
    ledger, out = tmp_path / "l.sqlite", tmp_path / "r.csv"
    with ThreadPoolExecutor(6) as pool:
        runs = list(pool.map(lambda _: _rank(pairs, ledger, out), range(6)))
    assert sorted(r.returncode for r in runs) == [0, 2, 2, 2, 2, 2]
    with Ledger(ledger) as led:
        assert len(led.releases()) == 1


def test_plot_without_a_format_is_refused_before_the_charge(cli, pairs, tmp_path, private_ledger):
    # regression (issue 16): --plot myplot wrote myplot.png without --force, after the charge
    (tmp_path / "myplot.png").write_text("keep")
    code, _, err = cli("rank", pairs, "--epsilon", "1", "--plot", tmp_path / "myplot")
    assert code == 2 and "suffix" in err
    assert (tmp_path / "myplot.png").read_text() == "keep"
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_dash_is_standard_output(cli, pairs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("rank", pairs, "--epsilon", "1", "-o", "-")
    assert code == 0 and out.startswith("rank") and not (tmp_path / "-").exists()


SLOW_WRITE = textwrap.dedent("""
    import os, signal, sys, time
    # a shell runs a background job with Ctrl-C ignored, and privrank then leaves it ignored: this
    # child is the foreground command the test plays, whatever the worker running the test ignores
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import privrank.files as files
    write = files.Output.write_bytes
    def slow(self, data):
        print("writing", flush=True)
        time.sleep(30)
    files.Output.write_bytes = slow
    from privrank.cli import main
    sys.exit(main(sys.argv[1:]))
""")


SIGNAL_AFTER_COMMIT = textwrap.dedent("""
    import os, signal, sys
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in SLOW_WRITE
    import privrank.ledger as ledger
    signum, argv = int(sys.argv[1]), sys.argv[2:]
    record = ledger.Ledger.record
    def record_then_signal(self, *args, **kwargs):
        row = record(self, *args, **kwargs)  # committed
        os.kill(os.getpid(), signum)
        return row
    ledger.Ledger.record = record_then_signal
    from privrank.cli import main
    sys.exit(main(argv))
""")


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.parametrize("to_file", [True, False])
def test_a_signal_after_the_charge_waits_for_the_output(pairs, tmp_path, signum, code, to_file):
    # regression (issue 38): SIGINT or SIGTERM just after the ledger's commit left the spend and no output
    out, ledger = tmp_path / "r.csv", tmp_path / "l.sqlite"
    argv = ["rank", str(pairs), "--epsilon", "1", "--ledger", str(ledger), *(["-o", str(out)] if to_file else
                                                                           ["--format", "csv"])]
    proc = subprocess.run([sys.executable, "-c", SIGNAL_AFTER_COMMIT, str(int(signum)), *argv], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == code and "privrank: interrupted" in proc.stderr and "Traceback" not in proc.stderr
    assert "its output is written before privrank stops" in proc.stderr
    text = out.read_text() if to_file else proc.stdout
    assert text.startswith("rank,item,score") and len(text.splitlines()) == 4  # the header and three items
    assert out.exists() == to_file and not list(tmp_path.glob(".r.csv*"))  # no marker or temporary left
    with Ledger(ledger) as led:
        assert len(led.releases()) == 1


def test_a_closed_standard_output_is_refused_before_the_charge(pairs, tmp_path):
    # regression (issue 16): `privrank rank FILE >&-` charged the release, then crashed writing it
    ledger = tmp_path / "l.sqlite"
    proc = subprocess.run(["/bin/sh", "-c", f'"{sys.executable}" -c "$0" "$@" >&-', RUN, "rank", str(pairs),
                           "--epsilon", "1", "--ledger", str(ledger)], capture_output=False, stderr=subprocess.PIPE,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "standard output is closed" in proc.stderr and "Traceback" not in proc.stderr
    with Ledger(ledger) as led:
        assert led.releases() == []


def _slow_release(pairs, ledger, out):
    """A release that has been charged and is writing its output (it waits there)."""
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, "rank", str(pairs), "--epsilon", "1", "-o", str(out),
                             "--ledger", str(ledger)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    return proc


def test_a_reservation_left_by_a_killed_release_is_taken_over(pairs, tmp_path):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "r.csv"
    proc = _slow_release(pairs, ledger, out)
    proc.kill()
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()  # the target is never created before its output is complete
    assert len(list(tmp_path.glob(".r.csv.*.tmp"))) == 1 and (tmp_path / ".r.csv.privrank-reserved").exists()
    run = _rank(pairs, ledger, out)
    assert run.returncode == 0, run.stderr
    assert out.read_text().startswith("rank,item,score,private")
    with Ledger(ledger) as led:  # the killed release was charged before its draw, and stays so: two charges
        assert [r["output"] for r in led.releases()] == [str(out), str(out)]
    assert not list(tmp_path.glob(".r.csv*"))  # no marker or temporary left


def test_a_running_release_keeps_its_reservation(pairs, tmp_path):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "r.csv"
    proc = _slow_release(pairs, ledger, out)
    try:
        run = _rank(pairs, ledger, out)
        assert run.returncode == 2 and "nothing was released" in run.stderr
        assert f"reserved by a privrank release that is still running (process {proc.pid})" in run.stderr
        with Ledger(ledger) as led:  # the running release's charge alone
            assert len(led.releases()) == 1
        assert not out.exists()
    finally:
        proc.kill()
        proc.communicate(timeout=60)


def test_an_existing_output_beside_a_stale_marker_is_refused(pairs, tmp_path):
    ledger, out = tmp_path / "l.sqlite", tmp_path / "r.csv"
    out.write_text("an earlier release\n")  # a release whose run was killed before it removed its marker
    (tmp_path / ".r.csv.privrank-reserved").write_text("999999999")
    run = _rank(pairs, ledger, out)
    assert run.returncode == 2 and "exists; pass force=True (CLI: --force)" in run.stderr
    assert out.read_text() == "an earlier release\n"
    with Ledger(ledger) as led:
        assert led.releases() == []


#: a release per trial, each forked from one process that has imported everything (the trials cost no
#: start-up) and SIGKILLed at a random moment of its run; as many trials as start in the seconds given
#: (a disk's fsync can take a second), and their number printed
FORKED_KILLS = textwrap.dedent("""
    import os, random, signal, sys, time
    from privrank.cli import main
    data, folder, trials, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    def release(name):
        return main(["rank", data, "--epsilon", "1", "--seed", "1", "-o", os.path.join(folder, name), "--quiet",
                     "--ledger", os.path.join(folder, "l.sqlite")])
    assert release("reference.csv") == 0  # imports what the release uses
    began = time.monotonic()
    assert release("timed.csv") == 0
    duration = time.monotonic() - began
    stop = time.monotonic() + seconds
    rng, done = random.Random(38), 0
    for k in range(trials):
        if time.monotonic() > stop:
            break
        pid = os.fork()
        if pid == 0:
            os._exit(release(f"r{k}.csv"))
        time.sleep(rng.uniform(0, 1.2 * duration))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        done += 1
    print(done)
""")


def test_sigkill_at_any_moment_leaves_the_target_absent_or_complete(tmp_path):
    # regression (issue 38): SIGKILL a few seconds into a run left an empty file where the output belongs
    rows = "".join(f"u{r % 1000},item {r % 150},item {(r + 1 + r // 150 % 149) % 150},{1 if r % 3 else -1}\n"
                   for r in range(10_000))
    data = tmp_path / "big.csv"
    data.write_text("user,item_a,item_b,outcome\n" + rows)
    folder = tmp_path / "out"
    folder.mkdir()
    proc = subprocess.run([sys.executable, "-c", FORKED_KILLS, str(data), str(folder), "20", "5"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    trials = int(proc.stdout)
    assert trials >= 3
    reference = (folder / "reference.csv").read_bytes()
    written = [(folder / f"r{k}.csv").exists() for k in range(trials)]
    for k in range(trials):
        target = folder / f"r{k}.csv"
        assert not target.exists() or target.read_bytes() == reference, f"trial {k}: an empty or partial output"
    assert not all(written)  # some were killed before their output was in place
