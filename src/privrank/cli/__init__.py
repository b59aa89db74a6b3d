"""The ``privrank`` command.

Each subcommand lives in its own module of this package and provides ``register(subparsers)``,
which adds its parser and sets ``func`` to a function ``(args) -> int`` (the exit code).
:data:`~privrank.cli.arguments.COMMANDS` names each command's module and one-line help; only the
module of the command that runs is imported, and the modules import what their commands use when
they run, so ``privrank --help`` and ``privrank COMMAND --help`` import neither numpy nor scipy,
pyarrow, pandas, matplotlib or dask. ``python -m privrank`` is the same command. Run as a program (the
command line is the process's), a command runs as if pandas were not installed unless ``--engine dask``
needs it: pyarrow, when pandas is installed, imports it at its first conversion to or from numpy, only to
recognise pandas objects, which a command never hands it (a third of a small ranking's CPU time).
Input errors print ``privrank: error: <message>`` and exit with code 2 (so does any command on a
system without POSIX file calls, such as Windows: :func:`privrank.files.require_posix`); warnings print
``privrank: warning: <message>``, and ``--quiet`` silences everything on standard error but errors.
A mistyped option is refused with the usage of the command it was given to. SIGINT and SIGTERM end
a command cleanly: temporary files are removed, reserved outputs that were never written are
removed, a ledger transaction under way is rolled back, and the command prints ``privrank:
interrupted`` and exits with 130 (SIGINT) or 143 (SIGTERM). Once a release is being charged, the
signal waits until its output is in place (:func:`privrank.cli.releasing.ledger_release`): no spend
is recorded without its output.
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import warnings
from contextlib import contextmanager

# privrank's own modules (numpy among them) are imported inside main, where Ctrl-C is handled


#: commands whose --epsilon is one release's (audit and ledger budgets take their own ranges)
RELEASE_EPSILON_COMMANDS = ("rank", "top-k", "aggregate", "randomize", "plan")


def build_parser(command: str | None = None, *, every: bool = False) -> argparse.ArgumentParser:
    """The parser with ``command``'s module registered in full (``every``: every command's); every
    other command is listed with its one-line help only, so that nothing is imported for a command
    that does not run."""
    from .arguments import COMMANDS, Parser

    parser = Parser(prog="privrank", description="Differentially private rank aggregation.",
                    epilog="'privrank COMMAND --help' shows a command's options and examples.")
    from .. import __version__
    parser.add_argument("--version", action="version", version=f"privrank {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in dict.fromkeys(module for name, (module, _) in COMMANDS.items() if every or name == command):
        importlib.import_module(f".{module}", __name__).register(sub)
    for name, (_, text) in COMMANDS.items():
        if name not in sub.choices:
            sub.add_parser(name, help=text)
    parser.commands = sub.choices  # type: ignore[attr-defined]  # each command's parser, by name
    return parser


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"privrank: warning: {message}", file=sys.stderr)


class Terminated(BaseException):
    """SIGTERM, raised where the command is so that every cleanup on the way out runs."""


#: the signals received while :func:`main` runs
_received: list[int] = []


def _on_signal(signum, frame):
    _received.append(signum)
    raise KeyboardInterrupt() if signum == signal.SIGINT else Terminated()


def main(argv=None) -> int:
    _received.clear()
    previous = {}
    try:  # from the first statement: Ctrl-C while the parser and the command's module load is handled too
        if _main_thread():
            previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _on_signal)
            if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not when SIGINT is ignored
                previous[signal.SIGINT] = signal.signal(signal.SIGINT, _on_signal)
        return _run(sys.argv[1:] if argv is None else [str(a) for a in argv], program=argv is None)
    except KeyboardInterrupt:
        return _interrupted(130)
    except Terminated:
        return _interrupted(143)
    except Exception:
        if not _received:
            raise
        # a signal inside a C extension's import (numpy's) surfaces as an ImportError
        return _interrupted(130 if _received[0] == signal.SIGINT else 143)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _interrupted(code: int) -> int:
    print("privrank: interrupted", file=sys.stderr)
    return code


def _run(argv: list[str], program: bool = False) -> int:
    from ..errors import InputError
    from ..files import discard_stdout, require_posix
    from .arguments import check_release_epsilons, pinned_data

    try:
        args = _parse(argv)
        if program and getattr(args, "engine", None) != "dask":
            sys.meta_path.insert(0, _WithoutPandas())
        require_posix()  # Windows: a clear refusal, not a traceback at the first POSIX call (--help still works)
        with _quiet(getattr(args, "quiet", False)), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            if args.command in RELEASE_EPSILON_COMMANDS:
                check_release_epsilons(args)
            with pinned_data(args):
                return int(args.func(args) or 0)
    except InputError as exc:
        print(f"privrank: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        discard_stdout()  # nothing more reaches the reader, nor the flush at exit
        return 0
    except OSError as exc:  # the system refused a path the user gave (too long, a loop, a device that fails)
        if exc.errno is None:
            raise
        where = f"{exc.filename}: " if exc.filename is not None else ""
        print(f"privrank: error: {where}{exc.strerror or os.strerror(exc.errno)}", file=sys.stderr)
        return 2


class _WithoutPandas:
    """An import finder under which ``import pandas`` fails as if it were not installed (pyarrow then
    goes on without it; a ``None`` in ``sys.modules`` would not do: Cython's import takes it as the module)."""

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] == "pandas":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


def _parse(argv: list[str]) -> argparse.Namespace:
    """The arguments; an option the command does not take is refused with that command's usage."""
    parser = build_parser(next((a for a in argv if not a.startswith("-")), None))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        parser.commands[args.command].error(  # type: ignore[attr-defined]  # set by build_parser
            f"unrecognized arguments: {' '.join(unknown)}")
    return args


@contextmanager
def _quiet(quiet: bool):
    """With ``quiet``, standard error goes to the null device while the command runs (errors are
    printed after it, by :func:`main`): no progress bar, note or warning is shown."""
    if not quiet:
        yield
        return
    stderr = sys.stderr
    with open(os.devnull, "w") as null:
        sys.stderr = null
        try:
            yield
        finally:
            sys.stderr = stderr


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
