"""The command in the shell: ``python -m privrank``, standard input, ``--quiet``, completion, a fast
``--help``, usage errors of the command mistyped, and the installation ``make demo`` makes."""
import contextlib
import io
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from privrank.cli import build_parser, main
from privrank.cli.arguments import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("numpy", "scipy", "pyarrow", "pandas", "matplotlib", "dask", "starlette", "tqdm")


def run(*argv, stdin=None):
    """``python -m privrank ARGV``: (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "privrank", *map(str, argv)], input=stdin, capture_output=True,
                          timeout=120)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def in_process(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exc:
            code = exc.code
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def winners(tmp_path):
    """A model_a,model_b,winner file: reading it prints a note on standard error (the layout read)."""
    p = tmp_path / "winners.csv"
    p.write_text("model_a,model_b,winner\n" + "A,B,model_a\nB,C,model_a\nA,C,tie\nC,A,model_b\n" * 20)
    return p


def test_python_m_privrank_is_the_command(pairs):
    code, out, _ = run("--version")
    assert code == 0 and out.startswith("privrank ")
    code, out, _ = run("rank", pairs, "--mechanism", "none", "--format", "csv")
    assert code == 0 and out == in_process("rank", pairs, "--mechanism", "none", "--format", "csv")[1]


def test_a_mistyped_option_shows_the_usage_of_its_command(pairs):
    code, _, err = in_process("rank", pairs, "--epsilonn", "1")
    assert code == 2
    assert err.startswith("usage: privrank rank ") and "privrank rank: error: unrecognized arguments: --epsilonn" in err
    code, _, err = in_process("aggregate", pairs, "--methd", "exact")
    assert code == 2 and err.startswith("usage: privrank aggregate ") and "--methd" in err


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_imports_nothing_heavy(command):
    """Each command's ``--help`` builds its parser without numpy, scipy or pyarrow (it took 1.3-1.8 s)."""
    code = (f"import sys, time\nstart = time.perf_counter()\nfrom privrank.cli import main\n"
            f"try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            f"print('seconds', time.perf_counter() - start, file=sys.stderr)\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and f"usage: privrank {command}" in done.stdout
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_the_parsers_choices_are_the_librarys():
    """The parsers name the library's choices and defaults without importing it: they must agree."""
    from privrank import audit, engines, inference, plan
    from privrank.aggregation import kemeny, private_footrule
    from privrank.cli import aggregate, arguments, engine_options, intervals, rank
    from privrank.cli import audit as audit_cli
    from privrank.cli import ledger as ledger_cli
    from privrank.cli import plan as plan_cli
    from privrank.data import io as data_io
    from privrank.data import ratings
    from privrank.ledger import BUDGET_UNITS, ENV_PATH
    from privrank.pairwise import links, local, release

    assert rank.DEFAULT_MAX_PAIRS == ratings.DEFAULT_MAX_PAIRS
    assert set(rank.LINKS) == set(links.LINKS) and tuple(rank.WEIGHTS) == tuple(release.WEIGHTS)
    assert all(callable(getattr(local, name)) for name in rank.LOCAL_MECHANISMS.values())
    assert tuple(intervals.CI_METHODS) == tuple(inference.METHODS)
    assert tuple(engine_options.ENGINES) == tuple(engines.ENGINES)
    assert engine_options.DEFAULT_BATCH_SIZE == engines.DEFAULT_BATCH_SIZE == data_io.DEFAULT_BATCH_SIZE
    assert tuple(aggregate.SOLVERS) == tuple(kemeny.SOLVERS)
    assert tuple(aggregate.PARTIAL_POLICIES) == tuple(data_io.PARTIAL_POLICIES)
    assert tuple(aggregate.PTAS_VARIANTS) == tuple(private_footrule.PTAS_VARIANTS)
    assert audit_cli.DEFAULT_DELTA == audit.DEFAULT_DELTA
    assert plan_cli.MECHANISMS == plan.MECHANISMS
    assert set(aggregate.PURE_ONLY) == set(plan.PURE_ONLY)
    assert tuple(rank.CENTRAL_MECHANISMS) == tuple(plan.MECHANISMS["central"])
    assert {m.split("+")[0] for ms in plan.AGGREGATION_METHODS.values() for m in ms} <= set(aggregate.PRIVATE_METHODS)
    assert arguments.LEDGER_ENV == ENV_PATH
    assert ledger_cli.BUDGET_UNIT_CHOICES == tuple(sorted(BUDGET_UNITS))


def test_every_aggregate_method_resolves_its_function():
    from privrank.cli.aggregate import _function

    for name in ("private_kemeny", "dp_kwiksort", "exponential_kemeny", "hay_quicksort", "ldp_kwiksort",
                 "ldp_matrix"):
        assert callable(_function(f"aggregation.private_kemeny:{name}"))
    for name in ("dp_footrule", "ldp_footrule", "dp_ptas"):
        assert callable(_function(f"aggregation.private_footrule:{name}"))


def test_plan_like_reads_standard_input(pairs):
    file = run("plan", "--like", pairs, "--epsilon", "1", "--format", "json")
    piped = run("plan", "--like", "-", "--epsilon", "1", "--format", "json", stdin=pairs.read_bytes())
    assert file[0] == 0 and piped == file


@pytest.mark.parametrize("command", ["rank", "top-k", "randomize", "aggregate", "plan"])
def test_help_says_how_standard_input_is_read(command):
    code, out, _ = in_process(command, "--help")
    assert code == 0 and "'-' reads standard input" in " ".join(out.split())


def test_quiet_prints_the_result_and_nothing_on_standard_error(winners):
    argv = ["rank", winners, "--mechanism", "none", "--format", "csv"]
    code, out, err = run(*argv)
    assert code == 0 and "privrank: read the model_a,model_b,winner layout" in err
    quiet = run(*argv, "--quiet")
    assert quiet == (0, out, "")
    piped = run("rank", "-", *argv[2:], "-q", stdin=winners.read_bytes())
    assert piped == (0, out, "")


def test_quiet_still_prints_errors_and_silences_warnings(winners, tmp_path):
    code, _, err = run("rank", tmp_path / "missing.csv", "--epsilon", "1", "--quiet")
    assert code == 2 and err.startswith("privrank: error: ") and err.count("\n") == 1
    argv = ["aggregate", "--method", "dp-kwiksort", "--epsilon", "1", "--non-private-diagnostics",
            "--ledger", tmp_path / "l.sqlite"]
    ballots = tmp_path / "ballots.csv"
    ballots.write_text("rank1,rank2,rank3\n" + "A,B,C\nB,A,C\nA,C,B\n" * 5)
    code, out, err = in_process(*argv[:1], ballots, *argv[1:])
    assert code == 0 and "warning" in err
    code, quiet_out, err = in_process(*argv[:1], ballots, *argv[1:], "--quiet")
    assert code == 0 and err == "" and "NOT PRIVATE" in quiet_out


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish", "tcsh"])
def test_completion_is_generated_from_the_parsers(shell):
    code, out, err = in_process("completion", shell)
    assert code == 0 and err == ""
    options = () if shell == "tcsh" else ("--epsilon", "--mechanism", "--ledger", "--quiet")  # tcsh: commands only
    words = ("rank", "aggregate", "ledger", "bash") + (() if shell == "tcsh" else ("debiased-rr",)) + tuple(
        f"-l {o[2:]}" if shell == "fish" else o for o in options)  # fish: complete -l epsilon
    assert all(word in out for word in words)


def test_the_fish_script_completes_every_command_and_fish_accepts_it(tmp_path):
    script = tmp_path / "privrank.fish"
    script.write_text(in_process("completion", "fish")[1])
    text = script.read_text()
    assert all(re.search(rf"complete -c privrank .*-a {re.escape(name)}\b", text) for name in COMMANDS), text[:2000]
    if shutil.which("fish") is None:
        pytest.skip("fish is not installed: its syntax check is skipped")
    done = subprocess.run(["fish", "--no-config", "-n", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_bash_completes_a_command_and_its_options(tmp_path):
    script = tmp_path / "privrank.bash"
    script.write_text(in_process("completion", "bash")[1])
    probe = (f"source {script}; COMP_WORDS=(privrank rank --epsi); COMP_CWORD=2; _shtab_privrank; "
             "echo \"${COMPREPLY[@]}\"; COMP_WORDS=(privrank aggr); COMP_CWORD=1; _shtab_privrank; "
             "echo \"${COMPREPLY[@]}\"")
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["--epsilon", "aggregate"]


def test_every_command_builds_in_one_parser():
    parser = build_parser(every=True)
    assert set(parser.commands) == set(COMMANDS)
    assert all(parser.commands[name].format_usage() != f"usage: privrank {name} [-h]\n" for name in COMMANDS)


def test_make_demo_installs_the_core_only(tmp_path):
    """``make demo`` installs privrank's own dependencies, not the developer set (about 70 packages)."""
    done = subprocess.run(["make", "-n", "-C", str(ROOT), "demo", f"VENV={tmp_path / 'venv'}"], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0 and "pip install --quiet -e ." in done.stdout
    assert "[dev]" not in done.stdout


def test_the_license_is_an_spdx_expression():
    """A table ``license = {text = ...}`` and a license classifier make setuptools print deprecation banners."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT AND CC-BY-4.0"  # the wheel ships LLMFAO's data (CC BY 4.0)
    assert not any(c.startswith("License ::") for c in project["classifiers"])


def test_library_messages_name_no_option_of_the_command_line():
    """A Python user is told what to pass to the function, not a flag of the command."""
    from privrank.errors import InputError, epsilons_out_of_range
    from privrank.plan import Design, check_size

    assert "--" not in epsilons_out_of_range([0.0])[1]
    with pytest.raises(InputError) as refused:
        check_size(Design(3000, 10 ** 5, 1), 1)
    assert "--" not in str(refused.value) and "one epsilon" in str(refused.value)
