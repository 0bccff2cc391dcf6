"""The dead-letter queue, for operators: what is in it (per tenant, with reasons) and redriving it.

Only the worker puts messages there, each after recording its job `dead` (or counting an unreadable
message); what SQS moves after the jobs queue's receive budget reaches it through the backstop, which
the worker drains (shared/worker/complete/backstop.py). So the DLQ is the list of dead jobs' messages to redrive.

Redrive is done by the application (receive -> run again -> delete), not by SQS's
StartMessageMoveTask, for three reasons:
- a dead job's record says `dead`, and the worker acknowledges a delivery of a finished job unrun;
  moving its message back would drop it silently. Each job is reset first (`retry.redrive`: fresh
  attempt budget, same id), then sent;
- a move task cannot select one tenant's messages;
- the embedded emulator (ministack 1.5.33) has no StartMessageMoveTask.
A message is deleted from the DLQ only after its job was sent again (or is known not to need it),
so a redrive that stops half way loses nothing; a message sent twice is one job (same id).

The queues are the environment's (the job's lane: shared/aws/queue.py `lane_url`; FunctionEnv.dlq_url), as in the
functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from shared import environment
from shared.aws import queue
from shared.aws.clients import client
from shared.control import retry
from shared.errors import Conflict
from shared.flow.priority import Priority
from shared.model.states import Status
from shared.store.jobs import job_store
from shared.tenants import tenants

# Every message the worker buries says why; one without a reason was moved by SQS from the backstop,
# after the worker failed to record it for the backstop's whole receive budget.
_UNRECORDED_REASON = "moved by SQS from the backstop: the worker could not record it"
_HOLD_SECONDS = 60  # a received message stays invisible this long while it is looked at or redriven


def _dlq_url() -> str:
    return environment.current().dlq_url


def _send_as_it_was(body: dict[str, Any]) -> None:
    tenant = body.get("tenant")
    valid = isinstance(tenant, str) and tenants.TENANT_NAME.fullmatch(tenant)  # a hand-made body may carry anything
    group = {"MessageGroupId": queue.message_group(tenant)} if valid else {}
    client("sqs").send_message(QueueUrl=queue.lane_url(_lane_of(body)), MessageBody=json.dumps(body), **group)


def _lane_of(body: dict[str, Any]) -> Priority:
    """The lane a dead message goes back to: its job's (an outcome message's is its `job`'s); default when it names
    none a lane has (a hand-made body may carry anything)."""
    job = body.get("job") if body.get("kind") == "outcome" else body
    named = job.get("priority") if isinstance(job, dict) else None
    return Priority(named) if named in tuple(Priority) else Priority.DEFAULT


@dataclass(frozen=True)
class DeadLetter:
    message_id: str
    receipt: str
    tenant: str | None
    job_id: str | None
    job_type: str | None
    schedule: str | None
    reason: str
    sent_at: float  # when it entered the DLQ
    body: dict[str, Any] | None  # None: not a JSON object

    def public(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id,
            "tenant": self.tenant,
            "job_id": self.job_id,
            "type": self.job_type,
            "schedule": self.schedule,
            "reason": self.reason,
            "dead_lettered_at": self.sent_at,
        }


def _reason(message: dict[str, Any]) -> str:
    attributes = message.get("MessageAttributes") or {}
    strings = {name: value.get("StringValue", "") for name, value in attributes.items()}
    return queue.dead_letter_reason(strings) or _UNRECORDED_REASON


def _parse(message: dict[str, Any]) -> DeadLetter:
    try:
        body = json.loads(message.get("Body", ""))
    except ValueError:
        body = None
    body = body if isinstance(body, dict) else None
    fields = body or {}

    def text(name: str) -> str | None:
        value = fields.get(name)
        return value if isinstance(value, str) else None

    return DeadLetter(
        message_id=message["MessageId"],
        receipt=message["ReceiptHandle"],
        tenant=text("tenant"),
        job_id=text("id"),
        job_type=text("type"),
        schedule=text("schedule"),
        reason=_reason(message),
        sent_at=int(message.get("Attributes", {}).get("SentTimestamp", "0")) / 1000,
        body=body,
    )


def count() -> int:
    attributes = client("sqs").get_queue_attributes(QueueUrl=_dlq_url(), AttributeNames=["ApproximateNumberOfMessages"])
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


def _receive(limit: int) -> Iterator[DeadLetter]:
    """Up to `limit` messages, each held invisible for a while; stops after two empty answers."""
    received, empty = 0, 0
    while received < limit and empty < 2:
        messages = (
            client("sqs")
            .receive_message(
                QueueUrl=_dlq_url(),
                MaxNumberOfMessages=min(10, limit - received),
                VisibilityTimeout=_HOLD_SECONDS,
                WaitTimeSeconds=1,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            )
            .get("Messages", [])
        )
        empty = 0 if messages else empty + 1
        received += len(messages)
        for message in messages:
            yield _parse(message)


def _release(letters: list[DeadLetter]) -> None:
    """Make held messages visible again at once."""
    for start in range(0, len(letters), 10):
        client("sqs").change_message_visibility_batch(
            QueueUrl=_dlq_url(),
            Entries=[
                {"Id": str(i), "ReceiptHandle": letter.receipt, "VisibilityTimeout": 0}
                for i, letter in enumerate(letters[start : start + 10])
            ],
        )


def inspect(*, tenant: str | None = None, limit: int = 100) -> list[DeadLetter]:
    """Look at up to `limit` messages (then release them); only `tenant`'s if given."""
    letters = list(_receive(limit))
    _release(letters)
    return [letter for letter in letters if tenant is None or letter.tenant == tenant]


@dataclass
class Redrive:
    redriven: list[str] = field(default_factory=list)  # job ids (or message ids) sent to run again
    stale: list[str] = field(default_factory=list)  # jobs not dead any more (retried, or finished): deleted
    left: list[dict[str, str]] = field(default_factory=list)  # [{"message_id", "reason"}] kept in the DLQ
    other_tenants: int = 0  # received and released: not the tenant asked for


def redrive(*, tenant: str | None = None, limit: int = 1000) -> Redrive:
    """Run the DLQ's jobs again (only `tenant`'s if given), at most `limit` messages received."""
    report = Redrive()
    release: list[DeadLetter] = []
    for letter in _receive(limit):
        if tenant is not None and letter.tenant != tenant:
            report.other_tenants += 1
            release.append(letter)
            continue
        outcome = _run_again(letter)
        if outcome in ("redriven", "stale"):
            client("sqs").delete_message(QueueUrl=_dlq_url(), ReceiptHandle=letter.receipt)
            (report.redriven if outcome == "redriven" else report.stale).append(letter.job_id or letter.message_id)
        else:
            report.left.append({"message_id": letter.message_id, "reason": outcome})
            release.append(letter)
    _release(release)
    return report


def _run_again(letter: DeadLetter) -> str:
    """'redriven', 'stale', or why the message stays in the DLQ."""
    if letter.body is None or letter.tenant is None:
        return "not a corral job message (left for a human)"
    if letter.job_id is None:
        # A schedule's firing that Scheduler could not deliver: no job exists yet; the worker makes one.
        _send_as_it_was(letter.body)
        return "redriven"
    record = job_store.get(letter.job_id)
    if record is None:
        # No record (SQS moved it on from the backstop before the worker could record it): its message is
        # all there is; send it as it was.
        _send_as_it_was(letter.body)
        return "redriven"
    owner = record.tenant
    if owner != letter.tenant:
        return f"its job belongs to another tenant than the message says ({owner!r}): a forged message?"
    try:
        retry.redrive(owner, letter.job_id)
    except Conflict as conflict:
        if record.status is Status.DEAD:
            return str(conflict)
        return "stale"
    return "redriven"
