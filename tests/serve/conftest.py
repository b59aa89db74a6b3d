"""Fixtures of the survey-store tests: a fresh SQLite file, or a new database on a throw-away
PostgreSQL server (started once per session)."""
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


@pytest.fixture(scope="session")
def postgres_server():
    """A throw-away PostgreSQL server on 127.0.0.1 (a free port, socket in its temp dir), stopped at teardown.

    initdb refuses to run as root, so as root it runs as the ``postgres`` OS user; every command has a
    time limit, and the server is killed if ``pg_ctl stop`` does not stop it.
    """
    bindir = _pg_bindir()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found: apt-get install postgresql")
    as_user = []
    root = Path(tempfile.mkdtemp(prefix="privrank-pg-"))
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            pytest.skip("PostgreSQL runs as a non-root user: create the postgres OS user (apt-get install postgresql)")
        os.chown(root, pw.pw_uid, pw.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log = root / "data", root / "server.log"

    def run(*argv, timeout, check=True):
        return subprocess.run(as_user + [str(a) for a in argv], cwd=root, capture_output=True, text=True,
                              timeout=timeout, check=check)
    port = free_port()
    try:
        run(bindir / "initdb", "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", timeout=120)
        # fsync off: durability is the server's business, these tests check the store's logic
        options = f"-c listen_addresses=127.0.0.1 -p {port} -k {root} -c fsync=off"
        run(bindir / "pg_ctl", "-D", data, "-l", log, "-o", options, "-w", "-t", "60", "start", timeout=90)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        shutil.rmtree(root, ignore_errors=True)
        pytest.fail(f"could not start PostgreSQL: {exc}\n{getattr(exc, 'stderr', '')}")
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        try:
            run(bindir / "pg_ctl", "-D", data, "-m", "fast", "-w", "-t", "30", "stop", timeout=60, check=False)
        except subprocess.TimeoutExpired:
            pass
        pidfile = data / "postmaster.pid"
        if pidfile.exists():  # still running: kill it
            try:
                os.kill(int(pidfile.read_text().split()[0]), 9)
            except (ProcessLookupError, ValueError):
                pass
        shutil.rmtree(root, ignore_errors=True)


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
    from privrank.serve.store import open_store

    with open_store(target) as s:
        yield s
