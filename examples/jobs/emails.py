"""Render a Markdown email to HTML: a job that calls a well-known library (Python-Markdown)."""

from __future__ import annotations

from typing import Any

import markdown

from corral_jobs import JobContext, JobDead, job_type

# Checked by the API at enqueue, without importing this module: a job that can never succeed is
# refused with a 422 naming the field (`payload.markdown`), not retried.
RENDER_EMAIL_PAYLOAD = {
    "type": "object",
    "properties": {"markdown": {"type": "string", "description": "the email's body as Markdown text"}},
    "required": ["markdown"],
}


@job_type("render_email", timeout_seconds=30, max_attempts=2, payload_schema=RENDER_EMAIL_PAYLOAD)
def render_email(payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
    body = payload.get("markdown")
    if not isinstance(body, str):
        raise JobDead("payload.markdown is missing")  # a job queued before the schema existed: no retry helps
    html = markdown.markdown(body, extensions=["tables"])
    context.logger.info("rendered", extra={"bytes": len(html)})
    # The job id is the idempotency key for side effects: a mail provider given it sends one email
    # however often this attempt is repeated.
    return {"html": html, "idempotency_key": context.idempotency_key}
