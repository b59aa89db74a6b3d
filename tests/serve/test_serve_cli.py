"""``privrank serve`` as an operator runs it: refusals before anything is created, a busy port, Ctrl-C
once and twice, a dashboard token that survives restarts without appearing in ``ps``, and a default
database per survey file. Where the behaviour is the process's, the command runs as a subprocess."""
import hashlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
from serve_helpers import answering, free_port, key

from privrank.serve import open_store

httpx = pytest.importorskip("httpx")
uvicorn = pytest.importorskip("uvicorn")

SURVEY = ('title = "Fruit"\nquestion = "Which do you prefer?"\nitems = ["apple", "banana", "cherry", "date"]\n'
          'epsilon = 1.0\nbudget = 100.0\n')
TOKEN = "chosen-admin-token-0123456789"
COMMAND = [sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())", "serve"]


def environment(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PRIVRANK_ADMIN_TOKEN"}
    return {**env, "PYTHONPATH": os.pathsep.join(sys.path), **extra}


@pytest.fixture
def folder(tmp_path):
    """A folder holding only the survey file ``fruit.toml``."""
    (tmp_path / "fruit.toml").write_text(SURVEY)
    return tmp_path


@pytest.fixture
def served(monkeypatch):
    """Run the command in this process without serving: the uvicorn configurations it would serve."""
    calls = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: calls.append(server.config))
    monkeypatch.delenv("PRIVRANK_ADMIN_TOKEN", raising=False)
    return calls


class Server:
    """``privrank serve ARGS`` as a subprocess in its own session (signals reach only it), on a free port."""

    def __init__(self, cwd, *args, env=None):
        argv = [*COMMAND, *map(str, args), "--port", str(free_port()), "--registrations-per-minute", "1e6"]
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env or environment(), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines, self.started = [], threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.started.wait(timeout=60):
            self.kill()
            pytest.fail("privrank serve did not start: " + "".join(self.lines))
        self.banner = "".join(self.lines)
        self.base = re.search(r"respondents: (http://\S+)/", self.banner).group(1)
        assert answering(self.base, self.proc, 30), "privrank serve does not answer"  # so handles signals as a server

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)
            if line.startswith("  at most "):  # the banner's last line before the files' hashes
                self.started.set()
        self.started.set()

    def stop(self, *signals, pause=0.02):
        """Send ``signals`` (``pause`` seconds apart); returns (exit code, what stderr said after the banner)."""
        for k, signum in enumerate(signals):
            if k:
                time.sleep(pause)
            self.proc.send_signal(signum)
        try:
            code = self.proc.wait(timeout=60)
            self.reader.join(timeout=30)
            return code, "".join(self.lines)[len(self.banner):]
        finally:
            self.kill()

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)


def report_stream(base: str, stop: threading.Event, acked: list, clients: int = 4):
    """Threads sending reports, each on a new connection, until ``stop``; the keys answered 201 go to ``acked``."""
    with httpx.Client(base_url=base, timeout=30) as c:
        tokens = [c.post("/api/respondents", json={}).json()["token"] for _ in range(clients)]
    pairs = [("apple", "banana"), ("apple", "cherry"), ("apple", "date"), ("banana", "cherry"), ("banana", "date"),
             ("cherry", "date")]

    def send(token):
        for a, b in pairs * 50:  # more than a respondent may send: 409 once the pairs are used, still answered
            if stop.is_set():
                return
            k = key()
            try:
                r = httpx.post(f"{base}/api/reports", json={"token": token, "key": k, "item_a": a, "item_b": b,
                                                            "report": 1, "epsilon": 1.0}, timeout=30)
            except httpx.TransportError:  # the server stopped listening
                return
            if r.status_code == 201:
                acked.append(k)
    threads = [threading.Thread(target=send, args=(t,), daemon=True) for t in tokens]
    for t in threads:
        t.start()
    return threads


def stored_keys(db) -> set:
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return {k for (k,) in conn.execute("SELECT report_key FROM reports")}


# ------------------------------------------------------------------------------------------ the port

def test_a_busy_port_is_refused_before_anything_is_created_or_printed(folder):
    """It used to print both URLs and a fresh token, create and claim the database, then end with
    uvicorn's own error (exit 3)."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([*COMMAND, "fruit.toml", "--new-db", "--port", str(port)], cwd=folder, env=environment(),
                              capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr and "dashboard" not in done.stderr and "http://" not in done.stderr
    assert sorted(p.name for p in folder.iterdir()) == ["fruit.toml"]


def test_port_zero_serves_on_a_free_port_and_prints_it(folder, served, cli):
    code, _, err = cli("serve", folder / "fruit.toml", "--port", "0", "--new-db")
    port = int(re.search(r"respondents: http://127\.0\.0\.1:(\d+)/", err).group(1))
    assert code == 0 and port > 0 and len(served) == 1


def test_serve_runs_uvicorn_without_access_logs_on_the_socket_it_bound(folder, monkeypatch, cli):
    calls = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, sockets: calls.append(
        (server.config, [s.getsockname()[1] for s in sockets])))
    code, _, err = cli("serve", folder / "fruit.toml", "--port", "0", "--new-db", "--admin-token", TOKEN)
    (config, [port]), = calls
    assert code == 0 and not config.access_log and not config.server_header and config.log_level == "warning"
    assert f"http://127.0.0.1:{port}/" in err


# ------------------------------------------------------------------------------------------- signals

def test_ctrl_c_once_answers_the_reports_in_flight_and_stops(folder):
    server = Server(folder, "fruit.toml", "--new-db")
    stop, acked = threading.Event(), []
    threads = report_stream(server.base, stop, acked)
    time.sleep(1.0)
    code, err = server.stop(signal.SIGINT)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert code == 130 and "privrank: interrupted" in err and "Traceback" not in err, err
    assert acked and stored_keys(folder / "fruit.sqlite") == set(acked)  # every report stored was answered


def test_ctrl_c_twice_stops_at_once_without_a_traceback(folder):
    """Twice used to print the traceback of uvicorn's cancelled lifespan task."""
    server = Server(folder, "fruit.toml", "--new-db")
    stop, acked = threading.Event(), []
    threads = report_stream(server.base, stop, acked)
    time.sleep(1.0)
    started = time.monotonic()
    code, err = server.stop(signal.SIGINT, signal.SIGINT)
    assert time.monotonic() - started < 10
    stop.set()
    for t in threads:
        t.join(timeout=60)
    assert code == 130 and "Traceback" not in err and "Error" not in err, err
    assert set(acked) <= stored_keys(folder / "fruit.sqlite")  # intact, and every answered report is in it
    with open_store(folder / "fruit.sqlite") as store:
        assert store.counts()[1] >= len(set(acked))


@pytest.mark.slow
def test_a_request_cut_off_at_shutdown_logs_no_traceback(folder):
    """A client that never finishes its request holds the graceful shutdown for GRACEFUL_SECONDS; the
    cancelled request used to be logged with its whole traceback."""
    from privrank.cli.serve import GRACEFUL_SECONDS

    server = Server(folder, "fruit.toml", "--new-db")
    host, port = server.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as slow:
        slow.sendall(b"POST /api/reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
        time.sleep(0.5)
        started = time.monotonic()
        code, err = server.stop(signal.SIGINT)
    assert GRACEFUL_SECONDS <= time.monotonic() - started < GRACEFUL_SECONDS + 20
    assert code == 130 and "Traceback" not in err and "Exception in ASGI application (CancelledError)" in err, err


def test_sigterm_stops_gracefully(folder):
    server = Server(folder, "fruit.toml", "--new-db")
    code, err = server.stop(signal.SIGTERM, signal.SIGTERM)
    assert code == 143 and "privrank: interrupted" in err and "Traceback" not in err, err


# -------------------------------------------------------------------------------------- admin token

@pytest.mark.slow
def test_the_dashboard_token_survives_a_restart_and_only_its_hash_is_stored(folder):
    """It used to be a fresh random token at every start."""
    first = Server(folder, "fruit.toml", "--new-db")
    token = re.search(r"dashboard\?token=([\w-]+)", first.banner).group(1)
    assert len(token) == 43  # 32 random bytes
    first.stop(signal.SIGINT)
    db = (folder / "fruit.sqlite").read_bytes()
    assert token.encode() not in db and hashlib.sha256(token.encode()).hexdigest().encode() in db
    again = Server(folder, "fruit.toml")
    try:
        assert token not in again.banner and "dashboard?token=" not in again.banner
        assert "dashboard token: unchanged: as printed when it was made, or as you chose it (replace it with " \
            "--new-admin-token)" in again.banner
        assert httpx.get(f"{again.base}/dashboard", params={"token": token}, timeout=30).status_code == 200
        assert httpx.get(f"{again.base}/export.csv", headers={"authorization": f"Bearer {token}"},
                         timeout=30).status_code == 200
        assert httpx.get(f"{again.base}/dashboard", params={"token": token[:-1]}, timeout=30).status_code == 403
    finally:
        again.stop(signal.SIGINT)


def owner_hash(db):
    with open_store(db) as store:
        return next((digest for name, digest, _ in store.admins() if name == "owner"), None)


def test_a_new_admin_token_replaces_the_old_one(folder, served, cli):
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-db")
    old = re.search(r"dashboard\?token=([\w-]+)", err).group(1)
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-admin-token")
    new = re.search(r"dashboard\?token=([\w-]+)", err).group(1)
    assert code == 0 and new != old
    assert owner_hash(folder / "fruit.sqlite") == hashlib.sha256(new.encode()).hexdigest()


@pytest.mark.parametrize("how", ["environment", "file"])
def test_a_chosen_token_is_stored_hashed_and_never_printed(folder, served, cli, monkeypatch, how):
    path = folder / "admin-token"
    path.write_text(TOKEN + "\n")
    if how == "environment":
        monkeypatch.setenv("PRIVRANK_ADMIN_TOKEN", TOKEN)
        args, source = [], "PRIVRANK_ADMIN_TOKEN"
    else:
        args, source = ["--admin-token-file", path], str(path)
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-db", *args)
    assert code == 0 and TOKEN not in err and f"dashboard token: the one from {source}" in err
    assert owner_hash(folder / "fruit.sqlite") == hashlib.sha256(TOKEN.encode()).hexdigest()
    monkeypatch.delenv("PRIVRANK_ADMIN_TOKEN", raising=False)
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml")  # kept without the option
    assert code == 0 and "unchanged" in err and TOKEN not in err


def test_admin_token_on_the_command_line_still_works_but_warns(folder, served, cli):
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-db", "--admin-token", TOKEN)
    assert code == 0 and "privrank: warning: --admin-token is visible to other users" in err and TOKEN not in err
    assert "PRIVRANK_ADMIN_TOKEN" in err


def test_two_sources_of_the_token_are_refused(folder, served, cli, monkeypatch):
    monkeypatch.setenv("PRIVRANK_ADMIN_TOKEN", TOKEN)
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-admin-token")
    assert code == 2 and "choose one source" in err and TOKEN not in err
    assert sorted(p.name for p in folder.iterdir()) == ["fruit.toml"]


# --------------------------------------------------------------------------------- default database

def test_the_default_database_is_named_after_the_survey_file(folder, served, cli, monkeypatch):
    """Two surveys in one folder used to share ./privrank-survey.sqlite: the second was refused."""
    sub = folder / "surveys"
    sub.mkdir()
    (sub / "fruit.toml").write_text(SURVEY)
    (sub / "veg.json").write_text('{"title": "Veg", "question": "Which?", "items": ["kale", "leek"], "budget": 2}')
    monkeypatch.chdir(folder)
    for name in ("fruit.toml", "veg.json"):
        code, _, err = cli("serve", "--port", "0", sub / name, "--new-db")
        assert code == 0, err
    assert (sub / "fruit.sqlite").is_file() and (sub / "veg.sqlite").is_file()
    assert f"database:    {sub / 'fruit.sqlite'}" in cli("serve", "--port", "0", sub / "fruit.toml")[2]
    code, _, err = cli("serve", "--port", "0", "--demo")
    assert code == 0 and (folder / "privrank-demo.sqlite").is_file()
    assert sorted(p.name for p in folder.iterdir()) == ["fruit.toml", "privrank-demo.sqlite", "surveys"]


# ---------------------------------------------------------------------------- refusals create nothing

@pytest.mark.parametrize("args, message", [
    (["broken.toml"], "not valid TOML"),
    (["fruit.toml", "--port", "70000"], "--port must lie in 0..65535"),
    (["fruit.toml", "--host", "192.0.2.1", "--public"], "not an address of this machine"),
    (["fruit.toml", "--admin-token", "short"], "at least 16 characters"),
    (["fruit.toml", "--admin-token", "has spaces in the token"], "each a letter, a digit"),
    (["fruit.toml", "--admin-token-file", "missing"], "no such file"),
    (["fruit.toml", "--invitations", "2", "--invitations-file", "no/such/folder/links.csv"],
     "cannot create the invitations file"),
    (["fruit.toml", "--invitations", "2", "--invitations-file", "fruit.toml"], "never overwritten"),
    (["fruit.toml", "--invitations", "2", "--url", "ftp://example.org"], "--url must be"),
    (["fruit.toml", "--registrations-per-minute", "-1"], "positive"),
])
def test_every_refusal_at_start_up_leaves_the_folder_as_it_was(folder, served, cli, monkeypatch, args, message):
    (folder / "broken.toml").write_text("title = \n")
    before = sorted(p.name for p in folder.iterdir())
    monkeypatch.chdir(folder)
    code, _, err = cli("serve", "--port", "0", "--new-db", *args)
    assert code == 2 and message in err and "Traceback" not in err, err
    assert sorted(p.name for p in folder.iterdir()) == before and not served


def test_an_invitations_file_is_removed_when_the_store_refuses(folder, served, cli):
    db = folder / "fruit.sqlite"
    with open_store(db) as s:
        s.new_respondent()  # an open survey with a respondent cannot become invitation-only
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--invitations", "2")
    assert code == 2 and "without an invitation" in err
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("fruit.sqlite")) == ["fruit.toml"]
    with open_store(db) as s:
        assert s.admins() == []  # a token never printed is never kept


# ------------------------------------------------------------------------- acknowledged means stored

def test_a_database_removed_while_serving_is_noticed_and_never_replaced_by_an_empty_one(folder):
    """Reports used to get 201 into the unlinked file, and the restart made an empty database without a word."""
    server = Server(folder, "fruit.toml", "--new-db")
    try:
        with httpx.Client(base_url=server.base, timeout=30) as c:
            token = c.post("/api/respondents", json={}).json()["token"]
            doc = {"token": token, "key": key(), "item_a": "apple", "item_b": "banana", "report": 1, "epsilon": 1.0}
            assert c.post("/api/reports", json=doc).status_code == 201
            (folder / "fruit.sqlite").unlink()
            deadline = time.monotonic() + 20  # the periodic check says it without a request
            while not any("removed or replaced" in line for line in server.lines):
                assert time.monotonic() < deadline, "".join(server.lines)
                time.sleep(0.05)
            r = c.post("/api/reports", json={**doc, "key": key(), "item_b": "cherry"})
            assert r.status_code == 503 and r.json()["reason"] == "database-gone" and "retry-after" in r.headers
    finally:
        code, err = server.stop(signal.SIGINT)
    assert "Traceback" not in err
    done = subprocess.run([*COMMAND, "fruit.toml", "--port", str(free_port())], cwd=folder, env=environment(),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "no such database" in done.stderr and "restore" in done.stderr
    assert not (folder / "fruit.sqlite").exists()


def raw_request(base: str, request: bytes) -> tuple[int, dict, bytes]:
    """Send ``request`` on a new connection and read the answer until the server closes it (bounded)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(request)
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = dict((name.strip().lower(), value.strip()) for name, _, value in (line.partition(":") for line in lines))
    return int(status.split()[1]), headers, body


# make test sends one request of each answer; make test-all every malformed request
@pytest.mark.parametrize("request_bytes, status", [
    (b"FOO / HTTP/1.1\r\nHost: x\r\n\r\n", 400),                               # a method HTTP does not know
    pytest.param(b"this is not HTTP\r\n\r\n", 400, marks=pytest.mark.slow),  # no request line
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nno colon in this header\r\n\r\n", 400,  # a malformed header
                 marks=pytest.mark.slow),
    pytest.param(b"GET / HTTP/1.1\r\nHost: x\r\nContent-Length: many\r\n\r\n", 400,  # a malformed length
                 marks=pytest.mark.slow),
    (b"DELETE /api/reports HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405),
    pytest.param(b"PUT /static/index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", 405,
                 marks=pytest.mark.slow),
    pytest.param(b"PROPFIND / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 405, marks=pytest.mark.slow),
    (b"GET /no/such/page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404),
    # a WebSocket handshake (the server has none): uvicorn's wsproto answered 403 or 400 with an empty body
    (b"GET /api/survey HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n"
     b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", 200),
    pytest.param(b"GET /no/such/page HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade, close\r\n\r\n",
                 404, marks=pytest.mark.slow),
])
def test_every_answer_is_json_with_a_reason_even_to_malformed_http(folder, request_bytes, status):
    """uvicorn used to answer a request it could not parse (an unknown method, a malformed line) in plain text."""
    server = Server(folder, "fruit.toml", "--new-db")
    try:
        got, headers, body = raw_request(server.base, request_bytes)
        assert got == status, body
        assert headers["content-type"] == "application/json" and headers["x-content-type-options"] == "nosniff"
        assert status < 400 or isinstance(json.loads(body)["error"], str)
        assert httpx.get(f"{server.base}/api/survey", timeout=30).status_code == 200  # the others are served still
    finally:
        server.stop(signal.SIGINT)


@pytest.mark.parametrize("path", ["/dev/zero", "big"])
def test_an_admin_token_file_that_never_ends_or_is_too_long_is_refused(folder, served, cli, path):
    """``--admin-token-file /dev/zero`` read forever."""
    if path == "big":
        path = folder / "big"
        path.write_text("x" * 100_000)
    code, _, err = cli("serve", "--port", "0", folder / "fruit.toml", "--new-db", "--admin-token-file", path)
    assert code == 2 and "longer than a token file" in err
