"""Events and the waits for them, ordered so that neither misses the other (docs/decisions/durable-jobs.md
"Events, and the race with a wait").

Three item kinds per (tenant, event name), the name stored as a digest (shared/durable/matching.py):

- the **channel** `channel#<tenant>#<name>`: `seq`, how many events were sent on it; `keys`, the match
  keys its waits are indexed by (shared/durable/matching.py `index_pair`); `h<hour>`, the first sequence
  number of each hour of the last day (where a wait's look back may stop). Every send and every wait's
  registration writes it once: it is the **ordering point** of the two;
- the **log** `eventlog#<tenant>#<name>#<seq>`: one event (its id, when it was sent, its data), kept
  EVENT_LOOKBACK_SECONDS for waits that register after it;
- the **waits** `waits#<tenant>#<name, match pair>#<page>`: the jobs waiting under one index pair, up to
  WAITS_PER_INDEX_PAGE a page, each an attribute (job, step, match, when its window opened).

`send` (an event): (1) `seq` + 1 → N; (2) the hour's mark, if this is its first event; (3) the log item N;
(4) a consistent read of the channel; (5) a consistent read of every page its data can match → the waits
it resumes. `register` (a wait): (1) its entry in its page; (2) its key added to the channel's `keys`,
which answers `seq` = S (one write, ALL_NEW); (3) the log items S, S-1, ... back to its window's start
(or its hour's mark) → the events it resumes on at once.

Why nothing is lost: the channel serialises the two writes (2) and (1). If the event's came first, the
wait's look back starts at S ≥ N and reads log item N: there, it sees the event; not written yet, the
sender's steps (3)-(5) all come after that read, so its read of the channel (4) sees the wait's key and its
read of the page (5) sees the entry, written at the wait's step (1), before. If the wait's came first, the
sender's reads (4)-(5) come after both of the wait's writes, and see it. Either way one of them sees the
other, with reads that are all strongly consistent (no index is read: a GSI may lag).

A log item missing below S is an event whose sender is between (1) and (3), or died there (its client,
answered no 202, sends it again: a new sequence number): skipped, safely, by the argument above.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from shared.aws.clients import client, single_attempt_client
from shared.durable import limits, matching
from shared.store import keys, table
from shared.store.conditional import Refused, update_or_refused

_HOUR = 3600
_MARKS_KEPT_HOURS = limits.EVENT_LOOKBACK_SECONDS // _HOUR + 2
_ANY_KEY = "any"  # the channel's `keys` entry of waits indexed under the name alone (a set holds no "")


def _dynamodb(single_attempt: bool) -> Any:
    return single_attempt_client("dynamodb") if single_attempt else client("dynamodb")


def _key_entry(key: str) -> str:
    return _ANY_KEY if key == matching.ANY else "k:" + key


def _key_of(entry: str) -> str:
    return matching.ANY if entry == _ANY_KEY else entry.removeprefix("k:")


@dataclass(frozen=True)
class Channel:
    seq: int
    keys: frozenset[str]  # match keys waits use (matching.ANY: the name alone)
    marks: dict[int, int]  # hour (epoch seconds // 3600) -> the first sequence number seen in it

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> Channel:
        return cls(
            seq=int(item.get("seq", {"N": "0"})["N"]),
            keys=frozenset(_key_of(entry) for entry in item.get("keys", {}).get("SS", [])),
            marks={
                int(name[1:]): int(value["N"]) for name, value in item.items() if name[:1] == "h" and name[1:].isdigit()
            },
        )

    def lower_bound(self, since: float) -> int:
        """The sequence number below which no event was sent at or after `since`: the mark of `since`'s hour,
        or of the first later hour that has one; the channel's end if none has (nothing sent since)."""
        hour = int(since // _HOUR)
        later = [mark for marked_hour, mark in self.marks.items() if marked_hour >= hour]
        return min(later) - 1 if later else self.seq


@dataclass(frozen=True)
class LoggedEvent:
    seq: int
    event_id: str
    sent_at: float
    data: Any


@dataclass(frozen=True)
class Waiter:
    """A job waiting in step `step` for an event; `opened_at`: since when an event resumes it (its window)."""

    job_id: str
    step: str
    match: dict[str, Any]
    opened_at: float
    run: int = 0

    @property
    def entry(self) -> str:
        return "w" + hashlib.sha256(f"{self.job_id}\0{self.step}".encode()).hexdigest()[:24]

    def encoded(self) -> dict[str, Any]:
        return {
            "M": {
                "job": {"S": self.job_id},
                "step": {"S": self.step},
                "match": {"S": json.dumps(self.match, separators=(",", ":"), sort_keys=True)},
                "opened": {"N": repr(float(self.opened_at))},
                "run": {"N": str(self.run)},
            }
        }

    @classmethod
    def decoded(cls, value: Mapping[str, Any]) -> Waiter:
        fields = value["M"]
        return cls(
            job_id=fields["job"]["S"],
            step=fields["step"]["S"],
            match=json.loads(fields["match"]["S"]),
            opened_at=float(fields["opened"]["N"]),
            run=int(fields["run"]["N"]),
        )


def _channel_key(tenant: str, name: str) -> dict[str, Any]:
    return keys.item_key(keys.event_channel_key(tenant, matching.channel_digest(name)))


def _log_key(tenant: str, name: str, seq: int) -> dict[str, Any]:
    return keys.item_key(keys.event_log_key(tenant, matching.channel_digest(name), seq))


def _page_key(tenant: str, name: str, pair: tuple[str, str], page: int) -> dict[str, Any]:
    return keys.item_key(keys.waits_key(tenant, matching.index_digest(name, *pair), page))


def _expires(now: float) -> dict[str, str]:
    return {"N": str(int(now + limits.EVENT_LOOKBACK_SECONDS + _HOUR))}


# An event --------------------------------------------------------------------------------------------


def send(
    tenant: str, name: str, event_id: str, data: Any, now: float, *, single_attempt: bool = False
) -> tuple[int, list[Waiter]]:
    """Log an event and find the waits it resumes: its sequence number, and each waiting job whose match its
    data holds (and whose window was open when it was sent). Each step may be repeated: a send retried logs
    the event again under a new number, which a wait may see twice (resolving a step is idempotent)."""
    dynamodb = _dynamodb(single_attempt)
    hour = int(now // _HOUR)
    bumped = dynamodb.update_item(
        TableName=table.name(),
        Key=_channel_key(tenant, name),
        UpdateExpression="SET #seq = if_not_exists(#seq, :zero) + :one, #name = :name, #expires = :expires"
        " REMOVE #stale",
        ExpressionAttributeNames={
            "#seq": "seq",
            "#name": "name",
            "#expires": "expires_at",
            "#stale": f"h{hour - _MARKS_KEPT_HOURS}",
        },
        ExpressionAttributeValues={
            ":zero": {"N": "0"},
            ":one": {"N": "1"},
            ":name": {"S": name},
            ":expires": _expires(now),
        },
        ReturnValues="ALL_NEW",
    )["Attributes"]
    seq = int(bumped["seq"]["N"])
    mark = bumped.get(f"h{hour}")
    if mark is None or int(mark["N"]) > seq:
        _mark_hour(dynamodb, tenant, name, hour, seq)
    dynamodb.put_item(
        TableName=table.name(),
        Item=_log_key(tenant, name, seq)
        | {
            "event": {"S": event_id},
            "sent_at": {"N": repr(float(now))},
            "data": {"S": json.dumps(data, separators=(",", ":"))},
            "expires_at": _expires(now),
        },
    )
    channel = Channel.of(
        dynamodb.get_item(TableName=table.name(), Key=_channel_key(tenant, name), ConsistentRead=True).get("Item", {})
    )
    resumed = []
    for pair in matching.candidate_pairs(data, set(channel.keys)):
        if pair[0] not in channel.keys:
            continue
        for waiter in _waiters(dynamodb, tenant, name, pair):
            if waiter.opened_at - limits.EVENT_CLOCK_MARGIN_SECONDS <= now and matching.matches(waiter.match, data):
                resumed.append(waiter)
    return seq, resumed


def _mark_hour(dynamodb: Any, tenant: str, name: str, hour: int, seq: int) -> None:
    """The hour's first sequence number: the least any of its events set (a later one racing an earlier
    one lowers it; the registrar's argument covers the moment between)."""
    update_or_refused(
        dynamodb,
        TableName=table.name(),
        Key=_channel_key(tenant, name),
        UpdateExpression="SET #mark = :seq",
        ConditionExpression="attribute_not_exists(#mark) OR #mark > :seq",
        ExpressionAttributeNames={"#mark": f"h{hour}"},
        ExpressionAttributeValues={":seq": {"N": str(seq)}},
    )


def _waiters(dynamodb: Any, tenant: str, name: str, pair: tuple[str, str]) -> Iterator[Waiter]:
    """Every wait indexed under `pair`, page after page (strongly consistent reads)."""
    page, pages = 0, 1
    while page < pages:
        item = dynamodb.get_item(
            TableName=table.name(), Key=_page_key(tenant, name, pair, page), ConsistentRead=True
        ).get("Item", {})
        if page == 0:
            pages = int(item.get("pages", {"N": "1"})["N"])
        for attribute, value in item.items():
            if attribute.startswith("w") and "M" in value:
                yield Waiter.decoded(value)
        page += 1


# A wait ----------------------------------------------------------------------------------------------


def register(tenant: str, name: str, waiter: Waiter, now: float, *, single_attempt: bool = False) -> list[LoggedEvent]:
    """Index a wait, then look back: the events sent on its name since its window opened (at most
    EVENT_LOOKBACK_SECONDS ago) that its match takes, earliest first. Registering it again (a redelivery,
    a retry) changes nothing and looks back again."""
    dynamodb = _dynamodb(single_attempt)
    pair = matching.index_pair(waiter.match)
    _add_to_page(dynamodb, tenant, name, pair, waiter, now)
    channel = Channel.of(
        dynamodb.update_item(
            TableName=table.name(),
            Key=_channel_key(tenant, name),
            UpdateExpression="SET #seq = if_not_exists(#seq, :zero), #name = :name, #expires = :expires ADD #keys :key",
            ExpressionAttributeNames={"#seq": "seq", "#name": "name", "#expires": "expires_at", "#keys": "keys"},
            ExpressionAttributeValues={
                ":zero": {"N": "0"},
                ":name": {"S": name},
                ":expires": _expires(max(now, waiter.opened_at)),
                ":key": {"SS": [_key_entry(pair[0])]},
            },
            ReturnValues="ALL_NEW",
        )["Attributes"]
    )
    since = max(waiter.opened_at, now - limits.EVENT_LOOKBACK_SECONDS) - limits.EVENT_CLOCK_MARGIN_SECONDS
    found: list[LoggedEvent] = []
    for seq in range(channel.seq, channel.lower_bound(since), -1):
        item = dynamodb.get_item(TableName=table.name(), Key=_log_key(tenant, name, seq), ConsistentRead=True).get(
            "Item"
        )
        if item is None:
            continue  # a send between its number and its log item: it reads the page after, and sees the wait
        logged = LoggedEvent(seq, item["event"]["S"], float(item["sent_at"]["N"]), json.loads(item["data"]["S"]))
        if logged.sent_at < since:
            break
        if logged.sent_at >= waiter.opened_at - limits.EVENT_CLOCK_MARGIN_SECONDS and matching.matches(
            waiter.match, logged.data
        ):
            found.append(logged)
    return sorted(found, key=lambda logged: logged.seq)


def _add_to_page(dynamodb: Any, tenant: str, name: str, pair: tuple[str, str], waiter: Waiter, now: float) -> None:
    """The wait's entry in the first page of its index pair with room (a page holds WAITS_PER_INDEX_PAGE)."""
    page = 0
    while True:
        answer = update_or_refused(
            dynamodb,
            TableName=table.name(),
            Key=_page_key(tenant, name, pair, page),
            UpdateExpression="SET #entry = :entry, #expires = :expires ADD #count :one",
            ConditionExpression="attribute_not_exists(#entry) AND (attribute_not_exists(#count) OR #count < :most)",
            ExpressionAttributeNames={"#entry": waiter.entry, "#count": "count", "#expires": "expires_at"},
            ExpressionAttributeValues={
                ":entry": waiter.encoded(),
                ":one": {"N": "1"},
                ":most": {"N": str(limits.WAITS_PER_INDEX_PAGE)},
                ":expires": {"N": str(int(now + limits.MAX_WAIT_SECONDS + _HOUR))},
            },
        )
        if not isinstance(answer, Refused):
            break
        if waiter.entry in answer.item:
            return  # registered already
        page += 1
    if page > 0:  # the pages an event reads: known from page 0, before the channel names the wait's key
        update_or_refused(
            dynamodb,
            TableName=table.name(),
            Key=_page_key(tenant, name, pair, 0),
            UpdateExpression="SET #pages = :pages",
            ConditionExpression="attribute_not_exists(#pages) OR #pages < :pages",
            ExpressionAttributeNames={"#pages": "pages"},
            ExpressionAttributeValues={":pages": {"N": str(page + 1)}},
        )


def unregister(tenant: str, name: str, waiter: Waiter, *, single_attempt: bool = False) -> None:
    """Take a wait out of its index (it was resolved, timed out or cancelled); nothing if it is not there.
    Best effort: an entry left behind resolves nothing (its step is no longer waiting) and is taken out by
    the event that finds it so."""
    dynamodb = _dynamodb(single_attempt)
    pair = matching.index_pair(waiter.match)
    page, pages = 0, 1
    while page < pages:
        answer = update_or_refused(
            dynamodb,
            TableName=table.name(),
            Key=_page_key(tenant, name, pair, page),
            UpdateExpression="REMOVE #entry ADD #count :minus",
            ConditionExpression="attribute_exists(#entry)",
            ExpressionAttributeNames={"#entry": waiter.entry, "#count": "count"},
            ExpressionAttributeValues={":minus": {"N": "-1"}},
        )
        if not isinstance(answer, Refused):
            return
        if page == 0:
            pages = int(answer.item.get("pages", {"N": "1"})["N"])
        page += 1
