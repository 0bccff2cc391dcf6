"""Alarms: what pages someone. Each alarm notifies one SNS topic (subscribe on-call to it).

Plain metric alarms only (no metric math), so the emulator deploys them too.
"""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_sns as sns
from constructs import Construct

from infra.queue import JobQueue
from shared import settings

ONE_MINUTE = Duration.minutes(1)
FIVE_MINUTES = Duration.minutes(5)
AT_LEAST = cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD


class Alarms(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        queue: JobQueue,
        worker: lambda_.IFunction,
        jobs_function: lambda_.IFunction | None = None,
    ) -> None:
        super().__init__(scope, id)
        self.topic = sns.Topic(self, "Topic", topic_name=settings.ALARM_TOPIC_NAME, enforce_ssl=True)
        self.alarms = [
            self._alarm(
                "DeadLetters",
                "a job went dead (or a message never reached the worker): its message is in the DLQ",
                queue.dlq.metric_approximate_number_of_messages_visible(period=ONE_MINUTE, statistic="Maximum"),
                threshold=1,
            ),
            self._alarm(
                "OldestMessageAge",
                f"the oldest queued job has waited over {settings.ALARM_OLDEST_MESSAGE_AGE_SECONDS}s for 3 minutes",
                queue.queue.metric_approximate_age_of_oldest_message(period=ONE_MINUTE, statistic="Maximum"),
                threshold=settings.ALARM_OLDEST_MESSAGE_AGE_SECONDS,
                evaluation_periods=3,
            ),
            self._alarm(
                "WorkerErrors",
                "worker invocations failed as a whole (crash or timeout), not single jobs",
                worker.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                threshold=settings.ALARM_WORKER_ERRORS_PER_5_MIN,
            ),
            self._alarm(
                "WorkerThrottles",
                "worker invocations were throttled (account concurrency); throttled receives count toward "
                "maxReceiveCount",
                worker.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                threshold=settings.ALARM_WORKER_THROTTLES_PER_5_MIN,
            ),
        ]
        if jobs_function is not None:  # a customer's jobs package is deployed (infra/jobs_function.py)
            self.alarms += [
                self._alarm(
                    "JobsFunctionErrors",
                    "the jobs function failed as a whole (its process crashed, ran out of memory or time, or "
                    "the customer's package failed to import): each such job's attempt failed",
                    jobs_function.metric_errors(period=FIVE_MINUTES, statistic="Sum"),
                    threshold=settings.ALARM_WORKER_ERRORS_PER_5_MIN,
                ),
                self._alarm(
                    "JobsFunctionThrottles",
                    "invokes of the jobs function were throttled (account concurrency: each running customer "
                    "job holds two executions, the worker's and the jobs function's): their attempts failed",
                    jobs_function.metric_throttles(period=FIVE_MINUTES, statistic="Sum"),
                    threshold=settings.ALARM_WORKER_THROTTLES_PER_5_MIN,
                ),
            ]

    def _alarm(
        self, id: str, description: str, metric: cloudwatch.Metric, *, threshold: float, evaluation_periods: int = 1
    ) -> cloudwatch.Alarm:
        alarm = metric.create_alarm(
            self,
            id,
            alarm_name=f"corral-{id}",
            alarm_description=description,
            threshold=threshold,
            evaluation_periods=evaluation_periods,
            comparison_operator=AT_LEAST,
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )
        alarm.add_alarm_action(actions.SnsAction(self.topic))
        return alarm
