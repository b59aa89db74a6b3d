"""The persistent privacy ledger: fingerprints, charges per unit, enforcement, restarts and concurrency."""
import math
import threading

import numpy as np
import pytest

from privrank.data.comparisons import PairwiseComparisons
from privrank.data.io import read_rankings
from privrank.data.rankings import Rankings
from privrank.errors import BudgetExceededError, InputError
from privrank.guarantees import UNIT_COMPARISON, UNIT_EDGE, UNIT_RANKING, UNIT_USER, ApproxDP, Guarantee, PureDP
from privrank.ledger import Ledger, charge, fingerprint, spent


def comps(rows, items=None):
    users, a, b, out = zip(*rows)
    return PairwiseComparisons.from_labels(a, b, out, user=users, items=items)


ROWS = [(1, "x", "y", 1), (1, "y", "z", -1), (2, "x", "z", 0), (2, "x", "y", 1)]
LOCAL = Guarantee(epsilon=1.0, model="local", unit=UNIT_COMPARISON, mechanism="rr", epsilon_per_comparison=1.0,
                  epsilon_per_user=2.0)
CENTRAL_USER = Guarantee(epsilon=1.5, model="central", unit=UNIT_USER, mechanism="op")


def test_fingerprint_is_canonical():
    base = fingerprint(comps(ROWS))
    assert fingerprint(comps(ROWS[::-1])) == base  # row order
    assert fingerprint(comps([(1, "y", "x", -1)] + ROWS[1:])) == base  # orientation of a pair
    assert fingerprint(comps(ROWS, items=["w", "x", "y", "z"])) == base  # an item nobody compared
    assert fingerprint(comps([(1, "x", "y", -1)] + ROWS[1:])) != base  # one answer changed
    assert fingerprint(comps([(1, "x", "y", 1), (1, "y", "z", -1)])) != base  # one answer removed
    # regression (issue 15, finding 4): dropping or renaming the user column kept no budget
    no_users = PairwiseComparisons.from_labels([r[1] for r in ROWS], [r[2] for r in ROWS], [r[3] for r in ROWS])
    assert fingerprint(no_users) == base
    assert fingerprint(comps([(3, "x", "y", 1)] + ROWS[1:])) == base  # the same answers, another person: safe side
    with pytest.raises(InputError):
        fingerprint(42)


@pytest.mark.parametrize("n, m", [(3000, 6), (40, 9)])  # records many beside the cells of the pairs, and few
def test_fingerprint_in_memory_is_the_streamed_files(tmp_path, n, m):
    """The records in memory are digested per (pair, outcome) cell when the cells are fewer, per record
    otherwise; a file streamed batch by batch is digested per record: the same fingerprint."""
    rng = np.random.default_rng(5)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    outcome = rng.integers(-1, 2, n)
    path = tmp_path / "votes.csv"
    path.write_text("item_a,item_b,outcome\n" + "".join(f"i{x},i{y},{o}\n" for x, y, o in zip(a, b, outcome)))
    from privrank.data.io import read_comparisons
    in_memory = read_comparisons(path)
    assert fingerprint(in_memory) == fingerprint(path)
    flipped = PairwiseComparisons.from_indices(in_memory.items, in_memory.item_b[::-1], in_memory.item_a[::-1],
                                               -in_memory.outcome[::-1])
    assert fingerprint(flipped) == fingerprint(path)  # every pair turned round, the rows reversed
    outcome = in_memory.outcome.copy()
    outcome[n // 2] = -1 if outcome[n // 2] == 1 else 1
    changed = PairwiseComparisons.from_indices(in_memory.items, in_memory.item_a, in_memory.item_b, outcome)
    assert fingerprint(changed) != fingerprint(path)  # one answer changed


SOC = """# NUMBER ALTERNATIVES: 3
# ALTERNATIVE NAME 1: x
# ALTERNATIVE NAME 2: y
# ALTERNATIVE NAME 3: z
{lines}
"""


def test_rankings_fingerprint_is_canonical(tmp_path):
    def soc(name, lines):
        path = tmp_path / name
        path.write_text(SOC.format(lines="\n".join(lines)))
        return path

    base = fingerprint(soc("a.soc", ["2: 1,2,3", "1: 3,1,2"]))
    assert fingerprint(soc("b.soc", ["1: 3,1,2", "1: 1,2,3", "1: 1,2,3"])) == base  # row order, multiplicities
    csv_file = tmp_path / "c.csv"
    csv_file.write_text("rank1,rank2,rank3\nz,x,y\nx,y,z\nx,y,z\n")
    assert fingerprint(csv_file) == base  # another format, the same ballots
    labels = Rankings.from_labels([list("xyz"), list("xyz"), list("zxy")], items="xyz")
    assert fingerprint(labels) == base  # in memory
    assert fingerprint(soc("d.soc", ["2: 1,2,3", "1: 3,2,1"])) != base  # one ballot changed
    assert fingerprint(soc("e.soc", ["3: 1,2,3"])) != base
    partial = soc("f.soi", ["2: 1,2,3", "1: 3,1,2", "4: 2"])
    dropped = fingerprint(read_rankings(partial, partial="drop"))
    assert dropped == base and fingerprint(partial) != base  # the file's own ballots, partial ones included
    assert fingerprint(partial) == fingerprint(soc("g.soi", ["4: 2", "1: 3,1,2", "2: 1,2,3"]))


def test_approximate_dp_releases_need_a_budget_with_delta(tmp_path):
    approx = Guarantee(epsilon=1.0, delta=4e-6, model="central", unit=UNIT_RANKING, mechanism="gauss")
    pure = Guarantee(epsilon=0.5, model="central", unit=UNIT_RANKING, mechanism="lap")
    row = lambda g: {"unit": g.unit, "epsilon": g.epsilon, "delta": g.delta,  # noqa: E731
                     "epsilon_per_user": None, "private": True}
    assert charge(row(approx), UNIT_RANKING) == ApproxDP(1.0, 4e-6) and charge(row(pure), UNIT_RANKING) == PureDP(0.5)
    assert spent([row(approx), row(pure), row(approx)], UNIT_RANKING) == (pytest.approx(2.5), pytest.approx(8e-6))
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.set_budget("p", "ranking", 5.0)
        with pytest.raises(BudgetExceededError, match="needs a delta"):
            ledger.record("p", approx)
        ledger.set_budget("a", "ranking", 3.0, 1e-5)
        ledger.record("a", approx)
        ledger.record("a", approx)
        with pytest.raises(BudgetExceededError, match="delta = 4e-06 exceeds the 2e-06 left"):
            ledger.record("a", approx)
        ledger.record("a", pure)  # a pure release spends no delta
        with pytest.raises(BudgetExceededError, match="only 0.5 of"):
            ledger.record("a", Guarantee(epsilon=0.6, model="central", unit=UNIT_RANKING, mechanism="lap"))
        (b,) = ledger.budgets("a")
        assert (b["spent_epsilon"], b["spent_delta"]) == (pytest.approx(2.5), pytest.approx(8e-6))
        ledger.set_budget("a", "ranking", 10.0)  # a pure budget after approximate releases: nothing more fits
        with pytest.raises(BudgetExceededError, match="already recorded"):
            ledger.record("a", pure)


def test_charges_per_unit():
    row = lambda g: {"unit": g.unit, "epsilon": g.epsilon, "delta": g.delta,  # noqa: E731
                     "epsilon_per_user": g.epsilon_per_user, "private": g.private}
    edge = Guarantee(epsilon=0.5, model="central", unit=UNIT_EDGE, mechanism="op", epsilon_per_user=7.5)
    releases = [row(LOCAL), row(CENTRAL_USER), row(edge)]
    assert spent(releases, UNIT_COMPARISON) == (3.0, 0.0)  # 1 + 1.5 (user-level covers a comparison) + 0.5
    assert spent(releases, UNIT_USER) == (2.0 + 1.5 + 7.5, 0.0)  # per-user epsilons by composition
    no_ids = Guarantee(epsilon=1.0, model="local", unit=UNIT_COMPARISON, mechanism="rr", epsilon_per_comparison=1.0)
    assert math.isinf(spent([row(no_ids)], UNIT_USER)[0])  # no per-user statement: cannot be bounded
    assert math.isinf(spent([row(Guarantee.non_private())], UNIT_COMPARISON)[0])


def test_budget_is_enforced_across_restarts(tmp_path):
    path = tmp_path / "l.sqlite"
    fp = fingerprint(comps(ROWS))
    with Ledger(path) as ledger:
        ledger.set_budget(fp, "user", 5.0, dataset="votes.csv")
        ledger.record(fp, LOCAL, output="a.csv")  # 2 per user
        ledger.record(fp, LOCAL, output="b.csv")  # 4 per user
    with Ledger(path) as ledger:  # a new process sees the same spending
        with pytest.raises(BudgetExceededError, match="only 1 of the data set's budget of 5 per user"):
            ledger.record(fp, LOCAL, output="c.csv")
        with pytest.raises(BudgetExceededError, match="not private"):
            ledger.record(fp, Guarantee.non_private())
        ledger.record(fp, Guarantee(epsilon=1.0, model="central", unit=UNIT_USER, mechanism="op"))  # exactly 5
        assert [r["output"] for r in ledger.releases(fp)] == ["a.csv", "b.csv", ""]
        (b,) = ledger.budgets(fp)
        assert (b["spent_epsilon"], b["remaining_epsilon"]) == (5.0, 0.0)
        other = fingerprint(comps(ROWS[:3]))
        ledger.record(other, LOCAL)  # another data set has its own (unset) budget
        assert len(ledger.releases()) == 4


def test_concurrent_releases_never_overspend(tmp_path):
    path = tmp_path / "l.sqlite"
    fp = "f" * 64
    with Ledger(path) as ledger:
        ledger.set_budget(fp, "comparison", 5.0)
    outcomes = []

    def release():
        with Ledger(path) as ledger:
            try:
                ledger.record(fp, LOCAL)
                outcomes.append("ok")
            except BudgetExceededError:
                outcomes.append("refused")

    threads = [threading.Thread(target=release) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes).count("ok") == 5
    with Ledger(path) as ledger:
        assert len(ledger.releases(fp)) == 5


def test_bad_inputs(tmp_path):
    bad = tmp_path / "not-a-ledger"
    bad.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(InputError, match="not a privrank ledger"):
        Ledger(bad)
    with Ledger(tmp_path / "l.sqlite") as ledger:
        with pytest.raises(InputError, match="unit"):
            ledger.set_budget("f", "household", 1.0)
        with pytest.raises(InputError, match="epsilon"):
            ledger.set_budget("f", "user", -1.0)


G1 = Guarantee(epsilon=1.0, model="central", unit=UNIT_RANKING, mechanism="m")


def test_a_truncated_or_deleted_ledger_is_not_a_fresh_one(tmp_path):
    # regression (issue 16): a ledger truncated to 0 bytes, deleted, or a new --ledger path was silently empty
    path = tmp_path / "a.sqlite"
    with Ledger(path) as ledger:
        ledger.set_budget("data1", "ranking", 2.0)
        ledger.record("data1", G1)
    path.write_bytes(b"")
    with pytest.raises(InputError, match="empty file"):
        Ledger(path)
    path.unlink()
    for other in (path, tmp_path / "b.sqlite"):  # deleted, or another ledger file
        with Ledger(other) as ledger:
            with pytest.raises(InputError, match="another ledger"):
                ledger.record("data1", G1)
        other.unlink()
    # a restored older copy holds fewer releases than it recorded
    with Ledger(tmp_path / "c.sqlite") as ledger:
        ledger.record("data2", G1)
    backup = (tmp_path / "c.sqlite").read_bytes()
    with Ledger(tmp_path / "c.sqlite") as ledger:
        ledger.record("data2", G1)
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"c.sqlite{suffix}").unlink(missing_ok=True)
    (tmp_path / "c.sqlite").write_bytes(backup)
    with Ledger(tmp_path / "c.sqlite") as ledger:
        with pytest.raises(InputError, match="lost releases"):
            ledger.record("data2", G1)


def test_foreign_damaged_and_locked_files_are_refused(tmp_path):
    import sqlite3
    other = tmp_path / "app.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE customers (name TEXT)")
    with pytest.raises(InputError, match="another application"):
        Ledger(other)
    with sqlite3.connect(other) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master")] == ["customers"]  # untouched
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"not a database at all" * 100)
    with pytest.raises(InputError, match="not a privrank ledger, or its first page is damaged"):
        Ledger(damaged)
    with pytest.raises(InputError, match="fingerprint"):
        Ledger(tmp_path / "l.sqlite").record(None, G1)
    with pytest.raises(InputError, match="Guarantee"):
        Ledger(tmp_path / "l.sqlite").record("data", None)


def test_a_locked_ledger_is_a_clear_error_in_bounded_time(tmp_path, monkeypatch):
    import sqlite3
    import time

    import privrank.ledger as ledger_module
    monkeypatch.setattr(ledger_module, "LOCK_TIMEOUT", 0.5)
    path = tmp_path / "l.sqlite"
    Ledger(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        start = time.monotonic()
        with pytest.raises(InputError, match="locked by another process"):
            with Ledger(path) as ledger:
                ledger.record("data", G1)
        assert time.monotonic() - start < 5
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_journal_writes_from_many_threads_never_collide(tmp_path):
    # regression: every thread of one process wrote the same temporary file (named by the pid), so
    # one thread's rename could find it gone and a charged release ended in an error
    errors = []
    with Ledger(tmp_path / "l.sqlite") as ledger:
        def write(k):
            try:
                for _ in range(50):
                    ledger._place_journal("f" * 64, ledger._stage_journal("f" * 64, k))
            except Exception as exc:  # noqa: BLE001 - any failure is the bug
                errors.append(exc)
        threads = [threading.Thread(target=write, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert not list((tmp_path / "state" / "datasets").glob("*.tmp"))


def test_a_full_disk_is_reported_as_such_and_leaves_no_half_made_ledger(tmp_path, monkeypatch):
    import sqlite3

    from privrank import ledger as ledger_module

    def full(self):
        with ledger_module._database_errors(self.path):
            sqlite3.connect(self.path).execute("CREATE TABLE t (x)")  # the file exists, then the disk fills
            raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(ledger_module.Ledger, "_open", full)
    path = tmp_path / "ledger.sqlite"
    with pytest.raises(InputError, match="could not write the ledger .* nothing was released"):
        ledger_module.Ledger(path)
    assert not path.exists()  # a later run would have read it as a truncated ledger
    monkeypatch.undo()
    with ledger_module.Ledger(path) as ledger:  # space freed: a ledger as usual
        assert ledger.releases() == []


def _refuses_the_journal(ledger_path, fp="f" * 64):
    with Ledger(ledger_path) as ledger:
        for write in (lambda: ledger.record(fp, LOCAL), lambda: ledger.set_budget(fp, "user", 5.0)):
            with pytest.raises(InputError, match="cannot write the ledger journal.*nothing was recorded"):
                write()
        assert ledger.releases() == [] and ledger.budgets() == []  # refused before the charge


def test_a_journal_that_cannot_be_written_is_refused_before_the_charge(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "state-file"
    not_a_folder.write_text("")
    for state in ("/proc/privrank-journal", not_a_folder):  # nobody, root included, can write there
        monkeypatch.setenv("PRIVRANK_STATE", str(state))
        _refuses_the_journal(tmp_path / "l.sqlite")
    monkeypatch.setenv("PRIVRANK_STATE", str(tmp_path / "state"))
    with Ledger(tmp_path / "l.sqlite") as ledger:  # a writable journal: recorded as usual
        ledger.record("f" * 64, LOCAL)
        assert len(ledger.releases()) == 1
    assert not list((tmp_path / "state" / "datasets").glob(".*.tmp"))


def test_a_journal_or_ledger_on_a_full_or_read_only_file_system_is_refused_before_the_charge(
        tmp_path, monkeypatch, small_fs):
    monkeypatch.setenv("PRIVRANK_STATE", str(small_fs.path / "state"))
    with Ledger(small_fs.path / "l.sqlite") as ledger:  # a ledger there, made while there was room
        ledger.record("e" * 64, LOCAL)
    small_fs.fill()
    _refuses_the_journal(tmp_path / "l.sqlite")
    with pytest.raises(InputError, match="could not write the ledger .*nothing was released"):
        with Ledger(small_fs.path / "l.sqlite") as ledger:
            ledger.record("f" * 64, LOCAL)
    small_fs.read_only()
    _refuses_the_journal(tmp_path / "l.sqlite")
    for name in ("l.sqlite", "new.sqlite"):
        with pytest.raises(InputError, match="ledger .* read-only"):
            Ledger(small_fs.path / name)


@pytest.mark.parametrize("entry", ["[]", '"text"', "null", "3", '{"path": "x", "releases": 1}',
                                   '{"ledger": 7, "path": "x", "releases": 1}', "{ledger}",
                                   '{"ledger": "ID", "path": "x", "releases": "9"}',
                                   '{"ledger": "ID", "path": "x", "releases": -1}',
                                   '{"ledger": "ID", "path": "x", "releases": true}'])
def test_a_journal_entry_of_the_wrong_shape_is_a_clear_error(tmp_path, entry):
    with Ledger(tmp_path / "l.sqlite") as ledger:
        ledger.record("data", G1)
        journal = ledger._journal("data")
        journal.write_text(entry.replace("ID", ledger.id))
        for act in (lambda: ledger.record("data", G1), lambda: ledger.set_budget("data", "ranking", 5.0)):
            with pytest.raises(InputError, match="journal entry .* is unreadable or damaged.*restore it"):
                act()
        assert len(ledger.releases()) == 1


OLD_SCHEMA = """
CREATE TABLE budgets (
    fingerprint TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    dataset TEXT NOT NULL, time TEXT NOT NULL, PRIMARY KEY (fingerprint, unit));
CREATE TABLE releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT, fingerprint TEXT NOT NULL, dataset TEXT NOT NULL, time TEXT NOT NULL,
    mechanism TEXT NOT NULL, model TEXT NOT NULL, unit TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
    epsilon_per_user REAL, private INTEGER NOT NULL, output TEXT NOT NULL, command TEXT NOT NULL);
CREATE INDEX releases_by_data ON releases (fingerprint);
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO meta VALUES ('id', '0123456789abcdef0123456789abcdef');
"""


def test_a_ledger_written_before_labels_were_normalised_keeps_its_budgets(tmp_path, private_ledger):
    """An older ledger file gains the new tables and columns when opened; a data set budgeted under the
    fingerprint of its labels as written is still found by it -- never given a fresh budget -- and once
    released its other identities are recorded, so a relabelled copy is charged to the same budget."""
    import sqlite3

    import privrank as pr
    from privrank.ledger import RELEASE_COLUMNS, identify

    rows = [(u, "Apple", "Banana" if u % 2 else "Cherry", 1 if u % 3 else -1) for u in range(30)]
    data = comps(rows)
    with sqlite3.connect(private_ledger) as db:
        db.executescript(OLD_SCHEMA)
        db.execute("INSERT INTO budgets VALUES (?, 'one comparison', 1.0, 0.0, 'votes.csv', '2025-01-01')",
                   (identify(data).legacy,))
        db.execute("INSERT INTO releases (fingerprint, dataset, time, mechanism, model, unit, epsilon, delta, private, "
                   "output, command) VALUES (?, 'votes.csv', '2025-01-02', 'rr', 'local', 'one comparison', 0.5, 0, "
                   "1, 'out.csv', 'rank')", (identify(data).legacy,))
    assert identify(data).legacy != identify(data).labels  # the labels are not in normal form
    with Ledger(private_ledger) as ledger:
        (budget,) = ledger.budgets()
        assert budget["spent_epsilon"] == 0.5 and budget["new_data"] is None
        assert list(ledger.releases()[0]) == list(RELEASE_COLUMNS)
        assert ledger.key(identify(data)) == identify(data).legacy
        pr.debiased_randomized_response(data, 0.25, ledger=ledger)
        lower = comps([(u, a.lower(), b.lower(), o) for u, a, b, o in rows])
        with pytest.raises(BudgetExceededError, match="only 0.25 of"):
            pr.debiased_randomized_response(lower, 0.5, ledger=ledger)
        assert [r["fingerprint"] for r in ledger.releases()] == [identify(data).legacy] * 2
    with sqlite3.connect(private_ledger) as db:
        assert {"identities", "sketches"} <= {r[0] for r in db.execute("SELECT name FROM sqlite_master")}


def test_a_seeded_run_does_not_bind_its_data_set_to_its_ledger(tmp_path):
    """A seeded run (research output, not a private release) is recorded, but another ledger may
    then take the data set; a private release binds it as before."""
    import dataclasses

    seeded = dataclasses.replace(G1, seeded=True)
    with Ledger(tmp_path / "project.sqlite") as ledger:
        ledger.record("data1", seeded)
        assert len(ledger.releases()) == 1
    with Ledger(tmp_path / "ci.sqlite") as ledger:
        ledger.record("data1", seeded)
        ledger.record("data1", G1)  # the first private release binds the data set here
    with Ledger(tmp_path / "project.sqlite") as ledger:
        for g in (G1, seeded):
            with pytest.raises(InputError, match="another ledger"):
                ledger.record("data1", g)


@pytest.mark.parametrize("path,message", [
    (5, "the ledger path must be a file path"),
    ("\ud800.sqlite", "not valid Unicode text"),
    ("a\x00b.sqlite", "NUL character"),
])
def test_a_ledger_path_that_names_no_file_is_refused(tmp_path, monkeypatch, path, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match=message):
        Ledger(path)


@pytest.mark.parametrize("table, change", [
    ("budgets", "epsilon = -5"), ("budgets", "delta = 2"), ("budgets", "epsilon = 'abc'"),
    ("releases", "epsilon = 'abc'"), ("releases", "epsilon = 1e999"), ("releases", "epsilon_per_user = -1"),
    ("releases", "private = 7"),
])
def test_a_ledger_holding_an_invalid_number_is_damaged_not_the_callers_epsilon(tmp_path, table, change):
    """A recorded budget of -5 was refused as "epsilon must be > 0 (got -5.0)", a recorded epsilon of inf as
    "epsilon must be finite; use the non-private method": as if the release's own epsilon were wrong."""
    import sqlite3

    path = tmp_path / "l.sqlite"
    fp = fingerprint(comps(ROWS))
    with Ledger(path) as ledger:
        ledger.set_budget(fp, "comparison", 5.0, dataset="votes.csv")
        ledger.record(fp, LOCAL, output="a.csv")
    db = sqlite3.connect(path)
    db.execute(f"UPDATE {table} SET {change}")
    db.commit()
    db.close()
    with Ledger(path) as ledger:
        for call in (lambda: ledger.record(fp, LOCAL, output="b.csv"), ledger.budgets):
            with pytest.raises(InputError, match="is damaged .* restore it from a backup"):
                call()
        if table == "releases":
            with pytest.raises(InputError, match="is damaged"):
                ledger.releases()


def test_a_non_private_release_records_an_infinite_epsilon_and_is_sound(tmp_path):
    path = tmp_path / "l.sqlite"
    fp = fingerprint(comps(ROWS))
    with Ledger(path) as ledger:
        ledger.record(fp, Guarantee.non_private())
        ledger.set_budget(fingerprint(comps(ROWS[:3])), "comparison", 5.0, dataset="other")
        assert math.isinf(ledger.releases(fp)[0]["epsilon"]) and len(ledger.budgets()) == 1
