"""The library's messages speak to a Python user: an error or warning that names a command-line
option also names the Python argument (``name=... (CLI: --option)``).

The command-line modules (``privrank.cli``) and the survey server (``privrank.serve``, an operator's
command) speak of options only; everything else is called from Python as well.
"""
import ast
import re
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "privrank"
OPTION = re.compile(r"(?<![\w-])--[a-z]")
COMMAND_LINE_ONLY = ("cli/", "serve/")


def option_only_messages(code: str):
    """``(line, text)`` of each error or warning raised in ``code`` that names an option without ``CLI:``."""
    for node in ast.walk(ast.parse(code)):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", ""))
        if not (name.endswith(("Error", "Warning", "Costly")) or name == "warn"):
            continue
        text = "".join(n.value for arg in node.args for n in ast.walk(arg)
                       if isinstance(n, ast.Constant) and isinstance(n.value, str))
        if OPTION.search(text) and "CLI:" not in text:
            yield node.lineno, text


def test_the_check_finds_a_message_that_names_only_an_option():
    bad = 'raise InputError("the file is too big; use --engine stream")'
    good = 'raise InputError("use the stream engine (engine=\'stream\'; CLI: --engine stream)")'
    assert list(option_only_messages(bad)) and not list(option_only_messages(good))


@pytest.mark.parametrize("path", sorted(p for p in SOURCE.rglob("*.py")
                                        if not p.relative_to(SOURCE).as_posix().startswith(COMMAND_LINE_ONLY)),
                         ids=lambda p: p.relative_to(SOURCE).as_posix())
def test_library_messages_name_the_python_argument_beside_an_option(path):
    assert list(option_only_messages(path.read_text(encoding="utf-8"))) == []
