"""``privrank serve SURVEY --add-admin NAME | --revoke-admin NAME | --admins``: the survey's admins
(:mod:`privrank.serve.admins`), managed from the database alone, without serving."""
from __future__ import annotations

import sys

from ..errors import InputError


def add_arguments(p) -> None:
    """The admins' options of ``privrank serve``, one at a time."""
    admins = p.add_argument_group("admins (without serving)").add_mutually_exclusive_group()
    admins.add_argument("--add-admin", metavar="NAME",
                        help="add an admin: a new random dashboard token for NAME (1 to 40 characters: a-z, 0-9, "
                             "'.', '_', '-'), printed once on stdout (the database keeps its hash only), then exit. "
                             "Servers running on the database accept it within a second or two")
    admins.add_argument("--revoke-admin", metavar="NAME",
                        help="revoke the admin NAME and exit: servers running on the database refuse their token "
                             "within a second or two. The last admin cannot be revoked")
    admins.add_argument("--admins", action="store_true",
                        help="list the admins (names and the UTC day each was added, never a token) and exit")


def chosen(args) -> str | None:
    """The admins' option given, or None."""
    return ("--add-admin" if args.add_admin is not None else "--revoke-admin" if args.revoke_admin is not None
            else "--admins" if args.admins else None)


def run_admins(args, option: str, db: str) -> int:
    """Add, revoke or list the admins of the survey's database ``db`` (which must hold this survey).

    Raises
    ------
    InputError
        An option of serving, closing or exporting given too, a bad name, a database of another survey, a name taken, no admin of that name, or the last admin revoked.
    """
    from ..serve import open_store
    from ..serve.admins import admin_token_hash, check_admin_name, new_admin_token
    from ..serve.survey import demo_survey, load_survey

    others = [name for name, given in (("--new-db", args.new_db), ("--public", args.public),
                                       ("--invitations", args.invitations is not None),
                                       ("--invitations-file", args.invitations_file), ("--url", args.url),
                                       ("--new-admin-token", args.new_admin_token),
                                       ("--admin-token-file", args.admin_token_file),
                                       ("--admin-token", args.admin_token), ("--close", args.close),
                                       ("--export", args.export is not None)) if given]
    if others:
        raise InputError(f"{option} serves nothing: give it without {others[0]}")
    name = args.add_admin if args.add_admin is not None else args.revoke_admin
    if name is not None:
        try:
            check_admin_name(name)
        except InputError as exc:
            raise InputError(f"{option}: {exc}") from None
    survey = demo_survey() if args.demo else load_survey(args.survey)
    with open_store(db) as store:
        store.claim(survey.fingerprint(), earlier=survey.earlier_fingerprint())
        if args.admins:
            rows = [(admin, day) for admin, _, day in store.admins()]
            width = max([len("name"), *(len(admin) for admin, _ in rows)])
            print(f"{'name':<{width}}  added (UTC day)", *(f"{admin:<{width}}  {day}" for admin, day in rows), sep="\n")
            if not rows:
                print("privrank serve: no admin yet: the first privrank serve of the database makes the owner's "
                      "token", file=sys.stderr)
            return 0
        if args.revoke_admin is not None:
            store.revoke_admin(name)
            print(f"privrank serve: revoked the admin {name!r}: servers running on the database refuse their token "
                  "within a second or two", file=sys.stderr)
            return 0
        token = new_admin_token()
        store.add_admin(name, admin_token_hash(token))
    print(f"privrank serve: added the admin {name!r}; their dashboard token, below, is shown only now (the database "
          f"keeps its hash): they open BASE/dashboard?token=TOKEN, or send Authorization: Bearer TOKEN. "
          f"Revoke it with --revoke-admin {name}", file=sys.stderr)
    print(token)
    return 0
