"""The survey file: its texts, its item labels, its template (``privrank serve --init``), and the
correction of its texts on a running survey (the store keeps the page's id and every report)."""
from __future__ import annotations

import json
import math
import os
import re
from dataclasses import replace
from pathlib import Path

import pytest
from serve_helpers import execute, key

from privrank.cli import main
from privrank.errors import InputError
from privrank.serve import open_store
from privrank.serve.survey import (
    FIELDS,
    MISSING_VALUE_LABELS,
    TEMPLATE,
    TERMS,
    TEXT_LIMITS,
    TEXTS,
    Survey,
    load_survey,
    times_as_likely,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"
DESSERTS = ("Apple pie", "Brownie", "Flan", "Gelato")
#: a survey with a typo in its question, as an earlier privrank serve would have started it
TYPO = Survey(title="Dessert survey", question="Which desert do you prefer?", items=DESSERTS, epsilon=1.0, budget=4.0)
#: TYPO's id as the earlier privrank serve computed it (Survey.fingerprint() of the code before text corrections)
EARLIER_ID = "225a3bb095d3b1f267aea2cfd750b21b1d0a51e31ef027ddcdd1bfc2d55cb811"
ADMIN = "admin-token-of-the-tests"


def write(tmp_path, text: str, name: str = "survey.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------- texts

def test_the_texts_are_read_served_and_optional(tmp_path):
    path = write(tmp_path, 'title = "T"\nquestion = "Q?"\nitems = ["a", "b"]\nbudget = 2\n'
                           'description = """\nFirst <b>paragraph</b>.\n\nSecond."""\nconsent = "I may stop."\n'
                           'contact = "team@example.org"\nclosing = "Thanks!"\n')
    survey = load_survey(path)
    doc = survey.public()
    assert (doc["description"], doc["consent"], doc["contact"], doc["closing"]) == (
        "First <b>paragraph</b>.\n\nSecond.", "I may stop.", "team@example.org", "Thanks!")  # plain text, as written
    plain = load_survey(write(tmp_path, 'title = "T"\nquestion = "Q?"\nitems = ["a", "b"]\nbudget = 2\n', "p.toml"))
    assert {k: plain.public()[k] for k in TEXTS[2:]} == dict.fromkeys(TEXTS[2:], "")


def test_a_redirect_is_read_served_and_left_out_of_the_identity(tmp_path):
    path = write(tmp_path, 'title = "T"\nquestion = "Q?"\nitems = ["a", "b"]\nbudget = 2\n'
                           'redirect = "https://panel.example.org/done?code=A1#x"\n')
    survey = load_survey(path)
    assert survey.public()["redirect"] == "https://panel.example.org/done?code=A1#x"
    assert replace(survey, redirect=None).fingerprint() == survey.fingerprint()
    assert "redirect" not in survey.texts() and replace(survey, redirect=None).public()["redirect"] is None
    for local in ("http://localhost:8000/next", "http://127.0.0.1/", "http://[::1]:9000/"):
        assert replace(survey, redirect=local).redirect == local


@pytest.mark.parametrize("url, refusal", [
    ("http://panel.example.org/done", "http:// only for localhost"),
    ("ftp://panel.example.org/", "an https:// address with a host"),
    ("javascript:alert(1)", "an https:// address with a host"),
    ("https:///path", "an https:// address with a host"),
    ("/relative", "an https:// address with a host"),
    ("https://user:secret@panel.example.org/", "user name or password"),
    ("https://panel.example.org:99999/", "not a valid web address"),
    ("https://panel.example.org/a b", "without spaces"),
    ("https://panel.example.org\\@evil.example/", "backslashes"),
    ("https://panel.example.org/" + "a" * 2000, "at most 2000 characters"),
    ("", "at most 2000 characters"),
    (42, "at most 2000 characters"),
])
def test_a_redirect_other_than_https_is_refused(url, refusal):
    with pytest.raises(InputError, match="the survey's redirect") as caught:
        Survey(title="T", question="Q", items=("a", "b"), budget=2, redirect=url)
    assert refusal in str(caught.value)


@pytest.mark.parametrize("name", TEXTS[2:])
def test_a_text_too_long_or_unstorable_is_refused(tmp_path, name):
    base = {"title": "T", "question": "Q", "items": ["a", "b"], "budget": 2}
    limit = TEXT_LIMITS[name]
    assert getattr(Survey(**{**base, name: "x" * limit}), name) == "x" * limit
    for bad in ("x" * (limit + 1), "a\x00b", "\ud800", "   ", 3):
        with pytest.raises(InputError, match=f"the survey's {name} must be text of at most {limit} characters"):
            load_survey(write(tmp_path, json.dumps({**base, name: bad}), "s.json"))


# ---------------------------------------------------------------------------------------- labels

@pytest.mark.parametrize("label", [" Flan", "Flan ", "Flan\t", "\u00a0Flan"])
def test_labels_with_outer_whitespace_are_refused(label):
    with pytest.raises(InputError, match="starts or ends with whitespace"):
        Survey(title="T", question="Q", items=("Flan2", label), budget=2)


@pytest.mark.parametrize("label", ["NA", "N/A", "n/a", "#N/A", "nan", "NaN", "null", "NULL", "None", "<NA>",
                                   "Na", "nA", "NAN", "Nan"])
def test_labels_read_as_missing_values_are_refused(label):
    with pytest.raises(InputError, match=f"the item label '{label}' is read as a missing value .* choose another"):
        Survey(title="T", question="Q", items=("Flan", label), budget=2)
    Survey(title="T", question="Q", items=("Flan", f"{label} (none)"), budget=2)  # inside a label it is fine


@pytest.mark.parametrize("label", ["=SUM(A1)", "+1", "@home"])
def test_labels_a_spreadsheet_reads_as_formulas_are_refused(label):
    with pytest.raises(InputError, match="reads as a formula"):
        Survey(title="T", question="Q", items=("Flan", label), budget=2)
    Survey(title="T", question="Q", items=("Flan", f"x{label}"), budget=2)


@pytest.mark.parametrize("label", ["Na", "NAN"])
def test_privranks_own_reader_takes_any_case_of_na_for_missing(tmp_path, label):
    """Why READER_MISSING_LABELS exists: were the reader to change, the list would be revisited."""
    from privrank.data.io import read_comparisons

    path = tmp_path / "c.csv"
    path.write_text(f"item_a,item_b,outcome\nFlan,{label},1\n")
    with pytest.raises(InputError):
        read_comparisons(path)


def test_the_missing_value_labels_cover_the_readers_defaults():
    """The list is the readers' own defaults: Arrow's (privrank reads CSV through it) and pandas'."""
    from pyarrow import csv

    assert set(csv.ConvertOptions().null_values) - {""} <= MISSING_VALUE_LABELS
    parsers = pytest.importorskip("pandas._libs.parsers")
    assert set(parsers.STR_NA_VALUES) - {""} == MISSING_VALUE_LABELS  # R's "NA" is among them


# ------------------------------------------------------------------------------------- the words

@pytest.mark.parametrize("eps", [0.01, 0.5, 1.0, 2.3, 4.6, 7.0, 10.0])
def test_the_protection_sentence_states_a_number_rounded_up(eps):
    factor = times_as_likely(eps)
    value = float(factor.replace(",", ""))
    assert math.exp(eps) <= value < math.exp(eps) * 1.01 + 1  # "at most" stays true
    for design, budget in (("pairs", 3 * eps), ("ranking", None)):
        sentence = Survey(title="T", question="Q", items=("a", "b"), design=design, epsilon=eps,
                          budget=budget).protection()
        assert f"at most {factor} times as likely" in sentence and "e^" not in sentence
    assert times_as_likely(1.0) == "2.72" and times_as_likely(10.0) == "22,027"


# ---------------------------------------------------------------------------------------- --init

def test_init_writes_a_commented_template_that_loads(tmp_path, capsys):
    path = tmp_path / "new.toml"
    assert main(["serve", "--init", str(path)]) == 0
    assert "wrote" in capsys.readouterr().err and path.read_text(encoding="utf-8") == TEMPLATE
    survey = load_survey(path)
    assert survey.design == "pairs" and survey.max_answers == 10 and all(survey.texts().values())
    lines = TEMPLATE.splitlines()
    for name in (n for n in FIELDS if n != "mechanism"):  # every key but the one the design sets
        (at,) = [k for k, line in enumerate(lines) if line.startswith((f"{name} = ", f"# {name} = "))]
        assert lines[at - 1].startswith("# "), f"{name} has no comment"
    for words in ("Epsilon of ONE answer", "Epsilon of ALL of one respondent's answers", "A respondent is one browser",
                  "can never change", "may be corrected", "never the meaning"):
        assert words in TEMPLATE


def test_the_template_reads_well_in_either_design(tmp_path):
    """Switched to a ranking as its comment says (the design, and no budget), the template loads, and none of its
    texts speaks of pairs, of two items or of "No preference": the page says how to answer, for either design."""
    assert '"ranking" here and remove the budget below' in TEMPLATE
    ranking = TEMPLATE.replace('\ndesign = "pairs"\n', '\ndesign = "ranking"\n')
    with pytest.raises(InputError, match="its budget is its epsilon"):  # the budget left in: refused, saying why
        load_survey(write(tmp_path, ranking))
    ranking = ranking.replace("\nbudget = 10.0\n", "\n")
    for text, design, answers in ((TEMPLATE, "pairs", 10), (ranking, "ranking", 1)):
        survey = load_survey(write(tmp_path, text, f"{design}.toml"))
        assert (survey.design, survey.max_answers) == (design, answers)
        for name, said in survey.texts().items():
            assert not re.search(r"\b(two|pairs?|no preference|the one|which of the)\b", said, re.I), (name, said)


def test_init_never_overwrites_and_wants_toml(tmp_path, capsys):
    path = write(tmp_path, "mine\n")
    assert main(["serve", "--init", str(path)]) == 2
    assert "exists: it is not overwritten" in capsys.readouterr().err and path.read_text() == "mine\n"
    assert main(["serve", "--init", str(tmp_path / "s.json")]) == 2
    assert main(["serve", "--init", str(tmp_path / "no" / "s.toml")]) == 2
    assert main(["serve", str(path), "--init", str(tmp_path / "t.toml")]) == 2
    assert "without a survey file" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["survey.toml"]


def test_the_documented_survey_is_the_template():
    """docs/survey.toml is what ``privrank serve --init docs/survey.toml`` writes."""
    assert (DOCS / "survey.toml").read_text(encoding="utf-8") == TEMPLATE


def test_a_missing_survey_file_points_at_init(tmp_path, capsys):
    with pytest.raises(InputError, match="privrank serve --init .*none.toml writes a commented template"):
        load_survey(tmp_path / "none.toml")
    assert main(["serve"]) == 2 and "--init FILE" in capsys.readouterr().err


def test_a_json_survey_with_a_repeated_key_is_refused_naming_it(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('{"title": "T", "question": "Q?", "items": ["a", "b"], "budget": 10, "epsilon": 1, "epsilon": 5}')
    with pytest.raises(InputError, match='the key "epsilon" is given twice'):
        load_survey(path)
    path.write_text('{"title": "T", "question": "Q?", "items": ["a", "b"], "budget": 10, "epsilon": 1}')
    assert load_survey(path).epsilon == 1


@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_a_survey_nested_too_deeply_is_an_input_error(tmp_path, suffix):
    path = tmp_path / f"s{suffix}"
    depth = 100_000
    path.write_text("[" * depth + "]" * depth if suffix == ".json" else "x = " + "[" * depth + "]" * depth)
    with pytest.raises(InputError, match="too deeply|not valid TOML"):
        load_survey(path)


def test_a_survey_that_is_not_utf8_says_so(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('title = "T"\n', encoding="utf-16")
    with pytest.raises(InputError, match="not UTF-8 text .*save it as UTF-8"):
        load_survey(path)


@pytest.mark.skipif(not os.path.isdir("/sys"), reason="needs a folder its user cannot write")
def test_init_in_a_read_only_folder_says_what_to_do(tmp_path, capsys):
    folder = Path("/sys")  # read-only even for root
    if os.geteuid() != 0:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o500)
    assert main(["serve", "--init", str(folder / "survey-template.toml")]) == 2
    err = capsys.readouterr().err
    assert "Permission denied" in err and "a folder you can write to" in err and "(PermissionError)" not in err


# ----------------------------------------------------------------------------------- corrections

def test_the_identity_is_the_terms_only():
    corrected = replace(TYPO, title="Desserts", question="Which dessert do you prefer?", description="D",
                        consent="C", contact="E", closing="F", closes="2027-01-01T00:00:00Z",
                        redirect="https://panel.example.org/done")
    assert corrected.fingerprint() == TYPO.fingerprint()  # a moved closing time and a redirect too
    for changed in (replace(TYPO, items=DESSERTS[::-1]), replace(TYPO, epsilon=0.5), replace(TYPO, budget=3.0),
                    replace(TYPO, items=DESSERTS[:3] + ("Ice cream",))):
        assert changed.fingerprint() != TYPO.fingerprint()
    assert set(TERMS) | set(TEXTS) | {"closes", "redirect"} == set(FIELDS)
    assert TYPO.earlier_fingerprint() == EARLIER_ID  # the earlier code's id, pinned


def earlier_store(target) -> str:
    """A store as the earlier privrank serve left it for TYPO: claimed with the id of the terms and the
    question, one respondent with two reports; returns the respondent's token."""
    with open_store(target) as store:
        token = store.new_respondent()
        for a, b in (DESSERTS[:2], DESSERTS[2:]):
            store.add_report(token, key=key(), epsilon=1.0, max_answers=4, item_a=a, item_b=b, report=1)
    execute(target, "DROP TABLE survey_terms", "DROP TABLE survey_texts",
            f"INSERT INTO surveys (fingerprint) VALUES ('{EARLIER_ID}')")
    return token


def serve(survey, target):
    """A test client of the application for ``survey`` on the store at ``target`` (the store's claim runs)."""
    testclient = pytest.importorskip("starlette.testclient")
    from privrank.serve.app import admin_token_hash, create_app

    store = open_store(target)
    try:
        app = create_app(survey, store, admin_token_hash(ADMIN), registrations_per_minute=10 ** 6)
        return testclient.TestClient(app), store
    except BaseException:
        store.close()
        raise


def report(token, a, b):
    return {"token": token, "key": key(), "item_a": a, "item_b": b, "report": 1, "epsilon": 1.0}


def test_an_earlier_store_keeps_its_id_through_the_upgrade_and_a_corrected_question(target):
    """Opened by this version, then with the question corrected: the page's id stays the earlier one,
    the respondent and their reports stay, their budget goes on; other terms are still refused."""
    token = earlier_store(target)
    client, store = serve(TYPO, target)  # the upgrade: the same survey file
    with client, store:
        assert client.get("/api/survey").json()["id"] == EARLIER_ID
        assert client.post("/api/reports", json=report(token, DESSERTS[0], DESSERTS[2])).json() == {"remaining": 1}
    corrected = replace(TYPO, question="Which dessert do you prefer?", consent="You may stop at any time.")
    client, store = serve(corrected, target)
    with client, store:
        doc = client.get("/api/survey").json()
        assert doc["id"] == EARLIER_ID and doc["question"] == "Which dessert do you prefer?"
        assert client.post("/api/reports", json=report(token, DESSERTS[1], DESSERTS[3])).json() == {"remaining": 0}
        assert store.counts() == (1, 4)
        history = store.text_history()
        assert [(f, t) for f, t, _ in history if f in ("question", "consent")] == [
            ("question", TYPO.question), ("consent", ""), ("question", corrected.question),
            ("consent", corrected.consent)]
    for other in (replace(corrected, epsilon=0.5), replace(corrected, items=DESSERTS[::-1]),
                  replace(corrected, budget=3.0)):
        with pytest.raises(InputError, match="a different survey"):
            serve(other, target)
    client, store = serve(replace(corrected, question="Which one?", title="Desserts, again"), target)
    with client, store:
        assert client.get("/api/survey").json()["id"] == EARLIER_ID


def test_an_earlier_store_opened_with_another_question_is_refused(target):
    """An earlier store holds only the id of its terms and question: with a changed question the terms
    cannot be checked, so it is refused with the way out (start once as it was)."""
    earlier_store(target)
    with pytest.raises(InputError, match="start it once with the question as it was"):
        serve(replace(TYPO, question="Which dessert do you prefer?"), target)
    client, store = serve(TYPO, target)  # nothing was changed by the refusal
    with client, store:
        assert client.get("/api/survey").json()["id"] == EARLIER_ID


def test_a_new_store_is_keyed_by_the_terms_and_records_each_change_of_a_text(target):
    with open_store(target) as store:
        first = store.claim(TYPO.fingerprint(), earlier=TYPO.earlier_fingerprint(), texts=TYPO.texts())
        assert first == TYPO.fingerprint() != EARLIER_ID
        assert store.claim(TYPO.fingerprint(), earlier=TYPO.earlier_fingerprint(), texts=TYPO.texts()) == first
        assert len(store.text_history()) == len(TEXTS)  # the same texts again: nothing new
        fixed = replace(TYPO, question="Which dessert do you prefer?")
        assert store.claim(fixed.fingerprint(), earlier=fixed.earlier_fingerprint(), texts=fixed.texts()) == first
        store.claim(TYPO.fingerprint(), texts=TYPO.texts())  # back to the first text: a change too
        questions = [(t, day) for f, t, day in store.text_history() if f == "question"]
        assert [t for t, _ in questions] == [TYPO.question, fixed.question, TYPO.question]
        assert all(len(day) == 10 and day[4] == "-" for _, day in questions)
        with pytest.raises(InputError, match="a different survey"):
            store.claim(replace(TYPO, epsilon=2.0).fingerprint(), texts=TYPO.texts())
