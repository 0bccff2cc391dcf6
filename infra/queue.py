"""Job queue: an SQS standard queue, its backstop (SQS's dead-letter target, drained by the worker) and the DLQ."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import acknowledgements
from shared import settings
from shared.profiles import Profile
from shared.settings import ResourceNames


class JobQueue(Construct):
    """The jobs queue, its backstop and the DLQ.

    SQS moves a jobs-queue message to the backstop after the profile's receive budget; the worker drains
    the backstop (an event source of its own, infra/workers.py), recording each message's job dead and
    burying the message in the DLQ with its reason (shared/worker/complete/backstop.py). The DLQ is where
    operators look and redrive (`corral dlq`): every message in it is a recorded dead job, or an
    unreadable message, counted. A backstop message the worker cannot record in the budget's receives
    reaches the DLQ as it is (its reason: none). See docs/decisions/dead-jobs-and-the-dlq.md.
    """

    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, profile: Profile) -> None:
        super().__init__(scope, id)
        retention = Duration.days(settings.MESSAGE_RETENTION_DAYS)
        # Each queue names the one queue that may redrive into it (ARNs from the fixed names: a queue refers
        # to its dead-letter target, so referring back to the source's construct would be a cycle).
        stack = Stack.of(self)

        def arn_of(name: str) -> str:
            return stack.format_arn(service="sqs", resource=name, arn_format=ArnFormat.NO_RESOURCE_NAME)

        def only_from(name: str) -> sqs.RedriveAllowPolicy:
            return sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[sqs.Queue.from_queue_arn(self, f"{name}ByName", arn_of(name))],
            )

        self.dlq = sqs.Queue(
            self,
            "DeadLetters",
            queue_name=names.dlq,
            retention_period=retention,
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            redrive_allow_policy=only_from(names.backstop),
        )
        acknowledgements.dead_letter_queue(self.dlq)
        self.backstop = sqs.Queue(
            self,
            "Backstop",
            queue_name=names.backstop,
            retention_period=retention,
            # The worker's event source reads it too: its visibility outlasts the worker's timeout, as the jobs queue's.
            visibility_timeout=Duration.seconds(profile.visibility_timeout_seconds),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            redrive_allow_policy=only_from(names.queue),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=profile.receive_budget),
        )
        self.queue = sqs.Queue(
            self,
            "Jobs",
            queue_name=names.queue,
            retention_period=retention,
            visibility_timeout=Duration.seconds(profile.visibility_timeout_seconds),
            encryption=sqs.QueueEncryption.SQS_MANAGED,
            enforce_ssl=True,
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.backstop, max_receive_count=profile.receive_budget),
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

    def allow_only_dead_letter_senders(self, worker: iam.IRole, scheduler: iam.IRole) -> None:
        """Only the workers may send to the DLQ (they bury dead jobs there), and Scheduler's role, for the
        schedules made before the backstop, which name the DLQ as their dead-letter target until they are
        next updated; only Scheduler's role may send to the backstop (the firings it could not deliver).
        SQS's own redrives are allowed by each queue's RedriveAllowPolicy. A message planted in the DLQ
        would run as a tenant's job once an operator redrives it; one planted in the backstop would be
        recorded as a tenant's dead job."""
        for queue, sid, senders in (
            (self.dlq, "OnlyCorralBuries", [worker, scheduler]),
            (self.backstop, "OnlySchedulerFails", [scheduler]),
        ):
            queue.add_to_resource_policy(
                iam.PolicyStatement(
                    sid=sid,
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=["sqs:SendMessage"],
                    resources=[queue.queue_arn],
                    conditions={"ArnNotEquals": {"aws:PrincipalArn": [sender.role_arn for sender in senders]}},
                )
            )
