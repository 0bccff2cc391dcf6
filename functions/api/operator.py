"""/operator routes: the platform's own health, for holders of an operator key (shared/tenants/operators.py).

Kept off the tenant path: a tenant key never opens these, an operator key never opens /v1.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from functions.api.answers import QueuesOut
from functions.api.openapi_docs import answer, documented
from functions.api.responses import json_response
from shared.operations import queue_health

router = APIGatewayHttpRouter()
PREFIX = "/operator/"


@router.get(
    "/operator/v1/queues",
    tags=["operator"],
    summary="Operator: queue depth, in flight, oldest age, DLQ, worker health",
    responses=documented({200: answer(QueuesOut, "The queue, its DLQ and the workers, read now")}),
)
def queues() -> Response[dict[str, Any]]:
    return json_response(200, queue_health.snapshot())
