"""What a scenario changes on its stack before the load: the workers' concurrency, a tenant's enqueue limits."""

from __future__ import annotations

from local.platform import Platform
from local.prewarm import jobs_queue_mapping
from shared import settings


def limit_worker_concurrency(platform: Platform, limit: int) -> None:
    """Each concurrent batch is a Python process in the emulator: cap them to what the machine runs."""
    lambda_ = platform.aws("lambda")
    mapping = jobs_queue_mapping(lambda_)  # the backstop's keeps its own 2
    lambda_.update_event_source_mapping(UUID=mapping["UUID"], ScalingConfig={"MaximumConcurrency": limit})


def set_limits(platform: Platform, tenant: str, rate: float, burst: int, max_running: int | None = None) -> None:
    """The tenant's enqueue limits and, if given, its running cap (0: none), on its item as
    shared/tenants/quotas.py reads them (before its first request)."""
    limits = {"enqueue_rate_per_second": {"N": str(rate)}, "enqueue_burst": {"N": str(burst)}}
    if max_running is not None:
        limits["max_running"] = {"N": str(max_running)}
    platform.aws("dynamodb").update_item(
        TableName=settings.TABLE_NAME,
        Key={"pk": {"S": f"tenant#{tenant}"}},
        UpdateExpression="SET #l = :l",
        ExpressionAttributeNames={"#l": "limits"},
        ExpressionAttributeValues={":l": {"M": limits}},
    )
