"""privrank runs on POSIX systems only (the package's classifiers say so): on a system without the
POSIX calls of the output layer and the data reader (Windows has no ``fcntl``, ``os.pread`` or
``os.pwrite``) the package still imports, ``--help`` still answers, and every command and every
output refuses with one clear error instead of a traceback. Simulated here by hiding ``fcntl``."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from privrank import files
from privrank.cli import main
from privrank.errors import InputError

SRC = Path(__file__).resolve().parents[1] / "src"

WITHOUT_FCNTL = textwrap.dedent("""
    import sys
    sys.modules["fcntl"] = None  # import fcntl raises ImportError, as on Windows
    import privrank.files
    from privrank.cli import main
    assert privrank.files.fcntl is None
    sys.exit(main(sys.argv[1:]))
""")


def run_without_fcntl(*argv, cwd):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", WITHOUT_FCNTL, *map(str, argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_without_fcntl_the_command_refuses_clearly(tmp_path):
    data = tmp_path / "votes.csv"
    data.write_text("item_a,item_b,outcome\nA,B,1\nB,C,1\n")
    done = run_without_fcntl("rank", data, "--epsilon", "1", "--output", tmp_path / "out.csv", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("privrank: error: privrank needs a POSIX system (Linux, macOS, or WSL on Windows)")
    assert "fcntl.flock" in done.stderr and "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["votes.csv"]  # no output, no ledger, no marker


def test_without_fcntl_help_still_answers(tmp_path):
    done = run_without_fcntl("--help", cwd=tmp_path)
    assert done.returncode == 0 and "usage: privrank" in done.stdout and not done.stderr


def test_an_output_refuses_before_it_locks(tmp_path, monkeypatch):
    monkeypatch.setattr(files, "fcntl", None)
    with pytest.raises(InputError, match=r"needs a POSIX system .*\(fcntl\.flock\)"):
        files.Output(tmp_path / "out.csv").reserve()
    assert not list(tmp_path.iterdir())


def test_the_command_names_every_missing_call(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(files, "fcntl", None)
    monkeypatch.delattr(os, "pread")
    monkeypatch.delattr(os, "pwrite")
    assert main(["ledger", "show", "--ledger", str(tmp_path / "ledger.db")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("privrank: error: privrank needs a POSIX system")
    assert "(fcntl.flock, os.pread, os.pwrite)" in err and not list(tmp_path.iterdir())


def test_this_system_has_them():
    files.require_posix()
