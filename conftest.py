"""Fixtures of every test: those under tests/ and the Examples of the docstrings under src/privrank."""
import pytest

# conftest files hold fixtures, not examples: collected as modules for their doctests, the several
# conftest.py of tests/ (no packages) would clash by name
collect_ignore_glob = ["tests/*conftest.py"]


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    """Every test and example records its releases in its own ledger and journal, never in the user's."""
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("PRIVRANK_LEDGER", str(path))
    monkeypatch.setenv("PRIVRANK_STATE", str(tmp_path / "state"))
    return path
