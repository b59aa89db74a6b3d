"""One-time invitations to a survey: codes the researcher mails out, of which the store keeps only hashes.

An invitation is ``BASE_URL/#invite=CODE`` with ``CODE = secrets.token_urlsafe(16)`` (22
characters of base64url). The code sits in the URL's fragment, which the browser never sends to
the server nor to a proxy's log; the page reads it and registers with it. The links are written to
a CSV file (readable by its owner only) and nowhere else: the store keeps the SHA-256 of each code
and whether it was used.

The respondent's token is derived from the code (:func:`invitation_token`), so the same invitation
opened on another device registers as the same respondent, with the same budget: the store finds
the token's hash among its respondents and returns the token again, without a second registration.
The store holds no link between an invitation and its token -- its code's hash and its token's hash
cannot be joined without the code -- but whoever holds the codes (the team that mailed them) can
derive each token and so link an invitation to its randomized reports (``privrank serve
--invitation-status`` does, to say who has answered). That is within the guarantee, which is local
differential privacy per respondent: every report was randomized in the respondent's browser, and it
holds against the server and the team alike. An invitation used by an earlier privrank, which drew
its token at random, cannot be resumed on another device.

The file is reserved (created empty, exclusively) before the store is opened, so that a path that
exists or cannot be written is refused before anything else is created
(:func:`reserve_invitations`); the codes are issued and written into it once the store has
accepted the start.
"""
from __future__ import annotations

import base64
import csv
import hmac
import io
import os
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from ..errors import InputError

#: most invitations issued by one command
MAX_INVITATIONS = 1_000_000
#: what an invitation code authenticates to give its respondent's token (:func:`invitation_token`)
TOKEN_LABEL = b"privrank respondent token"


def invitation_token(code: str) -> str:
    """The respondent's token of an invitation: the base64url of the first 24 bytes of
    HMAC-SHA256(key = the code, message = :data:`TOKEN_LABEL`), 32 characters, the shape of
    ``secrets.token_urlsafe(24)``. Without the code it cannot be found from the token (nor from its hash)."""
    digest = hmac.digest(code.encode("utf-8"), TOKEN_LABEL, "sha256")
    return base64.urlsafe_b64encode(digest[:24]).decode("ascii")


def default_invitations_path(db) -> Path:
    """Where the links go by default: next to a SQLite database (``NAME-invitations.csv``), else here."""
    text = str(db)
    if text.startswith(("postgresql://", "postgres://")):
        return Path("privrank-survey-invitations.csv")
    path = Path(text)
    return path.with_name(f"{path.stem}-invitations.csv")


def base_url(url: str) -> str:
    """``url`` as the base of invitation links: http(s), a host, no query or fragment, no trailing slash."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment or \
            any(c.isspace() for c in url):
        raise InputError("--url must be the survey's public address, such as https://survey.example.org "
                         "(http or https, no query or fragment)")
    return url.rstrip("/")


def check_count(n) -> None:
    """Refuse a number of invitations that is not a whole number from 1 to ``MAX_INVITATIONS``."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_INVITATIONS:
        raise InputError(f"--invitations must be a whole number from 1 to {MAX_INVITATIONS:,}")


class InvitationsFile:
    """A new, empty file (mode 0600) reserved for invitation links by :func:`reserve_invitations`."""

    def __init__(self, path: Path, fd: int):
        self.path = path
        self._fd: int | None = fd
        self.written = False

    def issue(self, store, n: int, base: str) -> Path:
        """Issue ``n`` one-time invitations in ``store`` and write their links into this file (columns
        ``invitation,link``). If the store refuses, no code exists anywhere (the reservation then
        removes the file).

        Raises
        ------
        InputError
            ``n`` out of range, the store refusing invitations (it already registered respondents
            without one), or the file not writable.
        """
        check_count(n)
        codes = store.add_invitations(n)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["invitation", "link"])
        writer.writerows([code, f"{base}/#invite={code}"] for code in codes)
        fd, self._fd = self._fd, None
        assert fd is not None  # a reserved file is issued once
        self.written = True  # from here on the file is the only copy of codes the store holds: never removed
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(out.getvalue())
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise InputError(f"{self.path}: cannot write the invitations ({exc.strerror}); the {n} codes issued are "
                             "unusable by anyone: issue new ones with another --invitations-file") from None
        return self.path


@contextmanager
def reserve_invitations(path):
    """Create ``path`` empty and exclusively (mode 0600) and yield it as an :class:`InvitationsFile`;
    removed on the way out unless links were written into it.

    Raises
    ------
    InputError
        ``path`` exists (it may hold links already mailed out: never overwritten) or cannot be created.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise InputError(f"{path}: already exists; it may hold links already mailed out, so it is never "
                         "overwritten: give another --invitations-file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot create the invitations file ({exc.strerror})") from None
    reserved = InvitationsFile(path, fd)
    try:
        yield reserved
    finally:
        if not reserved.written:
            os.close(fd)
            path.unlink(missing_ok=True)
