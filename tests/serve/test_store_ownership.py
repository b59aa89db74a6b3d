"""The survey store writes only into a database of its own: a privacy ledger, or any other
application's database, is refused before anything is created in it."""
import hashlib
import sqlite3
from pathlib import Path

import pytest
from serve_helpers import fingerprint

from privrank.errors import InputError
from privrank.ledger import Ledger
from privrank.serve import open_store


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def execute(db, statement: str) -> None:
    """Run one statement in ``db``, as another application would."""
    if isinstance(db, Path):
        with sqlite3.connect(db) as conn:
            conn.execute(statement)
        return
    import psycopg

    with psycopg.connect(db, autocommit=True, connect_timeout=10) as conn:
        conn.execute(statement)


def test_a_ledger_is_refused_and_left_as_it_was(tmp_path):
    path = tmp_path / "ledger.sqlite"
    Ledger(path).close()
    before = digest(path)
    with pytest.raises(InputError, match="another application"):
        open_store(path)
    assert digest(path) == before  # not even switched to another journal mode
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert not tables & {"surveys", "respondents", "reports"}
    Ledger(path).close()  # still a ledger


def test_serve_refuses_a_ledger_and_the_ledger_still_shows(tmp_path, cli, monkeypatch):
    pytest.importorskip("starlette")
    uvicorn = pytest.importorskip("uvicorn")
    served = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: served.append(a))  # never serve in a test
    data, ledger = tmp_path / "votes.csv", tmp_path / "l.sqlite"
    data.write_text("user,item_a,item_b,outcome\nu1,A,B,1\nu2,B,C,1\nu3,A,C,-1\nu4,A,B,1\n")
    assert cli("rank", data, "--ledger", ledger, "--epsilon", "1", "--seed", "1")[0] == 0
    code, _, err = cli("serve", "--demo", "--port", "8765", "--db", ledger)
    assert code == 2 and not served
    assert err.startswith("privrank: error: ") and "another application" in err and "Traceback" not in err
    code, out, err = cli("ledger", "show", "--ledger", ledger)
    assert code == 0 and "releases: 1" in out, err


@pytest.mark.parametrize("statement", [
    "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
    "CREATE TABLE reports (id INTEGER PRIMARY KEY, title TEXT)",  # a name of the store's, not its columns
    "CREATE TABLE respondents (token TEXT PRIMARY KEY, created TEXT NOT NULL)",  # an earlier store's, alone
])
def test_another_applications_database_is_refused(target, statement):
    execute(target, statement)
    with pytest.raises(InputError, match="another application") as refused:
        open_store(target)
    assert "://" not in str(refused.value)  # never a URL: it may hold a password
    if isinstance(target, Path):
        with sqlite3.connect(target) as conn:
            assert {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")} <= \
                {"notes", "reports", "respondents"}


def test_fresh_empty_and_own_databases_open(target, tmp_path):
    with open_store(target) as s:  # fresh
        s.claim(fingerprint("survey"))
        token = s.new_respondent()
        s.add_report(token, key="k" * 22, item_a="A", item_b="B", report=1, epsilon=1.0, max_answers=2)
    with open_store(target) as s:  # its own
        s.claim(fingerprint("survey"))
        assert s.counts() == (1, 1)
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with open_store(empty) as s:
        assert s.counts() == (0, 0)
