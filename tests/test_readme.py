"""The README runs as written: every fenced Python block and every ``$ privrank ...`` line.

A Python block followed by "prints" and a block must print exactly that block; the blocks run in
order in one namespace, as a reader pasting them into one session would. A ``$ privrank`` line
must exit 0 (or the ``exit N`` its comment names) and print every line shown under it (a ``...``
line stands for lines left out). Indented recipes (installing, starting a Dask cluster) are not
run. The README's paths are relative to a clone with ``shared/`` beside it; the examples run in a
fresh directory laid out that way, with small ``ballots.parquet`` and ``big.parquet`` files for
the cluster examples, whose scheduler address becomes Dask's local threads.
"""
import contextlib
import io
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

from privrank.cli import main
from privrank.data import datasets

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
SCHEDULER = 'scheduler="tcp://HOST:8786"'


def examples():
    """``(kind, code, expected)`` in the README's order: kind ``python`` (expected output or None)
    or ``shell`` (one command, its exit code and the lines it must print)."""
    text = README.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    out, skip = [], set()
    for k, match in enumerate(blocks):
        kind, body = match.group(1), match.group(2)
        if k in skip:
            continue
        if kind == "python":
            follows = text[match.end():blocks[k + 1].start()] if k + 1 < len(blocks) else ""
            expected = None
            if follows.strip().endswith("prints"):
                expected, skip = blocks[k + 1].group(2), skip | {k + 1}
            out.append(("python", body, expected))
        elif kind == "" and body.startswith("$ "):
            for part in re.split(r"^\$ ", body, flags=re.M)[1:]:
                command, _, shown = part.partition("\n")
                words = shlex.split(command, comments=True)
                code = re.search(r"exit (\d+)", command.partition("#")[2])
                out.append(("shell", words, (int(code.group(1)) if code else 0, shown)))
    return out


def _layout(tmp_path) -> Path:
    data = datasets.data_dir()
    if data is None or not (data / "preflib_sushi").is_dir() or not (data / "cems_university").is_dir():
        pytest.skip("the README's examples need the data directory (../shared/data or PRIVRANK_DATA)")
    work = tmp_path / "privrank"
    work.mkdir()
    (work / "src").symlink_to(ROOT / "src")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(data.resolve())
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    orders = np.array([rng.permutation(5) for _ in range(300)])
    pq.write_table(pa.table({f"rank{k + 1}": [f"item{x}" for x in orders[:, k]] for k in range(5)}),
                   work / "ballots.parquet")
    a = rng.integers(0, 12, 3000)
    b = (a + rng.integers(1, 12, 3000)) % 12
    pq.write_table(pa.table({"user": rng.integers(0, 200, 3000), "item_a": [f"t{x}" for x in a],
                             "item_b": [f"t{x}" for x in b],
                             "outcome": np.where(a < b, 1, -1)}), work / "big.parquet")
    return work


@pytest.mark.slow
def test_the_readme_runs_as_written(tmp_path, monkeypatch):
    monkeypatch.chdir(_layout(tmp_path))
    namespace = {}
    ran = 0
    for kind, code, expected in examples():
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            if kind == "python":
                exec(compile(code.replace(SCHEDULER, "scheduler=None"), "README", "exec"), namespace)
            else:
                assert code[0] == "privrank", code
                status = main(code[1:])
        printed = out.getvalue() + err.getvalue()
        if kind == "python" and expected is not None:
            assert _lines(printed) == _lines(expected), code
        elif kind == "shell":
            want, shown = expected
            assert status == want, (code, printed)
            lines = _lines(printed)
            missing = [line for line in _lines(shown) if line != "..." and line not in lines]
            assert not missing, (code, missing)
        ran += 1
    assert ran >= 15


def _lines(text) -> list[str]:
    return [line.rstrip() for line in text.strip().splitlines()]
