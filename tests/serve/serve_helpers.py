"""Helpers of the survey-server tests: a free port for a test server, waiting for it to answer, a report's
idempotency key, SQL run on a store's database from outside the store."""
import hashlib
import secrets
import socket
import sqlite3
import time
from pathlib import Path


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a test server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answering(base: str, proc, seconds: float) -> bool:
    """Whether the server at ``base`` answers ``GET /api/survey`` with 200 before its process ``proc`` ends
    and within ``seconds``, asking again until then."""
    import httpx

    deadline = time.monotonic() + seconds
    while True:
        try:
            if httpx.get(f"{base}/api/survey", timeout=5).status_code == 200:
                return True
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def key() -> str:
    """A report's idempotency key, as the page draws it (16 random bytes, base64url)."""
    return secrets.token_urlsafe(16)


def execute(target, *statements) -> None:
    """Run SQL on the database at ``target`` (a SQLite path or a PostgreSQL URL) directly, outside the store."""
    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            for statement in statements:
                conn.execute(statement)
        return
    import psycopg

    with psycopg.connect(target, autocommit=True, connect_timeout=10) as conn:
        for statement in statements:
            conn.execute(statement)


def fingerprint(name: str) -> str:
    """A survey's fingerprint for a store test, of the shape :meth:`Survey.fingerprint` gives (a hex SHA-256)."""
    return hashlib.sha256(name.encode()).hexdigest()
