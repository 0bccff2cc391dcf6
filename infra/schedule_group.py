"""Schedules: the EventBridge Scheduler group customers' schedules live in, and the role Scheduler
assumes to put a firing straight onto the job queue (no Lambda between the clock and the queue)."""

from __future__ import annotations

from aws_cdk import ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct

from infra import acknowledgements
from infra.queue import JobQueue
from shared.profiles import Profile
from shared.settings import ResourceNames


class Schedules(Construct):
    def __init__(self, scope: Construct, id: str, *, names: ResourceNames, profile: Profile, queue: JobQueue) -> None:
        super().__init__(scope, id)
        stack = Stack.of(self)
        self.queue = queue
        self.group_name = names.schedule_group
        self.group = scheduler.CfnScheduleGroup(self, "Group", name=self.group_name)
        if profile.production:
            # Deleting the group deletes every customer's schedule in it, while the table keeps their
            # records: on AWS it stays with the table when the stack is deleted (but not when its first
            # create fails), and both are imported into the stack that comes back (docs/deploy.md "Teardown").
            self.group.apply_removal_policy(RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE)
        self.schedules_arn = stack.format_arn(
            service="scheduler",
            resource="schedule",
            resource_name=f"{self.group_name}/*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        group_arn = stack.format_arn(
            service="scheduler",
            resource="schedule-group",
            resource_name=self.group_name,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        self.role = iam.Role(
            self,
            "Role",
            # IAM names are global to the account: a stage's role carries its Region too, so the same
            # stage deploys in two Regions. Unstaged, the name an existing stack's schedules were made with.
            role_name=names.account_wide(names.scheduler_role, stack.region),
            # Only Scheduler running a schedule of corral's group in this account may assume it
            # (confused-deputy guard). Scheduler's documented aws:SourceArn is the schedule group's
            # ARN; the group's schedules are matched as well.
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {"aws:SourceArn": [group_arn, self.schedules_arn]},
                },
            ),
            description="EventBridge Scheduler sends corral schedule firings to the job queue",
        )
        # SendMessage and nothing else (not the GetQueueAttributes and GetQueueUrl of CDK's grant: Scheduler
        # sends by ARN).
        # SQS-managed encryption on the queues: no KMS grant needed.
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=["sqs:SendMessage"],
                # the backstop takes the firings Scheduler could not deliver, after its retries; the DLQ the
                # same, for schedules made before the backstop (they name the DLQ until next updated)
                # (every priority lane's queue: a schedule targets its job's lane)
                resources=[
                    *(lane.queue_arn for lane in queue.lanes.values()),
                    queue.backstop.queue_arn,
                    queue.dlq.queue_arn,
                ],
            )
        )

    def function_env(self) -> dict[str, str]:
        """What a function that creates schedules needs to know: these fields of its `FunctionEnv`."""
        return {
            "schedule_group": self.group_name,
            "scheduler_role_arn": self.role.role_arn,
            "backstop_arn": self.queue.backstop.queue_arn,
        }

    def grant_wake_timers(self, function: lambda_.IFunction) -> None:
        """Create and delete the one-time schedules that wake waiting durable jobs (`w-<job id>-...`, the worker's
        shared/worker/run/wake_timer.py), handing them the role: no other schedule of the group, and no read."""
        stack = Stack.of(self)
        wake_arn = stack.format_arn(
            service="scheduler",
            resource="schedule",
            resource_name=f"{self.group_name}/w-*",
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        function.add_to_role_policy(
            iam.PolicyStatement(actions=["scheduler:CreateSchedule", "scheduler:DeleteSchedule"], resources=[wake_arn])
        )
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            )
        )
        acknowledgements.wake_timer_manager(function, self.group_name)

    def grant_manage(self, function: lambda_.IFunction) -> None:
        """Create, read, update (and so pause and resume) and delete schedules in the group, handing them the role."""
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=[
                    "scheduler:CreateSchedule",
                    "scheduler:GetSchedule",
                    "scheduler:UpdateSchedule",
                    "scheduler:DeleteSchedule",
                ],
                resources=[self.schedules_arn],
            )
        )
        # No ListSchedules: the API lists a tenant's schedules from the table, not from Scheduler.
        function.add_to_role_policy(
            iam.PolicyStatement(
                actions=["iam:PassRole"],
                resources=[self.role.role_arn],
                conditions={"StringEquals": {"iam:PassedToService": "scheduler.amazonaws.com"}},
            )
        )
        acknowledgements.schedule_manager(function, self.group_name)
