"""Outputs that data cannot forge, write failures without tracebacks, and Ctrl-C at any time.

Item labels come from the data: in the text table their control characters are shown escaped
(one label, one line, no terminal escape sequence); CSV, Parquet and JSON keep them exact. A full disk or a closed pipe ends the command with a
message, and SIGINT at any point of ``main`` prints ``privrank: interrupted`` and exits 130.
"""
import csv
import errno
import io
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cli_data import labelled_comparisons

from privrank.cli.output import render
from privrank.guarantees import Guarantee
from privrank.ledger import Ledger

FORGED = "Z\n\nguarantee: 0.001-DP, FAKE\n1     WINNER  9.9"
LABELS = ["A", "B", "C", FORGED, "\x1b[31mRED\x1b[0m", "tab\there", "nel\x85x", "line\u2028sep", "par\u2029sep",
          '=HYPERLINK("http://evil")', "+1+2", "-2+3", "@SUM(A1)"]
CONTROLS = {chr(c) for c in [*range(0x20), *range(0x7f, 0xa0), 0x2028, 0x2029]}
RUN = "import sys; from privrank.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def hostile(tmp_path):
    """Comparisons whose item labels try to forge lines, colour the terminal and run formulas."""
    return labelled_comparisons(tmp_path / "hostile.csv", LABELS, 20)


def test_table_shows_one_line_per_item_and_no_control_character(cli, hostile):
    code, out, err = cli("rank", hostile, "--epsilon", "1", "--seed", "2")
    assert code == 0, err
    assert not CONTROLS - {"\n"} & set(out)
    lines = out.split("\n")
    table = lines[:lines.index("")]
    assert [ln.split()[0] for ln in table] == ["rank", *map(str, range(1, len(LABELS) + 1))]
    assert sum(ln.startswith("guarantee:") for ln in lines) == 1
    for shown in (r"Z\n\nguarantee: 0.001-DP, FAKE\n1     WINNER  9.9", r"\x1b[31mRED\x1b[0m", r"tab\there",
                  r"nel\x85x", r"line\u2028sep"):
        assert shown in out


def test_csv_and_parquet_keep_labels_exact(cli, hostile, tmp_path):
    pd = pytest.importorskip("pandas")
    code, out, err = cli("rank", hostile, "--epsilon", "1", "--seed", "2", "--format", "csv")
    assert code == 0, err
    frame = pd.read_csv(io.StringIO(out, newline=""))
    assert set(frame["item"]) == set(LABELS)  # a formula stays what the data said; pandas and R read it so
    assert frame["score"].dtype == float and (frame["score"] < 0).any()
    assert frame["rank"].tolist() == list(range(1, len(LABELS) + 1))
    assert cli("rank", hostile, "--epsilon", "1", "--seed", "2", "-o", tmp_path / "r.parquet")[0] == 0
    assert pd.read_parquet(tmp_path / "r.parquet")["item"].tolist() == frame["item"].tolist()


def test_render_csv_cells():
    # tab and CR lead no label read from a CSV file (the reader strips or refuses them): render is given them
    guarantee = Guarantee(1.0, model="local", unit="one comparison", mechanism="m")
    rows = [{"rank": k + 1, "item": item, "score": -0.31, "low": low}
            for k, (item, low) in enumerate([("\tx", -1.5), ("\rx", None), ("=1", 0.1 + 0.2), ("a\rb", True),
                                             (-4, float("inf"))])]
    parsed = [r[:4] for r in csv.reader(io.StringIO(render(rows, guarantee, "csv"), newline=""))]
    assert parsed == [["rank", "item", "score", "low"], ["1", "\tx", "-0.31", "-1.5"], ["2", "\rx", "-0.31", ""],
                      ["3", "=1", "-0.31", "0.30000000000000004"], ["4", "a\rb", "-0.31", "TRUE"],
                      ["5", "-4", "-0.31", "inf"]]


def test_json_keeps_labels_exact_and_escaped(cli, hostile):
    code, out, err = cli("rank", hostile, "--epsilon", "1", "--seed", "2", "--format", "json")
    assert code == 0, err
    assert not CONTROLS - {"\n"} & set(out)
    assert {r["item"] for r in json.loads(out)["ranking"]} == set(LABELS)


# --- write failures ------------------------------------------------------------------------------

full = pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")


def _run(args, tmp_path, **kwargs):
    return subprocess.run([sys.executable, "-c", RUN, *map(str, args), "--ledger", str(tmp_path / "l.sqlite")],
                          stderr=subprocess.PIPE, text=True, timeout=120, **kwargs)


def _clean_failure(code, err, recorded):
    assert code == 2 and "privrank: error: could not write the output" in err
    assert "Traceback" not in err and "Exception ignored" not in err
    assert ("recorded in the ledger" in err) == recorded


@full
def test_full_standard_output_is_an_error(pairs, tmp_path):
    with open("/dev/full", "w") as dev:
        proc = _run(["rank", pairs, "--epsilon", "1"], tmp_path, stdout=dev)
    _clean_failure(proc.returncode, proc.stderr, recorded=True)
    with Ledger(tmp_path / "l.sqlite") as led:
        assert len(led.releases()) == 1  # the safe side: the release stays charged


@full
def test_full_device_output_is_an_error(cli, pairs, private_ledger):
    code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", "/dev/full")
    _clean_failure(code, err, recorded=True)
    with Ledger(private_ledger) as led:
        assert len(led.releases()) == 1


@full
def test_full_ledger_export_is_an_error(cli, pairs, tmp_path):
    code, _, err = cli("ledger", "export", "-o", "/dev/full")
    _clean_failure(code, err, recorded=False)
    with open("/dev/full", "w") as dev:
        proc = _run(["ledger", "export", "--format", "json"], tmp_path, stdout=dev)
    _clean_failure(proc.returncode, proc.stderr, recorded=False)


def test_full_disk_under_a_regular_file_is_an_error(cli, pairs, tmp_path, monkeypatch, private_ledger):
    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", tmp_path / "r.csv")
    _clean_failure(code, err, recorded=True)
    assert not list(tmp_path.glob("*r.csv*"))  # neither the target, the marker nor a temporary is left
    with Ledger(private_ledger) as led:
        assert len(led.releases()) == 1


def test_closed_pipe_is_quiet(pairs, tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", RUN, "rank", str(pairs), "--epsilon", "1", "--format", "json",
                             "--ledger", str(tmp_path / "l.sqlite")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read()
    proc.wait(timeout=120)
    assert proc.returncode == 0 and err == ""


# --- Ctrl-C --------------------------------------------------------------------------------------

#: main as the console script runs it, saying when it starts (SIGINT restored in case the test runner
#: ignores it: Python would then leave it ignored)
READY = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "from privrank.cli import main; print('ready', file=sys.stderr, flush=True); sys.exit(main(sys.argv[1:]))")


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """Enough comparisons that ranking them takes well over half a second (about two: a signal sent
    as the command ends would meet the interpreter's shutdown, whose exit is the signal's, -2)."""
    rows = "".join(f"u{r % 3000},i{r % 40},i{(r + 1 + r // 40 % 39) % 40},{1 if r % 3 else -1}\n"
                   for r in range(600_000))
    p = tmp_path_factory.mktemp("big") / "big.csv"
    p.write_text("user,item_a,item_b,outcome\n" + rows)
    return p


@pytest.mark.parametrize("delay", [0.05, 0.2, 0.5])
def test_interrupt_at_any_time_is_clean(big, tmp_path, delay):
    proc = subprocess.Popen([sys.executable, "-c", READY, "rank", str(big), "--epsilon", "1", "--ledger",
                             str(tmp_path / "l.sqlite")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr.readline() == "ready\n"
    time.sleep(delay)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert "Traceback" not in err, err
    if proc.returncode != 0:  # it ended before the signal: that run proves nothing
        assert proc.returncode == 130 and "privrank: interrupted" in err, err
