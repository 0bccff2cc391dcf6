"""`corral.events` and `corral.tokens`: what resumes a waiting durable job from outside it
(docs/guides/durable-jobs.md): an event its wait matches, or the token it waits for, completed."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote

from .types import TokenCompleted

if TYPE_CHECKING:
    from .corral import Corral


class Events:
    """`corral.events`: events of this tenant, which resume the jobs waiting for them."""

    def __init__(self, corral: Corral) -> None:
        self._corral = corral

    def send(self, name: str, data: Any = None, id: str | None = None) -> str:
        """Send an event: its id. Every waiting job of this tenant whose `wait_for_event` names `name` and whose
        `match` `data` holds resumes with `data`. The same `id` sent twice is one event, so the SDK's retries
        (and yours) send it once; an id is generated when none is given (`ev_<32 hex>`). Conflict if `id` was
        sent before with another name or data."""
        event_id = id if id is not None else f"ev_{uuid.uuid4().hex}"
        body: dict[str, Any] = {"name": name, "data": data, "id": event_id}
        return cast(str, self._corral.call("POST", "/v1/events", idempotent=True, expect=(202,), json=body)["id"])


class Tokens:
    """`corral.tokens`: the tokens durable jobs wait for (`context.create_token`, `wait_for_token`)."""

    def __init__(self, corral: Corral) -> None:
        self._corral = corral

    def complete(self, token_id: str, data: Any = None) -> TokenCompleted:
        """Complete the token: the job waiting for it resumes with `data`. Once only: a second completion, an
        expired token or one whose job was cancelled raises Conflict; an unknown token NotFound. Not retried
        after a connection dropped mid-request (a completion that landed would then answer Conflict)."""
        path = f"/v1/tokens/{quote(token_id, safe='')}:complete"
        return cast(TokenCompleted, self._corral.call("POST", path, idempotent=False, json={"data": data}))


__all__ = ["Events", "Tokens"]
