"""More than one server process on one database: the registration limit is one token bucket in the store,
shared by every process (two stores on one SQLite file or PostgreSQL database stand for two processes),
and ``privrank serve --workers N`` serves from N processes on one port."""
import threading

import pytest

from privrank.serve import open_store
from privrank.serve.ratelimit import RegistrationsLimited
from serve_helpers import fingerprint

PER_MINUTE = 6  # one token every 10 s: none comes back during a test


def test_two_processes_share_one_registration_limit(target):
    """Two stores on one database take their registrations from one bucket of 6: 6 in all are stored, the
    rest refused with the wait until the next token, storing nothing and taking no token."""
    with open_store(target) as first, open_store(target) as second:
        first.claim(fingerprint("limit"))
        outcomes = []
        for k in range(10):
            try:
                outcomes.append((first, second)[k % 2].new_respondent(per_minute=PER_MINUTE) and "201")
            except RegistrationsLimited as exc:
                assert 0 < exc.retry_after <= 60 / PER_MINUTE
                outcomes.append("429")
        assert outcomes == ["201"] * 6 + ["429"] * 4
        assert first.counts() == second.counts() == (6, 0)
        with open_store(target) as third:  # a process started later finds the bucket as the others left it
            with pytest.raises(RegistrationsLimited):
                third.new_respondent(per_minute=PER_MINUTE)
            third.new_respondent()  # without a limit (the store's own use): not counted against it
        assert first.counts() == (7, 0)


def test_racing_registrations_of_two_processes_never_exceed_the_bucket(target):
    """Sixteen threads over two stores register at once: exactly a bucket's worth gets through."""
    with open_store(target) as first, open_store(target) as second:
        first.claim(fingerprint("race"))
        start, results, lock = threading.Barrier(16), [], threading.Lock()

        def register(store):
            start.wait(timeout=30)
            for _ in range(4):
                try:
                    store.new_respondent(per_minute=PER_MINUTE)
                    outcome = "201"
                except RegistrationsLimited:
                    outcome = "429"
                with lock:
                    results.append(outcome)
        threads = [threading.Thread(target=register, args=((first, second)[k % 2],)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
        assert results.count("201") == PER_MINUTE and len(results) == 64
        assert first.counts() == (PER_MINUTE, 0)


def test_an_invitation_only_store_takes_no_token(target):
    """Invitations are the limit of an invitation-only survey: a registration with a code leaves the
    bucket as it was, and so does a refused code."""
    with open_store(target) as store:
        codes = store.add_invitations(8)
        for code in codes:
            store.new_respondent(code, per_minute=1)
        assert store.counts() == (8, 0)
