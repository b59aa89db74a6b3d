"""Every public name shows how it is used: an Examples section that pytest runs as a doctest."""
import doctest
import tomllib
from pathlib import Path

import pytest

import privrank

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


@pytest.mark.parametrize("name", privrank.__all__)
def test_every_public_name_has_a_running_example(name):
    obj = getattr(privrank, name)
    doc = obj.__doc__ or ""
    assert "\n    Examples\n    --------\n" in doc, f"{name}'s docstring has no Examples section"
    examples = doctest.DocTestParser().get_examples(doc)
    assert examples, f"{name}'s Examples section has no '>>> ' example"


def test_the_examples_run_with_the_tests():
    options = tomllib.loads(PYPROJECT.read_text())["tool"]["pytest"]["ini_options"]
    assert "--doctest-modules" in options["addopts"].split()
    assert "src/privrank" in options["testpaths"]
