"""A job message's lineage: the batch it counts in and the parent it names, each verified against its id (a batch
member's and a callback's ids are derived from them), so a forged message is never counted or named."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from shared import ids
from shared.flow.triggers import started_job_id

STEP_PARENT = "step"  # a durable job's child (run_job, run_jobs): its parent is the job's step


def step_parent_problem(value: dict[str, Any], text_problem: Callable[[Any], str | None]) -> str | None:
    """A durable job's child's `parent` (shared/waits/children.py): {"kind": "step", "id": the parent job, "step":
    its step, "run": its run, as text}; what is wrong with it, or None."""
    ok = (
        set(value) == {"kind", "id", "step", "run"}
        and text_problem(value["id"]) is None
        and text_problem(value["step"]) is None
        and isinstance(value["run"], str)
        and value["run"].isdigit()
    )
    return None if ok else 'must be {"kind": "step", "id": the parent job, "step", "run"}'


def forged_lineage(secret: bytes, tenant: str, job_id: str, fields: dict[str, Any]) -> list[str]:
    """Which of `batch` and `parent` the message's id does not come from. A batch member's id is derived
    from its batch and index, a callback's from its parent and kind (`ids.child_id`), each batch and
    parent minted for the same tenant: so a field naming another tenant's batch, or another job, is
    forged, and the worker must not count the job in that batch (or name that parent)."""
    forged = []
    batch = fields.get("batch")
    if batch is not None and not (
        ids.verify_batch(secret, tenant, batch["id"])
        and ids.child_id(secret, tenant, batch["id"], str(batch["index"])) == job_id
    ):
        forged.append("batch")
    parent = fields.get("parent")
    if parent is not None and parent.get("kind") == STEP_PARENT:
        if not _step_child(secret, tenant, job_id, parent, batch):
            forged.append("parent")
    elif parent is not None:
        minted = (
            ids.verify_batch(secret, tenant, parent["id"])
            if parent["kind"] == "batch"
            else ids.verify(secret, tenant, parent["id"]) is not None
        )
        if not (minted and ids.child_id(secret, tenant, parent["id"], parent["callback"]) == job_id):
            forged.append("parent")
    started_by = fields.get("started_by")
    if started_by is not None and (
        started_job_id(secret, tenant, started_by["event"], started_by["trigger"]) != job_id
    ):
        forged.append("started_by")
    return forged


def _step_child(secret: bytes, tenant: str, job_id: str, parent: dict[str, Any], batch: Any) -> bool:
    """Whether the job is the child of `parent`'s step: its id derived from it (run_job), or its batch's
    (run_jobs), the parent minted for the same tenant."""
    if ids.verify(secret, tenant, parent["id"]) is None:
        return False
    run = int(parent["run"])
    if batch is not None:
        return ids.step_batch_id(secret, tenant, parent["id"], parent["step"], run) == batch["id"]
    return ids.step_child_id(secret, tenant, parent["id"], parent["step"], run) == job_id
