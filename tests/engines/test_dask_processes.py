"""``--engine dask`` against a scheduler and workers started as a cluster's administrator starts them:
the ``dask scheduler`` and ``dask worker`` commands, each its own process, reached by address."""
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("distributed")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = pytest.mark.slow
TIMEOUT = 120  # seconds: the longest any step may wait for the cluster


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    """The address of a scheduler with two single-threaded worker processes, stopped at the end."""
    dask = shutil.which("dask", path=str(Path(sys.executable).parent)) or shutil.which("dask")
    if dask is None:
        pytest.skip("the dask command is not installed (pip install 'dask[distributed]')")
    port, logs = _free_port(), tmp_path_factory.mktemp("cluster")
    address = f"tcp://127.0.0.1:{port}"
    common = ["--no-dashboard"]
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), *common],
                              stdout=subprocess.DEVNULL, stderr=(logs / "scheduler.log").open("w"))]
    procs += [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--memory-limit", "0", *common],
                               stdout=subprocess.DEVNULL, stderr=(logs / f"worker{k}.log").open("w"))
              for k in range(2)]
    try:
        import distributed

        with distributed.Client(address, timeout=TIMEOUT) as client:
            client.wait_for_workers(2, timeout=TIMEOUT)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        deadline = time.monotonic() + 30
        for proc in procs:
            try:
                proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()


@pytest.fixture(scope="module")
def votes(tmp_path_factory):
    """Comparisons of 12 items by 300 users in a Parquet file of 8 row groups (8 partitions), and the item list."""
    rng = np.random.default_rng(5)
    n, labels = 6000, np.array([f"model-{k:02d}" for k in range(12)])
    a = rng.integers(0, 12, n)
    b = (a + rng.integers(1, 12, n)) % 12
    folder = tmp_path_factory.mktemp("votes")
    path = folder / "votes.parquet"
    pq.write_table(pa.table({"user": rng.integers(0, 300, n), "item_a": labels[a], "item_b": labels[b],
                             "outcome": rng.choice([1, -1, 0], n, p=[0.45, 0.45, 0.1])}), path, row_group_size=750)
    items = folder / "models.txt"
    items.write_text("\n".join(labels) + "\n")
    return path, items


def _rank(path, engine, options, ledger, scheduler=None):
    where = ["--engine", engine] + (["--scheduler", scheduler] if scheduler else [])
    run = subprocess.run([sys.executable, "-m", "privrank", "rank", str(path), *where, *options, "--ledger", str(ledger),
                          "--format", "csv"], capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    return run.stdout


@pytest.mark.parametrize("options", [
    ("--mechanism", "debiased-rr", "--epsilon", "1", "--seed", "3"),
    ("--mechanism", "none",),
    ("--mechanism", "objective-perturbation", "--user-epsilon", "1", "--max-answers", "15", "--respondents", "300",
     "--ci", "--seed", "3"),
    ("--mechanism", "noisy-copeland", "--epsilon", "0.5", "--max-answers", "15", "--seed", "3"),
    ("--mechanism", "debiased-rr", "--user-epsilon", "2", "--seed", "3"),
])
def test_a_scheduler_and_worker_processes_give_the_local_output(scheduler, votes, tmp_path, options):
    """Private releases too: per-user bounds and budgets are applied across the workers' partitions."""
    path, items = votes
    options = (*options, "--items", items) if "none" not in options else options
    local = _rank(path, "local", options, tmp_path / "ledger.sqlite")
    assert _rank(path, "dask", options, tmp_path / "ledger.sqlite", scheduler) == local
