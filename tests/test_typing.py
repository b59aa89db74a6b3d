"""privrank is a typed package (PEP 561): it ships ``py.typed``, every public name shows a type
checker its types, and mypy, run with the configuration in pyproject.toml, finds no error."""
import ast
import importlib.util
import inspect
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import privrank

ROOT = Path(__file__).resolve().parents[1]
SRC = Path(privrank.__file__).parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def _callables() -> list[str]:
    """The public names a caller calls: functions and classes, not the error and warning classes
    (whose constructors are Python's)."""
    return [n for n in privrank.__all__ if callable(getattr(privrank, n))
            and not (inspect.isclass(getattr(privrank, n)) and issubclass(getattr(privrank, n), BaseException))]


def unannotated(obj) -> list[str]:
    """The parameters of ``obj`` without an annotation, and ``return`` for a function without one."""
    sig = inspect.signature(obj)
    missing = [p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty]
    if not inspect.isclass(obj) and sig.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


@pytest.mark.parametrize("name", _callables())
def test_every_public_callable_is_annotated(name):
    assert unannotated(getattr(privrank, name)) == []


def test_the_check_sees_a_missing_annotation():
    def half(x: float, y) -> float:
        return x / 2

    def whole(x: int):
        return x

    assert unannotated(half) == ["y"] and unannotated(whole) == ["return"]


def _type_checking_imports() -> dict[str, str]:
    """Name -> module (under privrank) of the imports under ``if TYPE_CHECKING:`` in privrank/__init__."""
    tree = ast.parse((SRC / "__init__.py").read_text(encoding="utf-8"))
    blocks = [node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"]
    return {alias.asname or alias.name: node.module for block in blocks for node in block.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_type_checkers_see_every_lazily_loaded_name():
    """The names privrank loads on first use (PEP 562), which no type checker follows, are imported for
    type checkers too, from the same modules."""
    assert _type_checking_imports() == privrank._EXPORTS
    assert set(privrank._EXPORTS) == set(privrank.__all__)


def test_the_package_ships_its_py_typed_marker():
    assert (SRC / "py.typed").is_file()
    assert "py.typed" in PYPROJECT["tool"]["setuptools"]["package-data"]["privrank"]


@pytest.mark.slow  # about a minute without mypy's cache (CI's fresh clone)
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                    reason="mypy is not installed (pip install -e '.[dev]')")
def test_mypy_finds_no_error():
    assert PYPROJECT["tool"]["mypy"]["files"] == ["src/privrank"]
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_release_declares_the_arguments_that_pay_for_it():
    """A type checker sees a release's own signature, so a release declares ``ledger=``,
    ``accountant=`` and ``new_data=`` itself; one that does not is refused where it is defined."""
    from privrank.release import private_release

    def undeclared(data, *, epsilon: float, rng=None) -> None:
        """A release without the arguments."""

    with pytest.raises(TypeError, match="ledger, accountant, new_data"):
        private_release(undeclared)
    assert {"ledger", "accountant", "new_data"} <= set(inspect.signature(privrank.noisy_copeland).parameters)
