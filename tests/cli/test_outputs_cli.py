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
