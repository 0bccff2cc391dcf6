"""Job queue: SQS standard queue with a dead-letter queue."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import acknowledgements
from shared import settings
from shared.settings import Profile, ResourceNames


class JobQueue(Construct):
    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, profile: Profile) -> None:
        super().__init__(scope, id)
        retention = Duration.days(settings.MESSAGE_RETENTION_DAYS)
        # Only the jobs queue may redrive into the DLQ (its ARN from the fixed name: the queue refers to
        # the DLQ, so referring back to the queue's construct would be a cycle).
        jobs_arn = Stack.of(self).format_arn(service="sqs", resource=names.queue, arn_format=ArnFormat.NO_RESOURCE_NAME)
        self.dlq = sqs.Queue(
            self,
            "DeadLetters",
            queue_name=names.dlq,
            retention_period=retention,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            redrive_allow_policy=sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[sqs.Queue.from_queue_arn(self, "JobsByName", jobs_arn)],
            ),
        )
        acknowledgements.dead_letter_queue(self.dlq)
        self.queue = sqs.Queue(
            self,
            "Jobs",
            queue_name=names.queue,
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

    def allow_only_dead_letter_senders(self, *senders: iam.IRole) -> None:
        """Only these roles may send to the DLQ (the workers bury dead jobs there, Scheduler's role sends
        firings it could not deliver); SQS's own redrive from the jobs queue is allowed by the DLQ's
        RedriveAllowPolicy. A message planted there would run as a tenant's job once an operator
        redrives it."""
        self.dlq.add_to_resource_policy(
            iam.PolicyStatement(
                sid="OnlyCorralBuries",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=["sqs:SendMessage"],
                resources=[self.dlq.queue_arn],
                conditions={"ArnNotEquals": {"aws:PrincipalArn": [role.role_arn for role in senders]}},
            )
        )
