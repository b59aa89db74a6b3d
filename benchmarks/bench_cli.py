"""CPU time of the ``privrank`` command on small inputs: what a user waits for, start-up included.

Each command runs as its own process (``python -m privrank ...``, standard output and error
discarded), as a user runs it; its CPU time is the process's user plus system time
(``os.wait4``), its memory the process's peak resident set. The commands:

* ``--version`` and ``--help``: the parser alone;
* ``rank``: the shipped LLMFAO crowd comparisons (8,931 comparisons of 59 models), debiased
  randomized response at epsilon 1;
* ``top-k``: the same file, the top 5 by debiased randomized response;
* ``aggregate``: a PrefLib ``.soc`` file of 1,000 rankings of 8 items (drawn once, seed 0), with
  the default method at epsilon 1.

The commands run as an installed package runs them, from compiled bytecode: each runs once
untimed with a bytecode cache in a temporary folder (``PYTHONPYCACHEPREFIX``; an environment that
forbids writing bytecode would otherwise compile every module on every run). Then every command
runs once per round, in an order rotated from round to round (``spread.interleaved``); each row
gives ``median (min-max)`` over the rounds. The load is printed before and after. To time another
tree's code, set ``PYTHONPATH`` to its ``src``.

    python benchmarks/bench_cli.py              # 7 rounds
    python benchmarks/bench_cli.py --rounds 15
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import spread

LLMFAO = str(Path(__file__).resolve().parents[1] / "src" / "privrank" / "datasets_shipped" / "llmfao_crowd.csv")


def write_soc(path: Path, ballots: int = 1000, items: int = 8) -> None:
    """A PrefLib ``.soc`` file of ``ballots`` rankings of ``items`` items, drawn with seed 0."""
    rng = np.random.default_rng(0)
    orders = np.argsort(-rng.normal(np.linspace(1.0, -1.0, items), 1.0, (ballots, items)), axis=1) + 1
    lines = [f"# NUMBER ALTERNATIVES: {items}"] + [f"# ALTERNATIVE NAME {k}: item{k}" for k in range(1, items + 1)]
    lines += ["1: " + ",".join(map(str, order)) for order in orders]
    path.write_text("\n".join(lines) + "\n")


def commands(soc: str) -> dict[str, list[str]]:
    return {
        "--version": ["--version"],
        "--help": ["--help"],
        "rank": ["rank", LLMFAO, "--epsilon", "1", "--seed", "0"],
        "top-k": ["top-k", LLMFAO, "--k", "5", "--mechanism", "debiased-rr", "--epsilon", "1", "--seed", "0"],
        "aggregate": ["aggregate", soc, "--epsilon", "1", "--seed", "0"],
    }


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """``(cpu seconds, peak MB)`` of ``python -m privrank argv``; a failed command stops the benchmark."""
    with subprocess.Popen([sys.executable, "-m", "privrank", *argv], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, env=env) as proc:
        assert proc.stderr is not None
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"privrank {' '.join(argv)} failed: {err.decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}; {spread.load()}")
    with tempfile.TemporaryDirectory() as tmp:
        soc = Path(tmp) / "ballots.soc"
        write_soc(soc)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        for argv in commands(str(soc)).values():  # untimed: fills the bytecode cache
            run(argv, env)
        cpu: dict[str, list[float]] = {name: [] for name in commands(str(soc))}
        peak: dict[str, list[float]] = {name: [] for name in cpu}

        def contender(name: str, argv: list[str]):
            def go() -> None:
                seconds, mb = run(argv, env)
                cpu[name].append(seconds)
                peak[name].append(mb)
            return go

        wall, _ = spread.interleaved({name: contender(name, argv) for name, argv in commands(str(soc)).items()},
                                     rounds=args.rounds)
    print(f"{'command':<11} {'CPU s (user+sys)':<22} {'wall s':<22} peak MB")
    for name in cpu:
        print(f"{name:<11} {spread.spread(cpu[name], '{:.3f}'):<22} {spread.spread(wall[name], '{:.3f}'):<22} "
              f"{statistics.median(peak[name]):.0f}")
    print(f"{args.rounds} interleaved rounds; {spread.load()}")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.0f} s)")
