"""``privrank reproduce``: the whole pipeline on the quick grid with two replications per cell."""
from __future__ import annotations

import csv

import pytest

from privrank.cli import main


@pytest.mark.slow
def test_reproduce_xu_writes_every_output(tmp_path, capsys):
    out = tmp_path / "xu"
    code = main(["reproduce", "xu", "--quick", "--reps", "2", "--out", str(out), "--seed", "4"])
    printed = capsys.readouterr().out
    assert code in (0, 1)  # two replications per cell are too few for every claim: exit 1 says so
    with open(out / "claims.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 37 and list(rows[0]) == ["id", "claim", "expected", "observed", "holds"]
    assert code == (0 if all(r["holds"] in ("True", "skipped") for r in rows) else 1)
    with open(out / "results.csv", newline="") as fh:
        header = next(csv.reader(fh))
    assert header[0] == "experiment" and header[-3:] == ["rep", "metric", "value"]
    assert "claims:" in printed and (out / "summary.md").exists() and (out / "cells.jsonl").exists()


def test_reproduce_rejects_unknown_study_and_bad_options(tmp_path, capsys):
    assert main(["reproduce", "nosuch", "--out", str(tmp_path)]) == 2
    assert "unknown study 'nosuch'; available: " in capsys.readouterr().err
    assert main(["reproduce", "xu", "--quick", "--reps", "1", "--out", str(tmp_path)]) == 2
    with pytest.raises(SystemExit) as exit_:  # a usage error of the parser
        main(["reproduce", "xu", "--quick", "--reps", "2", "--seed", "-1", "--out", str(tmp_path)])
    assert exit_.value.code == 2
    with pytest.raises(SystemExit):
        main(["reproduce"])


def test_out_that_is_a_file_is_a_clear_error(tmp_path, capsys):
    # regression (issue 16): reproduce --out FILE ended in a FileExistsError traceback
    from privrank.cli import main
    existing = tmp_path / "results"
    existing.write_text("x")
    assert main(["reproduce", "xu", "--quick", "--out", str(existing)]) == 2
    assert "not a directory" in capsys.readouterr().err
