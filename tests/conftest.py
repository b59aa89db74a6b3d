import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True)
def private_ledger(tmp_path, monkeypatch):
    """Every test records its CLI releases in its own ledger and journal, never in the user's."""
    path = tmp_path / "ledger.sqlite"
    monkeypatch.setenv("PRIVRANK_LEDGER", str(path))
    monkeypatch.setenv("PRIVRANK_STATE", str(tmp_path / "state"))
    return path


@pytest.fixture
def cli(capsys):
    """Run ``privrank ARGV...``; returns ``(exit code, stdout, stderr)``."""
    from privrank.cli import main

    def run(*argv):
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return code, out, err
    return run
