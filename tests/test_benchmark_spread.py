"""benchmarks/spread.py: every benchmark's timing -- interleaved rounds, their spread, README sections."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import spread  # noqa: E402


def test_rounds_rotate_the_order_and_keep_every_time():
    calls = []
    contenders = {name: (lambda name=name: calls.append(name) or name) for name in "abc"}
    times, outputs = spread.interleaved(contenders, rounds=3, repeat=2)
    assert calls == list("aabbcc" "bbccaa" "ccaabb")
    assert outputs == {"a": "a", "b": "b", "c": "c"}
    assert all(len(t) == 3 and min(t) >= 0 for t in times.values())


def test_spread_and_ratios():
    assert spread.spread([3.0, 1.0, 2.0, 10.0, 4.0], "{:.1f}") == "3.0 (1.0-10.0)"
    assert spread.ratios([4.0, 9.0], [2.0, 3.0]) == [2.0, 3.0]
    assert "load average" in spread.load() and "cores" in spread.load()


def test_a_readme_section_is_replaced_between_its_markers_only(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- bench:x -->\nold table\n<!-- /bench:x -->\nafter\n<!-- bench:y -->\nkeep\n"
                      "<!-- /bench:y -->\n")
    spread.readme_section("x", "| new |", "python benchmarks/bench_x.py --readme", path=readme)
    text = readme.read_text()
    assert "old table" not in text and "| new |" in text and "keep" in text and text.startswith("intro\n")
    assert "`python benchmarks/bench_x.py --readme` on " in text and text.count("<!-- bench:x -->") == 1
    with pytest.raises(SystemExit, match="no single"):
        spread.readme_section("missing", "t", "c", path=readme)


def test_the_readme_has_every_section_the_benchmarks_write():
    text = spread.README.read_text()
    for name in ("btl", "local", "kemeny", "arena", "serve", "utility"):
        assert text.count(f"<!-- bench:{name} -->") == 1 and text.count(f"<!-- /bench:{name} -->") == 1


def test_the_command_is_the_one_the_script_ran_with(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/somewhere/benchmarks/bench_x.py", "--rounds", "7", "--readme"])
    assert spread.command() == "python benchmarks/bench_x.py --rounds 7 --readme"


@pytest.mark.slow
def test_the_arena_benchmark_runs_end_to_end(tmp_path, monkeypatch, capsys):
    """A tiny arena: its privrank commands write beside, not inside, the state directory they are given."""
    import bench_arena

    monkeypatch.setattr(bench_arena, "DATA", tmp_path)
    bench_arena.main(["--battles", "2000", "--models", "8", "--rounds", "1", "--recipe-rounds", "0"])
    out = capsys.readouterr().out
    assert "privrank private:" in out and "Kendall tau private vs non-private" in out


def test_make_bench_runs_every_benchmark_script():
    """``make bench`` is the one command that runs them all: a new script is added to it."""
    root = Path(__file__).resolve().parents[1]
    makefile = (root / "Makefile").read_text()
    recipe = makefile[makefile.index("\nbench:"):makefile.index("\nfrontier:")]
    scripts = sorted(p.name for p in (root / "benchmarks").glob("bench_*.py"))
    assert scripts and [s for s in scripts if f"benchmarks/{s}" not in recipe] == []
