"""The job queues: sending jobs, delaying retries, and the dead-letter queue.

A job goes to its priority's **lane**: the jobs queue (default), `-high` or `-low` (docs/decisions/priorities.md).
`lane_url` is the one place that says which queue a level's messages go to; every send here takes the lane from the
message (its `priority`), so a retry, a hand-back's re-send or a redrive keeps its job's lane."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from shared import environment, settings
from shared.aws import metrics, tracing
from shared.aws.clients import client
from shared.flow.priority import Priority
from shared.model.message import JobMessage
from shared.model.outcome import OutcomeMessage

# SendMessageBatch limits (SQS quotas): 10 entries, and the whole request's bodies within 256 KiB.
BATCH_MAX_ENTRIES = 10
BATCH_MAX_BYTES = 256 * 1024
MAX_DELAY_SECONDS = 900  # SendMessage's DelaySeconds
# A full bulk request is 10 SendMessageBatch calls: sent side by side, it costs about one round trip.
_senders = ThreadPoolExecutor(max_workers=10, thread_name_prefix="sqs-batch")


def _queue_url() -> str:
    return environment.current().queue_url


def lane_url(priority: Priority) -> str:
    """The URL of the queue a level's jobs are sent to: its lane."""
    env = environment.current()
    return {Priority.HIGH: env.high_queue_url, Priority.DEFAULT: env.queue_url, Priority.LOW: env.low_queue_url}[
        priority
    ]


def lane_arn(priority: Priority) -> str:
    """The ARN of a level's lane queue: what a schedule firing the level's jobs targets."""
    env = environment.current()
    return {Priority.HIGH: env.high_queue_arn, Priority.DEFAULT: env.queue_arn, Priority.LOW: env.low_queue_arn}[
        priority
    ]


def received_from(event_source_arn: str | None) -> str:
    """The URL of the queue a record was received from, by its event source's ARN (a lane's, or the backstop):
    the queue its hand-back and its visibility changes go to. A queue's URL and ARN both end in its name."""
    name = (event_source_arn or "").rpartition(":")[2]
    env = environment.current()
    for url in (env.queue_url, env.high_queue_url, env.low_queue_url, env.backstop_url):
        if name and url.rpartition("/")[2] == name:
            return url
    return env.queue_url


def prepare_client() -> None:
    """Create the queue's client and make one cheap call with it, ahead of the first message (a
    function's init phase; see store.prepare_clients)."""
    client("sqs").get_queue_attributes(QueueUrl=_queue_url(), AttributeNames=["QueueArn"])


def send(message: JobMessage, delay_seconds: int = 0) -> None:
    client("sqs").send_message(
        QueueUrl=lane_url(message.level),
        MessageBody=message.to_json(),
        DelaySeconds=delay_seconds,
        MessageGroupId=message_group(message.tenant),
        **_traced(),
    )


def _traced() -> dict[str, Any]:
    """The sender's trace, for the worker that receives the message (shared/aws/tracing.py)."""
    attributes = tracing.message_system_attributes()
    return {"MessageSystemAttributes": attributes} if attributes else {}


def message_group(tenant: str) -> str:
    """The SQS message group of a tenant's jobs: fair queues tell tenants apart by it (on a standard
    queue it orders nothing; SQS deprioritises a group holding a disproportionate share in flight)."""
    return tenant


# Marks outcome messages, so whoever reads the queue or the DLQ tells them from jobs without parsing bodies.
KIND_ATTRIBUTE = "corral-kind"
_OUTCOME_ATTRIBUTES = {KIND_ATTRIBUTE: {"DataType": "String", "StringValue": "outcome"}}


def send_outcomes(outcomes: Sequence[tuple[OutcomeMessage, int]]) -> list[str | None]:
    """Carry attempts' outcomes (and, for a failed one, its job's retry) to later deliveries:
    (outcome, delay seconds) pairs, sent and answered as `send_batch` does."""
    return _send_many(
        [
            # A failed attempt's outcome message is also its job's retry: it goes to the job's lane.
            _Entry(
                outcome.to_json(),
                delay,
                outcome_group(outcome.job.tenant),
                outcome.job.level,
                _OUTCOME_ATTRIBUTES,
            )
            for outcome, delay in outcomes
        ]
    )


def outcome_group(tenant: str) -> str:
    """The message group of a tenant's outcome messages: a group of its own, so the backlog of outcomes
    a store blip leaves behind is received after the tenant's new jobs, not ahead of them (fair
    queues serve the group with less in flight first). `#` never occurs in a tenant's name."""
    return f"{tenant}#outcomes"


def send_batch(messages: Sequence[tuple[JobMessage, int]]) -> list[str | None]:
    """Send (message, delay seconds) pairs with SendMessageBatch, as few calls as SQS's limits allow.

    Returns, for each message in order, None if SQS took it, or why it did not: a call
    that fails, or an entry SQS rejects, fails only its own messages, never the others.
    """
    return _send_many(
        [_Entry(message.to_json(), delay, message_group(message.tenant), message.level) for message, delay in messages]
    )


@dataclass(frozen=True)
class _Entry:
    body: str
    delay_seconds: int
    group: str
    lane: Priority
    attributes: dict[str, Any] | None = None


def _send_many(messages: list[_Entry]) -> list[str | None]:
    """Each lane's messages in SendMessageBatch calls of their own (a call sends to one queue)."""
    calls = [
        (
            lane_url(lane),
            [
                {
                    "Id": str(i),
                    "MessageBody": messages[i].body,
                    "DelaySeconds": messages[i].delay_seconds,
                    "MessageGroupId": messages[i].group,
                }
                | ({"MessageAttributes": messages[i].attributes} if messages[i].attributes else {})
                | _traced()
                for i in chunk
            ],
        )
        for lane in Priority
        if (indexes := [i for i, message in enumerate(messages) if message.lane is lane])
        for chunk in _chunks(indexes, [len(messages[i].body.encode()) for i in indexes])
    ]
    failures: list[str | None] = [None] * len(messages)
    for not_sent in _senders.map(lambda call: _send_entries(*call), calls):
        for index, reason in not_sent.items():
            failures[index] = reason
    return failures


def _chunks(indexes: list[int], sizes: list[int]) -> list[list[int]]:
    """`indexes` (of messages whose bodies are `sizes` bytes) grouped into SendMessageBatch calls: <= 10 entries
    and <= 256 KiB of bodies each."""
    chunks: list[list[int]] = []
    current: list[int] = []
    current_bytes = 0
    for index, size in zip(indexes, sizes, strict=True):
        if current and (len(current) == BATCH_MAX_ENTRIES or current_bytes + size > BATCH_MAX_BYTES):
            chunks.append(current)
            current, current_bytes = [], 0
        current.append(index)
        current_bytes += size
    if current:
        chunks.append(current)
    return chunks


def _send_entries(queue_url: str, entries: list[dict[str, object]]) -> dict[int, str]:
    """One SendMessageBatch call to `queue_url` (botocore retries throttling and 5xx); entries that failed on
    SQS's side are sent once more. Returns index -> reason for the entries not sent."""
    not_sent: dict[int, str] = {}
    for attempt in (1, 2):
        try:
            response = client("sqs").send_message_batch(QueueUrl=queue_url, Entries=entries)
        except (BotoCoreError, ClientError) as error:
            return not_sent | {int(str(entry["Id"])): f"queue unavailable: {error}" for entry in entries}
        failures = response.get("Failed", [])
        retryable = {f["Id"] for f in failures if not f.get("SenderFault")} if attempt == 1 else set()
        not_sent |= {int(f["Id"]): f"{f['Code']}: {f.get('Message', '')}" for f in failures if f["Id"] not in retryable}
        entries = [entry for entry in entries if entry["Id"] in retryable]
        if not entries:
            break
    return not_sent


def backoff_seconds(
    attempt: int,
    base: float = settings.RETRY_BACKOFF_BASE_SECONDS,
    cap: float = settings.RETRY_BACKOFF_CAP_SECONDS,
) -> int:
    """Exponential backoff with jitter for the retry after `attempt` (1-based)."""
    delay = base * 2 ** (attempt - 1)
    return int(min(cap, delay * random.uniform(0.8, 1.2)))


def retry_later(receipt_handle: str, delay_seconds: float, *, queue_url: str | None = None) -> None:
    """Make a received message visible again after `delay_seconds` (not the full visibility timeout; how
    long a hand-back waits is the worker's: shared/worker/delivery.py `hand_back_seconds`).
    `queue_url`: the queue it was received from, if not the jobs queue (a lane's, the backstop)."""
    client("sqs").change_message_visibility(
        QueueUrl=queue_url or _queue_url(), ReceiptHandle=receipt_handle, VisibilityTimeout=max(0, int(delay_seconds))
    )


def send_waiting(message: JobMessage, delay_seconds: int, attributes: Mapping[str, str]) -> None:
    """Send a waiting job's message again, as a fresh message (its receive count starts over) on its lane,
    first delivered after `delay_seconds`; `attributes` (name -> string value) carry its wait so far
    (shared/worker/admit/waiting.py). The caller then acknowledges the old message."""
    client("sqs").send_message(
        QueueUrl=lane_url(message.level),
        MessageBody=message.to_json(),
        DelaySeconds=min(max(0, delay_seconds), MAX_DELAY_SECONDS),
        MessageGroupId=message_group(message.tenant),
        MessageAttributes={name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()},
        **_traced(),
    )


def set_visibility(entries: Sequence[tuple[str, int]], *, queue_url: str | None = None) -> bool:
    """Set received messages' visibility timeouts, (receipt handle, seconds) each, in one call per 10;
    `queue_url`: the queue they were received from, if not the jobs queue (a lane's: `received_from`).

    Best effort: a message whose change fails keeps the visibility it has. True if every change applied.
    """
    applied = True
    for start in range(0, len(entries), BATCH_MAX_ENTRIES):
        chunk = [
            {"Id": str(index), "ReceiptHandle": handle, "VisibilityTimeout": max(0, int(seconds))}
            for index, (handle, seconds) in enumerate(entries[start : start + BATCH_MAX_ENTRIES])
        ]
        try:
            answer = client("sqs").change_message_visibility_batch(QueueUrl=queue_url or _queue_url(), Entries=chunk)
        except (BotoCoreError, ClientError):
            applied = False
            continue
        applied = applied and not answer.get("Failed")
    return applied


# The message attributes corral reads and writes (SQS keeps a message's attributes when it moves it to a
# dead-letter queue); and a waiting job's wait so far, shared/worker/verdicts.py WAITING_ATTRIBUTE.
REASON_ATTRIBUTE = "corral-reason"  # why a message is in the DLQ: set by the worker as it buries it
_SCHEDULER_ERROR_ATTRIBUTES = ("ERROR_MESSAGE", "ERROR_CODE")  # EventBridge Scheduler's, on a firing it dead-letters


def send_to_dlq(body: str, reason: str) -> None:
    """Put a message in the DLQ with the reason it died. The caller then acks the original."""
    client("sqs").send_message(
        QueueUrl=environment.current().dlq_url,
        MessageBody=body,
        MessageAttributes={REASON_ATTRIBUTE: {"DataType": "String", "StringValue": reason[:1000]}},
    )
    metrics.dead_letter(_tenant_of(body))


def dead_letter_reason(attributes: Mapping[str, str]) -> str | None:
    """Why a dead-lettered message died, as its attributes (name -> string value) say: the worker's
    reason, or Scheduler's error for a firing it could not deliver. None: they say nothing (SQS moved
    it after its receive budget, or someone moved it by hand)."""
    if REASON_ATTRIBUTE in attributes:
        return attributes[REASON_ATTRIBUTE]
    scheduler = [attributes[name] for name in _SCHEDULER_ERROR_ATTRIBUTES if name in attributes]
    if scheduler:
        return "EventBridge Scheduler could not deliver the firing: " + " ".join(scheduler)
    return None


# A message's tenant as corral writes it: `tenant` before the payload (JobMessage.to_dict), within a
# job message's first few hundred characters or an outcome message's `job`.
_TENANT_FIELD = re.compile(r'"tenant"\s*:\s*"([A-Za-z0-9][A-Za-z0-9._-]{0,63})"')
_TENANT_SEARCHED_CHARACTERS = 512


def _tenant_of(body: str) -> str | None:
    """The tenant a dead message names, read without parsing it: a message dies for being unreadable
    (too deep, not JSON), and counting it must not fail the burial. Only corral's roles may send to the
    queue, and the tenant comes before the payload, so no payload can name another tenant here."""
    found = _TENANT_FIELD.search(body[:_TENANT_SEARCHED_CHARACTERS])
    return found.group(1) if found else None
