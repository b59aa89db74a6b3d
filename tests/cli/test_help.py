"""The help of every command (:class:`privrank.cli.arguments.HelpFormatter`): its options in groups, lines
that fit the terminal, and examples that run as they are written."""
import argparse
import contextlib
import io
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from privrank.cli import build_parser, main
from privrank.cli.arguments import SHIPPED_LLMFAO

ROOT = Path(__file__).resolve().parents[2]
#: commands whose examples are checked by their parser only: they serve until stopped, or run for minutes
PARSED_ONLY = ("serve", "reproduce")


def commands(parser=None, name="privrank"):
    """``(name, parser)`` of every command and sub-command."""
    for action in (parser or build_parser(every=True))._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield f"{name} {sub}", child
                yield from commands(child, f"{name} {sub}")


COMMANDS = dict(commands())


def help_text(parser, columns=80):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLUMNS", str(columns))
        return parser.format_help()


def example_lines(parser):
    """The command lines of the examples of ``parser``'s help."""
    epilog = parser.epilog or ""
    assert epilog.startswith("examples"), parser.prog
    return [line.strip() for line in epilog.splitlines()[1:]]


@pytest.mark.parametrize("name", COMMANDS)
def test_every_command_has_examples_and_groups_its_options(name):
    parser = COMMANDS[name]
    assert 2 <= sum(line.startswith("privrank ") for line in example_lines(parser)) <= 4, name
    options = [a for a in parser._actions if a.option_strings and a.dest not in ("help", "quiet") and not a.required]
    grouped = {id(a) for g in parser._action_groups if g.title not in ("options", "positional arguments")
               for a in g._group_actions}
    if len(options) > 3:  # a command of a few options has nothing to group
        assert all(id(a) in grouped for a in options), [a.dest for a in options if id(a) not in grouped]


@pytest.mark.parametrize("name", COMMANDS)
def test_no_line_of_the_help_outgrows_80_columns(name):
    text = help_text(COMMANDS[name])
    assert "examples" in text
    assert [line for line in text.splitlines() if len(line) > 80] == []


def test_long_choices_are_named_in_the_usage_and_listed_in_the_help():
    text = " ".join(help_text(COMMANDS["privrank rank"]).split())
    assert "[--mechanism MECHANISM]" in text and "Choices: debiased-rr, laplace, rr," in text
    assert "[--engine {local,stream,dask}]" in text  # short choices stay in the usage


def test_the_examples_keep_their_lines_and_the_description_wraps():
    text = help_text(COMMANDS["privrank rank"], columns=60)
    assert "\n  LLMFAO=src/privrank/datasets_shipped/llmfao_crowd.csv\n" in text
    description = text.split("\n\n")[1]
    assert description.count("\n") >= 1 and max(map(len, description.splitlines())) <= 60


def _run(line, cwd):
    """Run one example line in ``cwd``: a privrank command in this process (``> FILE``: its output written
    there), anything else in the shell."""
    if not line.startswith("privrank "):
        subprocess.run(["bash", "-c", line], cwd=cwd, check=True, timeout=60)
        return 0, ""
    words = shlex.split(os.path.expandvars(line))[1:]
    target = words[words.index(">") + 1] if ">" in words else None
    words = words[:words.index(">")] if target else words
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.chdir(cwd):
        try:
            code = main(words)
        except SystemExit as exc:
            code = exc.code
    if target:
        (cwd / target).write_text(out.getvalue())
    return code, err.getvalue()


@pytest.mark.parametrize("name", COMMANDS)
def test_the_examples_run(name, tmp_path, monkeypatch):
    """Every example is a real command: in a fresh directory, with a fresh ledger, each exits 0 (those of
    serve and reproduce are parsed only)."""
    monkeypatch.setenv("LLMFAO", str(ROOT / SHIPPED_LLMFAO))
    monkeypatch.setenv("PRIVRANK_LEDGER", str(tmp_path / "ledger.sqlite"))
    for line in example_lines(COMMANDS[name]):
        if line.startswith("LLMFAO="):
            assert line == f"LLMFAO={SHIPPED_LLMFAO}" and (ROOT / SHIPPED_LLMFAO).exists()
        elif name.split()[1] in PARSED_ONLY:
            words = shlex.split(line)[1:]
            build_parser(words[0]).parse_args(words)
        else:
            code, err = _run(line, tmp_path)
            assert code == 0, (line, err)
