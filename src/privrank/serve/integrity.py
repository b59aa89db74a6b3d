"""The respondent page's files and their Subresource Integrity hashes.

The page is the code that randomizes every answer, so a respondent (or an auditor on their
behalf) must be able to check that the server serves the released files and nothing else:
``privrank serve`` prints the SHA-384 of every served static file at start-up, in the form of an
``integrity="sha384-..."`` attribute, which anyone can compare with the hashes of the released
package and with ``curl -s URL | openssl dgst -sha384 -binary | base64``.
"""
from __future__ import annotations

import base64
import hashlib
from importlib import resources
from pathlib import Path


def static_dir() -> Path:
    """The respondent page's directory inside the installed package."""
    return Path(str(resources.files("privrank.serve") / "static"))


def sri_hash(data: bytes) -> str:
    """The Subresource Integrity value of ``data``: ``sha384-`` and the base64 of its SHA-384."""
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode("ascii")


def static_hashes(directory: Path | None = None) -> dict[str, str]:
    """``{file name: SRI hash}`` of every file served under ``/static/``, by name."""
    directory = static_dir() if directory is None else Path(directory)
    if not directory.is_dir():
        return {}
    return {f.name: sri_hash(f.read_bytes()) for f in sorted(directory.iterdir()) if f.is_file()}
