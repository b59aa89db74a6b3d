"""The documentation site: every public name in the API reference once, with a summary line; the site
builds with ``mkdocs build --strict`` (as ``make docs`` does), with the reference, the command-line
reference written from the parsers, the executed notebook and PRIVACY.md in it."""
import collections
import html
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import privrank as pr
from privrank.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "reference"


def run_mkdocs(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=config.parent, env=env, capture_output=True, text=True, timeout=600)


def text_of(page: Path) -> str:
    """A built page's text, without its tags."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def test_every_public_name_is_in_the_reference_once():
    entries = [line.removeprefix("::: ").strip() for page in REFERENCE.glob("*.md")
               for line in page.read_text(encoding="utf-8").splitlines() if line.startswith("::: ")]
    assert collections.Counter(entries) == collections.Counter(f"privrank.{name}" for name in pr.__all__)


@pytest.mark.parametrize("name", pr.__all__)
def test_every_public_name_has_a_summary_line(name):
    doc = getattr(pr, name).__doc__  # its own: not inherited, nor a dataclass's generated signature
    assert doc and not doc.startswith(f"{name}("), f"{name} has no docstring"
    summary = inspect.cleandoc(doc).split("\n\n")[0]
    assert "\n" not in summary and summary.endswith("."), f"{name}: the summary is not one line: {summary!r}"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("docs") / "site"
    done = run_mkdocs(ROOT / "mkdocs.yml", site)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


@pytest.mark.slow
def test_the_reference_shows_each_signature_and_docstring(site):
    text = text_of(site / "reference" / "scores" / "index.html")
    assert "fit_btl(" in text and "max_iter: int = 200" in text
    assert pr.fit_btl.__doc__.splitlines()[0] in text
    assert 'id="privrank.fit_btl"' in (site / "reference" / "scores" / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_sphinx_roles_are_links(site):
    pages = list((site / "reference").glob("*/index.html"))
    assert not [page.parent.name for page in pages if re.search(r":(func|class|meth|mod|data|attr):", text_of(page))]
    scores = (site / "reference" / "scores" / "index.html").read_text(encoding="utf-8")
    assert 'href="../pairwise-local/#privrank.debiased_randomized_response"' in scores  # fit_btl's :func:


@pytest.mark.slow
def test_the_cli_reference_shows_every_command_with_its_options(site):
    text = text_of(site / "cli" / "index.html")
    for name, parser in build_parser(every=True).commands.items():
        assert f"usage: privrank {name}" in text, name
        assert parser.description is None or parser.description.split()[0] in text
        assert parser.epilog.splitlines()[-1].strip() in text, name  # its examples
        assert all(f"\n{group.title}:\n" in text for group in parser._action_groups if group._group_actions), name
    assert "--epsilon EPSILON" in text and "usage: privrank ledger show" in text
    assert "\nprivacy:\n" in text and "LLMFAO=src/privrank/datasets_shipped/llmfao_crowd.csv" in text


@pytest.mark.slow
def test_the_notebook_is_shown_executed(site):
    page = (site / "notebooks" / "private_leaderboards" / "index.html").read_text(encoding="utf-8")
    assert "<b>Guarantee:</b>" in page  # the fit's HTML representation, an output cell
    assert "data:image/png" in page  # the intervals' figure
    assert not list((ROOT / "docs" / "notebooks").glob("*.csv")), "the notebook's export is written elsewhere"


@pytest.mark.slow
def test_the_privacy_page_is_privacy_md(site):
    text = text_of(site / "privacy" / "index.html")
    headings = [line.lstrip("#").strip() for line in (ROOT / "PRIVACY.md").read_text(encoding="utf-8").splitlines()
                if line.startswith("#")]
    assert all(heading.replace("`", "") in text for heading in headings)


def test_a_parameter_the_signature_lacks_fails_the_build(tmp_path):
    """The reference's docstring options make griffe warn about a documented parameter the function
    does not take, and the strict build stops on it."""
    plugins = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["plugins"]
    options = next(p["mkdocstrings"] for p in plugins if "mkdocstrings" in p)["handlers"]["python"]
    options["options"].pop("extensions")
    options["paths"] = ["."]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Index\n\n::: sample.scale\n")
    (tmp_path / "sample.py").write_text('def scale(x, factor=2.0):\n    """Scale.\n\n    Parameters\n    ----------\n'
                                        '    x : float\n        A number.\n    factr : float\n        Typo.\n    """\n'
                                        '    return x * factor\n')
    config = {"site_name": "sample", "strict": True,
              "plugins": [{"mkdocstrings": {"default_handler": "python", "handlers": {"python": options}}}]}
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    done = run_mkdocs(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0 and "Parameter 'factr' does not appear in the function signature" in done.stderr


def test_the_guarantee_the_guide_explains_is_the_one_its_example_prints():
    """Section 3 of the guide quotes a guarantee (an indented block): it must be, up to line breaks,
    part of what one of the guide's commands prints (shown in its console blocks, which
    tests/test_doc_examples.py checks against the commands)."""
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide.split("## 3. Reading the guarantee", 1)[1].split("\n## ", 1)[0]
    quoted = " ".join(line.strip() for line in section.splitlines() if line.startswith("    "))
    outputs = " ".join(" ".join(block.split()) for block in re.findall(r"```console\n(.*?)```", guide, re.S))
    assert quoted and " ".join(quoted.split()) in outputs


#: a Markdown link or image: its target
MARKDOWN_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def test_readme_links_resolve_and_become_absolute_once_there_is_an_address():
    """README.md is also the package's long description (PyPI shows it), where a relative link
    resolves against PyPI's own pages and breaks. The project names no public address yet, so its
    links are relative and must each name a file of the repository (they work in a clone and on a
    forge); once pyproject.toml gives a Documentation or Source address, every link must be absolute."""
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"].get("urls", {})
    links = MARKDOWN_LINK.findall((ROOT / "README.md").read_text(encoding="utf-8"))
    assert links
    relative = [link for link in links if not re.match(r"[a-z][a-z0-9+.-]*:", link)]
    if {"Documentation", "Source"} & set(urls):
        assert not relative, f"README.md links that PyPI cannot follow: {relative}"
    broken = [link for link in relative if not (ROOT / link.split("#")[0]).is_file()]
    assert not broken, f"README.md links to files that do not exist: {broken}"


def load_hook(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"docs_hook_{name}", ROOT / "docs" / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_summary_lists_every_public_name_once_with_its_summary_line():
    hook = load_hook("api_summary")
    nav = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=_IgnoreTags)["nav"]
    page = hook.summary(ROOT / "docs", nav)
    rows = [line for line in page.splitlines() if line.startswith("| [`")]
    names = [re.match(r"\| \[`([^`]+)`\]", row).group(1) for row in rows]
    assert collections.Counter(names) == collections.Counter(pr.__all__)
    for name, row in zip(names, rows):
        first = inspect.cleandoc(getattr(pr, name).__doc__).split("\n\n")[0]
        assert plain(first) in plain(row.split(" | ", 2)[2]), row


def plain(text: str) -> str:
    """A docstring line or a Markdown table cell without its markup: roles, links, code marks."""
    text = re.sub(r":\w+:`~[\w.]*\.", "`", text)  # :func:`~privrank.fit_btl` shows fit_btl
    text = re.sub(r"\]\([^)]*\)|:\w+:", "", text).replace("\\|", "|")
    return " ".join(re.sub(r"[`\[\]]", "", text).split())


class _IgnoreTags(yaml.SafeLoader):
    """mkdocs.yml's !!python/name tags read as None (only the nav is wanted here)."""


_IgnoreTags.add_multi_constructor("", lambda loader, suffix, node: None)


def test_the_citing_page_names_this_version():
    import tomllib

    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    assert f"version = {{{version}}}" in (ROOT / "docs" / "citing.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_site_has_the_api_summary_install_faq_changelog_and_citing_pages(site):
    summary = (site / "reference" / "summary" / "index.html").read_text(encoding="utf-8")
    assert all(f'href="../scores/#privrank.{name}"' in summary for name in ("fit_btl", "BTLFit"))
    assert all(f"<code>{name}</code>" in summary for name in pr.__all__)
    assert "WSL" in text_of(site / "install" / "index.html") and "SEEDED RUN" in text_of(site / "faq" / "index.html")
    changelog = text_of(site / "changelog" / "index.html")
    assert "[0.1.0] - Unreleased" in changelog and "Known limitations" in changelog
    citing = text_of(site / "citing" / "index.html")
    assert "cff-version: 1.2.0" in citing and "Rate-Optimal Rank Aggregation with Private Pairwise Rankings" in citing


@pytest.mark.slow
def test_the_gallery_shows_each_script_with_its_code_and_figure(site):
    hook = load_hook("gallery")
    scripts = sorted((ROOT / "docs" / "gallery").glob("*.py"))
    assert 4 <= len(scripts) <= 6
    page = (site / "gallery" / "index.html").read_text(encoding="utf-8")
    text = text_of(site / "gallery" / "index.html")
    assert page.count("<img ") == len(scripts) + 1  # and the utility frontier's
    assert 'src="../frontier.png"' in page and ">Gallery<" in page  # the navigation names it
    for script in scripts:
        title, paragraph, code = hook.split(script.read_text(encoding="utf-8"))
        assert f'src="{script.stem}.png"' in page, script.name
        assert (site / "gallery" / f"{script.stem}.png").read_bytes().startswith(b"\x89PNG"), script.name
        assert title in text and paragraph.replace("`", "") in " ".join(text.split()), script.name
        assert all(line in text for line in code.splitlines()), script.name
        assert f'href="{script.name}"' in page and (site / "gallery" / script.name).is_file()  # for download
    assert not list((ROOT / "docs" / "gallery").glob("*.png")), "the figures are made elsewhere"


def test_a_gallery_script_that_fails_or_saves_no_figure_stops_the_build(tmp_path):
    from mkdocs.exceptions import PluginError

    hook = load_hook("gallery")
    broken = tmp_path / "broken.py"
    broken.write_text('"""Broken.\n\nIt raises.\n"""\nraise SystemExit("no data")\n')
    with pytest.raises(PluginError, match="broken.py failed"):
        hook.run(broken, tmp_path, ROOT / "src")
    silent = tmp_path / "silent.py"
    silent.write_text('"""Silent.\n\nIt saves nothing.\n"""\nimport matplotlib\nassert matplotlib.get_backend().lower() == "agg"\n')
    with pytest.raises(PluginError, match="saved no figure.png"):
        hook.run(silent, tmp_path, ROOT / "src")
    assert hook.split(broken.read_text()) == ("Broken", "It raises.", 'raise SystemExit("no data")')
