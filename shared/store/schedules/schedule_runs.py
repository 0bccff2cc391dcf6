"""A schedule's runs: the job records its firings, triggers and backfills became, on the gsi1 index under
`runs#<tenant>#<schedule>`, sorted by scheduled time; and the overlap check of a schedule that skips.

A run is listed once it has a record: a worker claimed it, or it was recorded `skipped` here.

**The overlap check** ("is an earlier run of this schedule still queued, running or waiting to retry?")
is one Query of the schedule's two newest runs, plus at most one GetItem:
- the newest run other than this one is live (`queued`, `running`, `failed`): this one is skipped;
- it was itself `skipped`, because of a run recorded in its `skipped_for`: that run is read (a strongly
  consistent GetItem) and, while it is live, this one is skipped too. So however many firings a long
  run makes skip, the check reads two index entries and one item, never the whole history;
- anything else (finished, or no run yet): this one runs.
docs/decisions/schedule-overlap.md says why, and what it cannot see (a run whose message no worker has
claimed yet; the index's propagation delay, typically well under a second).

Low-level client, straight to DynamoDB for the index (a cached query would hide new runs); a skipped
record is written through the job items' client, as every job write is, so the status cache sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.aws.clients import client, single_attempt_client
from shared.model.message import JobMessage
from shared.model.record import JobRecord
from shared.model.states import Status
from shared.store import keys, table
from shared.store.jobs import job_items
from shared.store.table_schema import RUNS_INDEX

# What "still running" means for overlap: the run has not finished and will run (again).
LIVE = frozenset({Status.QUEUED, Status.RUNNING, Status.FAILED})


def runs(tenant: str, name: str, limit: int) -> list[JobRecord]:
    """The job records of the schedule's runs (once a worker has seen them, or they were skipped), newest first."""
    items = (
        client("dynamodb")
        .query(
            TableName=table.name(),
            IndexName=RUNS_INDEX.name,
            KeyConditionExpression="gsi1pk = :runs",
            ExpressionAttributeValues={":runs": {"S": keys.runs_partition(tenant, name)}},
            ScanIndexForward=False,
            Limit=limit,
        )
        .get("Items", [])
    )
    return [job_items.record_from_item(item) for item in items]


@dataclass(frozen=True)
class LiveRun:
    id: str
    status: Status


def live_run(tenant: str, schedule: str, other_than: str, *, single_attempt: bool = False) -> LiveRun | None:
    """An earlier run of the schedule still queued, running or failed (waiting to retry), if any; the run
    `other_than` (the one asking) does not count."""
    dynamodb = single_attempt_client("dynamodb") if single_attempt else client("dynamodb")
    newest = dynamodb.query(
        TableName=table.name(),
        IndexName=RUNS_INDEX.name,
        KeyConditionExpression="gsi1pk = :runs",
        ExpressionAttributeValues={":runs": {"S": keys.runs_partition(tenant, schedule)}},
        ProjectionExpression="pk, #status, skipped_for",
        ExpressionAttributeNames={"#status": "status"},
        ScanIndexForward=False,
        Limit=2,  # this run itself may be the newest (a delivery of a run already recorded)
    ).get("Items", [])
    previous = next((item for item in newest if keys.job_id_of(item["pk"]["S"]) != other_than), None)
    if previous is None:
        return None
    status = Status(previous["status"]["S"])
    if status in LIVE:
        return LiveRun(keys.job_id_of(previous["pk"]["S"]), status)
    blocker = job_items.as_str(previous, "skipped_for")
    if status is not Status.SKIPPED or blocker is None or blocker == other_than:
        return None
    found = dynamodb.get_item(
        TableName=table.name(),
        Key=job_items.key(blocker),
        ConsistentRead=True,
        ProjectionExpression="#status",
        ExpressionAttributeNames={"#status": "status"},
    ).get("Item")
    if found is None or Status(found["status"]["S"]) not in LIVE:
        return None
    return LiveRun(blocker, Status(found["status"]["S"]))


def skip_reason(blocker: LiveRun) -> str:
    return f"overlap skip: the schedule's earlier run {blocker.id} was still {blocker.status}"


# Set on a run skipped by the trigger that made it (not at a claim): a retry of that trigger answers
# `skipped` as the trigger did, and one whose trigger answered `queued` keeps answering so.
_SKIPPED_AT_TRIGGER = "skipped_at_trigger"


def record_skipped(
    message: JobMessage, blocker: LiveRun, now: float, *, single_attempt: bool = False, at_trigger: bool = False
) -> bool:
    """Record the schedule's run `message` as `skipped` because of `blocker`, with no attempt made. False if the
    run has a record already (it started before, or was skipped already): it is left as it is.
    `at_trigger`: the trigger that made the run decides it (its answer says so), not the run's claim."""
    item = job_items.skipped_item(message, now, skip_reason(blocker), blocker.id)
    if at_trigger:
        item[_SKIPPED_AT_TRIGGER] = {"BOOL": True}
    return job_items.conditional(
        put=True, single_attempt=single_attempt, Item=item, ConditionExpression="attribute_not_exists(pk)"
    )


def skip_if_overlapping(
    message: JobMessage, now: float, *, single_attempt: bool = False, at_trigger: bool = False
) -> str | None:
    """If an earlier run of the message's schedule is live, record this run `skipped` and answer why;
    None if it may run (no live run, or this run has a record already: it started before and goes on).
    `at_trigger`: asked by the trigger that made the run (see `record_skipped`)."""
    assert message.schedule is not None
    blocker = live_run(message.tenant, message.schedule, message.id, single_attempt=single_attempt)
    if blocker is None:
        return None
    if not record_skipped(message, blocker, now, single_attempt=single_attempt, at_trigger=at_trigger):
        return None
    return skip_reason(blocker)


@dataclass(frozen=True)
class TriggeredRun:
    """What a trigger's run's record says of the trigger's answer: skipped by the trigger (and why), or not."""

    skipped_reason: str | None


def triggered_run(job_id: str) -> TriggeredRun | None:
    """The run a keyed trigger made, if it has a record: whether that trigger skipped it (its answer then was
    `skipped`; any other record, a run skipped at its claim included, was answered `queued`). None: no
    record yet. Reads three small attributes, never the run's payload or result."""
    item = (
        client("dynamodb")
        .get_item(
            TableName=table.name(),
            Key=job_items.key(job_id),
            ConsistentRead=True,
            ProjectionExpression="#status, skip_reason, " + _SKIPPED_AT_TRIGGER,
            ExpressionAttributeNames={"#status": "status"},
        )
        .get("Item")
    )
    if item is None:
        return None
    skipped_here = item.get(_SKIPPED_AT_TRIGGER, {}).get("BOOL", False) and item["status"]["S"] == Status.SKIPPED
    return TriggeredRun(job_items.as_str(item, "skip_reason") if skipped_here else None)
