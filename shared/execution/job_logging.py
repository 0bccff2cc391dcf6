"""The logger a job function gets: one JSON line per record, tagged with the job and the attempt.

Where the job runs: on the worker (built-in types, and types loaded in its process), or in the jobs
function (a customer's types): the lines go to that function's log group.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

_LOGGER_NAME = "corral.jobs"


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "level": record.levelname,
            "message": record.getMessage(),
            "logger": record.name,
            **getattr(record, "corral", {}),
        }
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


class _JobAdapter(logging.LoggerAdapter):  # type: ignore[type-arg]
    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        kwargs["extra"] = {"corral": {**(self.extra or {}), **kwargs.get("extra", {})}}
        return msg, kwargs


def _base_logger() -> logging.Logger:
    logger = logging.getLogger(_LOGGER_NAME)
    if not logger.handlers:
        # Its own handler: the Lambda runtime's root logger is at WARNING, and a job's INFO lines matter;
        # stderr reaches CloudWatch on AWS like stdout.
        handler = logging.StreamHandler(sys.stderr)  # stdout is the emulator's protocol
        handler.setFormatter(_JsonLines())
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
    return logger


def logger_for(job_type: str, job_id: str, attempt: int, tenant: str) -> logging.LoggerAdapter:  # type: ignore[type-arg]
    extra = {"job_id": job_id, "job_type": job_type, "attempt": attempt, "tenant": tenant}
    return _JobAdapter(_base_logger().getChild(job_type), extra)
