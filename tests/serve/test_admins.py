"""Named admin tokens: each admin's token kept hashed under their name, revocable, refused by a running server
within a second or two of its revocation; a database of one unnamed token migrated so that token is the owner's;
the command line's refusals."""
import hashlib
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from serve_helpers import execute
from test_serve_cli import COMMAND, SURVEY, Server, environment, served  # noqa: F401 (a fixture)
from test_store_rules import rows

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.admins import OWNER, admin_token_hash
from privrank.serve.schema import ADMINS_TABLE, SCHEMA
from privrank.serve.store import utc_day

httpx = pytest.importorskip("httpx")

TOKENS = ("alice-admin-token-0123456789", "bob-admin-token-0123456789")


def test_admins_are_named_listed_and_revoked(store):
    alice, bob = (admin_token_hash(t) for t in TOKENS)
    store.add_admin("alice", alice)
    store.add_admin("bob.smith", bob)
    assert store.admins() == [("alice", alice, utc_day()), ("bob.smith", bob, utc_day())]
    with pytest.raises(InputError, match="there is an admin named 'alice' already"):
        store.add_admin("alice", bob)
    store.add_admin("alice", bob, replace=True)  # a new token under the same name
    assert store.admins()[0] == ("alice", bob, utc_day())
    store.revoke_admin("alice")
    assert [name for name, _, _ in store.admins()] == ["bob.smith"]
    with pytest.raises(InputError, match="no admin named 'alice'"):
        store.revoke_admin("alice")
    with pytest.raises(InputError, match="the survey's last admin"):
        store.revoke_admin("bob.smith")
    assert [name for name, _, _ in store.admins()] == ["bob.smith"]


@pytest.mark.parametrize("name", ["", "Alice", "-alice", "a" * 41, "al ice", "alice\n", "ålice", 7])
def test_an_admin_name_is_lowercase_letters_digits_and_punctuation(store, name):
    with pytest.raises(InputError, match="1 to 40 characters of lowercase letters"):
        store.add_admin(name, admin_token_hash(TOKENS[0]))
    assert store.admins() == []


def test_two_revocations_at_once_leave_one_admin(store):
    """Each revocation counts the admins under their rows' locks: two at once never leave the dashboard without
    a token (on PostgreSQL, two transactions each counting two admins would otherwise both delete)."""
    from test_store_rules import race

    for name, token in zip(("alice", "bob"), TOKENS):
        store.add_admin(name, admin_token_hash(token))
    results = race(2, lambda k: store.revoke_admin(("alice", "bob")[k]))
    assert sum(isinstance(r, InputError) and "last admin" in str(r) for r in results) == 1
    assert len(store.admins()) == 1


def one_admin_store(target, digest: str | None) -> None:
    """Write a store of the schema of one unnamed admin token (``admin(token_hash)``) at ``target``."""
    types = {"id_type": "INTEGER", "real": "REAL"} if isinstance(target, Path) else \
        {"id_type": "BIGSERIAL", "real": "DOUBLE PRECISION"}
    schema = [s.format(**types) for s in SCHEMA if s != ADMINS_TABLE] + ["CREATE TABLE admin (token_hash TEXT NOT NULL)"]
    execute(target, *schema, *([] if digest is None else [f"INSERT INTO admin VALUES ('{digest}')"]))


def test_a_store_of_one_admin_token_is_migrated_so_it_is_the_owners(target):
    digest = admin_token_hash(TOKENS[0])
    one_admin_store(target, digest)
    with open_store(target) as store:
        assert store.admins() == [(OWNER, digest, utc_day())]
        store.add_admin("alice", admin_token_hash(TOKENS[1]))
    with open_store(target) as store:  # opened again: nothing left to migrate
        assert [name for name, _, _ in store.admins()] == ["alice", OWNER]
    tables = "SELECT name FROM sqlite_master WHERE type = 'table'" if isinstance(target, Path) else \
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'"
    assert ("admin",) not in rows(target, tables) and ("admins",) in rows(target, tables)


def test_a_store_of_no_admin_token_is_migrated_with_none(target):
    one_admin_store(target, None)
    with open_store(target) as store:
        assert store.admins() == []


# ----------------------------------------------------------------------------------------- command line

@pytest.fixture
def survey_db(tmp_path, served, cli):  # noqa: F811
    """A survey file served once (its database holds the owner's token): ``(folder, owner's token)``."""
    (tmp_path / "fruit.toml").write_text(SURVEY)
    code, _, err = cli("serve", "--port", "0", tmp_path / "fruit.toml", "--new-db")
    assert code == 0
    return tmp_path, re.search(r"dashboard\?token=([\w-]+)", err).group(1)


def test_the_command_line_adds_lists_and_revokes_admins(survey_db, cli):
    folder, owner = survey_db
    survey = folder / "fruit.toml"
    code, out, err = cli("serve", survey, "--add-admin", "alice")
    token = out.strip()
    assert code == 0 and re.fullmatch(r"[\w-]{43}", token) and token not in err and "'alice'" in err
    code, out, err = cli("serve", survey, "--admins")
    assert code == 0 and out.split("\n")[1:] == [f"alice  {utc_day()}", f"owner  {utc_day()}", ""]
    assert token not in out and owner not in out and admin_token_hash(token) not in out
    db = (folder / "fruit.sqlite").read_bytes()
    assert token.encode() not in db and hashlib.sha256(token.encode()).hexdigest().encode() in db
    code, _, err = cli("serve", survey, "--revoke-admin", "alice")
    assert code == 0 and "refuse their token within a second or two" in err
    code, out, _ = cli("serve", survey, "--admins")
    assert "alice" not in out


@pytest.mark.parametrize("argv, message", [
    (["--add-admin", "Alice"], "--add-admin: an admin's name is 1 to 40 characters of lowercase letters"),
    (["--add-admin", "owner"], "there is an admin named 'owner' already"),
    (["--revoke-admin", "alice"], "there is no admin named 'alice'"),
    (["--revoke-admin", "owner"], "'owner' is the survey's last admin"),
    (["--admins", "--close"], "--admins serves nothing: give it without --close"),
    (["--add-admin", "alice", "--new-admin-token"], "--add-admin serves nothing: give it without --new-admin-token"),
    (["--admins", "--db", "elsewhere.sqlite"], "no such database"),
])
def test_the_command_line_refuses_clearly(survey_db, cli, argv, message):
    folder, _ = survey_db
    code, out, err = cli("serve", folder / "fruit.toml", *argv)
    assert code == 2 and message in err and "Traceback" not in err and out == "", err
    with open_store(folder / "fruit.sqlite") as store:
        assert [name for name, _, _ in store.admins()] == [OWNER]


def test_two_admin_options_at_once_are_refused(survey_db, cli):
    folder, _ = survey_db
    with pytest.raises(SystemExit):
        cli("serve", folder / "fruit.toml", "--admins", "--revoke-admin", "owner")


def test_a_new_owner_token_keeps_the_other_admins(survey_db, cli):
    folder, owner = survey_db
    survey = folder / "fruit.toml"
    _, out, _ = cli("serve", survey, "--add-admin", "alice")
    code, _, err = cli("serve", "--port", "0", survey, "--new-admin-token")
    assert code == 0 and "admins:      alice, owner (each opens" in err
    with open_store(folder / "fruit.sqlite") as store:
        held = {name: digest for name, digest, _ in store.admins()}
    assert held["alice"] == admin_token_hash(out.strip()) and held[OWNER] != admin_token_hash(owner)


# ------------------------------------------------------------------------------------------ a real server

def admin_status(base: str, token: str) -> int:
    return httpx.get(f"{base}/dashboard", params={"token": token}, timeout=30).status_code


def wait_for(condition, seconds: float = 10.0) -> float:
    """Seconds until ``condition()`` holds (polled every 50 ms); fails after ``seconds``."""
    start = time.monotonic()
    while not condition():
        assert time.monotonic() - start < seconds, "not within the time allowed"
        time.sleep(0.05)
    return time.monotonic() - start


@pytest.mark.slow
def test_a_running_server_takes_a_new_admin_and_refuses_a_revoked_one(tmp_path):
    """Another process adds and revokes an admin: the running server opens its dashboard to the new token,
    and refuses it once revoked, each within a second or two, without a restart; the owner's goes on."""
    (tmp_path / "fruit.toml").write_text(SURVEY)
    server = Server(tmp_path, "fruit.toml", "--new-db")
    try:
        owner = re.search(r"dashboard\?token=([\w-]+)", server.banner).group(1)

        def command(*argv):
            return subprocess.run([*COMMAND, "fruit.toml", *argv], cwd=tmp_path, env=environment(),
                                  capture_output=True, text=True, timeout=120)
        added = command("--add-admin", "alice")
        assert added.returncode == 0, added.stderr
        alice = added.stdout.strip()
        assert wait_for(lambda: admin_status(server.base, alice) == 200) < 3
        assert httpx.get(f"{server.base}/export.csv", headers={"authorization": f"Bearer {alice}"},
                         timeout=30).status_code == 200
        assert command("--revoke-admin", "alice").returncode == 0
        assert wait_for(lambda: admin_status(server.base, alice) == 403) < 3
        refused = httpx.get(f"{server.base}/export.csv", headers={"authorization": f"Bearer {alice}"}, timeout=30)
        assert refused.status_code == 403 and "revoked or replaced" in refused.json()["error"]
        assert admin_status(server.base, owner) == 200
    finally:
        code, err = server.stop(signal.SIGINT)
    assert "Traceback" not in err
