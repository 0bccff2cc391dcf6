"""Render a Markdown email to HTML: a job that calls a well-known library (Python-Markdown)."""

from __future__ import annotations

from typing import Any

import markdown

from corral_jobs import InvalidPayload, JobContext, JobDead, job_type


def _check(payload: Any) -> None:
    """Run by the API at enqueue: a job that can never succeed is refused with a 422, not retried."""
    if not isinstance(payload, dict) or not isinstance(payload.get("markdown"), str):
        raise InvalidPayload("payload.markdown", "must be the email's body as Markdown text")


@job_type("render_email", timeout_seconds=30, max_attempts=2, validate=_check)
def render_email(payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
    body = payload.get("markdown")
    if not isinstance(body, str):
        raise JobDead("payload.markdown is missing")  # a job queued before the check existed: no retry helps
    html = markdown.markdown(body, extensions=["tables"])
    context.logger.info("rendered", extra={"bytes": len(html)})
    # The job id is the idempotency key for side effects: a mail provider given it sends one email
    # however often this attempt is repeated.
    return {"html": html, "idempotency_key": context.idempotency_key}
