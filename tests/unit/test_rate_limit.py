"""The enqueue rate limit: bucket arithmetic on a fake clock, the shared instance directory on moto,
and the domain refusing over-rate enqueues with nothing sent."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.errors import RateLimited
from shared.jobs.enqueue import JobRequest, enqueue, enqueue_many
from shared.model import JobSpec
from shared.tenants import quotas, rate_limit
from shared.tenants.rate_limit import Census, DynamoDirectory, RateLimiter, TokenBucket


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


class FixedDirectory:
    """`instances` instances serve every tenant, each asked as much as the reporting one."""

    def __init__(self, instances: int) -> None:
        self.instances = instances
        self.reports: list[tuple[str, str, int]] = []

    def report(self, tenant: str, instance: str, window: int, demand: int) -> Census:
        self.reports.append((tenant, instance, window))
        return Census(self.instances, demand * self.instances)


def _limiter(clock: FakeClock, directory: Any = None) -> RateLimiter:
    return RateLimiter(directory, clock=clock, wall_clock=clock, instance_id="me", background=False)


def test_a_full_bucket_admits_the_burst_then_the_steady_rate() -> None:
    clock = FakeClock()
    limiter = _limiter(clock)
    for _ in range(5):
        limiter.admit("t", 1, rate=2.0, burst=5)
    with pytest.raises(RateLimited) as refused:
        limiter.admit("t", 1, rate=2.0, burst=5)
    assert refused.value.retry_after_seconds == 1  # half a second to the next token, rounded up
    clock.now += 0.5
    limiter.admit("t", 1, rate=2.0, burst=5)


def test_retry_after_is_the_wait_for_the_whole_request_rounded_up() -> None:
    clock = FakeClock()
    limiter = _limiter(clock)
    limiter.admit("t", 10, rate=2.0, burst=10)
    with pytest.raises(RateLimited) as refused:
        limiter.admit("t", 7, rate=2.0, burst=10)
    assert refused.value.retry_after_seconds == 4  # 7 tokens at 2/s
    assert "enqueue_rate_per_second" in str(refused.value)


def test_tenants_have_separate_buckets() -> None:
    clock = FakeClock()
    limiter = _limiter(clock)
    limiter.admit("noisy", 3, rate=1.0, burst=3)
    with pytest.raises(RateLimited):
        limiter.admit("noisy", 1, rate=1.0, burst=3)
    limiter.admit("quiet", 3, rate=1.0, burst=3)


def test_a_batch_larger_than_the_bucket_waits_for_a_full_bucket_and_leaves_it_in_debt() -> None:
    bucket = TokenBucket(rate=10.0, capacity=20.0, tokens=20.0, updated=0.0)
    assert bucket.take(50, now=0.0) == 0.0
    assert bucket.tokens == -30.0
    assert bucket.take(1, now=1.0) == pytest.approx(2.1)  # back to 1 token 3.1 s after the batch


def test_the_share_is_the_limit_divided_by_the_instances_serving_the_tenant() -> None:
    clock = FakeClock()
    directory = FixedDirectory(instances=4)
    limiter = _limiter(clock, directory)
    admitted = 0
    for _ in range(100):
        try:
            limiter.admit("t", 1, rate=40.0, burst=40)
            admitted += 1
        except RateLimited:
            pass
    assert admitted == 10  # 40 / 4 instances
    clock.now += 1.0
    for _ in range(100):
        try:
            limiter.admit("t", 1, rate=40.0, burst=40)
            admitted += 1
        except RateLimited:
            pass
    assert admitted == 20  # + 1 s at 10/s
    assert [r[2] for r in directory.reports] == [1000, 1001]  # one report per second, not per enqueue


def test_a_new_instance_counts_the_others_before_its_first_admission_even_when_reports_run_in_background() -> None:
    class SlowInBackground(FixedDirectory):
        """Five instances serve the tenant; a report off the request path does not come back yet."""

        def __init__(self) -> None:
            super().__init__(instances=5)
            self.released = threading.Event()

        def report(self, tenant: str, instance: str, window: int, demand: int) -> Census:
            if threading.current_thread() is not threading.main_thread():
                self.released.wait(5)
            return super().report(tenant, instance, window, demand)

    clock = FakeClock()
    directory = SlowInBackground()
    limiter = RateLimiter(directory, clock=clock, wall_clock=clock, instance_id="new", background=True)
    admitted = 0
    try:
        for _ in range(100):
            try:
                limiter.admit("t", 1, rate=50.0, burst=50)
                admitted += 1
            except RateLimited:
                pass
    finally:
        directory.released.set()
    assert admitted == 10  # its share of the burst (50 / 5), not the whole burst
    assert directory.reports[0] == ("t", "new", 1000)


def test_retry_after_assumes_at_least_an_equal_share_when_the_demand_share_is_small() -> None:
    class Quiet:
        """Two instances; the other one was asked 1,000 times as much."""

        def report(self, tenant: str, instance: str, window: int, demand: float) -> Census:
            return Census(2, demand * 1001)

    limiter = _limiter(FakeClock(), Quiet())
    limiter.admit("t", 1, rate=10.0, burst=10)  # a share of 1/1001: a bucket of one token
    with pytest.raises(RateLimited) as refused:
        limiter.admit("t", 1, rate=10.0, burst=10)
    assert refused.value.retry_after_seconds == 1  # 1 token at 5/s (half of 10/s), not at 0.01/s (100 s)


def test_a_failing_directory_keeps_the_last_estimate_and_admits() -> None:
    class Down:
        def report(self, tenant: str, instance: str, window: int, demand: int) -> Census:
            raise RuntimeError("store down")

    limiter = _limiter(FakeClock(), Down())
    limiter.admit("t", 1, rate=1.0, burst=1)
    assert limiter.instances("t") == 1


steps = st.lists(
    st.tuples(st.floats(min_value=0.0, max_value=2.0, allow_nan=False), st.integers(min_value=1, max_value=5)),
    max_size=200,
)


@settings(max_examples=200, deadline=None)
@given(
    rate=st.floats(min_value=0.1, max_value=100.0, allow_nan=False),
    burst=st.integers(min_value=1, max_value=50),
    steps=steps,
)
def test_an_instance_never_admits_more_than_rate_times_time_plus_burst(
    rate: float, burst: int, steps: list[tuple[float, int]]
) -> None:
    clock = FakeClock()
    start = clock.now
    limiter = _limiter(clock)
    admitted = 0
    largest = 0
    for pause, count in steps:
        clock.now += pause
        try:
            limiter.admit("t", count, rate=rate, burst=burst)
        except RateLimited as refused:
            assert refused.retry_after_seconds >= 1
            continue
        admitted += count
        largest = max(largest, count)
        assert admitted <= rate * (clock.now - start) + max(burst, largest) + 1e-6


@settings(max_examples=100, deadline=None)
@given(rate=st.floats(min_value=0.5, max_value=50.0), burst=st.integers(min_value=1, max_value=20), steps=steps)
def test_single_job_requests_never_exceed_rate_times_time_plus_burst(
    rate: float, burst: int, steps: list[tuple[float, int]]
) -> None:
    clock = FakeClock()
    start = clock.now
    limiter = _limiter(clock)
    admitted = 0
    for pause, _ in steps:
        clock.now += pause
        try:
            limiter.admit("t", 1, rate=rate, burst=burst)
            admitted += 1
        except RateLimited:
            pass
        assert admitted <= rate * (clock.now - start) + burst + 1e-6


def test_the_directory_counts_recent_instances_and_drops_long_gone_ones(
    aws: dict[str, Any],
) -> None:
    directory = DynamoDirectory()
    assert directory.report("t", "a", 100, 5) == Census(1, 5)
    assert directory.report("t", "b", 100, 7) == Census(2, 12)
    assert directory.report("t", "a", 101, 1) == Census(2, 8)  # an instance's last report replaces its demand
    assert directory.report("t", "c", 109, 3) == Census(3, 11)  # a and b served it within COUNTED_SECONDS
    assert directory.report("t", "c", 111, 3) == Census(1, 3)  # now they are older than COUNTED_SECONDS
    assert directory.report("other", "a", 103, 1) == Census(1, 1)  # per tenant
    directory.report("t", "c", 200, 1)  # a and b silent for over a minute: pruned by the next report
    directory.report("t", "c", 201, 1)
    item = aws["dynamodb"].get_item(TableName="corral-jobs", Key={"pk": {"S": "ratewin#t"}})["Item"]
    assert set(item["instances"]["M"]) == {"c"}
    assert int(item["expires_at"]["N"]) > 201  # expires with the table's TTL


def test_an_over_rate_enqueue_is_refused_and_sends_nothing(aws: dict[str, Any]) -> None:
    quotas.set_limits("slow", enqueue_rate_per_second=0.01, enqueue_burst=2)
    request = JobRequest(JobSpec("echo", payload={}))
    enqueue("slow", request)
    enqueue("slow", request)
    with pytest.raises(RateLimited) as refused:
        enqueue("slow", request)
    assert refused.value.retry_after_seconds >= 1
    enqueue("fast", request)  # another tenant is not affected
    assert _queued(aws) == 3


def test_a_batch_over_the_remaining_tokens_is_refused_whole(aws: dict[str, Any]) -> None:
    quotas.set_limits("slow", enqueue_rate_per_second=0.01, enqueue_burst=5)
    enqueue_many("slow", [JobRequest(JobSpec("echo", payload={"n": n})) for n in range(3)])
    with pytest.raises(RateLimited):
        enqueue_many("slow", [JobRequest(JobSpec("echo", payload={"n": n})) for n in range(3)])
    assert _queued(aws) == 3


def test_every_queued_message_carries_its_tenant_as_message_group(aws: dict[str, Any]) -> None:
    enqueue("acme", JobRequest(JobSpec("echo", payload={})))
    enqueue_many("globex", [JobRequest(JobSpec("echo", payload={"n": n})) for n in range(3)])
    got = aws["sqs"].receive_message(
        QueueUrl=aws["queue_url"], MaxNumberOfMessages=10, MessageSystemAttributeNames=["MessageGroupId"]
    )["Messages"]
    groups = sorted((m["Attributes"]["MessageGroupId"], json.loads(m["Body"])["tenant"]) for m in got)
    assert groups == [("acme", "acme")] + [("globex", "globex")] * 3


def _queued(aws: dict[str, Any]) -> int:
    attributes = aws["sqs"].get_queue_attributes(
        QueueUrl=aws["queue_url"], AttributeNames=["ApproximateNumberOfMessages"]
    )["Attributes"]
    return int(attributes["ApproximateNumberOfMessages"])


@pytest.fixture(autouse=True)
def _fresh_limiter() -> Any:
    rate_limit.reset()
    yield
    rate_limit.reset()


@pytest.mark.parametrize("spread", ["even", "skewed"])
def test_across_instances_the_admitted_rate_stays_at_or_under_the_limit(spread: str) -> None:
    from bench.models.rate_limit import simulate

    cell = simulate(instances=10, limit=100.0, spread=spread, offered=2.0, seconds=40.0)

    assert cell.ratio <= 1.02  # never meaningfully over the limit
    assert cell.ratio >= 0.95  # skewed too: each instance's share follows the demand it sees
    assert cell.writes_per_second <= 10.5  # one directory write per instance per second, none per job
