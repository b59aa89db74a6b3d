"""benchmarks/bench_utility.py: the utility frontier's quick grid runs, and its JSON has the schema the
planner reads, every private method of each family, and the non-private reference."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_utility

from privrank.cli.aggregate import PRIVATE_METHODS
from privrank.cli.rank import CENTRAL_MECHANISMS

ROW_KEYS = {"family": str, "trust": str, "model": str, "m": int, "n": int, "method": str, "kendall": float,
            "kendall_se": float, "recall": float, "recall_se": float, "seeds": int, "seconds": float}


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("frontier")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "Agg"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_utility.py"), "--quick", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return out


def test_the_json_has_the_schema_the_planner_reads(quick):
    data = json.loads((quick / "frontier.json").read_text())
    assert {"generated", "command", "grid", "models", "rows"} <= set(data)
    assert "--quick" in data["command"]
    assert set(data["grid"]["models"]) <= set(data["models"])
    for row in data["rows"]:
        for key, kind in ROW_KEYS.items():
            assert isinstance(row[key], kind), (key, row)
        assert row["family"] in ("rankings", "comparisons")
        assert row["trust"] in ("central", "local", "none")
        assert (row["epsilon"] is None) == (row["method"] == "none")
        assert 0.0 <= row["kendall"] <= 1.0 and 0.0 <= row["recall"] <= 1.0 and row["seconds"] >= 0
        assert row["model"] in data["models"]
    # one row per line: compact, and readable in a diff
    lines = (quick / "frontier.json").read_text().splitlines()
    assert sum(line.strip().startswith('{"family"') for line in lines) == len(data["rows"])


def test_every_method_of_each_family_appears(quick):
    rows = json.loads((quick / "frontier.json").read_text())["rows"]
    ranking = {r["method"] for r in rows if r["family"] == "rankings"}
    comparison = {r["method"] for r in rows if r["family"] == "comparisons"}
    assert set(PRIVATE_METHODS) <= ranking
    assert {"noisy-matrix+kwiksort", "noisy-matrix+borda", "noisy-matrix+copeland", "none"} <= ranking
    assert {"debiased-rr", "laplace", *CENTRAL_MECHANISMS, "none"} <= comparison
    assert {m.name for m in bench_utility.RANKING_METHODS} == ranking - {"none"}


def test_the_page_and_plot_are_written(quick):
    page = (quick / "frontier.md").read_text()
    assert page.startswith("# The utility frontier") and "](frontier.png)" in page and "**" in page
    assert (quick / "frontier.png").stat().st_size > 1000
    assert not (quick / "frontier.partial.jsonl").exists()


def test_plackett_luce_sampler_puts_heavier_items_first():
    import numpy as np

    R = bench_utility.sample_plackett_luce([3.0, 0.0, -3.0], 2000, np.random.default_rng(0))
    first = np.bincount(R.orders[:, 0], minlength=3) / 2000
    assert first[0] > 0.9 and first[2] < 0.01  # P(item 0 first) = e^3 / (e^3 + 1 + e^-3)


def test_the_shipped_frontier_is_the_same_schema():
    path = ROOT / "src" / "privrank" / "frontier.json"
    data = json.loads(path.read_text())
    assert data["rows"] and all(set(ROW_KEYS) <= set(row) for row in data["rows"])


def test_a_page_from_a_json_leaves_the_json_as_it_is(quick, tmp_path, monkeypatch):
    """``--from-json`` (``make bench``'s utility table) rewrites the page and plot, never the frontier it reads."""
    source = quick / "frontier.json"
    before = source.read_bytes()
    monkeypatch.setenv("MPLBACKEND", "Agg")
    bench_utility.main(["--from-json", str(source), "--out", str(quick)])
    assert source.read_bytes() == before and (quick / "frontier.md").exists()
