"""``privrank serve``: run a local-DP survey (respondents randomize in their browser) with a live private ranking.

Every refusal at start-up (a bad argument, survey file, port, token or invitations file) comes
before anything is created or printed: the listening socket is bound first and handed to uvicorn,
and the database is opened only once everything else has passed. A SQLite database is created
only with ``--new-db`` (``--demo`` makes its own): a restart never replaces a database that was moved or
removed by an empty one (:func:`check_new_db`). The dashboard's admin tokens are
kept in the database as their SHA-256 only, each under an admin's name (:mod:`privrank.serve.admins`):
the owner's is made (and printed, once) when a database is first served, kept across restarts, replaced
by ``--new-admin-token``, or chosen by the operator through ``PRIVRANK_ADMIN_TOKEN`` or
``--admin-token-file`` (never on the command line, where ``ps`` shows it; ``--admin-token`` stays for
compatibility, with a warning); ``--add-admin NAME``, ``--revoke-admin NAME`` and ``--admins`` manage
the others (:mod:`privrank.cli.serve_admins`). SIGINT or SIGTERM stop the server
gracefully (the requests in flight are answered, every acknowledged report stays stored); a second
SIGINT stops it at once. ``--workers N`` serves from N processes forked after the start-up work
(:mod:`privrank.serve.workers`), which share the database and, through it, the budgets and the
registration limit.

``--close``, ``--export FILE`` and ``--invitation-status [CSV]`` serve nothing: the first records in the
database that the survey closed now (servers running on it stop taking answers within about a second),
the second writes the export the dashboard offers, from the database alone (its operator needs no admin
token), the third prints which invitations are unused, started or finished.
"""
from __future__ import annotations

import errno
import ipaddress
import logging
import gc
import os
import signal
import socket
import sys
import threading
import warnings
from contextlib import ExitStack
from datetime import datetime, timezone
from pathlib import Path

from ..errors import InputError
from . import serve_admins
from .arguments import examples, summary

DEFAULT_PORT = 8000
DEMO_DB = "privrank-demo.sqlite"
#: the environment variable that sets the dashboard's admin token
#: the most bytes an admin token file may hold (a token is at most a few hundred characters)
ADMIN_TOKEN_FILE_BYTES = 4096
ADMIN_TOKEN_ENV = "PRIVRANK_ADMIN_TOKEN"
#: the default of --registrations-per-minute (privrank.serve.app.REGISTRATIONS_PER_MINUTE, without importing the server)
REGISTRATIONS_PER_MINUTE = 30
#: seconds a stopping server waits for the requests in flight
GRACEFUL_SECONDS = 10
#: connections waiting to be accepted
BACKLOG = 2048
#: most server processes of --workers
MAX_WORKERS = 64


def register(sub) -> None:
    p = sub.add_parser("serve", help=summary("serve"),
                       description="Serve a survey whose respondents randomize every answer in their browser "
                                   "(local differential privacy): the server stores only randomized reports and "
                                   "shows a live private ranking on an admin dashboard. Ctrl-C (or SIGTERM) stops "
                                   "it after answering the requests in flight; a second Ctrl-C stops it at once.",
                       epilog=examples("privrank serve --init survey.toml", "privrank serve survey.toml --new-db",
                                       "privrank serve survey.toml --invitations 50 --url https://survey.example.org",
                                       "privrank serve survey.toml --close --export results.csv"))
    p.add_argument("survey", nargs="?", metavar="SURVEY",
                   help="survey file (.toml or .json: title, question, items, design, epsilon, budget)")
    survey = p.add_argument_group("survey")
    survey.add_argument("--demo", action="store_true",
                        help="serve the demo survey: the LLMs of the shipped LLMFAO data, in pairs, epsilon 1 per "
                             "answer, 10 answers per respondent")
    survey.add_argument("--init", metavar="FILE",
                        help="write a commented survey template to FILE (.toml, never overwritten) and exit")
    network = p.add_argument_group("network")
    network.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    network.add_argument("--port", type=int, default=DEFAULT_PORT,
                         help=f"port (default {DEFAULT_PORT}; 0: any free port, printed at start-up)")
    network.add_argument("--workers", type=int, default=1, metavar="N",
                         help="server processes on the one port (default 1): more use more cores; they share the "
                              "database, so the budgets and the registration limit hold across them")
    network.add_argument("--public", action="store_true",
                         help="allow a --host other than loopback (put the server behind a reverse proxy with TLS)")
    database = p.add_argument_group("database")
    database.add_argument("--db", metavar="PATH_OR_URL",
                          help="SQLite file or postgresql:// URL holding the reports (default: the survey file "
                               f"with the suffix .sqlite, e.g. fruit.toml -> fruit.sqlite beside it; with --demo "
                               f"./{DEMO_DB})")
    database.add_argument("--new-db", action="store_true",
                          help="create the SQLite database (refused if it exists). Without it privrank serve never "
                               "creates one (but --demo's), so a database moved or removed is never replaced by an "
                               "empty one without a word")
    token = p.add_argument_group("admin token (the owner's)").add_mutually_exclusive_group()
    token.add_argument("--new-admin-token", action="store_true",
                       help="replace the owner's dashboard token with a new random one, printed once (by default "
                            "a database keeps the token made when it was first served; only its hash is stored; "
                            "the other admins' tokens are kept)")
    token.add_argument("--admin-token-file", metavar="PATH",
                       help="read the owner's dashboard token from this file (at least 16 characters: letters, "
                            f"digits, '-', '_', '.', '~'); the environment variable {ADMIN_TOKEN_ENV} does the same")
    token.add_argument("--admin-token", metavar="TOKEN",
                       help=f"the owner's dashboard token (deprecated: other users of this machine see it in ps; "
                            f"use {ADMIN_TOKEN_ENV} or --admin-token-file)")
    serve_admins.add_arguments(p)
    respondents = p.add_argument_group("respondents")
    respondents.add_argument("--invitations", type=int, metavar="N",
                             help="issue N one-time invitation links and make the survey invitation-only (for good: "
                                  "a restart without this option stays so; more can be added later). Refused on a "
                                  "survey that already registered respondents without invitations")
    respondents.add_argument("--invitations-file", metavar="PATH",
                             help="CSV file for the new links (never overwritten; default: next to the SQLite "
                                  "database, NAME-invitations.csv)")
    network.add_argument("--url", metavar="BASE",
                         help="public base URL of the survey behind a reverse proxy (such as "
                              "https://example.org/survey): the links printed at start-up and the invitation links "
                              "use it (default: the served address)")
    respondents.add_argument("--registrations-per-minute", type=float, default=REGISTRATIONS_PER_MINUTE,
                             metavar="R",
                             help=f"new respondents accepted per minute on an open survey, in bursts of at most R; "
                                  f"more get HTTP 429 (default {REGISTRATIONS_PER_MINUTE}; invitation codes limit an "
                                  "invitation-only survey)")
    ending = p.add_argument_group("closing and exporting (without serving)")
    ending.add_argument("--close", action="store_true",
                        help="close the survey now and exit: servers running on its database refuse new respondents "
                             "and answers within a second (HTTP 410); the dashboard and the export go on. A close is "
                             "final; a closing time ahead, which may be moved, is the survey file's key closes (e.g. "
                             "closes = 2026-12-31T18:00:00Z)")
    ending.add_argument("--export", metavar="FILE",
                        help="write the reports as the dashboard's export does (CSV for privrank rank) to FILE "
                             "(never overwritten; - for stdout) and exit. Reads the database (--db) only: no admin "
                             "token is needed, having the database is enough. With --close: closes, then exports. Rank the export "
                             "with privrank rank FILE --epsilon E")
    ending.add_argument("--invitation-status", nargs="?", const="", metavar="CSV",
                        help="print the invitations file CSV (default: NAME-invitations.csv beside the SQLite "
                             "database, where --invitations writes it) with two columns added, status (unused, "
                             "started, finished) and reports, and exit: whom to remind. Give SURVEY before it. "
                             "Whoever holds the codes can link an invitation to its reports (the database alone "
                             "cannot): keep the output as private as the file")
    p.set_defaults(func=run_serve)


def _check_host(host: str, public: bool) -> None:
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not public:
        raise InputError(f"--host {host} is not a loopback address: the server speaks plain HTTP, so serve "
                         "respondents through a reverse proxy with TLS (e.g. nginx or Caddy) and add --public")


def default_db(args) -> str:
    """The database of a survey served without ``--db``: the survey file with the suffix ``.sqlite``
    (so two surveys in one folder never share one), or ``./privrank-demo.sqlite`` for ``--demo``."""
    return DEMO_DB if args.demo else str(Path(args.survey).with_suffix(".sqlite"))


def check_new_db(db: str, new: bool, demo: bool) -> bool:
    """Whether the SQLite database ``db`` is created by this start: only with ``--new-db`` (or ``--demo``, whose
    reports are examples), never in place of a database that was moved or removed, whose reports were
    acknowledged. A file of no bytes counts as no database. PostgreSQL: the server's administrator makes
    the database; the store makes its tables in an empty schema.

    Raises
    ------
    InputError
        No database without ``--new-db``, a database with it, or ``--new-db`` with a PostgreSQL URL.
    """
    if "://" in db:
        if new:
            raise InputError("--new-db creates a SQLite file: a PostgreSQL database is made by its administrator "
                             "(privrank serve makes its tables in an empty schema)")
        return False
    path = Path(db)
    exists = path.exists() and not (path.is_file() and path.stat().st_size == 0)
    if new and exists:
        raise InputError(f"--new-db: {db} exists: serve it without --new-db (its reports go on), or give another --db")
    if not (new or exists or demo):
        raise InputError(f"{db}: no such database. To start this survey, add --new-db; if it has served before, "
                         "its reports are in that file: restore it (a new database would hold none of them)")
    return not exists


def chosen_admin_token(args) -> tuple[str, str] | None:
    """The admin token the operator chose and where it came from, or None (a random one is kept or made).

    Raises
    ------
    InputError
        Two sources at once (the environment and an option), an unreadable file, or a token that
        :func:`~privrank.serve.admins.check_admin_token` refuses.
    """
    from ..serve.admins import check_admin_token

    env = os.environ.get(ADMIN_TOKEN_ENV)
    flags = [name for name, given in (("--new-admin-token", args.new_admin_token),
                                      ("--admin-token-file", args.admin_token_file),
                                      ("--admin-token", args.admin_token)) if given]
    if env is not None and flags:
        raise InputError(f"{ADMIN_TOKEN_ENV} is set and {flags[0]} is given: choose one source of the dashboard's "
                         "admin token")
    if env is not None:
        token, source = env, ADMIN_TOKEN_ENV
    elif args.admin_token_file is not None:
        try:
            with open(args.admin_token_file, "rb") as f:  # a bounded read: /dev/zero or a huge file never ends
                data = f.read(ADMIN_TOKEN_FILE_BYTES + 1)
            if len(data) > ADMIN_TOKEN_FILE_BYTES:
                raise InputError(f"--admin-token-file {args.admin_token_file}: longer than a token file "
                                 f"({ADMIN_TOKEN_FILE_BYTES} bytes at most): is it the right file?")
            token = data.decode("utf-8").strip()
        except FileNotFoundError:
            raise InputError(f"--admin-token-file {args.admin_token_file}: no such file") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"--admin-token-file {args.admin_token_file}: cannot read the token "
                             f"({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
        source = args.admin_token_file
    elif args.admin_token is not None:
        token, source = args.admin_token, "--admin-token"
    else:
        return None
    try:
        check_admin_token(token)
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    if source == "--admin-token":
        warnings.warn(f"--admin-token is visible to other users of this machine (ps, /proc): set {ADMIN_TOKEN_ENV} "
                      "or use --admin-token-file instead", stacklevel=2)
    return token, source


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port``, for uvicorn to serve on (so that no other process can take
    the port between this check and the server's start).

    Raises
    ------
    InputError
        The port is in use or not allowed, or the host is not an address of this machine.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart need not wait out TIME_WAIT
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except OSError as exc:
        sock.close()
        if isinstance(exc, socket.gaierror):
            raise InputError(f"--host {host}: not a known host name or address") from None
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {host} is in use (another server, or another privrank serve?): "
                             "stop it or choose another --port") from None
        if exc.errno == errno.EACCES:
            raise InputError(f"not allowed to listen on port {port}: ports below 1024 need administrator rights; "
                             "choose another --port (and a reverse proxy for port 80 or 443)") from None
        if exc.errno == errno.EADDRNOTAVAIL:
            raise InputError(f"--host {host} is not an address of this machine") from None
        raise InputError(f"cannot listen on {host} port {port} ({exc.strerror})") from None
    return sock


class NoTraceback(logging.Formatter):
    """uvicorn's log lines with an exception's type in place of its traceback (a traceback, or an
    exception's message, could quote a request): what is cut off by the graceful shutdown's time
    limit reads ``ERROR: Exception in ASGI application (CancelledError)``."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and record.exc_info[0] is not None:
            name = record.exc_info[0].__name__
            record = logging.makeLogRecord({**record.__dict__, "msg": f"{str(record.msg).rstrip()} ({name})",
                                            "exc_info": None, "exc_text": None})
        return super().format(record)


#: uvicorn's logging: warnings and errors on stderr, never a traceback
LOG_CONFIG = {"version": 1, "disable_existing_loggers": False,
              "formatters": {"plain": {"()": NoTraceback, "format": "%(levelname)s: %(message)s"}},
              "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain",
                                      "stream": "ext://sys.stderr"}},
              "loggers": {"uvicorn": {"handlers": ["stderr"], "level": "WARNING", "propagate": False}}}


def _serve(app, sock: socket.socket) -> None:
    """Serve ``app`` on ``sock`` until SIGINT or SIGTERM: the first stops the server gracefully (no new
    connection; the requests in flight are answered, within ``GRACEFUL_SECONDS``) and is raised again
    once it has stopped, so the command ends as every privrank command does when interrupted; a second
    SIGINT stops the process at once."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig, frame):
            if self.should_exit and sig == signal.SIGINT:
                # a report in flight is committed or not at all; its page resends it under the same key
                os.write(2, b"privrank: interrupted twice: stopped at once\n")
                import multiprocessing

                for child in multiprocessing.active_children():  # the dashboard's planner, if it still runs
                    child.kill()
                os._exit(130)
            super().handle_exit(sig, frame)

    # no lifespan: the application has no start-up or shutdown step, and a forced exit would log the
    # cancelled lifespan task as an error
    from ..serve.app import json_http_protocol

    config = uvicorn.Config(app, access_log=False, log_level="warning", log_config=LOG_CONFIG, server_header=False,
                            lifespan="off", timeout_graceful_shutdown=GRACEFUL_SECONDS, http=json_http_protocol(),
                            ws="none")  # no WebSocket route: a handshake is answered as the HTTP request it is, in JSON
    # what start-up made lives as long as the server: out of the collector's sight, a full collection
    # looks at a request's objects only (tens of milliseconds less, every report waiting, each time)
    gc.collect()
    gc.freeze()
    Server(config).run(sockets=[sock])


def serving_options(args) -> list[str]:
    """The options of serving given in ``args`` (refused by the commands that serve nothing)."""
    return [name for name, given in (("--new-db", args.new_db), ("--public", args.public),
                                     ("--invitations", args.invitations is not None),
                                     ("--invitations-file", args.invitations_file), ("--url", args.url),
                                     ("--new-admin-token", args.new_admin_token),
                                     ("--admin-token-file", args.admin_token_file),
                                     ("--admin-token", args.admin_token)) if given]


def invitation_status(args) -> int:
    """``--invitation-status [CSV]``: print the invitations file with each invitation's status and reports
    (:func:`privrank.serve.progress.invitation_status`) and a summary on stderr; serves nothing.

    Raises
    ------
    InputError
        Another command or an option of serving given too, no such database, a database of another
        survey, or an invitations file that cannot be read.
    """
    from ..serve import open_store
    from ..serve.invitations import default_invitations_path
    from ..serve.progress import invitation_status as status_csv
    from ..serve.survey import demo_survey, load_survey

    others = serving_options(args) + ["--close"] * args.close + ["--export"] * (args.export is not None)
    if others:
        raise InputError(f"--invitation-status reads and prints only: give it without {others[0]}")
    survey = demo_survey() if args.demo else load_survey(args.survey)
    db = args.db or default_db(args)
    check_new_db(db, False, False)
    path = args.invitation_status or default_invitations_path(db)
    with open_store(db) as store:
        store.claim(survey.fingerprint(), earlier=survey.earlier_fingerprint())
        text, counts = status_csv(survey, store, path)
    sys.stdout.write(text)
    sys.stdout.flush()
    print(f"privrank serve: {path}: " + (", ".join(f"{n:,} {status}" for status, n in counts.items() if n) or
                                         "no invitations") +
          " (keep this output as private as the invitations: the codes link each invitation to its reports)",
          file=sys.stderr)
    return 0


def _serve_worker(survey, db, digest: str, args, sock: socket.socket) -> None:
    """One worker of ``--workers N``: its own store and application, serving ``sock`` until stopped."""
    from ..serve import open_store
    from ..serve.app import create_app

    with open_store(db) as store:
        _serve(create_app(survey, store, digest, registrations_per_minute=args.registrations_per_minute,
                          survey_file=None if args.demo else args.survey), sock)


def close_or_export(args) -> int:
    """``--close`` and/or ``--export FILE``: close the survey now (its time printed), then write its export;
    serves nothing. The database must exist and hold this survey's reports.

    Raises
    ------
    InputError
        An option of serving given too, no such database, a database of another survey, or an export
        file that exists or cannot be written.
    """
    from ..serve import open_store
    from ..serve.app import Closing, closed_text, export_file
    from ..serve.survey import demo_survey, load_survey, utc_text

    serving = serving_options(args)
    if serving:
        raise InputError(f"--close and --export serve nothing: give them without {serving[0]}")
    survey = demo_survey() if args.demo else load_survey(args.survey)
    db = args.db or default_db(args)
    check_new_db(db, False, False)
    target = None if args.export in (None, "-") else Path(args.export)
    if target is not None and target.exists():
        raise InputError(f"--export {target} exists: it is never overwritten (give another file name)")
    with open_store(db) as store:
        store.claim(survey.fingerprint(), earlier=survey.earlier_fingerprint())
        if args.close:
            store.close_survey(utc_text(datetime.now(timezone.utc)))
            closing = Closing(survey.closes, store)
            closing.read()
            at = closing.at()
            assert at is not None  # just recorded
            print(f"privrank serve: {survey.title!r} closed on {closed_text(at)}: servers on its database refuse "
                  "new answers within a second; the dashboard and the export go on", file=sys.stderr)
        if args.export is None:
            return 0
        text = export_file(survey, store)
    if target is None:
        sys.stdout.flush()
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.buffer.flush()
        return 0
    try:
        with open(target, "x", encoding="utf-8", newline="") as fh:
            fh.write(text)
    except FileExistsError:
        raise InputError(f"--export {target} exists: it is never overwritten (give another file name)") from None
    except OSError as exc:
        raise InputError(f"--export {target}: cannot write the export ({exc.strerror or type(exc).__name__})") \
            from None
    reader = (f"privrank rank {target} --epsilon {survey.epsilon:g}" if survey.design == "pairs" else
              "privrank.serve.ballots.rank_ballots")
    print(f"privrank serve: wrote the export of {survey.title!r} to {target} (ranked by {reader})", file=sys.stderr)
    return 0


def announce_sample_size(survey, store, unit: str) -> None:
    """Print :func:`sample_size_lines` once the planner has worked them out, from a thread of their own
    (``privrank-sample-size``): the server answers from its start, however long the planner takes (a
    minute for a thousand items). A planner stopped with the server prints nothing."""
    def announce():
        try:
            lines = sample_size_lines(survey, store, unit)
        except Exception:  # the server stopped first: its helper process or store is gone
            return
        print("privrank serve: the privacy planner is done\n" + "\n".join(lines), file=sys.stderr)
    threading.Thread(target=announce, name="privrank-sample-size", daemon=True).start()


def sample_size_lines(survey, store, unit: str) -> list[str]:
    """The lines on the sample size: the reports (and respondents) the privacy planner needs
    before the dashboard's ranking tells the top items apart, worked out once here (in the dashboard's
    helper process, so the server never imports the planner; about a second for a few hundred items,
    a minute of CPU for a thousand) and kept for the dashboard; and, on an invitation-only survey,
    a warning when fewer invitations are left than respondents still needed."""
    from ..serve.dashboard import planned_threshold, respondents_needed

    needed = planned_threshold(survey)
    _, stored = store.counts()
    quota = "one ballot each" if survey.design == "ranking" else f"{survey.max_answers} answers each"
    lines = [f"  sample size: the ranking needs about {needed:,} reports (about "
             f"{respondents_needed(survey, needed, 0):,} {unit}s at {quota}) to tell the top items apart "
             f"(privacy planner); {stored:,} stored"]
    issued, used = store.invitations()
    more = respondents_needed(survey, needed, stored)
    if issued and issued - used < more:
        lines.append(f"  warning: {issued - used:,} invitation(s) left, fewer than the about {more:,} more invited "
                     "respondents the ranking needs: issue more with --invitations N")
    return lines


def run_serve(args) -> int:
    """Check everything, bind the port, open the store, print the two URLs (stderr), serve until interrupted
    (or, with ``--init FILE``, write a survey template; with ``--add-admin``, ``--revoke-admin`` or
    ``--admins``, :func:`~privrank.cli.serve_admins.run_admins`; with ``--close`` or ``--export FILE``,
    :func:`close_or_export`)."""
    if args.init is not None:  # before the server's imports: writing a template needs none of them
        if args.survey is not None or args.demo:
            raise InputError("--init FILE writes a template: give it without a survey file or --demo")
        from ..serve.survey import write_template

        print(f"privrank serve: wrote {write_template(args.init)}: edit it, then run privrank serve {args.init} "
              "--new-db (the first time: it creates the survey's database)",
              file=sys.stderr)
        return 0
    if (args.survey is None) == (not args.demo):
        raise InputError("give a survey file or --demo (not both); privrank serve --init FILE writes a "
                         "commented survey file to start from")
    if args.invitation_status is not None:  # before the server's imports: it serves nothing
        return invitation_status(args)
    option = serve_admins.chosen(args)
    if option is not None:  # nor do these
        db = args.db or default_db(args)
        check_new_db(db, False, False)
        return serve_admins.run_admins(args, option, db)
    if args.close or args.export is not None:  # before the server's imports: neither serves
        return close_or_export(args)
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise InputError("privrank serve needs: pip install 'privrank[serve]' (from a clone: "
                         "pip install -e '.[serve]')") from None
    from ..serve import open_store
    from ..serve.admins import OWNER, admin_token_hash, new_admin_token
    from ..serve.app import RESPONDENT_UNITS, Closing, closed_text, create_app
    from ..serve.integrity import static_hashes
    from ..serve.invitations import base_url, check_count, default_invitations_path, reserve_invitations
    from ..serve.ratelimit import check_rate
    from ..serve.workers import Workers
    from ..serve.survey import demo_survey, load_survey

    if not 0 <= args.port < 65536:
        raise InputError("--port must lie in 0..65535 (0: any free port)")
    if not 1 <= args.workers <= MAX_WORKERS:
        raise InputError(f"--workers must lie in 1..{MAX_WORKERS} (server processes)")
    _check_host(args.host, args.public)
    if args.invitations is None and args.invitations_file:
        raise InputError("--invitations-file goes with --invitations N")
    if args.invitations is not None:
        check_count(args.invitations)
    if args.url is not None:
        base_url(args.url)
    check_rate(args.registrations_per_minute)
    chosen = chosen_admin_token(args)
    survey = demo_survey() if args.demo else load_survey(args.survey)
    db = args.db or default_db(args)
    created = check_new_db(db, args.new_db, args.demo)
    with ExitStack() as stack:
        sock = stack.enter_context(listen(args.host, args.port))
        host = f"[{args.host}]" if ":" in args.host else args.host
        base = f"http://{host}:{sock.getsockname()[1]}"
        links = base_url(args.url or base)
        reserved = None if args.invitations is None else stack.enter_context(
            reserve_invitations(args.invitations_file or default_invitations_path(db)))
        store = stack.enter_context(open_store(db))
        admins = store.admins()
        owner = next((digest for name, digest, _ in admins if name == OWNER), None)
        token = None
        if chosen is not None:
            digest = admin_token_hash(chosen[0])
        elif args.new_admin_token or not admins:
            token = new_admin_token()
            digest = admin_token_hash(token)
        else:  # the store's admins open the dashboard: the application's own hash is never used
            digest = admins[0][1]
        app = create_app(survey, store, digest, registrations_per_minute=args.registrations_per_minute,
                         survey_file=None if args.demo else args.survey)
        written = None if reserved is None else reserved.issue(store, args.invitations, links)
        # the owner's token kept only now that nothing can refuse the start any more
        if (chosen is not None or token is not None) and digest != owner:
            store.add_admin(OWNER, digest, replace=True)
        issued, used = store.invitations()
        unit = RESPONDENT_UNITS[bool(issued)]
        lines = [f"privrank serve: {survey.title!r}, {survey.design}, epsilon {survey.epsilon:g} per answer, at most "
                 f"{survey.max_answers} answer(s) per {unit}",
                 f"  database:    {'PostgreSQL (--db)' if '://' in db else db}{' (new)' * created}",
                 *([f"  workers:     {args.workers} server processes on one port"] if args.workers > 1 else []),
                 f"  respondents: {links}/"]
        if args.url is not None:
            lines.append(f"  served at:   {base}/ (the links above are --url's, the address behind the proxy)")
        if token is not None:
            lines += [f"  dashboard:   {links}/dashboard?token={token}",
                      "  (keep the dashboard URL private: its token opens the dashboard and the export; it is shown "
                      "only now, the database keeps only its hash)"]
        else:
            where = (f"the one from {chosen[1]}" if chosen is not None else
                     "unchanged: as printed when it was made, or as you chose it (replace it with --new-admin-token)")
            lines += [f"  dashboard:   {links}/dashboard", f"  dashboard token: {where}"]
        names = [name for name, _, _ in store.admins()]
        lines.append(f"  admins:      {', '.join(names[:10])}{', ...' * (len(names) > 10)} (each opens the dashboard "
                     "with a token of their own: --add-admin NAME, --revoke-admin NAME, --admins)")
        if issued:
            lines.append(f"  registration: by invitation only ({issued} issued, {used} used); a respondent is an "
                         "invited respondent")
        else:  # an invitation-only survey is limited by its codes, not by the rate
            lines += ["  registration: open; a respondent is a browser (one person with two browsers is two)",
                      f"  at most {args.registrations_per_minute:g} new respondents per minute"]
        if args.workers > 1:  # the workers fork with no thread running: the planner first, kept for their dashboards
            lines += sample_size_lines(survey, store, unit)
        closing = Closing(survey.closes, store)
        closing.read()
        at = closing.at()
        if at is not None:
            lines.append(f"  closed on {closed_text(at)}: no new respondents or answers are taken" if closing.passed()
                         else f"  closes on {closed_text(at)} (privrank serve --close closes it now)")
        if written is not None:
            lines.append(f"  {args.invitations} new invitation link(s) written to {written} (mail them out; the "
                         "server keeps only their hashes)")
        hashes = static_hashes()
        if hashes:
            lines.append("  served files (SHA-384, as in their integrity attributes; check against the release):")
            lines += [f"    {name}  {value}" for name, value in hashes.items()]
        print("\n".join(lines), file=sys.stderr)
        if args.workers == 1:
            announce_sample_size(survey, store, unit)
            _serve(app, sock)
            return 0
        store.close()  # each worker opens its own: the command forks with no store thread running
        Workers(args.workers, lambda: _serve_worker(survey, db, digest, args, sock),
                GRACEFUL_SECONDS).run()
    return 0
