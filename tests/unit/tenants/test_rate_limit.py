"""The enqueue rate limit: bucket arithmetic on a fake clock, the shared instance directory on moto,
and the domain refusing over-rate enqueues with nothing sent."""

from __future__ import annotations

import json
import math
import os
import threading
from typing import Any

import pytest
from botocore.awsrequest import AWSResponse
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.aws.clients import client, single_attempt_client
from shared.errors import RateLimited
from shared.jobs.enqueue import JobRequest, enqueue, enqueue_many
from shared.model.spec import JobSpec
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
        return Census(self.instances, (demand,) * self.instances)


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
            return Census(2, (demand, demand * 1000))

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
    assert directory.report("t", "a", 100, 5) == Census(1, (5,))
    assert directory.report("t", "b", 100, 7) == Census(2, (5, 7))
    assert directory.report("t", "a", 101, 1) == Census(2, (1, 7))  # an instance's last report replaces its demand
    # a and b served it within COUNTED_SECONDS, but their demand is no longer fresh: only c's counts
    assert directory.report("t", "c", 109, 3) == Census(3, (3,))
    assert directory.report("t", "c", 111, 3) == Census(1, (3,))  # now they are older than COUNTED_SECONDS
    assert directory.report("other", "a", 103, 1) == Census(1, (1,))  # per tenant
    directory.report("t", "c", 200, 1)  # a and b silent for over a minute: pruned by the next report
    directory.report("t", "c", 201, 1)
    item = aws["dynamodb"].get_item(TableName="corral-jobs", Key={"pk": {"S": "ratewin#t"}})["Item"]
    assert set(item["instances"]["M"]) == {"c"}
    assert int(item["expires_at"]["N"]) > 201  # expires with the table's TTL


class _Throttled:
    """What botocore reads as DynamoDB's throttling answer, for every request sent (counted)."""

    body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"a store blip"}'

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, request: Any, **_: Any) -> AWSResponse:
        self.sent += 1
        raw = type("Raw", (), {"stream": lambda _self, **__: iter([self.body])})()
        return AWSResponse(request.url, 400, {"x-amzn-ErrorType": "ThrottlingException"}, raw)


def test_a_new_instances_first_report_in_a_store_blip_is_one_attempt_and_the_enqueue_goes_on(
    aws: dict[str, Any],
) -> None:
    # The first report is on the request path: botocore's retries held a herd's first enqueue for 2.3 s.
    throttled = _Throttled()
    for dynamodb in (client("dynamodb"), single_attempt_client("dynamodb")):
        dynamodb.meta.events.register("before-send.dynamodb.UpdateItem", throttled)
    limiter = RateLimiter(DynamoDirectory(), background=False)

    limiter.admit("t", 1, rate=100, burst=10)  # admitted: the directory's outage keeps the whole burst

    assert throttled.sent == 1


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


# --- The share's bounds, and the fleet's, under interleaved bursts, lulls and routings (R7) ---


class SharedDirectory:
    """DynamoDirectory's arithmetic in memory, for several limiters on one simulated clock."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[int, float]] = {}

    def report(self, tenant: str, instance: str, window: int, demand: float) -> Census:
        self.entries[instance] = (window, demand)
        return rate_limit.census(self.entries.values(), window)


def _fleet(instances: int) -> tuple[FakeClock, list[RateLimiter]]:
    clock, directory = FakeClock(), SharedDirectory()
    return clock, [
        RateLimiter(directory, clock=clock, wall_clock=clock, instance_id=f"i{n}", background=False)
        for n in range(instances)
    ]


def _admitted(limiter: RateLimiter, rate: float, burst: int) -> bool:
    try:
        limiter.admit("t", 1, rate=rate, burst=burst)
    except RateLimited:
        return False
    return True


def test_R7_an_instance_keeps_its_share_after_another_served_a_burst() -> None:
    """The review's case: instance A admits a burst of 5,000 in one second (limit 1,000/s, burst 5,000)
    and reports it; the tenant's traffic then reaches B at 100/s. B used to admit 1 and refuse 99 in
    each second for up to COUNTED_SECONDS (10 s)."""
    clock, (a, b) = _fleet(2)
    for _ in range(5000):
        clock.now += 0.9 / 5000
        assert _admitted(a, 1000.0, 5000)
    clock.now = 1_001.0
    _admitted(a, 1000.0, 5000)  # A's next request reports the burst's demand
    admitted_by_second = []
    for _second in range(5):  # seconds 1001-1005
        admitted = 0
        for _ in range(100):
            clock.now += 0.01
            admitted += _admitted(b, 1000.0, 5000)
        admitted_by_second.append(admitted)
    # A's burst counts while it is fresh (FRESH_SECONDS after A reported it); then B admits every one
    assert admitted_by_second[3:] == [100, 100]
    assert sum(admitted_by_second) >= 250


def test_R7_a_limit_far_above_the_demand_refuses_no_new_instance() -> None:
    """`make bench`'s enqueue-cost step: a new instance right after a bulk phase served by others, at a
    limit of 1e6/s (it used to get 429 rate_limited)."""
    clock, limiters = _fleet(4)
    for n in range(30_000):
        clock.now += 1.0 / 30_000
        assert _admitted(limiters[n % 3], 1e6, 1_000_000)
    for limiter in limiters[:3]:
        assert _admitted(limiter, 1e6, 1_000_000)  # each reports its second of the bulk phase
    refused = 0
    for _ in range(500):
        clock.now += 0.001
        refused += not _admitted(limiters[3], 1e6, 1_000_000)
    assert refused == 0


def test_R7_the_embedded_stack_case_a_burst_then_a_tenth_of_the_limit() -> None:
    """limit 100/s, burst 500; a burst of 400 on one instance, a second's pause, then 60 enqueues at 10/s
    routed to any of three instances: 43 of the 60 used to answer 429."""
    clock, limiters = _fleet(3)
    for _ in range(400):
        clock.now += 0.0005
        assert _admitted(limiters[0], 100.0, 500)
    clock.now += 1.0
    refused = 0
    for n in range(60):
        clock.now += 0.1
        refused += not _admitted(limiters[(n * 7) % 3], 100.0, 500)
    assert refused <= 3


@settings(max_examples=300, deadline=None)
@given(
    rate=st.floats(min_value=0.01, max_value=1e6, allow_nan=False),
    demands=st.lists(st.floats(min_value=0.0, max_value=1e7, allow_nan=False), min_size=1, max_size=20),
    idle=st.integers(min_value=0, max_value=20),
)
def test_shares_from_one_census_sum_to_at_most_one_and_keep_their_floors(
    rate: float, demands: list[float], idle: int
) -> None:
    """`idle`: instances counted (served within COUNTED_SECONDS) whose demand is no longer fresh."""
    seen = Census(len(demands) + idle, tuple(demands))
    counted = sum(min(d, rate) for d in demands)
    shares = [rate_limit.share_of(d, seen, rate) for d in demands] + [rate_limit.share_of(0.0, seen, rate)] * idle
    assert sum(shares) <= 1.0 + 1e-9  # the fleet never holds more than the limit
    for demand, share in zip(demands, shares, strict=False):
        assert 0.0 <= share <= 1.0
        assert share >= min(demand, rate) / max(counted, rate) - 1e-12  # at least its part of the demand
    if counted < rate:  # under the limit: at least an equal part of the headroom, whatever others asked
        assert min(shares) >= (rate - counted) / (seen.instances * rate) - 1e-12


phases = st.lists(
    st.tuples(
        st.sampled_from(["quiet", "under", "over", "burst"]),
        st.integers(min_value=1, max_value=8),  # seconds
        st.sampled_from(["one", "even", "random"]),  # routing
        st.floats(min_value=0.0, max_value=1.0, allow_nan=False),  # where in its range the phase's load falls
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=int(os.environ.get("CORRAL_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(
    instances=st.integers(min_value=1, max_value=6),
    rate=st.sampled_from([20.0, 100.0, 500.0]),
    burst_seconds=st.integers(min_value=1, max_value=5),
    phases=phases,
    seed=st.integers(min_value=0, max_value=2**16),
)
def test_a_fleet_admits_under_the_limit_and_never_much_over_it(
    instances: int, rate: float, burst_seconds: int, phases: list[tuple[str, int, str, float]], seed: int
) -> None:
    """Bounds over any interleaving of lulls, traffic under the limit, over it, and bursts, routed to one
    instance, evenly or at random:
    - the fleet admits at most rate x t + (burst + rate) x H(k): instances appearing at once each start
      with their share of a burst (see `_first_sight`), and views of the census a second apart can
      overlap for one second;
    - traffic under half the limit is refused at most 5 % of the time once its routing has been stable,
      and the last traffic over the limit over, for 4 s (demand is learnt up to a second late, and counts
      for FRESH_SECONDS more), wherever an equal share is at least 20 jobs/s (below that, buckets of a few
      tokens overflow with the randomness of routing: conservative, as the module says)."""
    import random

    rng = random.Random(seed)
    burst = int(rate * burst_seconds)
    clock, limiters = _fleet(instances)
    start, hot_until = clock.now, -math.inf
    admitted = measured = refused = 0
    for kind, seconds, routing, level in phases:
        began, chosen = clock.now, rng.randrange(instances)
        if kind == "quiet":
            clock.now += seconds
            continue
        if kind == "burst":
            jobs = max(1, int(level * burst))
            for _ in range(jobs):
                clock.now += 0.1 / jobs
                admitted += _admitted(limiters[chosen], rate, burst)
            hot_until = clock.now
            continue
        offered = rate * (0.05 + 0.45 * level if kind == "under" else 1.5 + 2.5 * level)
        for n in range(int(offered * seconds)):
            clock.now = began + (n + 1) / offered
            index = chosen if routing == "one" else n % instances if routing == "even" else rng.randrange(instances)
            ok = _admitted(limiters[index], rate, burst)
            admitted += ok
            if kind == "under" and clock.now - max(began, hot_until) >= 4.0:
                measured += 1
                refused += not ok
        if kind == "over":
            hot_until = clock.now
    elapsed = clock.now - start
    first_bursts = sum(1 / k for k in range(1, instances + 1))
    assert admitted <= rate * elapsed + (burst + rate) * first_bursts + 1
    if measured >= 20 and rate / instances >= 20:
        assert refused <= 0.05 * measured
