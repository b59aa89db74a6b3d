"""A comparisons file too large for memory is refused with a pointer to --engine stream, never a
MemoryError traceback."""
import gzip
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import privrank as pr
from privrank.data import comparison_files
from privrank.errors import InputError

PRIVRANK = Path(sys.executable).with_name("privrank")


def votes(tmp_path) -> Path:
    path = tmp_path / "votes.csv"
    path.write_text("user,item_a,item_b,outcome\nu1,A,B,1\nu2,B,C,1\nu3,A,C,-1\n")
    return path


def out_of_memory(*args, **kwargs):
    raise MemoryError("Unable to allocate 763. MiB for an array with shape (100000000,) and data type int64")


def test_memory_error_while_reading_says_use_the_stream_engine(tmp_path, monkeypatch):
    monkeypatch.setattr(comparison_files, "label_indices", out_of_memory)
    with pytest.raises(InputError, match="--engine stream") as refused:
        pr.read_comparisons(votes(tmp_path))
    assert "MiB" not in str(refused.value) and "100000000" not in str(refused.value)


def test_arrow_memory_error_while_reading_too(tmp_path, monkeypatch):
    pa = pytest.importorskip("pyarrow")

    def batches(self, batch_size=None):
        raise pa.ArrowMemoryError("malloc of size 1073741824 failed")
        yield
    monkeypatch.setattr(comparison_files.ComparisonFile, "raw_batches", batches)
    with pytest.raises(InputError, match="do not fit in memory"):
        pr.read_comparisons(votes(tmp_path))


def test_cli_prints_an_error_not_a_traceback(tmp_path, monkeypatch, cli):
    monkeypatch.setattr(comparison_files, "label_indices", out_of_memory)
    code, out, err = cli("rank", votes(tmp_path), "--epsilon", "1")
    assert code == 2 and out == ""
    assert err.startswith("privrank: error: ") and "--engine stream" in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or not PRIVRANK.exists(),
                    reason="address-space limits as on Linux, and the privrank script")
def test_a_real_out_of_memory_read_under_a_limit(tmp_path):
    """20M rows under a 1.25 GB address-space limit (the in-memory read needs about 2 GB): exit 2 and
    the message; skipped where even a tiny file does not run under that limit."""
    import resource

    limit = 1_250_000_000

    def run(path):
        env = dict(os.environ, OMP_NUM_THREADS="2", MALLOC_ARENA_MAX="2")
        return subprocess.run([str(PRIVRANK), "rank", str(path), "--epsilon", "1", "--seed", "1"],
                              capture_output=True, text=True, timeout=60, env=env,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    if run(votes(tmp_path)).returncode != 0:
        pytest.skip("privrank does not start under a 1.25 GB address-space limit here")
    big = tmp_path / "many.csv.gz"
    big.write_bytes(gzip.compress(b"user,item_a,item_b,outcome\n" + b"u,A,B,1\n" * 20_000_000, compresslevel=1))
    start = time.monotonic()
    done = run(big)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("privrank: error: ") and "--engine stream" in done.stderr
    assert "Traceback" not in done.stderr and time.monotonic() - start < 60
