"""What a respondent has answered, and which invitations have been: the page's catch-up and the team's status.

``POST /api/progress`` (:func:`progress_document`) tells a respondent's page which pairs (or whether
the ballot) the server holds of them, and how many answers remain: the page on another device, or
after its storage was cleared, marks those as sent and never asks them again, so no pair is
randomized twice. It needs the respondent's token, as a report does, and never returns a report.

``privrank serve SURVEY --invitation-status [CSV]`` (:func:`invitation_status`) reads the team's
invitations file and says of each invitation whether it is unused, started or finished, and how many
reports it sent: the store holds no link from an invitation to its token, but the codes in the file
give each token (:func:`~privrank.serve.invitations.invitation_token`). Whoever holds the codes can
thus link an invitation to its randomized reports; the guarantee, local differential privacy per
respondent, holds against them as against the server.
"""
from __future__ import annotations

import csv
import io
from urllib.parse import parse_qs, urlsplit

from ..errors import InputError
from .invitations import invitation_token
from .store import INVITATION_BYTES, credential_hash, is_urlsafe_token

#: the columns :func:`invitation_status` adds to the invitations file's
STATUS_COLUMNS = ("status", "reports")


def progress_document(survey, answered: list) -> dict:
    """``POST /api/progress``'s reply for a respondent whose reports are ``answered`` (:meth:`Store.progress`):
    ``{"answered", "remaining"}`` and, by design, ``"pairs": [[item_a, item_b], ...]`` (as reported) or
    ``"ballot": true/false``."""
    doc: dict = {"answered": len(answered), "remaining": max(0, survey.max_answers - len(answered))}
    if survey.design == "ranking":
        return {**doc, "ballot": bool(answered)}
    return {**doc, "pairs": [[a, b] for a, b in answered if a is not None]}


def answers_asked(survey) -> int:
    """The answers the page asks of one respondent: ``max_answers``, or every pair if there are fewer."""
    return min(survey.max_answers, survey.dimension)


def invitation_code(row: dict) -> str | None:
    """The code of a row of an invitations file: its ``invitation`` column, else the ``#invite=`` of its
    ``link``; None if neither has one of the right shape."""
    code = row.get("invitation")
    if code is None and row.get("link"):
        code = parse_qs(urlsplit(row["link"]).fragment).get("invite", [None])[0]
    return code if is_urlsafe_token(code, INVITATION_BYTES) else None


def invitation_status(survey, store, path) -> tuple[str, dict[str, int]]:
    """The invitations file at ``path`` as CSV with the columns :data:`STATUS_COLUMNS` added, and the count
    of each status. ``status``: ``unused``; ``started`` (used, fewer reports than the page asks);
    ``finished`` (as many as it asks: :func:`answers_asked`); ``unknown`` (no invitation of this
    database). ``reports``: the invitation's reports so far, empty for an invitation used by an earlier
    privrank (its token was random: it shows as started).

    Raises
    ------
    InputError
        The file cannot be read, or has neither an ``invitation`` nor a ``link`` column.
    """
    try:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            reader = csv.DictReader(fh)
            rows, columns = list(reader), list(reader.fieldnames or [])
    except FileNotFoundError:
        raise InputError(f"--invitation-status {path}: no such file (give the invitations file privrank serve "
                         "--invitations wrote)") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"--invitation-status {path}: cannot read the invitations "
                         f"({getattr(exc, 'strerror', None) or type(exc).__name__})") from None
    if not {"invitation", "link"} & set(columns):
        raise InputError(f"--invitation-status {path}: no column invitation or link (is it the invitations file "
                         "privrank serve --invitations wrote?)")
    used, reports = store.invitation_states()
    asked = answers_asked(survey)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*columns, *STATUS_COLUMNS])
    counts = dict.fromkeys(("unused", "started", "finished", "unknown"), 0)
    for row in rows:
        code = invitation_code(row)
        state = None if code is None else used.get(credential_hash(code))
        sent = None if not state else reports.get(credential_hash(invitation_token(code)))  # type: ignore[arg-type]
        status = ("unknown" if state is None else "unused" if not state else
                  "finished" if sent is not None and sent >= asked else "started")
        counts[status] += 1
        writer.writerow([row.get(c) or "" for c in columns] + [status, 0 if status == "unused" else
                                                               "" if sent is None else sent])
    return out.getvalue(), counts

