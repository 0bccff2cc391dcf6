"""Job ids that prove, without a store lookup, which tenant minted them and when.

Enqueue writes nothing to the store, so a job no worker has seen yet has no record.
Its id carries an HMAC over (tenant, id core): GET verifies the tag and answers
`queued` for a well-formed id of the caller's tenant, 404 otherwise, so another
tenant's id and a made-up one look the same.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import math
import os
import time
from dataclasses import dataclass
from enum import StrEnum


class IdKind(StrEnum):
    TIMED = "t"  # random, with the enqueue time in its first 6 bytes
    DELAYED = "d"  # like TIMED, plus the seconds from enqueue to due in the next 4 bytes
    KEYED = "k"  # an HMAC of the tenant's idempotency key
    SCHEDULED = "s"  # derived from schedule name + scheduled time
    CHILD = "c"  # derived from a parent and a name: a batch's members and callbacks, a job's callbacks


_PREFIX = "j"
_CORE_BYTES = 16
_TAG_BYTES = 8
_MAX_DELAY_FIELD = 2**32 - 1  # seconds (136 years); delays are at most settings.MAX_RUN_AT_DAYS


@dataclass(frozen=True)
class IdInfo:
    kind: IdKind
    minted_at: float | None = None  # epoch seconds, TIMED and DELAYED ids only
    due_at: float | None = None  # epoch seconds, DELAYED ids only (whole seconds after minted_at)


def _b32(raw: bytes) -> str:
    return base64.b32encode(raw).decode().rstrip("=").lower()


def _unb32(text: str) -> bytes:
    return base64.b32decode(text.upper() + "=" * (-len(text) % 8))


def _tag(secret: bytes, tenant: str, kind: IdKind, core: bytes) -> bytes:
    return hmac.new(secret, f"{tenant}\0{kind}\0".encode() + core, hashlib.sha256).digest()[:_TAG_BYTES]


def _mint(secret: bytes, tenant: str, kind: IdKind, core: bytes) -> str:
    return f"{_PREFIX}{kind}{_b32(core + _tag(secret, tenant, kind, core))}"


def timed_id(secret: bytes, tenant: str, now: float | None = None) -> str:
    millis = int((time.time() if now is None else now) * 1000)
    return _mint(secret, tenant, IdKind.TIMED, millis.to_bytes(6, "big") + os.urandom(_CORE_BYTES - 6))


def delayed_id(secret: bytes, tenant: str, now: float, due: float) -> str:
    """A timed id that also carries when the job is due, so its age is counted from then."""
    millis = int(now * 1000)
    delay = min(max(0, math.ceil(due - now)), _MAX_DELAY_FIELD)
    core = millis.to_bytes(6, "big") + delay.to_bytes(4, "big") + os.urandom(_CORE_BYTES - 10)
    return _mint(secret, tenant, IdKind.DELAYED, core)


def _derived_core(*parts: str) -> bytes:
    return hashlib.sha256("\0".join(parts).encode()).digest()[:_CORE_BYTES]


def keyed_id(secret: bytes, tenant: str, idempotency_key: str) -> str:
    # Keyed with the secret: an id reveals nothing of a short or guessable idempotency key.
    core = hmac.new(secret, f"key\0{tenant}\0{idempotency_key}".encode(), hashlib.sha256).digest()[:_CORE_BYTES]
    return _mint(secret, tenant, IdKind.KEYED, core)


def scheduled_id(secret: bytes, tenant: str, schedule: str, scheduled_for: str) -> str:
    """The id of a schedule's occurrence: its firing, a duplicate delivery of it and a backfill of it are one job."""
    return _mint(secret, tenant, IdKind.SCHEDULED, _derived_core("schedule", schedule, scheduled_for))


def child_id(secret: bytes, tenant: str, parent: str, name: str) -> str:
    """The id of the job `name` of `parent` (a batch's member "3" or callback "on_complete", a job's
    callback "on_success"): the same every time, so a message sent twice is one job, run once."""
    return _mint(secret, tenant, IdKind.CHILD, _derived_core("child", parent, name))


def step_child_id(secret: bytes, tenant: str, parent: str, step: str, run: int) -> str:
    """The id of the child a durable job's `run_job` step enqueues in the job's run `run`: every invoke of
    the step sends the same job, which runs once; a retry of the dead parent (its next run) a fresh one."""
    return child_id(secret, tenant, parent, f"step\0{step}\0{run}")


BATCH_PREFIX = "b"


def batch_id(secret: bytes, tenant: str, now: float, idempotency_key: str | None = None) -> str:
    """A batch's id, tagged for its tenant like a job's: timed, or keyed by the request's idempotency key
    (so a retried request is the same batch, its jobs the same jobs)."""
    if idempotency_key is None:
        core = int(now * 1000).to_bytes(6, "big") + os.urandom(_CORE_BYTES - 6)
    else:
        core = hmac.new(secret, f"batch\0{tenant}\0{idempotency_key}".encode(), hashlib.sha256).digest()[:_CORE_BYTES]
    return f"{BATCH_PREFIX}{_b32(core + _batch_tag(secret, tenant, core))}"


def step_batch_id(secret: bytes, tenant: str, parent: str, step: str, run: int) -> str:
    """The batch of a durable job's `run_jobs` step in its run `run` (its members' ids derive from it, as every
    batch's do): derived, not keyed, so no idempotency key of a request can name it."""
    core = _derived_core("step-batch", parent, step, str(run))
    return f"{BATCH_PREFIX}{_b32(core + _batch_tag(secret, tenant, core))}"


def verify_batch(secret: bytes, tenant: str, batch: str) -> bool:
    """Whether `batch` is a batch id minted for `tenant` (another tenant's answers like an unknown one)."""
    if not batch.startswith(BATCH_PREFIX):
        return False
    try:
        raw = _unb32(batch[1:])
    except ValueError:
        return False
    if len(raw) != _CORE_BYTES + _TAG_BYTES or _b32(raw) != batch[1:]:
        return False
    return hmac.compare_digest(raw[_CORE_BYTES:], _batch_tag(secret, tenant, raw[:_CORE_BYTES]))


def _batch_tag(secret: bytes, tenant: str, core: bytes) -> bytes:
    return hmac.new(secret, f"{tenant}\0batch\0".encode() + core, hashlib.sha256).digest()[:_TAG_BYTES]


def manual_run_id(secret: bytes, tenant: str, schedule: str, idempotency_key: str) -> str:
    """The id of a schedule's run triggered by hand with an idempotency key: a retried trigger is the same run.

    Keyed with the secret, as `keyed_id`, and apart from it: the same key given to POST /v1/jobs and to a
    trigger, or to two schedules' triggers, names different jobs."""
    core = hmac.new(secret, f"trigger\0{tenant}\0{schedule}\0{idempotency_key}".encode(), hashlib.sha256).digest()
    return _mint(secret, tenant, IdKind.KEYED, core[:_CORE_BYTES])


FINGERPRINT_CHARS = 32


def request_fingerprint(request: object) -> str:
    """What an idempotency key remembers of the request it first came with: the SHA-256 of the request's
    canonical JSON (keys sorted, no spaces, UTF-8), its first 32 hex digits. Two bodies that parse to the
    same fields are the same request; any other difference is another request (docs/decisions/idempotency-keys.md)."""
    canonical = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(canonical.encode()).hexdigest()[:FINGERPRINT_CHARS]


def verify(secret: bytes, tenant: str, job_id: str) -> IdInfo | None:
    """IdInfo if `job_id` was minted for `tenant` with `secret`, else None."""
    if len(job_id) < 3 or not job_id.startswith(_PREFIX):
        return None
    try:
        kind = IdKind(job_id[1])
        raw = _unb32(job_id[2:])
    except ValueError:
        return None
    if len(raw) != _CORE_BYTES + _TAG_BYTES or _b32(raw) != job_id[2:]:
        return None  # the last character's unused bits must be zero: one job, one id
    core, tag = raw[:_CORE_BYTES], raw[_CORE_BYTES:]
    if not hmac.compare_digest(tag, _tag(secret, tenant, kind, core)):
        return None
    if kind is IdKind.TIMED:
        return IdInfo(kind=kind, minted_at=int.from_bytes(core[:6], "big") / 1000)
    if kind is IdKind.DELAYED:
        minted_at = int.from_bytes(core[:6], "big") / 1000
        return IdInfo(kind=kind, minted_at=minted_at, due_at=minted_at + int.from_bytes(core[6:10], "big"))
    return IdInfo(kind=kind)
