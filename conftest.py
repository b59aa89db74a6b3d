"""Fixtures of every test: those under tests/ and the Examples of the docstrings under src/privrank."""
import pytest


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    """Every test and example records its releases in its own ledger and journal, never in the user's."""
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("PRIVRANK_LEDGER", str(path))
    monkeypatch.setenv("PRIVRANK_STATE", str(tmp_path / "state"))
    return path
