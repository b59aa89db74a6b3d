"""mkdocs hook: the gallery (gallery.md), figures made from the scripts of docs/gallery/ when the site is built.

Each ``docs/gallery/*.py`` is a short, self-contained example: its module docstring is its title
(first line) and its paragraph (the rest, Markdown); its code ends by saving its figure as ``figure.png``
in the working directory. At build time each script runs in a fresh scratch directory of its
own, in a subprocess with matplotlib's Agg backend (``MPLBACKEND=Agg``, for that subprocess
only) and this checkout's ``src`` first on ``PYTHONPATH``; the figure it saved becomes
``gallery/NAME.png`` in the site, and the page shows, per script, the title, the paragraph, the
code (without the docstring) and the figure. A script that fails, or saves no figure, stops the
build. The scripts themselves are copied to the site as they are, for download.
"""
import ast
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

PAGE = "gallery.md"
SCRIPTS = "gallery"  # under docs/
FIGURE = "figure.png"  # the name each script saves its figure under, in its working directory
TIMEOUT = 300

log = logging.getLogger("mkdocs.plugins.gallery")

INTRO = """# Gallery

Short examples on the data that ship with privrank, each a script whose figure was made when this
site was built (the scripts are in `docs/gallery/`; each saves its figure as `figure.png` in the
directory it runs in). Every release is seeded (`rng=0`) so that the figures are reproducible: a
seeded release is a demonstration, not a private release.
"""

FRONTIER = """## The utility frontier

How close each private method comes to the truth, against epsilon, on simulated and real data
(LLMFAO, NFL 2019, sushi): measured by `benchmarks/bench_utility.py`, not remade at build time. The
[utility frontier](frontier.md) page has the numbers and how they were measured.

![The utility frontier](frontier.png)
"""


def split(source: str) -> tuple[str, str, str]:
    """``(title, paragraph, code)`` of a script: its docstring's first line, the rest, the code after it."""
    module = ast.parse(source)
    doc = ast.get_docstring(module)
    if not doc:
        raise PluginError("a gallery script needs a module docstring (its title and paragraph)")
    title, _, paragraph = doc.partition("\n")
    end = module.body[0].end_lineno
    code = "\n".join(source.splitlines()[end:]).strip("\n")
    return title.strip().rstrip("."), " ".join(paragraph.split()), code


def run(script: Path, workdir: Path, src: Path) -> bytes:
    """The figure ``script`` saves, run in ``workdir``; a failure is a PluginError."""
    env = {**os.environ, "MPLBACKEND": "Agg",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(src), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, str(script)], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise PluginError(f"gallery script {script.name} ran for more than {TIMEOUT} s") from None
    if done.returncode != 0:
        raise PluginError(f"gallery script {script.name} failed (exit {done.returncode}):\n{done.stderr}")
    if done.stderr.strip():
        log.info("gallery script %s wrote to stderr:\n%s", script.name, done.stderr)
    figure = workdir / FIGURE
    if not figure.is_file():
        raise PluginError(f"gallery script {script.name} saved no {FIGURE}")
    log.info("gallery script %s: %.1f s", script.name, time.perf_counter() - start)
    return figure.read_bytes()


def page(entries: list[tuple[str, str, str, str]]) -> str:
    parts = [INTRO]
    for name, title, paragraph, code in entries:
        parts += [f"## {title}\n", paragraph + "\n",
                  f"```python title=\"{name}.py\"\n{code}\n```\n",
                  f"![{title}]({SCRIPTS}/{name}.png)\n",
                  f"[Download `{name}.py`]({SCRIPTS}/{name}.py)\n"]
    parts.append(FRONTIER)
    return "\n".join(parts)


def on_files(files, config):
    docs = Path(config.docs_dir)
    src = Path(config.config_file_path).resolve().parent / "src"
    scripts = sorted((docs / SCRIPTS).glob("*.py"))
    if not scripts:
        raise PluginError(f"no gallery scripts in {docs / SCRIPTS}")
    entries = []
    with tempfile.TemporaryDirectory(prefix="privrank-gallery-") as scratch:
        for script in scripts:
            entries.append((script.stem, *split(script.read_text(encoding="utf-8"))))
            workdir = Path(scratch) / script.stem
            workdir.mkdir()
            png = run(script, workdir, src)
            files.append(File.generated(config, f"{SCRIPTS}/{script.stem}.png", content=png))
    files.append(File.generated(config, PAGE, content=page(entries)))
    return files
