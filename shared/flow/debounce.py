"""Debounce: a tenant's jobs with one key that arrive within `period_seconds` of each other collapse into one run,
`period_seconds` after the last of them, with the last one's payload; `max_wait_seconds` caps how long a stream
of arrivals can put the run off. Every job it supersedes ends `skipped`, its reason naming the job that superseded
it, so every id answers (docs/decisions/debounce.md).

**The group.** A key's arrivals are numbered (`seq`), and form **groups**: an arrival within `period_seconds` of
the group's latest (and within `max_wait_seconds` of its first) continues it and supersedes the latest; any other
opens a new group. The job that runs is the group's latest when the group is **due**: `period_seconds` after its
latest arrived, or `max_wait_seconds` after its first, whichever is sooner. A group that ends (another arrival closes
it before its latest ran, or its latest runs) is kept among its key's **ended** groups with its arrival numbers: a
closed group's latest still runs when its message comes, and a group that ran stays, marked ran, so the jobs it
superseded still name it.

**Deciding, when a job's message comes** (`decide`), from the key's group as the store holds it and the job's own
arrival number: it runs if it is the latest and the group is due, or the latest of a closed group; it waits if it
is the latest and the group is not due yet; it was superseded if a later arrival exists and it is neither; and
if the group cannot say (no item, its arrival never recorded), or ran it already, it is claimed as any job is,
the claim deciding. Supersession needs positive evidence (a later arrival), never a clock: arrival numbers order
the arrivals, whatever two API instances' clocks say.

Pure: shared/store/flow/debounce_items.py keeps the group in one item and applies these rules in conditional writes;
the run's start is one transaction with its claim, so a group runs at most once however its workers die.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from shared import settings
from shared.errors import InvalidRequest
from shared.flow import limits
from shared.flow.flow_key import checked_key, fields_of, whole_number

_REQUIRED = frozenset({"key", "period_seconds"})
_OPTIONAL = frozenset({"max_wait_seconds"})
# How long a closed group's latest is waited for: a message outlives no more than the queue's retention.
CLOSED_KEPT_SECONDS = (settings.MESSAGE_RETENTION_DAYS + 1) * 86_400
# Groups that ran, kept so their superseded jobs still name the run (older ones' jobs are told "a later job").
RAN_GROUPS_KEPT = 8


@dataclass(frozen=True)
class Debounce:
    """A tenant's jobs with `key` arriving within `period_seconds` of each other run once, the last of them."""

    key: str
    period_seconds: int
    max_wait_seconds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        spec: dict[str, Any] = {"key": self.key, "period_seconds": self.period_seconds}
        if self.max_wait_seconds is not None:
            spec["max_wait_seconds"] = self.max_wait_seconds
        return spec

    @classmethod
    def parse(cls, value: Any, field: str = "debounce") -> Debounce:
        """A body's `debounce` (or a type's, whose key names a payload field); InvalidRequest naming the field."""
        fields = fields_of(value, field, _REQUIRED, _OPTIONAL)
        period = whole_number(
            fields["period_seconds"],
            f"{field}.period_seconds",
            limits.DEBOUNCE_MIN_PERIOD_SECONDS,
            limits.DEBOUNCE_MAX_PERIOD_SECONDS,
        )
        most = fields.get("max_wait_seconds")
        if most is not None:
            if isinstance(most, int) and not isinstance(most, bool) and most < period:
                raise InvalidRequest(f"{field}.max_wait_seconds", f"must be at least period_seconds ({period})")
            most = whole_number(most, f"{field}.max_wait_seconds", period, limits.DEBOUNCE_MAX_WAIT_SECONDS)
        return cls(key=checked_key(fields["key"], f"{field}.key"), period_seconds=period, max_wait_seconds=most)


@dataclass(frozen=True)
class Ended:
    """A group that ended: closed by a later arrival before its latest ran (`ran` False: that latest still runs when
    its message comes), or whose latest ran. Its arrivals are `first_seq`..`last_seq`, so a superseded job finds the
    job that ran in its place by its own arrival number, never by a neighbouring group's."""

    first_seq: int
    last_seq: int
    ended_at: float
    ran: bool = False


@dataclass(frozen=True)
class Group:
    """A key's debounce state, as its item holds it."""

    seq: int = 0  # arrivals so far, every group's: the one order every writer agrees on (a conditional write's)
    latest: str | None = None  # the current group's latest (its arrival is `seq`); None once it ran
    arrived_at: float = 0.0  # when the current group's latest arrived
    first_at: float = 0.0  # when the current group's first arrived
    first_seq: int = 0  # the current group's first arrival number
    ended: Mapping[str, Ended] = field(default_factory=dict)  # a past group's latest -> that group
    revision: int = 0  # the item's writes so far: every write is conditioned on the revision it read


def continues(group: Group, at: float, debounce: Debounce) -> bool:
    """Whether an arrival at `at` continues the current group (rather than opening one)."""
    if group.latest is None or at >= group.arrived_at + debounce.period_seconds:
        return False
    return debounce.max_wait_seconds is None or at < group.first_at + debounce.max_wait_seconds


@dataclass(frozen=True)
class Arrival:
    """What an arrival made of its key's group: the group now, the arrival's number, the job it superseded (it
    continued a group), or the latest of the group it closed (it opened one while that latest had not run)."""

    group: Group
    seq: int
    superseded: str | None = None
    closed: str | None = None


def arrive(group: Group, job_id: str, at: float, debounce: Debounce) -> Arrival:
    """The group after `job_id` arrives at `at` (the accepting clock's epoch seconds). Time follows the arrival
    numbers: an arrival numbered after another never counts as earlier, whatever two API instances' clocks say."""
    at = max(at, group.arrived_at)
    seq = group.seq + 1
    if continues(group, at, debounce):
        after = replace(group, seq=seq, latest=job_id, arrived_at=at)
        return Arrival(after, seq, superseded=group.latest)
    closing = group.latest
    ended = dict(group.ended)
    if closing is not None:
        ended[closing] = Ended(group.first_seq, group.seq, at)
    after = replace(group, seq=seq, latest=job_id, arrived_at=at, first_at=at, first_seq=seq, ended=pruned(ended, at))
    return Arrival(after, seq, closed=closing)


def ran(group: Group, job_id: str, now: float) -> Group:
    """The group once `job_id` ran (or ended without a run): an ended group's latest is marked ran; the current
    group's latest ends it, and the next arrival opens a new group."""
    if job_id in group.ended:
        return replace(group, ended={**group.ended, job_id: replace(group.ended[job_id], ran=True)})
    if group.latest != job_id:
        return group
    ended = {**group.ended, job_id: Ended(group.first_seq, group.seq, now, ran=True)}
    return replace(group, latest=None, ended=pruned(ended, now))


def pruned(ended: Mapping[str, Ended], now: float) -> dict[str, Ended]:
    """The ended groups worth keeping: every one whose latest has not run (its message may come as late as the queue
    keeps it), and the newest `RAN_GROUPS_KEPT` that ran (their superseded jobs' messages come by their group's due
    time, or soon after on a retry): the item stays well under 1 KB whatever a key's traffic."""
    waiting = {
        job: entry for job, entry in ended.items() if not entry.ran and entry.ended_at > now - CLOSED_KEPT_SECONDS
    }
    newest_ran = sorted((entry.last_seq, job) for job, entry in ended.items() if entry.ran)[-RAN_GROUPS_KEPT:]
    return waiting | {job: ended[job] for _, job in newest_ran}


def due_at(group: Group, debounce: Debounce) -> float:
    """When the current group runs: `period_seconds` after its latest arrived, or `max_wait_seconds` after its first."""
    due = group.arrived_at + debounce.period_seconds
    if debounce.max_wait_seconds is not None:
        due = min(due, group.first_at + debounce.max_wait_seconds)
    return due


def send_delay(group: Group, at: float, debounce: Debounce) -> int:
    """How long the message of the group's latest, sent at `at`, waits in the queue: until the group is due,
    rounded up to SQS's whole seconds, at most its 15 minutes (a longer wait goes on at the worker)."""
    return min(math.ceil(max(due_at(group, debounce) - at, 0)), settings.MAX_SQS_DELAY_SECONDS)


@dataclass(frozen=True)
class Fire:
    """The job runs: the latest of its due group (`closed` False), or of a group closed before it ran (True)."""

    closed: bool = False


@dataclass(frozen=True)
class NotDue:
    """The job is its group's latest, but the group is not due until `until` (epoch seconds): it waits."""

    until: float


@dataclass(frozen=True)
class Superseded:
    """A later arrival superseded the job: it ends `skipped`. `by`: the job that superseded it as far as the group
    says (its group's latest, or the run of its group), None where the group no longer says."""

    by: str | None


@dataclass(frozen=True)
class Unmanaged:
    """The group has no say over the job (it ran already, or its arrival is not in the group): claim it as any job."""


Decision = Fire | NotDue | Superseded | Unmanaged


def decide(group: Group | None, job_id: str, seq: int, now: float, debounce: Debounce) -> Decision:
    """What becomes of the job `job_id`, arrival number `seq`, whose message came at `now`."""
    if group is None or seq > group.seq:
        return Unmanaged()  # no item, or one that never recorded this arrival (it expired and began again)
    if job_id in group.ended:
        return Unmanaged() if group.ended[job_id].ran else Fire(closed=True)
    if group.latest == job_id:
        due = due_at(group, debounce)
        return Fire() if now >= due else NotDue(due)
    if seq == group.seq:
        return Unmanaged()  # no arrival came after it
    return Superseded(by=superseded_by(group, seq))


def superseded_by(group: Group, seq: int) -> str | None:
    """The job that ran, or runs, in place of the superseded arrival `seq`: the latest of the group its arrival
    number falls in (the current one, or an ended one still kept), None if that group is no longer kept."""
    if group.latest is not None and seq >= group.first_seq:
        return group.latest
    return next((job for job, entry in group.ended.items() if entry.first_seq <= seq <= entry.last_seq), None)


def skip_reason(debounce: Debounce, by: str | None) -> str:
    """A superseded job's reason, as its record and view say it."""
    if by is None:
        return f"debounced: superseded by a later job of key {debounce.key!r}"
    return f"debounced: superseded by job {by} (key {debounce.key!r})"
