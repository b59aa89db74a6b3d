"""A small command imports what its path needs and nothing more.

Ranking the shipped LLMFAO file (8,931 comparisons) runs without scipy, pandas, matplotlib or dask:
each would cost more CPU than the ranking itself (scipy.special or pandas about a quarter of a
second each). Nor does it import ``pyarrow.compute`` (its import wraps and documents every Arrow
function: a tenth of the command's CPU time; privrank.data.arrow_compute calls the functions the
readers use), ``numpy.ma`` (imported by pyarrow when handed a numpy array) or the modules of
rankings (the data.io facade, PrefLib and ballot readers). The modules a command imported are read
from ``sys.modules``, which is robust on a loaded machine where a CPU time is not
(benchmarks/bench_cli.py times the commands).
"""
import subprocess
import sys
from pathlib import Path

import pytest

import privrank

LLMFAO = str(Path(privrank.__file__).parent / "datasets_shipped" / "llmfao_crowd.csv")
HEAVY = ("scipy", "pandas", "matplotlib", "dask")
#: modules a ranking of comparisons has no use for
UNUSED = ("pyarrow.compute", "numpy.ma", "privrank.data.io", "privrank.data.rankings", "privrank.data.ranking_files",
          "privrank.data.preflib", "privrank.data.ballots")


def imported(*argv: str) -> set[str]:
    """The modules in ``sys.modules`` after the ``privrank`` command ran ``argv`` in a fresh process as
    its program (as the console script calls it; its exit code must be 0)."""
    code = ("import sys\nfrom privrank.cli import main\n"
            f"sys.argv = ['privrank', *{list(argv)!r}]\ncode = main()\n"
            "print('MODULES', *sorted(sys.modules), file=sys.stderr)\nsys.exit(code)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stderr.rpartition("MODULES ")[2].split())


@pytest.mark.parametrize("argv", [
    ("rank", LLMFAO, "--epsilon", "1", "--seed", "0"),
    ("rank", LLMFAO, "--user-epsilon", "4", "--seed", "0", "--format", "json"),
    ("rank", LLMFAO, "--mechanism", "none", "--format", "csv"),
    ("top-k", LLMFAO, "--k", "5", "--mechanism", "debiased-rr", "--epsilon", "1", "--seed", "0"),
])
def test_ranking_a_small_file_imports_no_heavy_library(argv):
    modules = imported(*argv)
    assert "privrank.pairwise.btl" in modules and "numpy" in modules  # the fit ran in the child
    assert sorted(m for m in modules if m.partition(".")[0] in HEAVY) == []
    assert sorted(modules.intersection(UNUSED)) == []


def test_a_command_that_needs_pandas_still_gets_it(tmp_path):
    """Keeping pandas out is the command line's choice, not the library's: the library, and a
    command run in the same process as other code (``main(argv)``), import it as usual."""
    code = ("import sys\nfrom privrank.cli import main\n"
            f"main(['rank', {LLMFAO!r}, '--mechanism', 'none', '--quiet'])\n"
            "import pandas\nprint(pandas.__name__)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("pandas")
