"""The dask engine on a LocalCluster of 2 worker processes, including the loss of a worker."""
import os
import signal
import threading
import time

import pytest
from engine_data import assert_same_ranking_tally, assert_same_tally, make_records, write_all

from privrank.engines import sufficient_statistics

distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.slow  # end to end: a cluster of worker processes

TIMEOUT = 120  # seconds; no test of this module may wait longer for the cluster


@pytest.fixture(scope="module")
def cluster():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit=0) as local:
        with distributed.Client(local, timeout=TIMEOUT) as client:
            client.wait_for_workers(2, timeout=TIMEOUT)
            client.run(lambda: __import__("privrank.engines"))  # workers import privrank once, up front
            yield local, client


@pytest.mark.parametrize("kind", ["raw", "randomized", "reports"])
def test_cluster_gives_the_local_tally(cluster, raw_files, report_files, kind):
    local, _ = cluster
    files = report_files if kind == "reports" else raw_files
    eps = 0.7 if kind == "randomized" else None
    ref = sufficient_statistics(files["csv"], engine="local", epsilon=eps, rng=4)
    for fmt in ("csv", "parquet", "parquet_dict"):
        assert_same_tally(sufficient_statistics(files[fmt], engine="dask", epsilon=eps, rng=4,
                                                scheduler=local.scheduler_address), ref)


@pytest.mark.parametrize("statistic,eps", [(None, None), ("pairwise", 0.7), ("positions", 0.7)])
def test_cluster_gives_the_local_ranking_tally(cluster, ranking_files, statistic, eps):
    local, _ = cluster
    kwargs = dict(kind="rankings", statistic=statistic, epsilon=eps, rng=4)
    ref = sufficient_statistics(ranking_files["order_csv"], engine="local", **kwargs)
    for fmt in ("order_csv", "order_dict"):
        assert_same_ranking_tally(sufficient_statistics(ranking_files[fmt], engine="dask",
                                                        scheduler=local.scheduler_address, **kwargs), ref)


def _partials(dask_scheduler):
    """(finished, running-on worker addresses) of the engine's per-partition tasks."""
    tasks = [ts for key, ts in dask_scheduler.tasks.items() if str(key).startswith("_partial")]
    done = sum(ts.state == "memory" for ts in tasks)
    return done, [ts.processing_on.address for ts in tasks if ts.state == "processing" and ts.processing_on]


def test_killing_a_worker_mid_run_does_not_change_the_result(cluster, tmp_path):
    local, client = cluster
    path = write_all(tmp_path, make_records(n=120_000, seed=7), row_group=1000)["parquet"]  # 120 partitions
    ref = sufficient_statistics(path, engine="stream", epsilon=1.0, rng=8)
    result, errors = {}, []

    def run():
        try:
            result["tally"] = sufficient_statistics(path, engine="dask", epsilon=1.0, rng=8,
                                                    scheduler=local.scheduler_address)
        except Exception as exc:  # reported below
            errors.append(exc)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    pids = client.run(os.getpid)
    victim = None
    deadline = time.monotonic() + TIMEOUT
    while victim is None and thread.is_alive() and time.monotonic() < deadline:
        done, running = client.run_on_scheduler(_partials)
        if done >= 1 and running:
            victim = running[0]
            os.kill(pids[victim], signal.SIGKILL)
        time.sleep(0.01)
    assert victim is not None, "the run ended before a worker could be killed mid-run"
    thread.join(TIMEOUT)
    assert not thread.is_alive() and not errors, errors
    assert victim not in client.scheduler_info()["workers"]  # the worker is gone; its tasks were rerun
    assert_same_tally(result["tally"], ref)


@pytest.mark.parametrize("address", ["garbage", "tcp://127.0.0.1:99999"])
def test_a_malformed_scheduler_address_is_refused_and_the_process_exits(address, tmp_path):
    import subprocess
    import sys
    path = tmp_path / "r.csv"
    path.write_text("rank1,rank2,rank3\na,b,c\nb,a,c\n")
    run = subprocess.run([sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main(sys.argv[1:]))", "aggregate", str(path), "--engine", "dask",
                          "--scheduler", address], capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 2 and "not a Dask scheduler address" in run.stderr and "Traceback" not in run.stderr
