"""Helpers of the survey-server tests: a free port for a test server, a report's idempotency key."""
import secrets
import socket


def free_port() -> int:
    """A free TCP port on 127.0.0.1 for a test server."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def key() -> str:
    """A report's idempotency key, as the page draws it (16 random bytes, base64url)."""
    return secrets.token_urlsafe(16)
