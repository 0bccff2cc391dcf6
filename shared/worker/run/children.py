"""A durable job's children (docs/decisions/durable-jobs.md "Child jobs"): the worker's side of `run_job` and
`run_jobs`. The jobs function cannot send to the queue (the fence), so its run stops at the step and the worker
checks the children as an enqueue does, records the step `waiting` for them, and only then sends them: a child
that ends at once finds its parent's step waiting (shared/waits/children.py resolves it).

Each child's id derives from the parent's id, the step and the parent's run (`ids.step_child_id`; `run_jobs`'s
from a batch whose id derives so, `ids.step_batch_id`): every invoke, redelivery or zombie attempt of the step
sends the same jobs, which the claim runs once; a retry of the dead parent gets fresh ones.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared import ids
from shared.aws import queue
from shared.durable.steps import StepKind
from shared.errors import CorralError, InvalidRequest
from shared.jobs.job_types import check_job, priority_of, with_max_attempts
from shared.model.lineage import STEP_PARENT
from shared.model.message import BatchMember, JobMessage
from shared.model.message_fields import concurrency_problem
from shared.model.spec import Concurrency, JobSpec
from shared.store.batches import batch_items
from shared.store.id_secret import id_secret

# What a waiting parent's view lists of its children's ids (a run_jobs of 1,000 names its batch instead).
SHOWN_CHILD_IDS = 100


@dataclass(frozen=True)
class Children:
    """The children of one step in one run: their messages, what the step awaits (`job:<id>`, `jobs:<batch>`),
    and what the parent's view shows it waits for."""

    messages: tuple[JobMessage, ...]
    awaits: str
    waiting_for: dict[str, Any]
    batch: str | None = None


class InvalidChild(CorralError, ValueError):
    """A child no enqueue would take: the parent ends dead with this reason (no retry changes its code)."""


def prepared(
    kind: StepKind, step: str, specs: Sequence[Mapping[str, Any]], parent: JobMessage, run: int, now: float
) -> Children:
    """The step's children, checked as an enqueue checks a job (its type, payload, limits and schema).
    InvalidChild naming the step, the child and the field."""
    secret = id_secret()
    tenant = parent.tenant
    lineage = {"kind": STEP_PARENT, "id": parent.id, "step": step, "run": str(run)}
    batch = ids.step_batch_id(secret, tenant, parent.id, step, run) if kind is StepKind.RUN_JOBS else None
    messages = []
    for index, spec in enumerate(specs):
        where = f"run_jobs {step!r} jobs[{index}]" if batch is not None else f"run_job {step!r}"
        job_spec = JobSpec(spec["type"], spec.get("payload"), spec.get("max_attempts"), spec.get("timeout_seconds"))
        try:
            check_job(job_spec, tenant=tenant)
            concurrency = _concurrency(spec.get("concurrency"))
            priority = priority_of(job_spec.type, spec.get("priority"))
        except InvalidRequest as error:
            raise InvalidChild(f"{where}: {error.field} {error.message}") from error
        job_id = (
            ids.child_id(secret, tenant, batch, str(index))
            if batch is not None
            else ids.step_child_id(secret, tenant, parent.id, step, run)
        )
        messages.append(
            JobMessage.of(
                with_max_attempts(job_spec),
                job_id=job_id,
                tenant=tenant,
                enqueued_at=now,
                concurrency=concurrency,
                batch=BatchMember(batch, index) if batch is not None else None,
                parent=lineage,
                priority=priority,
            )
        )
    child_ids = [message.id for message in messages]
    waiting_for: dict[str, Any] = {"kind": "job", "step": step}
    if batch is not None:
        waiting_for |= {"batch": batch, "count": len(child_ids)}
    if len(child_ids) <= SHOWN_CHILD_IDS:
        waiting_for["job_ids"] = child_ids
    awaits = f"jobs:{batch}" if batch is not None else f"job:{child_ids[0]}"
    return Children(tuple(messages), awaits, waiting_for, batch)


def send(children: Children, now: float) -> list[str]:
    """Send the children (their batch first, for run_jobs): the reasons of those SQS did not take (their step
    sends them again on the parent's next attempt, the same ids)."""
    if children.batch is not None:
        parent = children.messages[0].tenant
        batch_items.create(children.batch, parent, len(children.messages), now, description=None, callbacks={})
    if len(children.messages) == 1:
        queue.send(children.messages[0])
        return []
    return [problem for problem in queue.send_batch([(message, 0) for message in children.messages]) if problem]


def _concurrency(value: Any) -> Concurrency | None:
    if (problem := concurrency_problem(value)) is not None:
        raise InvalidRequest("concurrency", problem)
    return Concurrency.of(value)
