"""A callback's payload and the view it gets (docs/decisions/callbacks.md): where the view goes in it, and
how much of a payload's room the view keeps. Read by the check at enqueue (shared/jobs/enqueue.py
`check_callback`) and by the send when the parent ends (shared/batches/callbacks.py), so neither imports
the other."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Room left in a callback's payload for the parent's view: a callback's own payload takes at most the rest.
CALLBACK_VIEW_ROOM_BYTES = 4 * 1024

# Types whose payload is a request and whose endpoint receives its `body`: a callback of one gets its
# parent's (or batch's) view in that body, so a callback URL receives it (an `http` job refuses any
# payload field but url, method, headers and body).
VIEW_IN_BODY = frozenset({"http"})


def with_view(job_type: str, payload: Mapping[str, Any] | None, key: str, view: Any) -> dict[str, Any]:
    """A callback's payload with `key`: `view` added: in its body for a request type, else at its top."""
    added = dict(payload or {})
    if job_type in VIEW_IN_BODY:
        added["body"] = dict(added.get("body") or {}) | {key: view}
        return added
    return added | {key: view}
