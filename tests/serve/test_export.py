"""The survey's export (``GET /export.csv``): a pairs survey's reports open unchanged in pandas, a
spreadsheet and ``privrank rank``; a ranking survey's ballots export too, and read back into its
private ranking."""
import csv
import hashlib
import html
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from serve_helpers import key
from test_server import ballot

from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.app import admin_token_hash, create_app, export_csv
from privrank.serve.ballots import pair_names, rank_ballots, read_ballots
from privrank.serve.store import credential_hash
from privrank.serve.survey import Survey

pd = pytest.importorskip("pandas")
starlette_testclient = pytest.importorskip("starlette.testclient")
pytestmark = pytest.mark.filterwarnings("ignore:Using `httpx` with `starlette.testclient`")

ADMIN = "export-admin-token-0123456789"
#: labels a CSV writer or reader could mangle: a comma, quotes, a hash, a number, the separator of pair names
LABELS = ("gamma, with a comma", 'say "hi"', "#1 pick", "2024", "délta", "a > b")


def client_of(survey, path):
    store = open_store(path)
    app = create_app(survey, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6, dashboard_refresh=0)
    return starlette_testclient.TestClient(app), store


def export(client) -> bytes:
    """The export's bytes, as a browser saves them: UTF-8 with a byte order mark, which Excel needs."""
    r = client.get("/export.csv", params={"token": ADMIN})
    assert r.status_code == 200 and r.headers["content-type"] == "text/csv; charset=utf-8"
    assert r.content.startswith(b"\xef\xbb\xbf")
    return r.content


@pytest.fixture
def pairs(tmp_path):
    survey = Survey(title="Labels", question="Which?", items=LABELS, epsilon=1.0, budget=3.0)
    client, store = client_of(survey, tmp_path / "pairs.sqlite")
    rng = np.random.default_rng(7)
    with client:
        for _ in range(30):
            token = client.post("/api/respondents").json()["token"]
            chosen = rng.choice(len(LABELS) * (len(LABELS) - 1) // 2, 3, replace=False)
            for p in chosen:
                a, b = list(itertools.combinations(LABELS, 2))[p]
                r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": a, "item_b": b,
                                                      "report": int(rng.choice([1, -1])), "epsilon": 1.0})
                assert r.status_code == 201
        yield client, survey
    store.close()


def test_pandas_reads_the_pairs_export_back_exactly(pairs):
    client, _ = pairs
    content = export(client)
    frame = pd.read_csv(io.BytesIO(content))  # every default
    assert frame.astype(str).values.tolist() == list(csv.reader(io.StringIO(content.decode("utf-8-sig"))))[1:]
    assert list(frame.columns) == ["user", "item_a", "item_b", "outcome", "epsilon", "max_answers"]
    assert len(frame) == 90 and frame["user"].map(type).eq(str).all()
    assert frame["user"].str.fullmatch(r"r[0-9a-f]{16}").all()
    assert set(frame["item_a"]) | set(frame["item_b"]) <= set(LABELS)  # labels as strings, "2024" included
    assert frame["item_a"].map(type).eq(str).all() and frame["item_b"].map(type).eq(str).all()
    assert set(frame["outcome"]) <= {1, -1} and (frame["epsilon"] == 1.0).all() and (frame["max_answers"] == 3).all()
    assert str(frame["max_answers"].dtype).startswith("int")


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="R is not installed (Debian: apt-get install r-base-core)")
def test_r_reads_the_pairs_export_back_with_its_defaults(pairs, tmp_path):
    """R's read.csv, every default: the same columns (the byte order mark skipped), rows and labels."""
    client, _ = pairs
    path = tmp_path / "export.csv"
    path.write_bytes(export(client))
    script = ('d <- read.csv(commandArgs(TRUE)[1]); cat(paste(names(d), collapse=","), nrow(d), '
              'all(grepl("^r[0-9a-f]{16}$", d$user)), class(d$max_answers), sort(unique(c(d$item_a, d$item_b))), '
              'sep="\\n")')
    out = subprocess.run(["Rscript", "-e", script, str(path)], capture_output=True, timeout=120, env={
        **os.environ, "LANG": "C.UTF-8"}, check=True).stdout.decode("utf-8").splitlines()
    assert out[:4] == ["user,item_a,item_b,outcome,epsilon,max_answers", "90", "TRUE", "integer"]
    assert set(out[4:]) <= set(LABELS) and len(out) > 5


class Reports:
    """A store holding only pairs reports under the given tokens (as a store does: their hashes)."""

    def __init__(self, tokens):
        self.hashes = [credential_hash(t) for t in tokens]

    def pair_reports(self):
        import pyarrow as pa

        n = len(self.hashes)
        return pa.table({"user": pa.array(self.hashes, pa.string()), "item_a": ["apple"] * n, "item_b": ["pear"] * n,
                         "outcome": pa.array([1] * n, pa.int8()), "epsilon": [1.0] * n})


def token_whose_old_pseudonym(pattern: str) -> str:
    """A token the old export named by 16 hex digits matching ``pattern`` (a spreadsheet reads them as a number)."""
    return next(t for t in (f"token-{k:08d}" for k in itertools.count())
                if re.fullmatch(pattern, hashlib.sha256(t.encode()).hexdigest()[:16]))


@pytest.mark.parametrize("pattern", [r"[0-9]{16}", r"[0-9]+e[0-9]+"])
def test_a_pseudonym_is_never_read_as_a_number(pattern):
    """16 hex digits used to be the pseudonym: all digits, or 1234e567..., which pandas and a spreadsheet
    read as a number (losing the respondent's identity)."""
    token = token_whose_old_pseudonym(pattern)
    survey = Survey(title="T", question="Q", items=("apple", "pear"), epsilon=1.0, budget=1.0)
    frame = pd.read_csv(io.StringIO(export_csv(survey, Reports([token]))))
    assert frame["user"].tolist() == ["r" + hashlib.sha256(token.encode()).hexdigest()[:16]]


def test_the_export_holds_no_credential(tmp_path):
    """The export names each respondent by a pseudonym: never the token (a credential), nor the whole hash
    the store looks it up by; it is the pseudonym exports gave before tokens were kept hashed."""
    survey = Survey(title="T", question="Q", items=("apple", "pear", "plum"), epsilon=1.0, budget=2.0)
    client, store = client_of(survey, tmp_path / "pairs.sqlite")
    with client:
        tokens = [client.post("/api/respondents").json()["token"] for _ in range(4)]
        for token in tokens:
            r = client.post("/api/reports", json={"token": token, "key": key(), "item_a": "apple", "item_b": "pear",
                                                  "report": 1, "epsilon": 1.0})
            assert r.status_code == 201
        text = export(client).decode("utf-8-sig")
    store.close()
    assert not any(t in text or credential_hash(t) in text for t in tokens)
    users = {row["user"] for row in csv.DictReader(io.StringIO(text))}
    assert users == {"r" + hashlib.sha256(t.encode()).hexdigest()[:16] for t in tokens}


def test_privrank_rank_ranks_the_pairs_export(pairs, tmp_path):
    client, _ = pairs
    path = tmp_path / "export.csv"
    path.write_bytes(export(client))

    def rank(*declared):
        return subprocess.run([sys.executable, "-c", "import sys; from privrank.cli import main; sys.exit(main())",
                               "rank", str(path), "--format", "json", *declared], capture_output=True, text=True,
                              timeout=300, check=False, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    done = rank()
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert sorted(row["item"] for row in doc["ranking"]) == sorted(LABELS)
    # the export's reports all carry the survey's epsilon, which --epsilon may state
    declared = rank("--epsilon", repr(doc["guarantee"]["epsilon"]))
    assert declared.returncode == 0 and json.loads(declared.stdout)["ranking"] == doc["ranking"]
    assert "the declared epsilon" in json.loads(declared.stdout)["guarantee"]["note"]


def test_an_empty_pairs_export_has_the_whole_header(tmp_path):
    survey = Survey(title="T", question="Q", items=("apple", "pear"), epsilon=1.0, budget=1.0)
    client, store = client_of(survey, tmp_path / "empty.sqlite")
    with client:
        assert export(client).decode("utf-8-sig") == "user,item_a,item_b,outcome,epsilon,max_answers\n"
    store.close()


# ---------------------------------------------------------------------------------- ranking ballots

def test_a_ranking_survey_exports_its_ballots_and_reads_back_into_its_ranking(tmp_path):
    """A ranking survey's export used to be 404."""
    items = ("Rye", "Spelt, whole", 'Oat "rolled"', "#4", "Wheat > Barley")
    survey = Survey(title="Grains", question="Rank them", items=items, design="ranking", epsilon=2.0)
    client, store = client_of(survey, tmp_path / "ballots.sqlite")
    rng = np.random.default_rng(3)
    truth = np.array([2, 0, 4, 1, 3])
    with client:
        for _ in range(240):  # past the dashboard's threshold (209 ballots here)
            token = client.post("/api/respondents").json()["token"]
            r = client.post("/api/reports", json={"token": token, "key": key(), "vector": ballot(survey, truth, rng),
                                                  "epsilon": 2.0})
            assert r.status_code == 201
        content = export(client)
        page = html.unescape(client.get("/dashboard", params={"token": ADMIN}).text)
        shown = re.findall(r'<td class="item">(.*?)</td>', page)
        stored = store.vectors()
    store.close()
    frame = pd.read_csv(io.BytesIO(content))
    assert list(frame.columns) == ["user", *pair_names(items), "epsilon"] and frame.columns[1] == "Rye > Spelt, whole"
    assert len(frame) == 240 and frame["user"].map(type).eq(str).all() and (frame["epsilon"] == 2.0).all()
    path = tmp_path / "ballots.csv"
    path.write_bytes(content)
    ballots = read_ballots(path)
    assert ballots.items == items and ballots.epsilon == 2.0
    assert sorted(map(tuple, ballots.vectors.tolist())) == sorted(map(tuple, stored.tolist()))  # every digit kept
    result = rank_ballots(path)
    assert result.ranking == shown == [items[k] for k in truth]
    g = result.guarantee
    assert g.epsilon == 2.0 and g.model == "local" and "one ballot" in g.note
    margin = result.details["manipulation_margin"]  # the dashboard's, read back from the export
    assert f"{margin['fakes']} fake respondents can change the top item" in page
    assert 1 <= margin["at_least"] <= margin["fakes"] and len(margin["ballot"]) == len(pair_names(items))


def test_a_ballots_file_of_another_shape_is_refused(tmp_path):
    path = tmp_path / "b.csv"
    for text, message in (("user,a > b,b > c,epsilon\nr1,1,1,1\n", "one column per pair"),
                          ("user,x > y,x > z,y > w,epsilon\nr1,1,1,1,1\n", "named 'A > B'"),
                          ("user,x > y > z,epsilon\nr1,1,1\n", "two ways"),
                          ("user,a > b,epsilon\nr1,0.1,1\n", "not a randomized ballot"),
                          ("user,a > b,epsilon\nr1,nan,1\n", "finite"),
                          ("user,a > b,epsilon\nr1,x,1\n", "record 2")):
        path.write_text(text)
        with pytest.raises(InputError, match=message):
            read_ballots(path)
