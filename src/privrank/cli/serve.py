"""``privrank serve``: run a local-DP survey (respondents randomize in their browser) with a live private ranking."""
from __future__ import annotations

import ipaddress
import secrets
import sys

from ..errors import InputError
from .arguments import summary

DEFAULT_DB = "privrank-survey.sqlite"
#: the default of --registrations-per-minute (privrank.serve.app.REGISTRATIONS_PER_MINUTE, without importing the server)
REGISTRATIONS_PER_MINUTE = 30


def register(sub) -> None:
    p = sub.add_parser("serve", help=summary("serve"),
                       description="Serve a survey whose respondents randomize every answer in their browser "
                                   "(local differential privacy): the server stores only randomized reports and "
                                   "shows a live private ranking on an admin dashboard.")
    p.add_argument("survey", nargs="?", metavar="SURVEY",
                   help="survey file (.toml or .json: title, question, items, design, epsilon, budget)")
    p.add_argument("--demo", action="store_true",
                   help="serve the demo survey: the LLMs of the shipped LLMFAO data, in pairs, epsilon 1 per "
                        "answer, 10 answers per respondent")
    p.add_argument("--init", metavar="FILE",
                   help="write a commented survey template to FILE (.toml, never overwritten) and exit")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--public", action="store_true",
                   help="allow a --host other than loopback (put the server behind a reverse proxy with TLS)")
    p.add_argument("--db", default=DEFAULT_DB, metavar="PATH_OR_URL",
                   help=f"SQLite file or postgresql:// URL holding the reports (default ./{DEFAULT_DB})")
    p.add_argument("--admin-token", metavar="TOKEN",
                   help="token of the dashboard and the export, at least 16 characters (default: a random one, "
                        "printed at start-up; a token given here is visible to other users of this machine)")
    p.add_argument("--invitations", type=int, metavar="N",
                   help="issue N one-time invitation links and make the survey invitation-only (for good: a "
                        "restart without this option stays so; more can be added later). Refused on a survey "
                        "that already registered respondents without invitations")
    p.add_argument("--invitations-file", metavar="PATH",
                   help="CSV file for the new links (never overwritten; default: next to the SQLite database, "
                        "NAME-invitations.csv)")
    p.add_argument("--url", metavar="BASE",
                   help="public base URL of the survey behind a reverse proxy, for the invitation links "
                        "(default: the served address)")
    p.add_argument("--registrations-per-minute", type=float, default=REGISTRATIONS_PER_MINUTE, metavar="R",
                   help=f"new respondents accepted per minute, in bursts of at most R; more get HTTP 429 "
                        f"(default {REGISTRATIONS_PER_MINUTE})")
    p.set_defaults(func=run_serve)


def _check_host(host: str, public: bool) -> None:
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback and not public:
        raise InputError(f"--host {host} is not a loopback address: the server speaks plain HTTP, so serve "
                         "respondents through a reverse proxy with TLS (e.g. nginx or Caddy) and add --public")


def run_serve(args) -> int:
    """Open the survey and the store, print the two URLs (stderr), run uvicorn until interrupted (or, with
    ``--init FILE``, write a survey template)."""
    if args.init is not None:  # before the server's imports: writing a template needs none of them
        if args.survey is not None or args.demo:
            raise InputError("--init FILE writes a template: give it without a survey file or --demo")
        from ..serve.survey import write_template

        print(f"privrank serve: wrote {write_template(args.init)}: edit it, then run privrank serve {args.init}",
              file=sys.stderr)
        return 0
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError:
        raise InputError("privrank serve needs: pip install 'privrank[serve]' (from a clone: "
                         "pip install -e '.[serve]')") from None
    from ..serve.app import RESPONDENT_UNITS, RateLimit, check_admin_token, create_app
    from ..serve.integrity import static_hashes
    from ..serve.invitations import base_url, default_invitations_path, issue_invitations
    from ..serve.store import open_store
    from ..serve.survey import demo_survey, load_survey

    if (args.survey is None) == (not args.demo):
        raise InputError("give a survey file or --demo (not both); privrank serve --init FILE writes a "
                         "commented survey file to start from")
    if not 0 < args.port < 65536:
        raise InputError("--port must lie in 1..65535")
    _check_host(args.host, args.public)
    if args.invitations is None and (args.invitations_file or args.url):
        raise InputError("--invitations-file and --url go with --invitations N")
    RateLimit(args.registrations_per_minute)  # refuse a bad rate or admin token before anything is opened
    if args.admin_token is not None:
        check_admin_token(args.admin_token)
    base = f"http://{f'[{args.host}]' if ':' in args.host else args.host}:{args.port}"
    links = base_url(args.url or base)
    survey = demo_survey() if args.demo else load_survey(args.survey)
    admin = args.admin_token or secrets.token_urlsafe(24)
    store = open_store(args.db)
    try:
        app = create_app(survey, store, admin, registrations_per_minute=args.registrations_per_minute)
        written = None
        if args.invitations is not None:
            written = issue_invitations(store, args.invitations, args.invitations_file
                                        or default_invitations_path(args.db), links)
        issued, used = store.invitations()
        unit = RESPONDENT_UNITS[bool(issued)]
        lines = [f"privrank serve: {survey.title!r}, {survey.design}, epsilon {survey.epsilon:g} per answer, at most "
                 f"{survey.max_answers} answer(s) per {unit}",
                 f"  respondents: {base}/", f"  dashboard:   {base}/dashboard?token={admin}",
                 "  (keep the dashboard URL private: its token opens the dashboard and the export)"]
        if issued:
            lines.append(f"  registration: by invitation only ({issued} issued, {used} used); a respondent is an "
                         "invited respondent")
        else:
            lines.append("  registration: open; a respondent is a browser (one person with two browsers is two)")
        if written is not None:
            lines.append(f"  {args.invitations} new invitation link(s) written to {written} (mail them out; the "
                         "server keeps only their hashes)")
        lines.append(f"  at most {args.registrations_per_minute:g} new respondents per minute")
        hashes = static_hashes()
        if hashes:
            lines.append("  served files (SHA-384, as in their integrity attributes; check against the release):")
            lines += [f"    {name}  {digest}" for name, digest in hashes.items()]
        print("\n".join(lines), file=sys.stderr)
        uvicorn.run(app, host=args.host, port=args.port, access_log=False, log_level="warning", server_header=False)
    finally:
        store.close()
    return 0
