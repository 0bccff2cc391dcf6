"""A durable job's children ending (docs/decisions/durable-jobs.md "Child jobs"): the parent's `run_job` or
`run_jobs` step resolved with their results, in order, or with their failures, and the parent woken.

Called with the follow-ups of a child's end (the worker, after the child's record says it ended; repeated by a
later delivery that finds it ended, so a crash anywhere here loses nothing) and by a cancel of a child that
waited. A `run_jobs` child is counted in its batch first (shared/batches/members.py): its step resolves once
the batch has no member pending, read from the members' records. The journal's conditional write lets the first
resolution through; told again, it wakes the parent again (its first wake may have been lost), and a parent
that waits no more (cancelled, retried) is never resumed: every resume goes through its record.

The race with the parent's suspension is the one every resolution has (shared/waits/resume.py): the worker
records the step `waiting` before it sends the children, so a child that ends at once finds the step waiting;
and if the parent's record is not `waiting` yet, its suspending attempt reads the step after and wakes it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from shared import ids
from shared.durable import limits, steps
from shared.model.lineage import STEP_PARENT
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store.batches import batch_items
from shared.store.durable import journal_items
from shared.store.id_secret import id_secret
from shared.store.jobs import job_store
from shared.waits import resume

# A run_jobs step's results together: the journal keeps them in an item of their own (under DynamoDB's 400 KB).
MAX_CHILDREN_RESULTS_BYTES = 256 * 1024
_ENDS = (Status.SUCCEEDED, Status.DEAD, Status.CANCELLED)


def is_child(parent: Mapping[str, str] | None) -> bool:
    """Whether a job with this `parent` is a durable job's child (its end resolves the parent's step)."""
    return parent is not None and parent.get("kind") == STEP_PARENT


def child_ended(
    tenant: str, child_id: str, parent: Mapping[str, str] | None, status: Status, *, single_attempt: bool = False
) -> bool:
    """The child `child_id` is recorded `status`: resolve its parent's step if it (or its batch) is done, and wake
    the parent. Whether the parent was woken. Raises what the store or the queue raises (the caller's delivery
    comes back and repeats it)."""
    if not is_child(parent) or status not in _ENDS:
        return False
    assert parent is not None
    parent_id, step, run = parent["id"], parent["step"], int(parent["run"])
    secret = id_secret()
    batch_id = ids.step_batch_id(secret, tenant, parent_id, step, run)
    if child_id == ids.step_child_id(secret, tenant, parent_id, step, run):
        record = job_store.get(child_id, consistent=True, single_attempt=single_attempt)
        if record is None or record.status not in _ENDS:
            return False  # retried since: its next end tells
        change = _outcome(f"job:{child_id}", child_id, [record], many=False)
    else:
        batch = batch_items.get(batch_id, single_attempt=single_attempt)
        if batch is None or batch.pending > 0:
            return False  # the last member's end resolves the step
        members = [ids.child_id(secret, tenant, batch_id, str(index)) for index in range(batch.total)]
        records = [job_store.get(member, consistent=True, single_attempt=single_attempt) for member in members]
        ended = [record for record in records if record is not None and record.status in _ENDS]
        if len(ended) < len(records):
            return False  # a member retried since: its end settles the batch again
        change = _outcome(f"jobs:{batch_id}", batch_id, ended, many=True)
    now = time.time()
    outcome = journal_items.resolve(parent_id, tenant, step, change, now=now, single_attempt=single_attempt)
    if isinstance(outcome, journal_items.TooMuch):  # the parent's recorded results would pass their limit
        change = steps.Resolved(change.awaits, change.by, result_json="[]", error=outcome.reason)
        outcome = journal_items.resolve(parent_id, tenant, step, change, now=now, single_attempt=single_attempt)
    if not isinstance(outcome, steps.Applied | steps.AlreadyDone):
        return False
    return resume.wake(parent_id, step)


def unrunnable_ended(fields: Mapping[str, Any]) -> bool:
    """A message that cannot run (its type gone since it was sent) was recorded `dead`: if it is a child (its
    parent verified against its id), its parent's step fails (`child_ended`)."""
    parent = fields.get("parent")
    return child_ended(fields["tenant"], fields["id"], parent if isinstance(parent, dict) else None, Status.DEAD)


def _outcome(awaits: str, by: str, records: list[JobRecord], *, many: bool) -> steps.Resolved:
    """The step's resolution: the children's results (a list for run_jobs), or the failed children
    [{"id", "status", "error"}] with a text naming them (ChildJobFailed, raised in the parent's code)."""
    failed = [
        {"id": record.id, "status": str(record.status), "error": record.error or ""}
        for record in records
        if record.status is not Status.SUCCEEDED
    ]
    if not failed:
        results = [record.result for record in records] if many else records[0].result
        text = json.dumps(results, separators=(",", ":"))
        most = MAX_CHILDREN_RESULTS_BYTES if many else limits.MAX_STEP_RESULT_BYTES
        if len(text.encode()) <= most:
            return steps.Resolved(awaits, by, result_json=text)
        failed = [
            {
                "id": by,
                "status": "too_large",
                "error": f"the children's results are {len(text.encode())} bytes, over the limit of {most}",
            }
        ]
    named = "; ".join(f"child job {child['id']} {child['status']}: {child['error']}" for child in failed)
    return steps.Resolved(awaits, by, result_json=json.dumps(failed, separators=(",", ":")), error=named[:2000])
