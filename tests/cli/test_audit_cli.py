"""``privrank audit``: listing, exit codes, the last line, controls and usage errors."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from privrank.audit import mechanisms
from privrank.cli import main

LAST = re.compile(r"^epsilon_lower_bound=[0-9.e+\-inf]+$")


def test_list_prints_one_mechanism_per_line(capsys):
    assert main(["audit", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [ln.split("\t")[0] for ln in lines] == list(mechanisms())
    assert all(len(ln.split("\t")) == 2 and ln.split("\t")[1] for ln in lines)


@pytest.mark.parametrize("argv,code", [
    (["randomized-response", "--epsilon", "1"], 0),
    (["randomized-response", "--epsilon", "1", "--control"], 1),
    (["randomized-response", "--epsilon", "1", "--noise-scale-factor", "0.5"], 1),
    # twice the noise: the reports drawn do not follow the law the mechanism states (a bug, caught)
    (["randomized-response", "--epsilon", "1", "--noise-scale-factor", "2"], 1),
    (["local-laplace", "--epsilon", "1", "--seed", "3"], 0),
    (["local-laplace", "--epsilon", "1", "--seed", "3", "--control"], 1),
    (["discrete-gaussian-counts", "--epsilon", "1"], 0),
    (["discrete-gaussian-counts", "--epsilon", "1", "--control", "zcdp-without-factor-2"], 1),
    (["dp-ptas/buckets/laplace-release", "--epsilon", "1", "--control", "paper-scale"], 1),
])
def test_exit_codes_and_last_line(argv, code, capsys):
    assert main(["audit", *argv]) == code
    out = capsys.readouterr().out.splitlines()
    assert LAST.match(out[-1]), out[-1]
    assert any(ln.startswith("verdict:") for ln in out)


@pytest.mark.parametrize("argv", [
    [],                                                   # no name
    ["randomized-response"],                              # no epsilon
    ["randomized-response", "--epsilon", "0"],
    ["randomized-response", "--epsilon", "nan"],
    ["randomized-response", "--epsilon", "1", "--delta", "1e-6"],   # pure mechanism
    ["footrule/gaussian", "--epsilon", "1", "--delta", "1"],
    ["footrule/gaussian", "--epsilon", "1", "--delta", "0"],
    ["nope", "--epsilon", "1"],
    ["duchi-l2", "--epsilon", "1", "--trials", "5"],
    ["duchi-l2", "--epsilon", "1", "--control", "no-such-control"],
    ["duchi-l2", "--list"],
])
def test_usage_errors_exit_2(argv, capsys):
    assert main(["audit", *argv]) == 2
    assert "privrank: error:" in capsys.readouterr().err


def test_argparse_usage_errors_exit_2():
    with pytest.raises(SystemExit) as exc:
        main(["audit", "duchi-l2", "--epsilon", "1", "--control", "--noise-scale-factor", "0.5"])
    assert exc.value.code == 2


def test_console_script_runs_an_approximate_audit_with_its_default_delta():
    script = Path(sys.executable).parent / "privrank"
    proc = subprocess.run([str(script), "audit", "discrete-gaussian-counts", "--epsilon", "1"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "(1, 1e-06)-DP" in proc.stdout
    assert LAST.match(proc.stdout.splitlines()[-1])
