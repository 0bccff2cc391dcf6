import time

from shared import ids

SECRET = b"s" * 32


def test_a_timed_id_verifies_for_its_tenant_and_carries_its_time():
    now = time.time()
    job_id = ids.timed_id(SECRET, "acme", now)

    info = ids.verify(SECRET, "acme", job_id)

    assert info is not None and info.kind is ids.IdKind.TIMED
    assert abs(info.minted_at - now) < 0.002


def test_an_id_does_not_verify_for_another_tenant_or_secret_or_when_altered():
    job_id = ids.timed_id(SECRET, "acme")
    # Alter a middle character: the last base32 character also carries padding bits, so changing
    # it can leave the decoded bytes as they were (this test used to fail about 1 run in 8).
    altered = job_id[:5] + ("a" if job_id[5] != "a" else "b") + job_id[6:]

    assert ids.verify(SECRET, "globex", job_id) is None
    assert ids.verify(b"x" * 32, "acme", job_id) is None
    assert ids.verify(SECRET, "acme", altered) is None
    for junk in ("", "j", "jt", "jx" + job_id[2:], "jt!!!!", job_id + "aa"):
        assert ids.verify(SECRET, "acme", junk) is None


def test_keyed_and_scheduled_ids_are_deterministic_per_tenant():
    assert ids.keyed_id(SECRET, "acme", "k1") == ids.keyed_id(SECRET, "acme", "k1")
    assert ids.keyed_id(SECRET, "acme", "k1") != ids.keyed_id(SECRET, "globex", "k1")
    assert ids.keyed_id(SECRET, "acme", "k1") != ids.keyed_id(SECRET, "acme", "k2")
    scheduled = ids.scheduled_id(SECRET, "acme", "nightly", "2026-12-03T00:00:00Z")
    assert ids.verify(SECRET, "acme", scheduled).kind is ids.IdKind.SCHEDULED
