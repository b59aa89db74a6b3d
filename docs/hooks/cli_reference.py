"""mkdocs hook: the command-line reference (cli.md), written at build time from the parsers
that ``privrank`` itself uses, so that it says what ``privrank COMMAND --help`` says."""
import argparse
import os
from unittest import mock

from mkdocs.structure.files import File

from privrank.cli import build_parser

#: the width the help is wrapped to (argparse reads it from $COLUMNS): a terminal's, which fits a code block
#: of the pages without a scroll bar (tests/cli/test_help.py checks that no line is longer)
WIDTH = 80


def _commands(parser: argparse.ArgumentParser, prog: str, depth: int = 1):
    """``(name, depth, parser)`` of every command under ``parser``, depth first, in the order of its
    help."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prog} {name}", depth, sub
                yield from _commands(sub, f"{prog} {name}", depth + 1)


def _help(parser: argparse.ArgumentParser) -> str:
    with mock.patch.dict(os.environ, {"COLUMNS": str(WIDTH)}):
        return parser.format_help()


def reference() -> str:
    parser = build_parser(every=True)
    parts = ["# Command-line reference\n",
             "Every command of `privrank`, with the help it prints (`privrank COMMAND --help`).\n",
             f"```text\n{_help(parser)}```\n"]
    for name, depth, sub in _commands(parser, "privrank"):
        parts.append(f"{'#' * (depth + 1)} {name}\n\n```text\n{_help(sub)}```\n")
    return "\n".join(parts)


def on_files(files, config):
    files.append(File.generated(config, "cli.md", content=reference()))
    return files
