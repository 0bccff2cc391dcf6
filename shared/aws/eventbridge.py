"""EventBridge Scheduler schedules whose target is the job queue itself.

A firing puts the schedule's Input straight into SQS (Scheduler assumes the
stack's scheduler role to send it): no API call and no Lambda between the
clock and the queue, so a midnight herd costs the API nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from shared import environment, settings
from shared.aws import queue
from shared.aws.clients import aws_error_code, aws_error_message, client, is_not_found
from shared.errors import Conflict, CorralError
from shared.flow.priority import Priority

AT_FORMAT = "%Y-%m-%dT%H:%M:%S"  # the wall-clock time inside an at() expression


def at_expression(when: datetime) -> str:
    """The at() expression for a wall-clock time (seconds kept, sub-seconds dropped)."""
    return f"at({when.strftime(AT_FORMAT)})"


class AlreadyExists(Conflict):
    """A schedule of this name exists in the group."""


class Gone(CorralError):
    """No schedule of this name is in the group (an update found it deleted)."""


class Rejected(CorralError):
    """Scheduler refused the request's contents (ValidationException): bad input, not an outage.

    `parameter` names the API field it concerns, as best as Scheduler's message tells; `detail`
    is Scheduler's own message, for the operator's log (it is not shown to clients).
    """

    def __init__(self, parameter: str, detail: str) -> None:
        super().__init__(f"EventBridge Scheduler rejected the {parameter}")
        self.parameter = parameter
        self.detail = detail


# Scheduler's parameter names, as its ValidationException messages use them -> the API's fields.
# Longest first: "ScheduleExpressionTimezone" before "ScheduleExpression".
_PARAMETER_FIELDS = (
    ("ScheduleExpressionTimezone", "timezone"),
    ("ScheduleExpression", "expression"),
    ("StartDate", "start"),
    ("EndDate", "end"),
    ("FlexibleTimeWindow", "flexible_window_minutes"),
    ("Description", "description"),
    ("Input", "job"),
)


def _rejected(error: ClientError) -> Rejected:
    detail = aws_error_message(error)
    field = next((field for name, field in _PARAMETER_FIELDS if name.lower() in detail.lower()), "schedule")
    return Rejected(field, detail)


def _sets_message_group() -> bool:
    return environment.current().scheduler_sets_message_group


def _group() -> str:
    return environment.current().schedule_group


@dataclass(frozen=True)
class Definition:
    """A schedule as Scheduler holds it, less what every corral schedule shares (group, target, role,
    retry policy, DLQ). CreateSchedule and UpdateSchedule both take all of it: UpdateSchedule resets
    whatever it is not given to Scheduler's default, so an update always sends the whole definition."""

    expression: str
    input_json: str
    timezone: str = "UTC"
    start: datetime | None = None
    end: datetime | None = None
    flexible_window_minutes: int = 0
    enabled: bool = True  # False: State=DISABLED, it does not fire (a paused schedule)
    description: str | None = None
    delete_after_completion: bool = False
    message_group: str | None = None
    priority: Priority = Priority.DEFAULT  # its firings' lane: the queue it targets


def _params(name: str, definition: Definition) -> dict[str, Any]:
    """`message_group`: the tenant's SQS message group, set on the firings only where Scheduler is
    known to accept it for a standard queue (settings.SCHEDULER_SETS_MESSAGE_GROUP): Scheduler
    documents SqsParameters for FIFO targets only. Without it, SQS fair queues count each firing
    as a tenant of its own, never deprioritised (docs/decisions/rate-limits.md "Fair queues").
    """
    window: dict[str, Any] = (
        {"Mode": "FLEXIBLE", "MaximumWindowInMinutes": definition.flexible_window_minutes}
        if definition.flexible_window_minutes
        else {"Mode": "OFF"}
    )
    params: dict[str, Any] = {
        "Name": name,
        "GroupName": _group(),
        "ScheduleExpression": definition.expression,
        "ScheduleExpressionTimezone": definition.timezone,
        "FlexibleTimeWindow": window,
        "State": "ENABLED" if definition.enabled else "DISABLED",
        "ActionAfterCompletion": "DELETE" if definition.delete_after_completion else "NONE",
        "Target": {
            "Arn": queue.lane_arn(definition.priority),
            "RoleArn": environment.current().scheduler_role_arn,
            "Input": definition.input_json,
            # Throttled or failed deliveries are retried, then land in the backstop (its job recorded dead, the
            # message buried in the DLQ): never dropped.
            "RetryPolicy": {
                "MaximumRetryAttempts": settings.SCHEDULER_RETRY_ATTEMPTS,
                "MaximumEventAgeInSeconds": settings.SCHEDULER_MAX_EVENT_AGE_SECONDS,
            },
            "DeadLetterConfig": {"Arn": environment.current().backstop_arn},
        },
    }
    if definition.message_group is not None and _sets_message_group():
        params["Target"]["SqsParameters"] = {"MessageGroupId": definition.message_group}
    if definition.start is not None:
        params["StartDate"] = definition.start
    if definition.end is not None:
        params["EndDate"] = definition.end
    if definition.description:
        params["Description"] = definition.description
    return params


def create(
    name: str,
    expression: str,
    input_json: str,
    *,
    timezone: str = "UTC",
    start: datetime | None = None,
    end: datetime | None = None,
    flexible_window_minutes: int = 0,
    delete_after_completion: bool = False,
    message_group: str | None = None,
    priority: Priority = Priority.DEFAULT,
) -> None:
    """Create an enabled schedule; AlreadyExists if one of that name is in the group (`create_schedule` with a
    whole Definition: the same)."""
    create_schedule(
        name,
        Definition(
            expression,
            input_json,
            timezone=timezone,
            start=start,
            end=end,
            flexible_window_minutes=flexible_window_minutes,
            delete_after_completion=delete_after_completion,
            message_group=message_group,
            priority=priority,
        ),
    )


def create_schedule(name: str, definition: Definition) -> None:
    """Create the schedule; AlreadyExists if one of that name is in the group, Rejected for bad input."""
    try:
        client("scheduler").create_schedule(**_params(name, definition))
    except ClientError as error:
        code = aws_error_code(error)
        if code == "ConflictException":
            raise AlreadyExists(name) from error
        if code == "ValidationException":
            raise _rejected(error) from error
        raise


def update(name: str, definition: Definition) -> None:
    """Replace the schedule's definition in one UpdateSchedule (Scheduler swaps it whole: a firing due
    meanwhile uses the old one or the new one). Gone if there is no such schedule; Rejected for bad input."""
    try:
        client("scheduler").update_schedule(**_params(name, definition))
    except ClientError as error:
        if is_not_found(error):
            raise Gone(name) from error
        if aws_error_code(error) == "ValidationException":
            raise _rejected(error) from error
        raise


def delete(name: str) -> None:
    """Delete the schedule; already gone is fine."""
    try:
        client("scheduler").delete_schedule(Name=name, GroupName=_group())
    except ClientError as error:
        if not is_not_found(error):
            raise


def names_with_prefix(prefix: str) -> list[str]:
    """The names of the group's schedules that start with `prefix` (operators' tools)."""
    names: list[str] = []
    params: dict[str, Any] = {"GroupName": _group(), "NamePrefix": prefix}
    while True:
        page = client("scheduler").list_schedules(**params)
        names += [entry["Name"] for entry in page.get("Schedules", []) if entry["Name"].startswith(prefix)]
        if not page.get("NextToken"):
            return names
        params["NextToken"] = page["NextToken"]
