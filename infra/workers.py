"""Job workers: a Lambda with SQS event sources (each priority lane's queue, and their backstop) reporting partial
batch failures."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as event_sources
from constructs import Construct

from infra import acknowledgements, table_access
from infra.capacity import Capacity
from infra.parts import StackParts
from shared import settings
from shared.flow.priority import Lanes, Priority, split
from shared.profiles import Profile

WORKER_MEMORY_MB = 1024


def lanes(profile: Profile, capacity: Capacity) -> Lanes:
    """The worker's concurrent batches split into the priority lanes (shared/flow/priority.py `split`): on AWS
    what its most pollers drive, in the emulator WORKER_MAX_CONCURRENCY."""
    if profile.provisioned_pollers:
        return split(capacity.worker_max_pollers * settings.INVOKES_PER_POLLER)
    return split(settings.WORKER_MAX_CONCURRENCY)


def scaling(profile: Profile, capacity: Capacity, level: Priority = Priority.DEFAULT) -> dict[str, object]:
    """How a lane's event source scales: its share of the worker's concurrent batches (`lanes`).

    On AWS the default lane has provisioned pollers, as many as its share drives (at most the capacity's least), and
    the high and low lanes a MaximumConcurrency of their share: the two modes are mutually exclusive, and a small
    lane needs no provisioned pollers (standard mode starts 5 concurrent batches at once). The emulator knows
    only MaximumConcurrency. Why provisioned mode for the midnight herd: docs/decisions/production-stack.md. How
    many pollers: the stage's share of the account's concurrency (infra/capacity.py).
    """
    share = lanes(profile, capacity).of(level)
    if profile.provisioned_pollers and level is Priority.DEFAULT:
        most = share // settings.INVOKES_PER_POLLER
        return {
            "provisioned_poller_config": lambda_.ProvisionedPollerConfig(
                minimum_pollers=min(capacity.worker_min_pollers, most), maximum_pollers=most
            )
        }
    return {"max_concurrency": share}


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
        queue.grant_send_jobs(self.function)
        # One event source per priority lane, each bounded by its share (docs/decisions/priorities.md): a job waits
        # only behind jobs of its own lane, and no lane starves another.
        for level, lane in queue.lanes.items():
            self.function.add_event_source(
                event_sources.SqsEventSource(
                    lane,
                    batch_size=settings.WORKER_BATCH_SIZE,
                    max_batching_window=Duration.seconds(settings.WORKER_BATCHING_WINDOW_SECONDS),
                    report_batch_item_failures=True,
                    **scaling(parts.profile, parts.capacity, level),
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
