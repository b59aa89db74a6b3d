"""The documentation runs as written: README.md, docs/guide.md and every page of docs/tasks/.

A ``console`` block holds ``$ privrank ...`` lines, each followed by what it prints (standard
output, then standard error); a ``...`` line stands for any number of lines left out. A command
must exit 0, or 2 when what it shows holds a ``privrank: error:`` line, or the ``exit N`` its
comment names. A ``python`` block followed by a ``text`` block must print exactly that block, and
one followed by none must print nothing; a warning it raises is shown as a line
``Category: message`` after what it prints. Other blocks (``sh`` recipes, configuration files) are
not run. A document's examples run in order, its Python blocks in one namespace (as a reader
pasting them into one session), in a fresh directory holding the clone's ``src/`` and with a
fresh ledger. ``$DATA`` stands for the data directory (``../shared/data`` or ``$PRIVRANK_DATA``),
which a fresh clone does not have: a document that needs it, or whose Python example reads an
optional data set, is skipped with the loader's message. Ledger timestamps and the ledger's own
path differ between runs and are masked.

``PRIVRANK_REGENERATE_DOCS=1`` rewrites every shown output with what the example prints instead,
except the outputs shortened with ``...``, which are edited by hand (check the diff before
committing).
"""
import contextlib
import io
import os
import re
import shlex
import warnings
from pathlib import Path

import pytest

from privrank.cli import main
from privrank.data import datasets

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", ROOT / "docs" / "guide.md", *sorted((ROOT / "docs" / "tasks").glob("*.md"))]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\n?", re.S | re.M)
VOLATILE = [(re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+\+00:00|Z)"), "<time>"),
            (re.compile(r"^ledger: .*$", re.M), "ledger: <path>")]


def examples(path: Path) -> list[tuple]:
    """``(kind, code, shown, exit status)`` in the document's order: kind ``console`` (one command)
    or ``python``; ``shown`` is None for a Python block that must print nothing."""
    text = path.read_text(encoding="utf-8")
    blocks = list(BLOCK.finditer(text))
    out = []
    for k, match in enumerate(blocks):
        kind, body = match.group(1), match.group(2)
        if kind == "console":
            for part in re.split(r"^\$ ", body, flags=re.M)[1:]:
                command, _, shown = part.partition("\n")
                assert command.startswith("privrank "), f"{path.name}: a console block runs privrank only"
                status = re.search(r"exit (\d+)", command.partition("#")[2])
                status = int(status.group(1)) if status else 2 if "privrank: error:" in shown else 0
                out.append(("console", command, shown, status))
        elif kind == "python":
            nxt = blocks[k + 1] if k + 1 < len(blocks) else None
            follows = nxt is not None and nxt.group(1) == "text" and not text[match.end():nxt.start()].strip()
            out.append(("python", body, nxt.group(2) if follows else None, 0))
    return out


def normalise(text: str) -> str:
    for pattern, repl in VOLATILE:
        text = pattern.sub(repl, text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


def shows(got: str, shown: str) -> bool:
    """Whether ``got`` prints ``shown``, each ``...`` line of which stands for any lines."""
    pattern = "".join(r"(?:[^\n]*\n)*?" if line == "..." else re.escape(line) + r"\n"
                      for line in normalise(shown).splitlines())
    return re.fullmatch(pattern, normalise(got) + "\n" if got.strip() else "") is not None


def run(kind: str, code: str, namespace: dict, data) -> tuple[str, int]:
    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "python":
            exec(compile(code, "example", "exec"), namespace)
        else:
            argv = shlex.split(code.replace("$DATA", str(data)), comments=True)
            try:
                status = main(argv[1:])
            except SystemExit as exc:
                status = exc.code
    printed = out.getvalue() + err.getvalue() + "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)
    return (printed.replace(str(data), "$DATA") if data is not None else printed), status


def tidy(output: str) -> str:
    return "".join(line.rstrip() + "\n" for line in output.strip("\n").splitlines())


def elided(shown: str) -> bool:
    return "..." in shown.splitlines()


def regenerate(path: Path, outputs: list[str]) -> str:
    """``path``'s text with every shown output without a ``...`` line replaced by ``outputs`` (in
    the document's order)."""
    text = path.read_text(encoding="utf-8")
    outputs = iter(outputs)
    pieces, last, pending = [], 0, None
    for match in BLOCK.finditer(text):
        kind, body = match.group(1), match.group(2)
        if kind == "console":
            parts = [p.partition("\n") for p in re.split(r"^\$ ", body, flags=re.M)[1:]]
            body = "".join(f"$ {command}\n" + (shown if elided(shown) else tidy(output))
                           for (command, _, shown), output in zip(parts, outputs))
        elif kind == "python":
            pending = next(outputs)
        elif kind == "text" and pending is not None and not elided(body):
            body = tidy(pending)
        if kind != "python":
            pending = None
        pieces += [text[last:match.start()], f"```{kind}\n{body}```\n"]
        last = match.end()
    return "".join(pieces) + text[last:]


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_documents_show_only_shipped_data(path):
    """README and the task pages run in a fresh clone: no example reads the data directory by path
    (an optional data set is read through its ``privrank.data.datasets`` loader)."""
    if path.name == "guide.md":
        pytest.skip("the guide's CEMS, APA and immigration examples read the data directory")
    for kind, code, _, _ in examples(path):
        assert "$DATA" not in code and "shared/data" not in code, code


@pytest.mark.slow
@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_examples_run_as_written(path, tmp_path, monkeypatch):
    cases = examples(path)
    data = datasets.data_dir()
    needed = sorted({m for _, code, _, _ in cases for m in re.findall(r"\$DATA/([\w.-]+)", code)})
    missing = [folder for folder in needed if data is None or not (data / folder).is_dir()]
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)} in the data directory (../shared/data or PRIVRANK_DATA)")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "src").symlink_to(ROOT / "src")
    namespace, outputs = {}, []
    for kind, code, shown, want in cases:
        try:
            printed, status = run(kind, code, namespace, data)
        except datasets.DatasetNotFound as exc:
            pytest.skip(str(exc))
        outputs.append(printed)
        if os.environ.get("PRIVRANK_REGENERATE_DOCS"):
            continue
        assert status == want, (code, printed)
        assert shows(printed, shown or ""), (code, printed)
    if os.environ.get("PRIVRANK_REGENERATE_DOCS"):
        path.write_text(regenerate(path, outputs), encoding="utf-8")
