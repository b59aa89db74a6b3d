"""``privrank completion SHELL``: the shell's completion script, generated from the parsers by shtab."""
from __future__ import annotations

from ..errors import InputError
from .arguments import examples, summary

SHELLS = ("bash", "zsh", "fish", "tcsh")
#: metavars of options that name a file or a directory, and the shtab completion each gets
_FILE_METAVARS = ("PATH", "FILE", "OUT", "SURVEY", "PATH_OR_URL")
_DIRECTORY_METAVARS = ("DIR",)


def register(sub) -> None:
    p = sub.add_parser("completion", help=summary("completion"),
                       description="Print the completion script of privrank for SHELL, made from privrank's own "
                                   "parsers. Bash: add 'eval \"$(privrank completion bash)\"' to ~/.bashrc; zsh: "
                                   "write it to a file named _privrank in a directory of $fpath; fish: write it "
                                   "to ~/.config/fish/completions/privrank.fish; tcsh: add "
                                   "'eval `privrank completion tcsh`' to ~/.tcshrc.",
                       epilog=examples("privrank completion bash > privrank.bash",
                                       "privrank completion fish > privrank.fish"))
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help=f"the shell: {', '.join(SHELLS)}")
    p.set_defaults(func=run_completion)


def run_completion(args) -> int:
    try:
        import shtab
    except ImportError:
        raise InputError("completion scripts are made by shtab: pip install shtab") from None
    from . import build_parser
    from ..files import write_stdout

    parser = build_parser(every=True)
    for command in parser.commands.values():  # type: ignore[attr-defined]  # set by build_parser
        for action in command._actions:
            if action.dest == "file" or action.metavar in _FILE_METAVARS:
                action.complete = shtab.FILE
            elif action.metavar in _DIRECTORY_METAVARS:
                action.complete = shtab.DIRECTORY
    write_stdout(shtab.complete(parser, shell=args.shell))
    return 0
