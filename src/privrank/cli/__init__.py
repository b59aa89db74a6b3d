"""The ``privrank`` command.

Each subcommand lives in its own module of this package and provides ``register(subparsers)``,
which adds its parser and sets ``func`` to a function ``(args) -> int`` (the exit code).
Input errors print ``privrank: error: <message>`` and exit with code 2; warnings print
``privrank: warning: <message>``.
"""
from __future__ import annotations

import argparse
import sys
import warnings

from ..errors import InputError
from . import aggregate, audit, demo, ledger, plan, rank, reproduce

COMMAND_MODULES = [rank, aggregate, plan, ledger, audit, demo, reproduce]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="privrank", description="Differentially private rank aggregation.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"privrank {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"privrank: warning: {message}", file=sys.stderr)


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return int(args.func(args) or 0)
    except InputError as exc:
        print(f"privrank: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
