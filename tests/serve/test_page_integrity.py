"""The respondent page's Subresource Integrity, recomputed from the files (no browser needed).

Every script and stylesheet ``index.html`` loads carries ``integrity="sha384-..."``, the hash of the
file it names, and every module a pinned script imports is itself pinned (``<link
rel="modulepreload" integrity=...>``: the browser puts the checked module in its module map, and
the import uses it), so a changed script does not run. ``test_browser.py`` shows Chromium refusing
a tampered file. Changed a static file? The failure message gives the attribute to set.
"""
import re
import shutil

from privrank.serve.integrity import sri_hash, static_dir

LOADS = re.compile(r"<(script|link)\b([^>]*)>")
IMPORTS = re.compile(r"""\b(?:import|from)\s*\(?\s*['"]\./([^'"]+)['"]""")


def integrity_problems(directory) -> list[str]:
    """What is wrong with the integrity attributes of ``directory/index.html`` (empty: nothing)."""
    html = (directory / "index.html").read_text()
    problems, pinned = [], set()
    for tag, attrs in LOADS.findall(html):
        if tag == "link" and not re.search(r'\brel="(stylesheet|modulepreload)"', attrs):
            continue
        named = re.search(r'\b(?:src|href)="static/([^"]+)"', attrs)
        if named is None:
            problems.append(f"a <{tag}> that loads no file of the package: {attrs.strip()}")
            continue
        name = named.group(1)
        expected = sri_hash((directory / name).read_bytes())
        given = re.search(r'\bintegrity="([^"]*)"', attrs)
        if given is None or given.group(1) != expected:
            problems.append(f"{name}: its integrity attribute is not the file's hash (set integrity=\"{expected}\")")
        else:
            pinned.add(name)
    for name in sorted(n for n in pinned if n.endswith(".js")):
        for imported in IMPORTS.findall((directory / name).read_text()):
            if imported not in pinned:
                problems.append(f"{imported}, imported by {name}, is not pinned: add <link rel=\"modulepreload\" "
                                f"href=\"static/{imported}\" integrity=\"...\"> to index.html")
    return problems


def test_the_page_pins_every_script_it_runs():
    assert integrity_problems(static_dir()) == []
    html = (static_dir() / "index.html").read_text()
    for name in ("respondent.js", "randomizer.js", "preview.js", "style.css"):
        assert f'static/{name}" integrity="sha384-' in html


def test_a_changed_or_unpinned_script_is_caught(tmp_path):
    """Negative controls: a byte changed in either script, or the randomizer's preload removed."""
    for name in ("randomizer.js", "respondent.js"):
        copy = tmp_path / name.split(".")[0]
        shutil.copytree(static_dir(), copy)
        (copy / name).write_text((copy / name).read_text().replace("uniform()", "uniform() ", 1))
        problems = integrity_problems(copy)
        assert problems and problems[0].startswith(f"{name}: its integrity attribute"), problems
    copy = tmp_path / "unpinned"
    shutil.copytree(static_dir(), copy)
    html = (copy / "index.html").read_text()
    (copy / "index.html").write_text(re.sub(r'<link rel="modulepreload" href="static/randomizer.js"[^>]*>', "", html))
    assert integrity_problems(copy) == [
        'randomizer.js, imported by respondent.js, is not pinned: add <link rel="modulepreload" '
        'href="static/randomizer.js" integrity="..."> to index.html']
