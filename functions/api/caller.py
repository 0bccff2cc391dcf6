"""The tenant a resolver route answers for, injected with Powertools' `Depends`.

The handler checks the key and its scope before any route runs, and hands its tenant to the resolver
(`app.append_context(tenant=...)`, functions/api/handler.py); a route takes it as a parameter:

    def list_jobs(tenant: Tenant, ...) -> ...

Imported by the resolver's routes only: `Request` comes with the resolver's package, which the
enqueue path does not load (its routes are given the tenant as an argument: functions/api/enqueue_routes.py).
"""

from __future__ import annotations

from typing import Annotated

from aws_lambda_powertools.event_handler import Depends, Request


def current_tenant(request: Request) -> str:
    """The tenant of the request's API key (set by the handler before the resolver runs)."""
    return request.context["tenant"]


Tenant = Annotated[str, Depends(current_tenant)]
