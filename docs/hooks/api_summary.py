"""mkdocs hook: the API summary (reference/summary.md), written at build time from the package: every
name of ``privrank.__all__`` in one table, with its kind and the first line of its docstring, linked
to its entry in the API reference. Written from ``privrank`` itself, it cannot go stale; a public
name that no reference page shows is a warning, which the strict build turns into an error."""
import inspect
import logging
import re
from pathlib import Path

from mkdocs.structure.files import File

import privrank

PAGE = "reference/summary.md"
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj):`(?P<text>[^`]+)`")
LITERAL = re.compile(r"``([^`]+)``")

log = logging.getLogger("mkdocs.plugins.api_summary")


def _reference_pages(nav) -> list[str]:
    """The pages under reference/ that the navigation lists, in its order."""
    if isinstance(nav, str):
        return [nav] if nav.startswith("reference/") and nav != PAGE else []
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _reference_pages(value)]
    if isinstance(nav, list):
        return [page for item in nav for page in _reference_pages(item)]
    return []


def _entries(docs_dir: Path, nav) -> list[tuple[str, str, list[str]]]:
    """``(page, title, names)`` of every reference page: the names its ``::: privrank.NAME`` lines show."""
    entries = []
    for page in _reference_pages(nav):
        lines = (Path(docs_dir) / page).read_text(encoding="utf-8").splitlines()
        title = next((line[2:].strip() for line in lines if line.startswith("# ")), page)
        names = [line.removeprefix("::: privrank.").strip() for line in lines if line.startswith("::: privrank.")]
        entries.append((page, title, names))
    return entries


def _kind(obj) -> str:
    if inspect.isclass(obj):
        if issubclass(obj, Warning):
            return "warning"
        return "exception" if issubclass(obj, BaseException) else "class"
    return "function" if callable(obj) else "object"


def _first_line(obj) -> str:
    """The summary line of ``obj``'s own docstring (its first paragraph, one line; tests/test_docs.py
    checks that every public name has one)."""
    return " ".join(inspect.cleandoc(obj.__doc__ or "").split("\n\n")[0].split())


def _markdown(text: str, where: dict[str, str]) -> str:
    """A docstring line as Markdown inside a table cell: Sphinx roles become links to the names the
    reference shows (else code), reST literals code, and pipes are escaped."""
    def role(match):
        text = match["text"]
        title, _, target = text.partition(" <")
        target = target.rstrip(">") if target else title.lstrip("~")
        if not text.partition(" <")[2]:
            title = target.rsplit(".", 1)[-1] if title.startswith("~") else target
        name = target.rsplit(".", 1)[-1]
        return f"[`{title}`]({where[name]}#privrank.{name})" if name in where else f"`{title}`"

    return LITERAL.sub(r"`\1`", ROLE.sub(role, text)).replace("|", r"\|")


def summary(docs_dir, nav) -> str:
    """The page: one table per reference page, in the order of the navigation."""
    entries = _entries(Path(docs_dir), nav)
    where = {name: Path(page).name for page, _, names in entries for name in names}
    parts = ["# API summary\n",
             "Every public name of `privrank` (`import privrank as pr; pr.NAME`), with the first line of its "
             "docstring; each links to its full entry in the reference. This page is written from "
             "`privrank.__all__` when the site is built.\n"]
    for page, title, names in entries:
        public = [name for name in names if name in privrank.__all__]
        if not public:
            continue
        parts.append(f"## [{title}]({Path(page).name})\n\n| name | kind | summary |\n|---|---|---|")
        for name in public:
            obj = getattr(privrank, name)
            parts.append(f"| [`{name}`]({where[name]}#privrank.{name}) | {_kind(obj)} | "
                         f"{_markdown(_first_line(obj), where)} |")
        parts.append("")
    missing = [name for name in privrank.__all__ if name not in where]
    if missing:
        log.warning("public names that no reference page shows: %s", ", ".join(missing))
    return "\n".join(parts)


def on_files(files, config):
    files.append(File.generated(config, PAGE, content=summary(config.docs_dir, config.nav)))
    return files
