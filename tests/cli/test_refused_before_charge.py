"""Every foreseeable failure of a release is refused before the charge: an output that cannot be
written or has no room, a ledger journal that cannot be written, a file without records (the
ledger records nothing)."""
import os

import pytest
from cli_data import labelled_comparisons

from privrank.ledger import Ledger


def _refused(code, err, private_ledger):
    assert code == 2 and err.startswith("privrank: error: ") and "Traceback" not in err
    assert "recorded in the ledger" not in err
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_an_unwritable_output_is_refused_before_the_charge(cli, pairs, tmp_path, private_ledger):
    for target in ("/proc/version", "/proc/privrank.csv", tmp_path):
        code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", target, "--force")
        assert "nothing was released" in err
        _refused(code, err, private_ledger)


def test_an_unwritable_journal_is_refused_before_the_charge(cli, pairs, monkeypatch, private_ledger):
    monkeypatch.setenv("PRIVRANK_STATE", "/proc/privrank-state")
    code, _, err = cli("rank", pairs, "--epsilon", "1")
    assert "ledger journal" in err and "nothing was recorded" in err
    _refused(code, err, private_ledger)


def test_a_full_output_file_system_is_refused_before_the_charge(cli, pairs, small_fs, private_ledger):
    small_fs.fill()
    code, _, err = cli("rank", pairs, "--epsilon", "1", "-o", small_fs.path / "r.csv")
    assert "No space left" in err
    _refused(code, err, private_ledger)


@pytest.mark.parametrize("engine", ["local", "stream", "dask"])
def test_a_file_without_records_is_refused_before_the_charge(cli, tmp_path, private_ledger, engine):
    # regression (issue 38): --engine stream and dask charged the release, then found no comparisons
    if engine == "dask":
        pytest.importorskip("dask.dataframe")
    comparisons, rankings = tmp_path / "header.csv", tmp_path / "ballots.csv"
    comparisons.write_text("user,item_a,item_b,outcome\n")
    rankings.write_text("a,b,c\n")
    for argv in (("rank", comparisons, "--epsilon", "1"), ("top-k", comparisons, "--k", "1", "--mechanism", "rr",
                                                           "--epsilon", "1"),
                 ("aggregate", rankings, "--method", "ldp-matrix", "--epsilon", "1")):
        code, _, err = cli(*argv, "--engine", engine)
        assert "has a header but no" in err
        _refused(code, err, private_ledger)


def test_an_output_without_room_is_refused_before_the_charge(cli, tmp_path, small_fs, private_ledger):
    # regression (issue 38): the reservation proved one block only; an output larger than the room left
    # was charged, then failed to be written
    data = labelled_comparisons(tmp_path / "c.csv", [f"item number {k:03d}" for k in range(40)], 40)
    free = os.statvfs(small_fs.path)
    with open(small_fs.path / "filler", "wb") as fh:  # room for a few blocks: less than the output takes
        fh.write(bytes(free.f_bavail * free.f_frsize - 16 * 1024))
    for fmt in ("csv", "table"):
        code, _, err = cli("rank", data, "--epsilon", "1", "--format", fmt, "-o", small_fs.path / "r.out")
        assert "No space left" in err and "nothing was released" in err
        _refused(code, err, private_ledger)
        assert [p.name for p in small_fs.path.iterdir()] == ["filler"]


def test_the_room_reserved_bounds_the_output(cli, tmp_path, monkeypatch):
    """The bound of :func:`ranking_bytes` holds for every format, with intervals and hostile labels."""
    from privrank.cli.output import ranking_bytes
    from privrank.files import Output

    reserved = []
    reserve = Output.reserve
    monkeypatch.setattr(Output, "reserve", lambda self, size=0: (reserved.append(size), reserve(self, size))[1])
    labels = ["A", "\x00\x01" * 20, "é" * 30, "😀" * 20, '"quoted", =1+2', "line\u2028sep",
              *(f"item {k}" for k in range(150))]
    data = labelled_comparisons(tmp_path / "c.csv", labels, 30)
    for fmt in ("table", "csv", "json", "parquet"):
        out = tmp_path / f"r.{fmt}"
        assert cli("rank", data, "--epsilon", "1", "--ci", "--format", fmt, "-o", out)[0] == 0
        assert reserved[-1] == ranking_bytes(labels) >= 2 * out.stat().st_size


@pytest.mark.parametrize("args", [
    ("rank", "{pairs}", "--epsilon", "1", "--ci", "--ci-level", "nan"),
    ("rank", "{pairs}", "--epsilon", "1", "--ci", "--ci-level", "1.5"),
    ("top-k", "{pairs}", "--k", "1", "--epsilon", "1", "--items", "{items}", "--ci", "--ci-level", "-1"),
    ("aggregate", "{ballots}", "--method", "noisy-matrix", "--epsilon", "1", "--ci", "--ci-level", "0"),
    ("rank", "{pairs}", "--epsilon", "1", "--ci-level", "0.9"),  # without --ci
    ("rank", "{pairs}", "--epsilon", "1", "--bias-corrected"),
    ("aggregate", "{ballots}", "--method", "ldp-matrix", "--epsilon", "1", "--ci-level", "0.5"),
    ("aggregate", "{ballots}", "--method", "ldp-matrix", "--epsilon", "1", "--ci", "--ci-level", "2"),
    ("rank", "{pairs}", "--epsilon", "1", "--engine", "stream", "--ci", "--ci-level", "5"),
    ("rank", "{pairs}", "--epsilon", "1", "--lambda", "nan"),
    ("rank", "{pairs}", "--epsilon", "1", "--lambda", "0x10"),
    ("rank", "{pairs}", "--epsilon", "1", "--lambda", "-1"),
    ("rank", "{pairs}", "--epsilon", "1", "--engine", "stream", "--lambda", "inf"),
    ("rank", "{pairs}", "--epsilon", "1", "--lambda", "1e-320"),  # zero in the fit: singular after the charge
    ("rank", "{pairs}", "--epsilon", "1", "--engine", "stream", "--lambda", "5e-324"),
])
def test_a_bad_interval_level_or_ridge_is_refused_before_the_charge(cli, pairs, pairs_items, tmp_path, private_ledger,
                                                                    args):
    """They were checked only when the intervals or the fit were computed: after the release was charged,
    so the ledger recorded a spend whose output never existed."""
    ballots = tmp_path / "ballots.csv"
    ballots.write_text("rank1,rank2,rank3\n" + "A,B,C\nB,A,C\nC,B,A\n" * 5)
    argv = [a.format(pairs=pairs, items=pairs_items, ballots=ballots) for a in args]
    code, _, err = cli(*argv)
    assert code == 2 and err.startswith("privrank: error: "), err
    with Ledger(private_ledger) as led:
        assert led.releases() == []


def test_ldp_kwiksort_with_fewer_rankings_than_items_is_refused_before_the_charge(cli, tmp_path, private_ledger):
    """The query oracle refused n < m after the release was charged."""
    ballots = tmp_path / "ballots.csv"
    labels = [f"x{k}" for k in range(8)]
    ballots.write_text(",".join(f"rank{k + 1}" for k in range(8)) + "\n" +
                       "".join(",".join(labels[k:] + labels[:k]) + "\n" for k in range(5)))
    code, _, err = cli("aggregate", ballots, "--method", "ldp-kwiksort", "--epsilon", "1", "--seed", "1")
    assert code == 2 and "at least as many rankings as items" in err
    with Ledger(private_ledger) as led:
        assert led.releases() == []
