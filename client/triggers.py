"""`corral.triggers`: events that start jobs (POST /v1/triggers). Each `POST /v1/events` of a trigger's event name
whose data holds its `match` starts one job: its payload the event's data laid over the trigger's, once per event
id; the job shows `started_by`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from . import paging
from .types import Trigger, TriggerPage

if TYPE_CHECKING:
    from .corral import Corral


class Triggers:
    def __init__(self, corral: Corral) -> None:
        self._corral = corral

    def create(
        self, name: str, event: str, job_type: str, payload: Any = None, *, match: Any = None, **job: Any
    ) -> Trigger:
        """E.g. `create("receipt", "payment.received", "send_receipt", {"template": "v2"}, match={"plan": "pro"})`.
        `job`: further fields of the job, as `enqueue` takes them (max_attempts, timeout_seconds, delay_seconds,
        concurrency, throttle, on_success, on_failure). Conflict for a name taken; QuotaExceeded at max_triggers."""
        from .corral import _given  # the client's own rule for the fields left out (it imports this module)

        fields = {"type": job_type, "payload": payload, **job}
        body = {"name": name, "event": event, "match": match, "job": _given(fields)}
        return cast(
            Trigger, self._corral.call("POST", "/v1/triggers", idempotent=False, expect=(201,), json=_given(body))
        )

    def pages(self, *, page_size: int | None = None, cursor: str | None = None) -> Iterator[TriggerPage]:
        """GET /v1/triggers page by page (by name), following `next_cursor` until the last page."""
        return paging.pages(self._corral.call, "/v1/triggers", {"limit": page_size}, cursor, TriggerPage.read)

    def list(self, *, max_items: int | None = None, page_size: int | None = None) -> Iterator[Trigger]:
        """The tenant's triggers by name, fetched page by page as you iterate; at most `max_items`."""
        return paging.items(self.pages(page_size=page_size), lambda page: page.triggers, max_items)

    def get(self, name: str) -> Trigger:
        return cast(Trigger, self._corral.call("GET", _path(name), idempotent=True))

    def delete(self, name: str) -> None:
        """Delete the trigger (the jobs it started stay). NotFound if there is none."""
        self._corral.call("DELETE", _path(name), idempotent=True)


def _path(name: str) -> str:
    return f"/v1/triggers/{quote(name, safe='')}"


__all__ = ["Triggers"]
