import hashlib
import time

import pytest

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
    # it can leave the decoded bytes as they were (about 1 run in 8 would pass by chance).
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


def test_an_id_altered_only_in_its_last_characters_padding_bits_does_not_verify():
    # 24 bytes are 39 base32 characters; the last one carries 2 data bits and 3 unused ones.
    # Accepting the variants would give one job several ids (and several store keys).
    job_id = ids.timed_id(SECRET, "acme")
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    last = alphabet.index(job_id[-1])
    variants = [job_id[:-1] + alphabet[(last & 0b11000) | low] for low in range(8) if (last & 0b00111) != low]

    assert all(ids.verify(SECRET, "acme", variant) is None for variant in variants)


def test_a_delayed_id_carries_its_accept_and_due_times():
    now = time.time()
    job_id = ids.delayed_id(SECRET, "acme", now, now + 30 * 86_400 + 0.4)

    info = ids.verify(SECRET, "acme", job_id)

    assert info.kind is ids.IdKind.DELAYED
    assert abs(info.minted_at - now) < 0.002
    assert info.due_at - info.minted_at == pytest.approx(30 * 86_400 + 1, abs=0.002)  # whole seconds, never early
    assert ids.verify(SECRET, "globex", job_id) is None


def test_a_keyed_ids_core_is_keyed_by_the_secret_not_a_bare_hash_of_the_key():
    # An unsalted sha256 of the key would let anyone holding an id test guesses of a short key.
    bare = hashlib.sha256(b"key\0order-1").digest()[:16]
    job_id = ids.keyed_id(SECRET, "acme", "order-1")
    core = ids._unb32(job_id[2:])[:16]

    assert core != bare
    assert ids.keyed_id(b"x" * 32, "acme", "order-1")[2:28] != job_id[2:28]
