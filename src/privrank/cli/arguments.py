"""Arguments shared by the subcommands, and their types: values argparse refuses with a usage error (exit 2).

This module and the parsers of every subcommand import nothing heavy (numpy, scipy, pyarrow): the
commands import what they use when they run, so that ``privrank COMMAND --help`` starts fast.
Choices and defaults that the library defines are written out here and in the parsers, and a test
checks that they agree with the library's.
"""
from __future__ import annotations

import argparse
import textwrap
from contextlib import ExitStack, contextmanager

from ..errors import EPSILON_RANGE, InputError


#: choices longer than this (as argparse shows them, ``{a,b,c}``) are named by the option's name in
#: the usage and listed in the option's help, so that no line of the help outgrows the terminal
LONG_CHOICES = 32
#: the shipped data the examples of the help use, as a checkout of privrank holds it
SHIPPED_LLMFAO = "src/privrank/datasets_shipped/llmfao_crowd.csv"


class HelpFormatter(argparse.HelpFormatter):
    """The help of every privrank command: the description and the epilog keep their line breaks
    (a line that starts with a space, an example, is kept as it is; every other line is wrapped to
    the terminal), no line is broken at a hyphen (``--non-private-diagnostics``), a group of
    exclusive options too long for a line of the usage is cut after a ``|``, and an option whose choices would not fit in a line is shown by its name in the
    usage (``--mechanism MECHANISM``) and its choices listed at the end of its help."""

    def _fill_text(self, text, width, indent):
        return "\n".join(line if line.startswith(" ") else textwrap.fill(line, width, initial_indent=indent,
                                                                         subsequent_indent=indent)
                         for line in text.splitlines())

    def _format_usage(self, usage, actions, groups, prefix):  # a group of exclusive options: cut after a '|'
        lines = []
        for line in super()._format_usage(usage, actions, groups, prefix).split("\n"):
            indent = " " * (len(line) - len(line.lstrip()) + 1)
            while len(line) > self._width and " | " in line[:self._width]:
                cut = line.rindex(" | ", 0, self._width) + 2
                lines.append(line[:cut])
                line = indent + line[cut + 1:]
            lines.append(line)
        return "\n".join(lines)

    def _split_lines(self, text, width):  # an option's help: never broken at the hyphen of an option or a name
        return textwrap.wrap(self._whitespace_matcher.sub(" ", text).strip(), width, break_on_hyphens=False)

    def _metavar_formatter(self, action, default_metavar):
        if _long_choices(action):
            return lambda size: (default_metavar,) * size
        return super()._metavar_formatter(action, default_metavar)

    def _get_help_string(self, action):
        text = super()._get_help_string(action)
        return f"{text}. Choices: {', '.join(map(str, action.choices))}" if _long_choices(action) else text


def _long_choices(action) -> bool:
    return action.metavar is None and action.choices is not None and \
        len(",".join(map(str, action.choices))) + 2 > LONG_CHOICES


class Parser(argparse.ArgumentParser):
    """An argument parser with privrank's :class:`HelpFormatter`; its subcommands' parsers are too."""

    def __init__(self, *args, formatter_class=HelpFormatter, **kwargs):
        super().__init__(*args, formatter_class=formatter_class, **kwargs)  # type: ignore[misc]  # args stop short of it


def examples(*commands: str) -> str:
    """The epilog of a command's help: ``commands``, one per line; ``$LLMFAO`` stands for the shipped
    LLMFAO comparisons (:data:`SHIPPED_LLMFAO`), defined on the first line where a command uses it."""
    lines = ["examples:"]
    if any("$LLMFAO" in c for c in commands):
        lines[0] = "examples (from a checkout of privrank, which ships the LLMFAO comparisons):"
        lines.append(f"  LLMFAO={SHIPPED_LLMFAO}")
    return "\n".join(lines + [f"  {c}" for c in commands])


def seed(text: str) -> int:
    """A seed: a whole number >= 0 (seeds are for research runs, not for real releases)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("the seed must be a whole number >= 0") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the seed must be a whole number >= 0")
    return value


def epsilons(text: str) -> float | tuple[float, ...]:
    """``--epsilon`` of ``rank`` and ``top-k``: one number, or several separated by commas, which only a
    file of randomized reports takes (the epsilons its respondents were asked to use)."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError("give a number, or for a file of randomized reports the declared epsilons "
                                         "separated by commas (e.g. 0.5,1)") from None
    return values[0] if len(values) == 1 else values


def answers_epsilon(args) -> float | None:
    """``--epsilon`` of a release that randomizes answers: one number (several declare the epsilons of
    a file of randomized reports, :func:`epsilons`)."""
    if isinstance(args.epsilon, tuple):
        raise InputError("--epsilon takes one number for a file of answers; several, separated by commas, declare "
                         "the epsilons of a file of randomized reports")
    return args.epsilon


#: what the help of a data file argument says about inputs other than one file: a data set of many
#: files (privrank.data.parts) and standard input
STDIN_HELP = ("a directory (also Hive-partitioned, key=value directories, whose keys are not read) or a quoted "
              "glob pattern ('parts/*.parquet') is one data set: files of one format and columns, read in the order "
              "of their paths, names starting with . or _ skipped; "
              "'-' reads standard input (once, into a temporary file): Parquet, Arrow IPC and gzip'd CSV are "
              "told apart by their first bytes, PrefLib by its leading '#' comment; anything else is read as CSV")
#: the environment variable naming the default privacy ledger (privrank.ledger.ENV_PATH)
LEDGER_ENV = "PRIVRANK_LEDGER"


def add_ledger_option(parser, *, new_data: bool = False) -> None:
    """The "ledger" group of ``parser``: ``--ledger``; with ``new_data``, ``--new-data REASON`` too
    (privrank.ledger.NEW_DATA_FLAG; a test checks)."""
    group = parser.add_argument_group("ledger")
    group.add_argument("--ledger", metavar="PATH",
                       help=f"privacy ledger file (default ${LEDGER_ENV}, else ~/.local/share/privrank/ledger.sqlite)")
    if new_data:
        group.add_argument("--new-data", metavar="REASON",
                          help="data that shares most of its records with a budgeted data set (rows appended, "
                               "dropped or doubled) is refused as its near-duplicate; if it is new data, say why "
                               "(recorded in the ledger)")


def add_quiet_option(parser) -> None:
    parser.add_argument("--quiet", "-q", action="store_true",
                        help="print nothing on standard error but errors: no progress bars, notes or warnings (the "
                             "result, its guarantee and every caveat the guarantee states are printed as usual)")


def check_release_epsilons(args) -> None:
    """Refuse a positive ``--epsilon``/``--user-epsilon`` outside ``EPSILON_RANGE`` (others are refused
    with their own message where they are used)."""
    lo, hi = EPSILON_RANGE
    for name in ("epsilon", "user_epsilon"):
        values = getattr(args, name, None)
        for value in values if isinstance(values, tuple) else (values,):
            if value is not None and 0 < value < float("inf") and not lo <= value <= hi:
                raise InputError(f"--{name.replace('_', '-')} must lie in [{lo:g}, {hi:g}]: smaller is noise without "
                                 "signal, larger is no privacy (use a non-private method)")


#: commands that release from a data file, which they pin for the whole command (``-``: standard input)
DATA_COMMANDS = ("rank", "top-k", "aggregate", "randomize")


@contextmanager
def pinned_data(args):
    """Pin the data file of a :data:`DATA_COMMANDS` command for the whole command: ``args.file``
    becomes a :class:`~privrank.data.pinned.PinnedFile` (``-``: standard input, spooled once; a
    directory or glob pattern: :class:`~privrank.data.parts.DataParts`, every part pinned),
    so the ledger's fingerprint and the release read the same bytes through one descriptor;
    ``--items -`` reads the item list from standard input the same way."""
    if args.command not in DATA_COMMANDS:
        yield
        return
    from ..data.parts import pin_data
    from ..data.pinned import PinnedFile

    items = getattr(args, "items", None)
    if args.file == "-" and items == "-":
        raise InputError("standard input can hold the data file or the --items list, not both: give the other "
                         "as a file")
    with ExitStack() as stack:
        args.file = stack.enter_context(PinnedFile.standard_input() if args.file == "-" else pin_data(args.file))
        if items == "-":
            args.items = stack.enter_context(PinnedFile.standard_input())
        yield


#: every subcommand: the module of privrank.cli that registers it (imported only when that command
#: runs, so that ``privrank --help`` starts fast) and the line ``privrank --help`` shows for it
COMMANDS = {
    "rank": ("rank", "rank items from pairwise comparisons"),
    "top-k": ("rank", "the k best items from pairwise comparisons"),
    "randomize": ("rank", "play the respondents' side: randomized response on a file"),
    "aggregate": ("aggregate", "consensus ranking of complete rankings (Kemeny, footrule; private or not)"),
    "plan": ("plan", "choose epsilon before collecting data: predicted ranking error"),
    "ledger": ("ledger", "the privacy ledger: budgets and what releases spent"),
    "audit": ("audit", "audit a private algorithm's claimed guarantee (empirically or exactly)"),
    "demo": ("demo", "private rankings of LLMs (LLMFAO) and NFL teams, shipped data"),
    "reproduce": ("reproduce", "re-run a paper's experiments, draw its figures and check its claims"),
    "serve": ("serve", "a local-DP survey: respondents randomize in their browser; live private ranking"),
    "completion": ("completion", "print a shell completion script (bash, zsh, fish or tcsh)"),
}


def summary(command: str) -> str:
    """The one-line help of ``command``."""
    return COMMANDS[command][1]
