"""Job queue: SQS standard queue with a dead-letter queue."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
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

    def allow_only_senders(self, *senders: iam.IRole, operator_role_arns: list[str] = ()) -> None:  # type: ignore[assignment]
        """Only these roles may put messages on the jobs queue (the API, Scheduler's role, the workers, and the operator
        roles named in `-c corral:operator_roles=arn,arn` that redrive dead letters with the `corral` CLI);
        any other principal of the account is denied, whatever its own policies grant. A message on this
        queue runs as its tenant's job, so who may write one is part of the tenant boundary."""
        arns = [role.role_arn for role in senders] + list(operator_role_arns)
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="OnlyCorralSends",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": arns}},
            )
        )
        self.queue.add_to_resource_policy(
            iam.PolicyStatement(
                sid="CorralSenders",
                principals=[iam.ArnPrincipal(arn) for arn in arns],
                actions=["sqs:SendMessage"],
                resources=[self.queue.queue_arn],
            )
        )
