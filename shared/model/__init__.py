"""The model: a job as it travels and as it is recorded, one module per concept. Import from the concept's
module (`from shared.model.message import JobMessage`); the names are gathered here only for convenience.

- `states`: Status, Overlap, Trigger
- `spec`: JobSpec, Concurrency, Callback
- `message`: the job message (JobMessage, BatchMember) and its wire validator (UnreadableMessage)
- `record`: the job's record as the API shows it (JobRecord, shown_payload)
- `outcome`: Outcome, the outcome message, a result as stored, an attempt's start (Started), read_message
- `firing`: a schedule's firing's scheduled time
"""

from shared.model.firing import SCHEDULED_TIME, format_scheduled_time, scheduled_time
from shared.model.message import BatchMember, JobMessage, UnreadableMessage
from shared.model.outcome import (
    OUTCOME_KIND,
    Outcome,
    OutcomeMessage,
    Started,
    read_message,
    result_json,
    result_problem,
)
from shared.model.record import HEADER_PAYLOAD_TYPES, REDACTED, JobRecord, shown_payload
from shared.model.spec import BATCH_CALLBACK_KINDS, CALLBACK_KINDS, Callback, Concurrency, JobSpec
from shared.model.states import Overlap, Status, Trigger

__all__ = [
    "BATCH_CALLBACK_KINDS",
    "CALLBACK_KINDS",
    "HEADER_PAYLOAD_TYPES",
    "OUTCOME_KIND",
    "REDACTED",
    "SCHEDULED_TIME",
    "BatchMember",
    "Callback",
    "Concurrency",
    "JobMessage",
    "JobRecord",
    "JobSpec",
    "Outcome",
    "OutcomeMessage",
    "Overlap",
    "Started",
    "Status",
    "Trigger",
    "UnreadableMessage",
    "format_scheduled_time",
    "read_message",
    "result_json",
    "result_problem",
    "scheduled_time",
    "shown_payload",
]
