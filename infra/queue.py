"""Job queues: an SQS standard queue per priority lane, their backstop (SQS's dead-letter target, drained by the
worker) and the DLQ."""

from __future__ import annotations

from aws_cdk import ArnFormat, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra import acknowledgements
from shared import settings
from shared.flow.priority import Priority
from shared.profiles import Profile
from shared.settings import ResourceNames


class JobQueue(Construct):
    """The jobs queue (the default lane's) and the high and low lanes' queues, their backstop and the DLQ.

    SQS moves a lane's message to the backstop after the profile's receive budget; the worker drains
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

        def only_from(*names: str) -> sqs.RedriveAllowPolicy:
            return sqs.RedriveAllowPolicy(
                redrive_permission=sqs.RedrivePermission.BY_QUEUE,
                source_queues=[sqs.Queue.from_queue_arn(self, f"{name}ByName", arn_of(name)) for name in names],
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
            redrive_allow_policy=only_from(*(level.queue_name(names) for level in Priority)),
            dead_letter_queue=sqs.DeadLetterQueue(queue=self.dlq, max_receive_count=profile.receive_budget),
        )
        # One queue per priority lane (docs/decisions/priorities.md), alike but for the name: the default lane's is
        # the jobs queue (construct id "Jobs", as before the lanes), the others `corral-jobs-high` and `-low`.
        self.lanes = {
            level: sqs.Queue(
                self,
                "Jobs" + level.queue_suffix.title().replace("-", ""),
                queue_name=level.queue_name(names),
                retention_period=retention,
                visibility_timeout=Duration.seconds(profile.visibility_timeout_seconds),
                encryption=sqs.QueueEncryption.SQS_MANAGED,
                enforce_ssl=True,
                dead_letter_queue=sqs.DeadLetterQueue(queue=self.backstop, max_receive_count=profile.receive_budget),
            )
            for level in Priority
        }
        self.queue = self.lanes[Priority.DEFAULT]

    def allow_only_senders(self, *senders: iam.IRole, operator_role_arns: list[str] = ()) -> None:  # type: ignore[assignment]
        """Only these roles may put messages on the jobs queue (the API, Scheduler's role, the workers, and the operator
        roles named in `-c corral:operator_roles=arn,arn` that redrive dead letters with the `corral` CLI);
        any other principal of the account is denied, whatever its own policies grant. A message on this
        queue runs as its tenant's job, so who may write one is part of the tenant boundary."""
        arns = [role.role_arn for role in senders] + list(operator_role_arns)
        for lane in self.lanes.values():  # every lane: a message on any of them runs as its tenant's job
            lane.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="OnlyCorralSends",
                    effect=iam.Effect.DENY,
                    principals=[iam.AnyPrincipal()],
                    actions=["sqs:SendMessage"],
                    resources=[lane.queue_arn],
                    conditions={"ArnNotEquals": {"aws:PrincipalArn": arns}},
                )
            )
            lane.add_to_resource_policy(
                iam.PolicyStatement(
                    sid="CorralSenders",
                    principals=[iam.ArnPrincipal(arn) for arn in arns],
                    actions=["sqs:SendMessage"],
                    resources=[lane.queue_arn],
                )
            )

    def grant_send_jobs(self, grantee: iam.IGrantable) -> None:
        """SendMessage (and what CDK's grant adds) on every lane's queue: whoever sends a job sends it to its lane."""
        for lane in self.lanes.values():
            lane.grant_send_messages(grantee)

    def function_env(self) -> dict[str, str]:
        """The lanes' queues as a function's `FunctionEnv` names them (shared/aws/queue.py `lane_url`, `lane_arn`)."""
        return {
            "queue_url": self.queue.queue_url,
            "high_queue_url": self.lanes[Priority.HIGH].queue_url,
            "low_queue_url": self.lanes[Priority.LOW].queue_url,
            "queue_arn": self.queue.queue_arn,
            "high_queue_arn": self.lanes[Priority.HIGH].queue_arn,
            "low_queue_arn": self.lanes[Priority.LOW].queue_arn,
        }

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
