"""What a package people install and trust ships beside its code: metadata that says what it runs
on and what it offers (pyproject.toml), a citation file that names this version (CITATION.cff), and
a changelog with an entry for it (CHANGELOG.md)."""
import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
#: extras of tools for working on privrank, not for running it
TOOL_EXTRAS = {"bench", "docs", "dev"}


def test_the_all_extra_is_every_run_time_extra():
    extras = PROJECT["optional-dependencies"]
    runtime = set(extras) - TOOL_EXTRAS - {"all"}
    assert {"pandas", "plot", "serve", "postgres", "dask"} <= runtime
    (everything,) = extras["all"]
    named = re.fullmatch(r"privrank\[([a-z,]+)\]", everything.replace(" ", ""))
    assert named and set(named.group(1).split(",")) == runtime


def test_the_classifiers_say_posix_and_the_tested_python():
    classifiers = PROJECT["classifiers"]
    assert "Operating System :: POSIX" in classifiers
    assert not [c for c in classifiers if c.startswith("Operating System :: Microsoft")]
    assert not [c for c in classifiers if c.startswith("License ::")]  # the SPDX expression says it
    minimum = PROJECT["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {minimum}" in classifiers


def test_the_license_expression_and_its_files():
    assert "MIT" in PROJECT["license"].split() and (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert all((ROOT / name).is_file() for name in PROJECT["license-files"])


def test_citation_cff_parses_and_names_this_version():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["version"] == PROJECT["version"]  # a string: 0.1.0 is not read as a number
    assert cff["license"] in PROJECT["license"].split()
    assert cff["title"] and cff["message"] and cff["abstract"] and cff["authors"]
    titles = {ref["title"] for ref in cff["references"]}
    assert len(titles) == 4  # the four papers privrank implements
    for ref in cff["references"]:
        assert ref["type"] and ref["authors"] and isinstance(ref["year"], int)
        assert all(a.get("family-names") and a.get("given-names") for a in ref["authors"])


def test_the_changelog_has_an_entry_for_this_version():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, flags=re.M)
    assert versions and versions[0] in (PROJECT["version"], "Unreleased"), versions
    assert PROJECT["version"] in versions
