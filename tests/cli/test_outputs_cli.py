"""The command line's outputs: reserved before the charge, written once, cleaned up on signals."""
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


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signals_end_cleanly(pairs, tmp_path, signum, code):
    out = tmp_path / "r.csv"
    proc = subprocess.Popen([sys.executable, "-c", SLOW_WRITE, "rank", str(pairs), "--epsilon", "1", "-o", str(out),
                             "--ledger", str(tmp_path / "l.sqlite")], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "writing"
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code and "privrank: interrupted" in err and "Traceback" not in err
    assert list(tmp_path.glob("*r.csv*")) == []  # the reserved output was removed, no temporaries


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
