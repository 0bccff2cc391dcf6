"""Running slots: how many jobs of a pool run now, fleet-wide, against the pool's cap. A pool is a
tenant (`running#<tenant>`, its `max_running` cap: shared/worker/admit/running_share.py) or a tenant's
concurrency key (`running#<tenant>#key#<key>`, the key's limit: shared/worker/admit/key_slots.py).

One item per pool: `running`, the number of slots held, `holders`, the number of holders holding
them, and one attribute per holder, `h_<holder id>` = {n: the slots it holds, until: epoch seconds
its hold lasts}. A tenant's holder is a worker's batch (a batch holds its worker environment until
its last job ends, so the holders are the environments the tenant holds); a concurrency key's holder
is one slot of a batch, so that each slot is given back the moment its job ends. Holders are put in
one conditional write (`running + n <= cap` and `holders + count <= max_holders`) and each is given
back in one, conditioned on its holder attribute, so a give-back counts once. A holder whose worker
died is never given back: its hold ends at `until` (its jobs' timeouts plus the margin), and the
first taker that finds the cap full removes such holders and subtracts their slots, again
conditioned on each holder, so two takers pruning at once subtract each once. `running` is
therefore always the sum of the holders' `n`, and `holders` their number.

Cost: a tenant's pool, two writes per batch per tenant in it (take, give back), none per job; a
third and a read only when the cap is full. All of a tenant's batches write its one item: at 1,000
writes/s an item's partition takes 500 batches/s of one tenant, ~5,000 jobs/s at full batches
(docs/decisions/running-cap.md). A concurrency key's pool: one write per batch for the slots it
takes, one per slot given back (docs/decisions/concurrency-keys.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.aws.clients import single_attempt_client
from shared.store import keys, table
from shared.store.conditional import conditional_update

_HOLDER_PREFIX = "h_"
# A concurrency key's item goes when the key has been idle this long (the table's TTL): keys are the
# customer's strings, and most are used for a while, then never again.
_IDLE_KEY_KEPT_SECONDS = 86_400


@dataclass(frozen=True)
class Holder:
    id: str
    slots: int
    until: float


@dataclass(frozen=True)
class Cap:
    slots: int  # the most of the pool's jobs running at once
    holders: int  # the most holders (a tenant's: batches, worker environments) holding them at once


def _key(tenant: str, key: str | None) -> dict[str, Any]:
    return keys.item_key(keys.running_key(tenant) if key is None else keys.concurrency_slots_key(tenant, key))


def _client() -> Any:
    # One attempt: the caller runs its batch unmetered (a tenant's cap) or hands its jobs back (a
    # concurrency key) if the store fails, rather than wait on retries.
    return single_attempt_client("dynamodb")


def prepare_client() -> None:
    """Create the client running slots (and a tenant's first limits read) go through and make one read
    with it (the worker's init phase): made at a batch's start instead, it held the first batch of each
    environment ~250 ms on a busy 2-core machine before any of its jobs started."""
    _read("init-phase-read", None)


def take(tenant: str, holder: str, wanted: int, cap: Cap, until: float, now: float, *, key: str | None = None) -> int:
    """Take up to `wanted` of the pool's slots for `holder`, held until `until`: how many it got.

    First all of them, in one conditional write; if the cap has not room, the holders whose hold
    ended by `now` are removed, and what room is left is taken."""
    count = min(wanted, cap.slots)
    if _put_holders(tenant, key, {holder: count}, cap, until):
        return count
    room = _room(tenant, key, cap, now)
    if room.slots <= 0 or room.holders <= 0:
        return 0
    count = min(wanted, room.slots)
    return count if _put_holders(tenant, key, {holder: count}, cap, until) else 0


def take_each(
    tenant: str, holders: Sequence[str], cap: Cap, until: float, now: float, *, key: str, look_first: bool = False
) -> list[str]:
    """Take one slot for each of `holders` (as many as there is room for, in their order), held until
    `until`: the holders that got one. `look_first`: read the pool before writing (a taker that
    expects it full, polling for a slot: a consistent read costs a fifth of a refused write)."""
    wanted = list(holders[: min(cap.slots, cap.holders)])
    if not wanted:
        return []
    if not look_first and _put_holders(tenant, key, dict.fromkeys(wanted, 1), cap, until):
        return wanted
    room = _room(tenant, key, cap, now)
    chosen = wanted[: min(room.slots, room.holders)]
    if not chosen:
        return []
    return chosen if _put_holders(tenant, key, dict.fromkeys(chosen, 1), cap, until) else []


def give_back(tenant: str, holder: str, slots: int, *, key: str | None = None) -> None:
    """`holder` ends: its slots are free again (counted once, even if its hold was pruned meanwhile)."""
    _remove(tenant, key, [Holder(holder, slots, 0.0)])


def holders(tenant: str, *, key: str | None = None) -> list[Holder]:
    return _holders_in(_read(tenant, key))


def running(tenant: str, *, key: str | None = None) -> int:
    """How many slots the pool's holders hold now (a consistent read)."""
    return int(_read(tenant, key).get("running", {}).get("N", "0"))


def _read(tenant: str, key: str | None) -> dict[str, Any]:
    return _client().get_item(TableName=table.name(), Key=_key(tenant, key), ConsistentRead=True).get("Item") or {}


def _holders_in(item: dict[str, Any]) -> list[Holder]:
    return [
        Holder(name.removeprefix(_HOLDER_PREFIX), int(value["M"]["n"]["N"]), float(value["M"]["until"]["N"]))
        for name, value in item.items()
        if name.startswith(_HOLDER_PREFIX)
    ]


@dataclass(frozen=True)
class _Room:
    slots: int
    holders: int


def _room(tenant: str, key: str | None, cap: Cap, now: float) -> _Room:
    """The room left in the pool once the holders whose hold ended by `now` are removed."""
    held = holders(tenant, key=key)
    ended = [each for each in held if each.until <= now]
    if ended and _remove(tenant, key, ended):
        held = [each for each in held if each.until > now]
    return _Room(slots=cap.slots - sum(each.slots for each in held), holders=cap.holders - len(held))


def _put_holders(tenant: str, key: str | None, slots_of: dict[str, int], cap: Cap, until: float) -> bool:
    names = {f"#h{index}": _HOLDER_PREFIX + holder for index, holder in enumerate(slots_of)}
    held = {
        f":held{index}": {"M": {"n": {"N": str(slots)}, "until": {"N": f"{until:.3f}"}}}
        for index, slots in enumerate(slots_of.values())
    }
    total, count = sum(slots_of.values()), len(slots_of)
    sets = [f"{name} = :held{index}" for index, name in enumerate(names)]
    values: dict[str, Any] = held | {
        ":slots": {"N": str(total)},
        ":count": {"N": str(count)},
        ":room": {"N": str(cap.slots - total)},
        ":holders": {"N": str(cap.holders - count)},
    }
    if key is not None:
        sets.append("expires_at = :idle")
        values[":idle"] = {"N": str(int(until) + _IDLE_KEY_KEPT_SECONDS)}
    return conditional_update(
        _client(),
        TableName=table.name(),
        Key=_key(tenant, key),
        UpdateExpression=f"SET {', '.join(sets)} ADD running :slots, holders :count",
        ConditionExpression="attribute_not_exists(running) OR (running <= :room AND holders <= :holders)",
        ExpressionAttributeNames=names,
        ExpressionAttributeValues=values,
    )


def _remove(tenant: str, key: str | None, ended: list[Holder]) -> bool:
    """Remove `ended` holders and subtract their slots, if every one of them is still there."""
    names = {f"#h{index}": _HOLDER_PREFIX + each.id for index, each in enumerate(ended)}
    return conditional_update(
        _client(),
        TableName=table.name(),
        Key=_key(tenant, key),
        UpdateExpression=f"REMOVE {', '.join(names)} ADD running :minus, holders :fewer",
        ConditionExpression=" AND ".join(f"attribute_exists({name})" for name in names),
        ExpressionAttributeNames=names,
        ExpressionAttributeValues={
            ":minus": {"N": str(-sum(each.slots for each in ended))},
            ":fewer": {"N": str(-len(ended))},
        },
    )
