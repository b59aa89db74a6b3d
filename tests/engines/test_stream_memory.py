"""Peak memory of the stream engine does not grow with the file (measured in subprocesses)."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
if not Path("/proc/self/status").exists():
    pytest.skip("peak memory is read from /proc (Linux)", allow_module_level=True)

# Prints how much the peak resident memory (VmHWM) grew while the engine read a file, in MB. A first
# run on a small file loads every library the engine uses, which is not what is measured.
MEASURE = """
import json, sys
from privrank.engines import sufficient_statistics
def peak():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
warm_up, path, engine, batch, kind = sys.argv[1:]
options = dict(epsilon=1.0, rng=0) if kind == "comparisons" else dict(kind="rankings")  # both statistics
sufficient_statistics(warm_up, engine=engine, batch_size=int(batch), **options)
before = peak()
tally = sufficient_statistics(path, engine=engine, batch_size=int(batch), **options)
print(json.dumps({"growth_mb": peak() - before,
                  "records": tally.n_records if kind == "comparisons" else tally.n_voters}))
"""


def write(path, n, m=40, row_group=1 << 16):
    rng = np.random.default_rng(0)
    with pq.ParquetWriter(path, pa.schema([("user", pa.int64()), ("item_a", pa.int64()),
                                           ("item_b", pa.int64()), ("outcome", pa.int8())])) as writer:
        for start in range(0, n, row_group):
            size = min(row_group, n - start)
            a = rng.integers(0, m, size)
            writer.write_table(pa.table({"user": rng.integers(0, 5000, size), "item_a": a,
                                         "item_b": (a + rng.integers(1, m, size)) % m,
                                         "outcome": rng.choice(np.array([1, -1, 0], dtype=np.int8), size)}),
                               row_group_size=row_group)


def write_rankings(path, n, m=8, row_group=1 << 16):
    """``n`` complete rankings of ``m`` integer-labelled items, order layout."""
    rng = np.random.default_rng(0)
    with pq.ParquetWriter(path, pa.schema([(f"rank{k + 1}", pa.int16()) for k in range(m)])) as writer:
        for start in range(0, n, row_group):
            orders = rng.permuted(np.tile(np.arange(m, dtype=np.int16), (min(row_group, n - start), 1)), axis=1)
            writer.write_table(pa.table({f"rank{k + 1}": orders[:, k] for k in range(m)}), row_group_size=row_group)


def growth(warm_up, path, engine, n, kind="comparisons", batch=1 << 16):
    out = subprocess.run([sys.executable, "-c", MEASURE, str(warm_up), str(path), engine, str(batch), kind],
                         check=True, capture_output=True, text=True, timeout=120)
    result = json.loads(out.stdout)
    assert result["records"] == n
    return result["growth_mb"]


@pytest.mark.slow
def test_stream_memory_is_bounded_whatever_the_file_size(tmp_path):
    tiny, small, large = tmp_path / "tiny.parquet", tmp_path / "small.parquet", tmp_path / "large.parquet"
    write(tiny, 1000)
    write(small, 500_000)
    write(large, 4_000_000)  # 100 MB as flat arrays (8 + 8 + 8 + 1 bytes per record)
    stream_small = growth(tiny, small, "stream", 500_000)
    stream_large = growth(tiny, large, "stream", 4_000_000)
    # 8x the records: the stream engine's peak grows by a few batches' worth, not with the data
    assert stream_large < stream_small + 16 and stream_large < 64, (stream_small, stream_large)
    # the same measurement sees the local engine, which holds every record, grow with the file
    assert growth(tiny, large, "local", 4_000_000) > stream_large + 100


@pytest.mark.slow
def test_stream_memory_for_rankings_is_bounded_whatever_the_file_size(tmp_path):
    tiny, small, large = tmp_path / "tiny.parquet", tmp_path / "small.parquet", tmp_path / "large.parquet"
    write_rankings(tiny, 1000)
    write_rankings(small, 50_000)
    write_rankings(large, 400_000)  # 3.2 million cells, 26 MB as int64 orders
    stream_small = growth(tiny, small, "stream", 50_000, "rankings", 1 << 14)  # 131,072 cells a batch
    stream_large = growth(tiny, large, "stream", 400_000, "rankings", 1 << 14)
    # 8x the rankings: the stream engine's peak grows by a few batches' worth, not with the data
    assert stream_large < stream_small + 16 and stream_large < 64, (stream_small, stream_large)
    # the same measurement sees the local engine, which holds every ranking, grow with the file
    assert growth(tiny, large, "local", 400_000, "rankings") > stream_large + 100
