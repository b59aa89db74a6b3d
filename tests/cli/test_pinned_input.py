"""Release the bytes you fingerprinted: a data file replaced mid-command, and ``-`` for standard input.

A command pins its data file (:mod:`privrank.data.pinned`): one descriptor for the whole
command, every block read again checked against its first read. The swap tests replace the
file between the ledger's fingerprint pass and the release pass (by rewriting it in place, or
by renaming another file over the path) and check that data set B is never released while data
set A is charged; a broken variant (the old behaviour: the path read twice) shows the test
catches the bypass.
"""
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

import privrank.cli.arguments as cli_arguments
import privrank.cli.releasing as cli_releasing
import privrank.data.ratings as data_ratings
import privrank.engines as engines
from privrank.cli import main
from privrank.data.tabular import READ_AHEAD_WAIT
from privrank.data.pinned import BLOCK_BYTES, FileChangedError, PinnedFile
from privrank.errors import InputError
from privrank.ledger import Ledger, fingerprint


def _comparisons(path, flip: bool):
    """Comparisons of A, B, C; ``flip`` turns every answer (data set B), same size."""
    rows = ["user,item_a,item_b,outcome"]
    for u in range(60):
        first = "B,A" if flip else "A,B"
        rows += [f"{u},{first},1", f"{u},B,C,1", f"{u},A,C,{1 if u % 3 else -1}"]
    path.write_text("\n".join(rows) + "\n")
    return path


def _rankings(path, flip: bool):
    rows = ["rank1,rank2,rank3"] + [("C,B,A" if flip else "A,B,C") if v % 4 else "B,A,C" for v in range(40)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _ratings(path, flip: bool):
    rows = ["user,item,rating"]
    for u in range(30):
        rows += [f"{u},A,{1 if flip else 5}", f"{u},B,3", f"{u},C,{5 if flip else 1}"]
    path.write_text("\n".join(rows) + "\n")
    return path


@contextmanager
def _swap_after(monkeypatch, module, name, path, other, how):
    """After ``module.name`` (the first pass) returns, replace ``path`` by ``other``'s bytes."""
    original = getattr(module, name)

    def first_pass_then_swap(*args, **kwargs):
        result = original(*args, **kwargs)
        if how == "rename":
            os.replace(other, path)
        else:  # rewrite in place: the same inode, other bytes
            with open(path, "r+b") as fh:
                fh.write(other.read_bytes())
        return result
    monkeypatch.setattr(module, name, first_pass_then_swap)
    yield


def _run(capsys, argv):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.err


def _releases(ledger_path):
    with Ledger(ledger_path) as ledger:
        return ledger.releases()


STREAM = ["rank", "--mechanism", "rr", "--epsilon", "1", "--engine", "stream", "--seed", "3"]
LOCAL = ["rank", "--mechanism", "debiased-rr", "--epsilon", "1", "--seed", "3"]
AGGREGATE = ["aggregate", "--method", "noisy-matrix", "--epsilon", "1", "--seed", "3"]


def _swap_case(tmp_path, monkeypatch, command, how):
    """Data sets A (at the path) and B, and the hook that swaps B in after the fingerprint pass."""
    if command is LOCAL:  # read once into memory; ratings are fingerprinted after the pairs are drawn
        a, b = _ratings(tmp_path / "data.csv", False), _ratings(tmp_path / "other.csv", True)
        hook = (data_ratings, "comparisons_from_ratings")  # imported by the command when it runs
    else:
        make = _rankings if command is AGGREGATE else _comparisons
        a, b = make(tmp_path / "data.csv", False), make(tmp_path / "other.csv", True)
        hook = (cli_releasing, "identify")
    return a, b, hook


@pytest.mark.parametrize("how", ["in-place", "rename"])
@pytest.mark.parametrize("command", [STREAM, LOCAL, AGGREGATE], ids=["stream", "ratings", "aggregate"])
def test_a_file_swapped_between_the_passes_never_releases_the_other_data(capsys, tmp_path, monkeypatch,
                                                                         private_ledger, command, how):
    a, b, hook = _swap_case(tmp_path, monkeypatch, command, how)
    expected_fp = fingerprint(str(a))
    out = tmp_path / "out.csv"
    clean_code, _ = _run(capsys, [*command, a, "--out", tmp_path / "clean.csv"])
    assert clean_code == 0
    with _swap_after(monkeypatch, *hook, a, b, how):
        code, err = _run(capsys, [*command, a, "--out", out])
    if how == "rename":  # the descriptor still reads A: A is released, and charged
        assert code == 0, err
        assert out.read_text() == (tmp_path / "clean.csv").read_text()
    else:
        assert code == 2
        assert "changed while" in err and "nothing was released" in err or "nothing computed" in err
        assert not out.exists()
    assert {r["fingerprint"] for r in _releases(private_ledger)} == {expected_fp}


def test_the_stream_release_keeps_the_charge_when_its_file_changed(capsys, tmp_path, monkeypatch, private_ledger):
    """Swapped after the charge (the engine's randomization key is drawn after it): the error says
    the spend stays recorded, and it does; and it says so at once, without waiting out the CSV
    reader's ``READ_AHEAD_WAIT`` (the failed read's frames no longer hold the file)."""
    a, b = _comparisons(tmp_path / "data.csv", False), _comparisons(tmp_path / "other.csv", True)
    with _swap_after(monkeypatch, engines, "record_key", a, b, "in-place"):
        started = time.monotonic()
        code, err = _run(capsys, [*STREAM, a, "--out", tmp_path / "out.csv"])
    assert time.monotonic() - started < READ_AHEAD_WAIT / 2
    assert code == 2
    assert f"privrank: error: {a} changed while it was being released: nothing was released; the spend stays " \
           "recorded in the ledger" in err
    assert [r["epsilon"] for r in _releases(private_ledger)] == [1.0]
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("how", ["in-place", "rename"])
def test_broken_variant_reading_the_path_twice_releases_the_swapped_data(capsys, tmp_path, monkeypatch, how):
    """The old behaviour (no pinning: the path is read again for the release) releases data set B
    while A is charged: the checks above would fail on it."""
    @contextmanager
    def not_pinned(args):
        yield
    monkeypatch.setattr(cli_arguments, "pinned_data", not_pinned)  # looked up when the command runs
    a, b = _comparisons(tmp_path / "data.csv", False), _comparisons(tmp_path / "other.csv", True)
    run_on_b = tmp_path / "b.csv"
    assert _run(capsys, [*STREAM, b, "--out", run_on_b])[0] == 0
    with _swap_after(monkeypatch, cli_releasing, "identify", a, b, how):
        code, _ = _run(capsys, [*STREAM, a, "--out", tmp_path / "out.csv"])
    assert code == 0
    assert (tmp_path / "out.csv").read_text() == run_on_b.read_text()


def test_pinned_file_refuses_bytes_that_differ_from_the_first_read(tmp_path):
    path = tmp_path / "big.bin"
    path.write_bytes(bytes(3 * BLOCK_BYTES + 10))
    with PinnedFile.open(path) as pinned:
        first = pinned.reader()
        first.seek(2 * BLOCK_BYTES + 5)
        assert first.read(10) == bytes(10)
        with open(path, "r+b") as fh:  # in place, in a block already read, and in one not yet read
            fh.seek(2 * BLOCK_BYTES + 7)
            fh.write(b"x")
        assert pinned.reader().read(BLOCK_BYTES) == bytes(BLOCK_BYTES)  # block 0: first read now
        with pytest.raises(FileChangedError, match="changed while privrank was reading it"):
            pinned.reader().read()
        os.truncate(path, BLOCK_BYTES // 2)  # shorter than when pinned
        with pytest.raises(FileChangedError):
            again = pinned.reader()
            again.seek(BLOCK_BYTES)
            again.read(1)


def _subprocess(argv, stdin=None):
    return subprocess.run([sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())",
                           *map(str, argv)], input=stdin,
                          capture_output=True, env={**os.environ})


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".arrows"])
def test_standard_input_equals_the_same_file_given_by_path(tmp_path, private_ledger, suffix):
    src = _comparisons(tmp_path / "data.csv", False)
    if suffix != ".csv":
        import pyarrow as pa
        import pyarrow.csv as pcsv
        import pyarrow.parquet as pq
        table, src = pcsv.read_csv(src), tmp_path / f"data{suffix}"
        if suffix == ".parquet":
            pq.write_table(table, src)
        else:  # an Arrow IPC stream: no magic bytes, a continuation marker first
            with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
    by_path = _subprocess([*STREAM, src])
    by_stdin = _subprocess([*STREAM, "-"], stdin=src.read_bytes())
    assert by_path.returncode == 0 and by_stdin.returncode == 0, by_stdin.stderr
    assert by_stdin.stdout == by_path.stdout
    ra, rb = _releases(private_ledger)
    assert ra["fingerprint"] == rb["fingerprint"] == fingerprint(str(src))
    assert rb["dataset"] == "<stdin>"


@pytest.mark.parametrize("argv", [LOCAL, pytest.param(AGGREGATE, marks=pytest.mark.slow),
                                  ["randomize", "--epsilon", "1", "--seed", "2", "--out", "-"]],
                         ids=["rank", "aggregate", "randomize"])
def test_standard_input_for_every_data_command(tmp_path, argv):
    src = (_rankings if argv is AGGREGATE else _comparisons)(tmp_path / "data.csv", False)
    by_path = _subprocess([*argv, src])
    by_stdin = _subprocess([*argv, "-"], stdin=src.read_bytes())
    assert by_path.returncode == 0 and by_stdin.returncode == 0, by_stdin.stderr
    assert by_stdin.stdout == by_path.stdout


@pytest.mark.parametrize("argv", [LOCAL, pytest.param(AGGREGATE, marks=pytest.mark.slow)], ids=["rank", "aggregate"])
def test_the_item_list_on_standard_input(tmp_path, argv):
    src = (_rankings if argv is AGGREGATE else _comparisons)(tmp_path / "data.csv", False)
    items = tmp_path / "items.txt"
    items.write_text("C\nA\nB\n")
    by_path = _subprocess([*argv, src, "--items", items])
    by_stdin = _subprocess([*argv, src, "--items", "-"], stdin=items.read_bytes())
    assert by_path.returncode == 0 and by_stdin.returncode == 0, by_stdin.stderr
    assert by_stdin.stdout == by_path.stdout
    repeated = _subprocess([*argv, src, "--items", "-"], stdin=b"A\nA\n")
    assert repeated.returncode == 2 and b"<stdin>: the item list has a repeated label" in repeated.stderr
    both = _subprocess([*argv, "-", "--items", "-"], stdin=src.read_bytes())
    assert both.returncode == 2 and b"not both" in both.stderr


def test_standard_input_that_is_empty_or_a_terminal_is_refused(capsys, monkeypatch, tmp_path):
    empty = _subprocess([*STREAM, "-"], stdin=b"")
    assert empty.returncode == 2 and b"privrank: error: standard input is empty" in empty.stderr

    class Terminal:
        closed = False

        def isatty(self):
            return True
    monkeypatch.setattr(sys, "stdin", Terminal())
    code, err = _run(capsys, [*STREAM, "-"])
    assert code == 2 and "standard input, which is a terminal" in err


@pytest.mark.parametrize("command", [STREAM, AGGREGATE], ids=["rank", "aggregate"])
def test_dask_workers_records_are_checked_against_the_fingerprint(capsys, tmp_path, monkeypatch, command):
    """The dask workers read by path: a file rewritten after the fingerprint pass is refused from
    their records' digests (and the same file passes the check)."""
    pytest.importorskip("dask")
    make = _rankings if command is AGGREGATE else _comparisons
    a, b = make(tmp_path / "data.csv", False), make(tmp_path / "other.csv", True)
    dask = [*command, a, "--engine", "dask"]
    assert _run(capsys, [*dask, "--out", tmp_path / "clean.csv"])[0] == 0
    with _swap_after(monkeypatch, cli_releasing, "identify", a, b, "rename"):
        code, err = _run(capsys, [*dask, "--out", tmp_path / "out.csv"])
    assert code == 2 and "changed while" in err, err
    assert not (tmp_path / "out.csv").exists()


def test_dask_refuses_standard_input(capsys, tmp_path, monkeypatch):
    pytest.importorskip("dask")
    src = _comparisons(tmp_path / "data.csv", False)
    monkeypatch.setattr(sys, "stdin", open(src))
    code, err = _run(capsys, [*STREAM, "-", "--engine", "dask"])
    sys.stdin.close()
    assert code == 2 and "save standard input to a file" in err


def test_standard_input_that_cannot_be_spooled_is_a_clear_error():
    import io

    class DiskFull(io.RawIOBase):
        def readable(self):
            return True

        def readinto(self, buffer):
            raise OSError(28, "No space left on device")
    with pytest.raises(InputError, match="could not be saved to a temporary file .No space left on device"):
        PinnedFile.standard_input(DiskFull())
