"""Fixtures of the survey-store tests: a fresh SQLite file, or a new database on a throw-away
PostgreSQL server (started once per session, or for one test of its own that restarts or stops it)."""
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from serve_helpers import free_port


def _pg_bindir() -> Path | None:
    preferred = Path("/usr/lib/postgresql/15/bin")
    found = [preferred] + sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    which = shutil.which("initdb")
    found += [Path(which).parent] if which else []
    return next((d for d in found if (d / "initdb").is_file() and (d / "pg_ctl").is_file()), None)


class PostgresCluster:
    """A throw-away PostgreSQL server on 127.0.0.1 (a free port, socket in its temp dir) at :attr:`url`:
    :meth:`create`, then :meth:`stop`, :meth:`start` or :meth:`restart` (``-m fast``, as an
    administrator would), and :meth:`destroy`.

    initdb refuses to run as root, so as root it runs as the ``postgres`` OS user; every command has a
    time limit, and the server is killed if ``pg_ctl stop`` does not stop it.
    """

    def __init__(self):
        self.bindir = _pg_bindir()
        if self.bindir is None:
            pytest.skip("PostgreSQL server binaries not found: apt-get install postgresql")
        self.as_user = []
        self.root = Path(tempfile.mkdtemp(prefix="privrank-pg-"))
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError:
                shutil.rmtree(self.root)
                pytest.skip("PostgreSQL runs as a non-root user: create the postgres OS user "
                            "(apt-get install postgresql)")
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self.as_user = ["runuser", "-u", "postgres", "--"]
        self.data, self.log, self.port = self.root / "data", self.root / "server.log", free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"

    def run(self, *argv, timeout, check=True):
        return subprocess.run(self.as_user + [str(a) for a in argv], cwd=self.root, capture_output=True, text=True,
                              timeout=timeout, check=check)

    def pg_ctl(self, *argv, timeout=90, check=True):
        return self.run(self.bindir / "pg_ctl", "-D", self.data, *argv, timeout=timeout, check=check)

    def create(self) -> None:
        """initdb and start the server (its directory is removed if it fails)."""
        try:
            self.run(self.bindir / "initdb", "-D", self.data, "-A", "trust", "-U", "postgres", "-E", "UTF8",
                     "--no-sync", timeout=120)
            self.start()
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            shutil.rmtree(self.root, ignore_errors=True)
            pytest.fail(f"could not start PostgreSQL: {exc}\n{getattr(exc, 'stderr', '')}")

    def start(self) -> None:
        self.pg_ctl("-l", self.log, "-o", self.options, "-w", "-t", "60", "start")

    @property
    def options(self) -> str:
        # fsync off: durability is the server's business, these tests check the store's logic
        return f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} -c fsync=off"

    def restart(self) -> None:
        self.pg_ctl("-l", self.log, "-o", self.options, "-m", "fast", "-w", "-t", "60", "restart")

    def stop(self) -> None:
        self.pg_ctl("-m", "fast", "-w", "-t", "30", "stop", timeout=60)

    def destroy(self) -> None:
        """Stop the server (killed if ``pg_ctl stop`` does not stop it) and remove its directory."""
        try:
            self.pg_ctl("-m", "fast", "-w", "-t", "30", "stop", timeout=60, check=False)
        except subprocess.TimeoutExpired:
            pass
        pidfile = self.data / "postmaster.pid"
        if pidfile.exists():  # still running: kill it
            try:
                os.kill(int(pidfile.read_text().split()[0]), 9)
            except (ProcessLookupError, ValueError):
                pass
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a throw-away PostgreSQL server shared by the session's tests, stopped at teardown."""
    cluster = PostgresCluster()
    cluster.create()
    try:
        yield cluster.url
    finally:
        cluster.destroy()


@pytest.fixture
def postgres_cluster():
    """A throw-away PostgreSQL server of this test's own (a :class:`PostgresCluster`, running): a test may
    restart or stop it without touching the others."""
    cluster = PostgresCluster()
    cluster.create()
    try:
        yield cluster
    finally:
        cluster.destroy()


@pytest.fixture(params=["sqlite", "postgresql"])
def target(request, tmp_path):
    """Where a fresh store lives: a SQLite file, or a new database on the PostgreSQL server."""
    if request.param == "sqlite":
        yield tmp_path / "reports.sqlite"
        return
    import psycopg

    server = request.getfixturevalue("postgres_server")
    name = f"t_{uuid.uuid4().hex}"
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield f"{server}/{name}"
    with psycopg.connect(f"{server}/postgres", autocommit=True, connect_timeout=10) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def store(target):
    """A fresh store at ``target`` (SQLite and PostgreSQL), closed after the test."""
    from privrank.serve import open_store

    with open_store(target) as s:
        yield s
