"""A step's record as the journal stores it: a map of short names (a journal holds up to 1,000 of them in one
item), and the bytes each takes (shared/store/durable/journal_items.py)."""

from __future__ import annotations

import json
from typing import Any

from shared.durable import steps
from shared.durable.steps import StepKind, StepRecord, StepStatus

_NAMES = {
    "id": "id",
    "kind": "k",
    "status": "st",
    "n": "n",
    "attempts": "a",
    "run": "rn",
    "writer": "w",
    "started_at": "t0",
    "finished_at": "t1",
    "result_json": "r",
    "spill": "sp",
    "result_bytes": "rb",
    "error": "e",
    "until": "u",
    "awaits": "aw",
    "wait": "wt",
    "resolved_by": "by",
}
_NUMBERS = ("n", "attempts", "run", "started_at", "finished_at", "result_bytes", "until")


def number(value: float | int) -> dict[str, str]:
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def encode(record: StepRecord) -> dict[str, Any]:
    """The record as the journal's map attribute (what is None is left out)."""
    fields: dict[str, Any] = {}
    for name, short in _NAMES.items():
        value = getattr(record, name)
        if value is None:
            continue
        if name == "wait":
            fields[short] = {"S": json.dumps(value, separators=(",", ":"))}
        elif name in _NUMBERS:
            fields[short] = number(value)
        else:
            fields[short] = {"S": str(value)}
    return {"M": fields}


def decode(attribute: dict[str, Any]) -> StepRecord:
    fields = attribute["M"]
    values: dict[str, Any] = {}
    for name, short in _NAMES.items():
        if short not in fields:
            continue
        raw = fields[short]
        if name in _NUMBERS:
            number = float(raw["N"])
            values[name] = int(number) if name in ("n", "attempts", "run", "result_bytes") else number
        elif name == "wait":
            values[name] = json.loads(raw["S"])
        else:
            values[name] = raw["S"]
    values["kind"] = StepKind(values["kind"])
    values["status"] = StepStatus(values["status"])
    return StepRecord(**values)


def entry_bytes(record: StepRecord) -> int:
    """An estimate on the high side of what the record adds to the journal item (DynamoDB counts each
    name and value's bytes, and a few per map element)."""
    size = len(steps.attribute_of(record.id)) + 4
    for short, value in encode(record)["M"].items():
        size += len(short) + 4 + len(next(iter(value.values())).encode())
    return size
