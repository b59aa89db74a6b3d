"""The survey store's tables and every statement on them, shared by the SQLite and PostgreSQL stores.

What is stored, and what is not
-------------------------------
``respondents(token_hash, created)``: the SHA-256 of each respondent's random token
(``secrets.token_urlsafe(24)``, their only credential, which the store never keeps) and the UTC
day it was issued (``YYYY-MM-DD``). ``reports(id, token_hash, report_key, item_a, item_b, report,
vector, epsilon, received)``: one row per randomized report as the respondent's browser sent it -- a
pair's report in {1, -1}, or a ranking ballot's randomized vector (JSON) -- with its epsilon, the
idempotency key the page drew for it and the UTC day it arrived. ``invitations(code_hash, used)``: the
SHA-256 of each invitation code and whether it was used, with no link to its token that can be made
without the code (the token is derived from the code: :mod:`privrank.serve.invitations`).
``admins(name, token_hash, added)``: each admin's name, the SHA-256 of their dashboard token (never the token) and
the UTC day it was added (:mod:`privrank.serve.admins`). ``surveys(fingerprint)``, ``survey_terms(fingerprint)``
and ``survey_texts(id, field, text, first_served)``:
which survey the store holds and each text it was served with (:meth:`privrank.serve.store.Store.claim`); ``closed(at)``: when
``privrank serve --close`` closed it; ``registration_limit(id, tokens, at)``: one row, the token bucket of
the registration limit shared by every server process on the database (:mod:`privrank.serve.ratelimit`):
the tokens left and when they were last drawn (seconds since the epoch), which is when an open survey last
registered someone -- no respondent's data and no link to one (no token, no hash, no row of theirs) -- kept
only until the bucket is full again, a minute later (then both are NULL). A respondent's times are kept to the day only: a finer time could be
joined with a reverse proxy's log, which holds addresses. There is no column that could hold a true answer,
an IP address or a user agent: the server never receives a true answer, and keeps nothing that identifies
a respondent. A database that holds any other table (a privacy ledger, another application's data; in
PostgreSQL, in the current schema) is refused before anything is created in it; a database of an earlier
schema (times to the microsecond, no keys, no invitations; tokens in plain text; or one unnamed admin token) is
migrated in place, in one transaction, when opened.
"""
import time


def utc_day() -> str:
    """Today in UTC as ``YYYY-MM-DD``: the finest time the store keeps."""
    return time.strftime("%Y-%m-%d", time.gmtime())


#: the admins (:mod:`privrank.serve.admins`); created by the migration from one unnamed token too
ADMINS_TABLE = "CREATE TABLE IF NOT EXISTS admins (name TEXT PRIMARY KEY, token_hash TEXT NOT NULL, added TEXT NOT NULL)"

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS surveys (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS survey_terms (fingerprint TEXT PRIMARY KEY)",
    "CREATE TABLE IF NOT EXISTS survey_texts (id {id_type} PRIMARY KEY, field TEXT NOT NULL, text TEXT NOT NULL, "
    "first_served TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS respondents (token_hash TEXT PRIMARY KEY, created TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS reports (id {id_type} PRIMARY KEY, "
    "token_hash TEXT NOT NULL REFERENCES respondents (token_hash), report_key TEXT, item_a TEXT, item_b TEXT, "
    "report INTEGER CHECK (report IN (1, -1)), vector TEXT, epsilon {real} NOT NULL, received TEXT NOT NULL, "
    "CHECK ((report IS NULL) = (vector IS NOT NULL)))",
    "CREATE INDEX IF NOT EXISTS reports_by_token ON reports (token_hash)",
    "CREATE UNIQUE INDEX IF NOT EXISTS reports_by_key ON reports (token_hash, report_key)",
    "CREATE TABLE IF NOT EXISTS invitations (code_hash TEXT PRIMARY KEY, "
    "used INTEGER NOT NULL DEFAULT 0 CHECK (used IN (0, 1)))",
    ADMINS_TABLE,
    "CREATE TABLE IF NOT EXISTS closed (at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS registration_limit (id INTEGER PRIMARY KEY CHECK (id = 1), tokens {real}, at {real})",
    "INSERT INTO registration_limit (id) VALUES (1) ON CONFLICT (id) DO NOTHING",
)
#: the store's tables and their columns: a database holding anything else belongs to another application
TABLES = {"surveys": {"fingerprint"}, "survey_terms": {"fingerprint"},
          "survey_texts": {"id", "field", "text", "first_served"}, "respondents": {"token_hash", "created"},
          "reports": {"id", "token_hash", "report_key", "item_a", "item_b", "report", "vector", "epsilon",
                      "received"},
          "invitations": {"code_hash", "used"}, "admins": {"name", "token_hash", "added"}, "closed": {"at"},
          "registration_limit": {"id", "tokens", "at"}}
#: the tables of every schema the store has had, oldest first, the current one last: a database of an
#: earlier one is migrated when opened (by the dialect's :attr:`Store.migrations` from its own on).
#: First: times in seconds since the epoch, no keys, no invitations; then: the respondents' tokens in plain text;
#: then: one admin token, unnamed (``admin(token_hash)``).
_ONE_ADMIN = {**{t: c for t, c in TABLES.items() if t != "admins"}, "admin": {"token_hash"}}
LAYOUTS = ({"surveys": {"fingerprint"}, "respondents": {"token", "created"},
            "reports": {"id", "token", "item_a", "item_b", "report", "vector", "epsilon", "received"}},
           {**_ONE_ADMIN, "respondents": {"token", "created"},
            "reports": {"id", "token", "report_key", "item_a", "item_b", "report", "vector", "epsilon", "received"}},
           _ONE_ADMIN, TABLES)
SQL = {
    "surveys": "SELECT fingerprint FROM surveys",
    "admins": "SELECT name, token_hash, added FROM admins ORDER BY added, name",
    "add_admin": "INSERT INTO admins (name, token_hash, added) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
    "set_admin": "INSERT INTO admins (name, token_hash, added) VALUES (?, ?, ?) ON CONFLICT (name) "
                 "DO UPDATE SET token_hash = excluded.token_hash, added = excluded.added",
    # every admin's row locked (PostgreSQL) before they are counted: two revocations at once never leave none
    "lock_admins": "UPDATE admins SET name = name",
    "count_admins": "SELECT count(*) FROM admins",
    "revoke_admin": "DELETE FROM admins WHERE name = ?",
    "closed": "SELECT min(at) FROM closed",
    "close": "INSERT INTO closed (at) SELECT ? WHERE NOT EXISTS (SELECT at FROM closed)",
    "claim": "INSERT INTO surveys (fingerprint) VALUES (?)",
    "terms": "SELECT fingerprint FROM survey_terms",
    "claim_terms": "INSERT INTO survey_terms (fingerprint) VALUES (?)",
    "texts": "SELECT field, text, first_served FROM survey_texts ORDER BY id",
    "add_text": "INSERT INTO survey_texts (field, text, first_served) VALUES (?, ?, ?)",
    "new": "INSERT INTO respondents (token_hash, created) VALUES (?, ?)",
    "lock": "SELECT token_hash FROM respondents WHERE token_hash = ?",
    # a respondent's reports so far, those of the pair (either order), and the report stored under the key (if any)
    "state": "SELECT (SELECT count(*) FROM reports WHERE token_hash = ?), (SELECT count(*) FROM reports "
             "WHERE token_hash = ? AND ((item_a = ? AND item_b = ?) OR (item_a = ? AND item_b = ?))), k.id, k.item_a, "
             "k.item_b, k.report, k.vector "
             "FROM (SELECT 1) AS one LEFT JOIN reports AS k ON k.token_hash = ? AND k.report_key = ?",
    "insert": "INSERT INTO reports (token_hash, report_key, item_a, item_b, report, vector, epsilon, received) "
              "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    "counts": "SELECT (SELECT count(*) FROM respondents), (SELECT count(*) FROM reports)",
    "days": "SELECT created, count(*) FROM respondents GROUP BY created ORDER BY created",
    "pairs": "SELECT token_hash, item_a, item_b, report, epsilon FROM reports WHERE report IS NOT NULL ORDER BY id",
    "vectors": "SELECT vector FROM reports WHERE vector IS NOT NULL ORDER BY id",
    "pairs_after": "SELECT id, item_a, item_b, report FROM reports WHERE report IS NOT NULL AND id > ? ORDER BY id",
    "vectors_after": "SELECT id, vector FROM reports WHERE vector IS NOT NULL AND id > ? ORDER BY id",
    "invitations": "SELECT count(*), coalesce(sum(used), 0) FROM invitations",
    "invite": "INSERT INTO invitations (code_hash) VALUES (?)",
    "use": "UPDATE invitations SET used = 1 WHERE code_hash = ? AND used = 0",
    # a respondent's reports (one row of NULLs for a respondent without any; none for an unknown one)
    "progress": "SELECT x.item_a, x.item_b, x.id FROM respondents AS r LEFT JOIN reports AS x "
                "ON x.token_hash = r.token_hash WHERE r.token_hash = ?",
    "invitation_states": "SELECT code_hash, used FROM invitations",
    "respondent_reports": "SELECT r.token_hash, count(x.id) FROM respondents AS r LEFT JOIN reports AS x "
                          "ON x.token_hash = r.token_hash GROUP BY r.token_hash",
    "limit": "SELECT tokens, at FROM registration_limit",
    "limit_draw": "UPDATE registration_limit SET tokens = ?, at = ?",
    "limit_forget": "UPDATE registration_limit SET tokens = NULL, at = NULL WHERE at <= ?",
}
