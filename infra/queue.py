"""Job queue: SQS standard queue with a dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from shared import settings
from shared.settings import Profile


class JobQueue(Construct):
    def __init__(self, scope: Construct, id: str, *, profile: Profile) -> None:
        super().__init__(scope, id)
        retention = Duration.days(settings.MESSAGE_RETENTION_DAYS)
        self.dlq = sqs.Queue(
            self,
            "DeadLetters",
            queue_name=settings.DLQ_NAME,
            retention_period=retention,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
        )
        self.queue = sqs.Queue(
            self,
            "Jobs",
            queue_name=settings.QUEUE_NAME,
            retention_period=retention,
            visibility_timeout=Duration.seconds(profile.visibility_timeout_seconds),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=settings.MAX_RECEIVE_COUNT),
        )
