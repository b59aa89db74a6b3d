"""docs/guide.md runs as written: every command and Python example prints what the guide shows.

Console blocks hold ``$ privrank ...`` lines, each followed by its output (standard output, then
standard error); ``$DATA`` is the data directory. Each ``python`` block is followed by a ``text``
block with what it prints. Ledger timestamps and the ledger's own path differ between runs and are
masked. Commands run in a fresh directory with a fresh ledger, in the order of the guide.
"""
import contextlib
import io
import os
import re
import shlex
from pathlib import Path

import pytest

from privrank.cli import main
from privrank.data import datasets

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"
BLOCK = re.compile(r"```(console|python|text)\n(.*?)```", re.S)
VOLATILE = [(re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+\+00:00|Z)"), "<time>"),
            (re.compile(r"^ledger: .*$", re.M), "ledger: <path>")]


def examples():
    """``(kind, code, expected output)`` in the guide's order."""
    blocks = BLOCK.findall(GUIDE.read_text(encoding="utf-8"))
    out = []
    for k, (kind, body) in enumerate(blocks):
        if kind == "console":
            parts = re.split(r"^\$ ", body, flags=re.M)[1:]
            out += [("console", p.split("\n", 1)[0], p.split("\n", 1)[1] if "\n" in p else "") for p in parts]
        elif kind == "python":
            assert blocks[k + 1][0] == "text", "every python block is followed by its output"
            out.append(("python", body, blocks[k + 1][1]))
    return out


def normalise(text):
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def run(kind, code, data, shipped):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        if kind == "python":
            exec(compile(code, "guide", "exec"), {})
        else:
            argv = shlex.split(code.replace("$DATA", str(data)).replace("src/privrank/datasets_shipped", shipped))
            assert argv[0] == "privrank"
            main(argv[1:])
    return out.getvalue() + err.getvalue()


def regenerate(outputs) -> str:
    """The guide with every example's output replaced by ``outputs`` (in the guide's order)."""
    text = GUIDE.read_text(encoding="utf-8")
    outputs = iter(outputs)
    pieces, last, pending = [], 0, None
    for match in BLOCK.finditer(text):
        kind, body = match.group(1), match.group(2)
        if kind == "console":
            cmds = [p.split("\n", 1)[0] for p in re.split(r"^\$ ", body, flags=re.M)[1:]]
            body = "".join(f"$ {c}\n" + (lambda o: o + "\n" if o else "")(next(outputs).strip()) for c in cmds)
        elif kind == "python":
            pending = next(outputs)
        elif pending is not None:
            body, pending = pending.strip() + "\n", None
        pieces += [text[last:match.start()], f"```{kind}\n{body}```"]
        last = match.end()
    return "".join(pieces) + text[last:]


@pytest.mark.slow
def test_guide_examples_run_as_written(tmp_path, monkeypatch):
    """``PRIVRANK_REGENERATE_DOCS=1`` rewrites the guide's outputs instead (check the diff before committing)."""
    data = datasets.data_dir()
    if data is None or not all((data / folder).is_dir() for folder in ("cems_university", "preflib_apa",
                                                                                 "immigration_attitudes")):
        pytest.skip("the guide's CEMS and APA examples need the data directory (../shared/data or PRIVRANK_DATA)")
    shipped = str(Path(datasets.__file__).resolve().parents[1] / "datasets_shipped")
    monkeypatch.chdir(tmp_path)
    cases = examples()
    assert len(cases) >= 10
    outputs = [run(kind, code, data, shipped).replace(str(data), "$DATA") for kind, code, _ in cases]
    if os.environ.get("PRIVRANK_REGENERATE_DOCS"):
        GUIDE.write_text(regenerate(outputs), encoding="utf-8")
        return
    for (kind, code, expected), got in zip(cases, outputs):
        assert normalise(got) == normalise(expected), code
