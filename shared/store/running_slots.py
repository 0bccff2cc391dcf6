"""A tenant's running slots (`running#<tenant>`): how many of its jobs run now, fleet-wide, against its
`max_running` cap (shared/worker/running_share.py).

One item per tenant: `running`, the number of slots held, `holders`, the number of batches holding
them, and one attribute per holder, a worker's batch, `h_<holder id>` = {n: the slots it holds,
until: epoch seconds its hold lasts}. A batch takes its slots in one conditional write
(`running + n <= cap` and `holders < max_holders`: a batch holds its worker environment until its
last job ends, so the holders are the environments the tenant holds) and gives them back in one,
conditioned on its holder attribute, so a give-back counts once. A holder whose worker died is never given back:
its hold ends at `until` (its jobs' timeouts plus the margin), and the first batch that finds the cap
full removes such holders and subtracts their slots, again conditioned on each holder, so two batches
pruning at once subtract each once. `running` is therefore always the sum of the holders' `n`, and
`holders` their number.

Cost: two writes per batch per tenant in it (take, give back), none per job; a third and a read
only when the cap is full. All of a tenant's batches write its one item: at 1,000 writes/s an item's
partition takes 500 batches/s of one tenant, ~5,000 jobs/s at full batches (docs/decisions/running-cap.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from shared.aws.clients import is_condition_failure, single_attempt_client
from shared.store import keys, table

_HOLDER_PREFIX = "h_"


@dataclass(frozen=True)
class Holder:
    id: str
    slots: int
    until: float


def _key(tenant: str) -> dict[str, Any]:
    return keys.item_key(keys.running_key(tenant))


def _client() -> Any:
    # One attempt: the caller runs its batch unmetered if the store fails, rather than wait on retries.
    return single_attempt_client("dynamodb")


def prepare_client() -> None:
    """Create the client running slots (and a tenant's first limits read) go through and make one read
    with it (the worker's init phase): made at a batch's start instead, it held the first batch of each
    environment ~250 ms on a busy 2-core machine before any of its jobs started."""
    _item("init-phase-read")


@dataclass(frozen=True)
class Cap:
    slots: int  # the most of the tenant's jobs running at once
    holders: int  # the most batches (worker environments) holding them at once


def take(tenant: str, holder: str, wanted: int, cap: Cap, until: float, now: float) -> int:
    """Take up to `wanted` of the tenant's slots for `holder`, held until `until`: how many it got.

    First all of them, in one conditional write; if the cap has not room, the holders whose hold
    ended by `now` are removed, and what room is left is taken."""
    if _put_holder(tenant, holder, min(wanted, cap.slots), cap, until):
        return min(wanted, cap.slots)
    held = holders(tenant)
    ended = [each for each in held if each.until <= now]
    if ended and _remove(tenant, ended):
        held = [each for each in held if each.until > now]
    room = cap.slots - sum(each.slots for each in held)
    if room <= 0 or len(held) >= cap.holders:
        return 0
    count = min(wanted, room)
    return count if _put_holder(tenant, holder, count, cap, until) else 0


def give_back(tenant: str, holder: str, slots: int) -> None:
    """`holder` ends: its slots are free again (counted once, even if its hold was pruned meanwhile)."""
    _remove(tenant, [Holder(holder, slots, 0.0)])


def holders(tenant: str) -> list[Holder]:
    return [
        Holder(name.removeprefix(_HOLDER_PREFIX), int(value["M"]["n"]["N"]), float(value["M"]["until"]["N"]))
        for name, value in _item(tenant).items()
        if name.startswith(_HOLDER_PREFIX)
    ]


def running(tenant: str) -> int:
    """How many slots the tenant's batches hold now (a consistent read)."""
    return int(_item(tenant).get("running", {}).get("N", "0"))


def _item(tenant: str) -> dict[str, Any]:
    """The tenant's running-slots item as it is now (a consistent read); {} if it has none."""
    return _client().get_item(TableName=table.name(), Key=_key(tenant), ConsistentRead=True).get("Item") or {}


def _put_holder(tenant: str, holder: str, slots: int, cap: Cap, until: float) -> bool:
    try:
        _client().update_item(
            TableName=table.name(),
            Key=_key(tenant),
            UpdateExpression="SET #holder = :held ADD running :slots, holders :one",
            ConditionExpression="attribute_not_exists(running) OR (running <= :room AND holders < :holders)",
            ExpressionAttributeNames={"#holder": _HOLDER_PREFIX + holder},
            ExpressionAttributeValues={
                ":held": {"M": {"n": {"N": str(slots)}, "until": {"N": f"{until:.3f}"}}},
                ":slots": {"N": str(slots)},
                ":one": {"N": "1"},
                ":room": {"N": str(cap.slots - slots)},
                ":holders": {"N": str(cap.holders)},
            },
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True


def _remove(tenant: str, ended: list[Holder]) -> bool:
    """Remove `ended` holders and subtract their slots, if every one of them is still there."""
    names = {f"#h{index}": _HOLDER_PREFIX + each.id for index, each in enumerate(ended)}
    try:
        _client().update_item(
            TableName=table.name(),
            Key=_key(tenant),
            UpdateExpression=f"REMOVE {', '.join(names)} ADD running :minus, holders :fewer",
            ConditionExpression=" AND ".join(f"attribute_exists({name})" for name in names),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues={
                ":minus": {"N": str(-sum(each.slots for each in ended))},
                ":fewer": {"N": str(-len(ended))},
            },
        )
    except ClientError as error:
        if is_condition_failure(error):
            return False
        raise
    return True
