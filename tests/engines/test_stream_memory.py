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
warm_up, path, engine, batch = sys.argv[1:]
sufficient_statistics(warm_up, engine=engine, epsilon=1.0, rng=0, batch_size=int(batch))
before = peak()
tally = sufficient_statistics(path, engine=engine, epsilon=1.0, rng=0, batch_size=int(batch))
print(json.dumps({"growth_mb": peak() - before, "records": tally.n_records}))
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


def growth(warm_up, path, engine, n):
    out = subprocess.run([sys.executable, "-c", MEASURE, str(warm_up), str(path), engine, str(1 << 16)],
                         check=True, capture_output=True, text=True, timeout=120)
    result = json.loads(out.stdout)
    assert result["records"] == n
    return result["growth_mb"]


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
