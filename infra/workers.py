"""Job workers: a Lambda with SQS event sources (the jobs queue, and its backstop) reporting partial batch failures."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from infra import acknowledgements, table_access
from infra.capacity import Capacity
from infra.parts import StackParts
from shared import settings
from shared.profiles import Profile

WORKER_MEMORY_MB = 1024


def scaling(profile: Profile, capacity: Capacity) -> dict[str, object]:
    """How the event source scales: provisioned pollers on AWS, MaximumConcurrency in the emulator.

    The two are mutually exclusive on AWS; the emulator knows only MaximumConcurrency.
    Why provisioned mode for the midnight herd: docs/decisions/production-stack.md. How many pollers:
    the stage's share of the account's concurrency (infra/capacity.py).
    """
    if profile.provisioned_pollers:
        return {
            "provisioned_poller_config": lambda_.ProvisionedPollerConfig(
                minimum_pollers=capacity.worker_min_pollers, maximum_pollers=capacity.worker_max_pollers
            )
        }
    return {"max_concurrency": settings.WORKER_MAX_CONCURRENCY}


class Workers(Construct):
    def __init__(self, scope: Construct, id: str, parts: StackParts) -> None:
        super().__init__(scope, id)
        queue = parts.queue
        self.function = parts.functions.function(
            self,
            "Handler",
            name=parts.names.worker_function,
            handler="functions.worker.handler.handler",
            timeout_seconds=parts.profile.worker_timeout_seconds,
            memory_mb=WORKER_MEMORY_MB,
            service="corral-worker",
        )
        table_access.grant(self.function, parts.store, worker=True)
        acknowledgements.table_grantee(self.function, parts.store.table)
        # The event source grants what the worker does on the jobs queue (receive, delete,
        # ChangeMessageVisibility for hand-backs). SendMessage there carries an outcome produced while
        # the store failed (shared/worker/complete/completer.py), or a callback a finished job or batch calls for
        # (shared/batches/callbacks.py); the queue's policy names this role among its senders.
        queue.dlq.grant_send_messages(self.function)
        queue.queue.grant_send_messages(self.function)
        self.function.add_event_source(
            event_sources.SqsEventSource(
                queue.queue,
                batch_size=settings.WORKER_BATCH_SIZE,
                max_batching_window=Duration.seconds(settings.WORKER_BATCHING_WINDOW_SECONDS),
                report_batch_item_failures=True,
                **scaling(parts.profile, parts.capacity),
            )
        )
        # The backstop's messages (SQS moved them after the jobs queue's receive budget, or Scheduler could not
        # deliver them) are recorded dead and buried in the DLQ by the same function
        # (shared/worker/complete/backstop.py).
        # Nothing is meant to arrive there: a poller or two is plenty, and none is provisioned.
        self.function.add_event_source(
            event_sources.SqsEventSource(
                queue.backstop,
                batch_size=settings.WORKER_BATCH_SIZE,
                report_batch_item_failures=True,
                max_concurrency=settings.BACKSTOP_MAX_CONCURRENCY,
            )
        )
        acknowledgements.sqs_event_source(self.function)
