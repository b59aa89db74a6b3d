"""The command line under random arguments: an answer or a clear error, never a traceback.

Every option of ``rank``, ``top-k``, ``randomize``, ``aggregate``, ``plan`` and ``ledger`` is read off
the parser itself and given values a hostile but realistic user might type: numbers of every
size and sign, NaN, words, files that exist, do not, or hold garbage. Whatever the mix, the
command ends with exit 0, 1 or 2 (``privrank: error: ...``), prints no traceback, and never
repeats a respondent's answer from the data in an error message.
"""
import argparse
import contextlib
import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from privrank.cli import build_parser, main

COMMANDS = ("rank", "top-k", "randomize", "aggregate", "plan")
#: options left out: slow by design (dask), or covered by their own tests
SKIP = {"--scheduler", "--help", "--engine", "--jobs", "--trials"}
SECRET = "zz_secret_answer"
REQUIRED = {"rank": ["--epsilon", "1"], "top-k": ["--k", "2", "--epsilon", "1"],
            "randomize": ["--epsilon", "1", "-o", "reports.csv", "--force"], "aggregate": ["--epsilon", "1"],
            "plan": ["--items", "5", "--users", "20"]}
NUMBERS = ["0", "1", "-1", "2", "0.5", "1e-300", "1e300", "nan", "inf", "-inf", "3.7", "1000000000000", "x", ""]


def _options(command):
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return [a for a in sub._actions if a.option_strings and a.option_strings[-1] not in SKIP
            and not isinstance(a, argparse._HelpAction)]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz")
    rows = ["user,item_a,item_b,outcome"] + [f"u{k % 7},{a},{b},{o}" for k, (a, b, o) in enumerate(
        [("A", "B", 1), ("B", "C", -1), ("C", "D", 0), ("A", "D", 1), ("B", "D", 1), (SECRET, "A", 1)] * 6)]
    (d / "pairs.csv").write_text("\n".join(rows) + "\n")
    (d / "ballots.csv").write_text("rank1,rank2,rank3\nA,B,C\nB,C,A\nC,A,B\nA,C,B\n")
    (d / "items.txt").write_text("A\nB\nC\nD\n")
    (d / "garbage.bin").write_bytes(bytes(range(256)) * 4)
    return d


def _value(action, draw, files):
    if action.nargs == 0:
        return []
    if action.choices:
        return [draw(st.sampled_from(list(action.choices)))]
    name = action.option_strings[-1]
    if name in ("--items", "--output", "--plot", "--ledger", "--like"):
        return [str(draw(st.sampled_from([files / "items.txt", files / "garbage.bin", files / "missing",
                                          files, files / "out.png", files / "out.csv"])))]
    return [draw(st.sampled_from(NUMBERS))]


@pytest.mark.slow
@settings(max_examples=int(__import__("os").environ.get("PRIVRANK_FUZZ", "120")), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_arguments_end_in_an_answer_or_a_clear_error(files, data, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    command = data.draw(st.sampled_from(COMMANDS))
    argv = [command]
    if command in ("rank", "top-k", "randomize"):
        argv.append(str(files / data.draw(st.sampled_from(["pairs.csv", "ballots.csv", "garbage.bin"]))))
    elif command == "aggregate":
        argv.append(str(files / data.draw(st.sampled_from(["ballots.csv", "pairs.csv", "garbage.bin"]))))
    # the arguments a command needs, most of the time, so that the random options reach the work
    argv += data.draw(st.sampled_from([REQUIRED[command], REQUIRED[command], []]))
    chosen = data.draw(st.lists(st.sampled_from(_options(command)), max_size=4, unique_by=id))
    for action in chosen:
        argv += [action.option_strings[-1], *_value(action, data.draw, files)]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse usage errors
            code = exc.code
    assert code in (0, 1, 2), (argv, err.getvalue())
    assert "Traceback" not in err.getvalue(), argv
    if code == 2:
        assert SECRET not in err.getvalue(), argv
