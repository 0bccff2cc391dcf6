"""One invariant, tested across features: an accepted job never silently vanishes, whatever interleaves.

A hypothesis state machine (`Interleavings`) drives the platform in process on moto: the API through its
handler (tests/unit/api_harness.py), the worker through its handler as the SQS event source would
(tests/unit/worker_harness.py `poll`), the operator's DLQ redrive (shared/operations/dead_letters.py). Its
steps are the features (jobs that succeed, fail once, or always fail; `on_success`/`on_failure`; a
concurrency key of limit 1; a tenant whose `max_running` is 1; batches of 2-4 with `on_complete`/
`on_success`; cancel of a job or a batch; retry of one job or in bulk; redrive) and the faults between
them (a message delivered twice, a worker that dies mid-job, a store blip for one poll, a message whose
receive budget ran out, a delete the event source lost, time passing). After every step, and after
draining the queues at the end of each example, it checks:

1. every accepted job is `succeeded`, `dead` or `cancelled`, or still live on a queue (a message of it in
   the jobs queue or the backstop: visible, delayed or in flight); after draining, only finished;
2. every callback runs once: its id (derived from its parent) has a record only if its parent's end called
   for it, and after draining exactly one, `succeeded`, for each callback due;
3. every batch's counts equal its members' states (always, on the counts item), and its members' states
   equal their jobs' records (after draining; before, a member whose end is not counted yet still has a
   message live);
4. no running slot of a tenant or of a concurrency key is held, past its hold's end, by anything but a
   batch whose worker died (and that one only until its jobs' cover ends).

What is simulated, and how:

- **Time.** A virtual clock (`Clock`): `time.time` (the API, the worker and the store code read it),
  moto's SQS clock (`moto.sqs.models.unix_time[_millis]`: visibility timeouts, delays, hand-backs) and the
  worker's store breaker (`shared/worker/breaker.py`'s monotonic clock) all read it. It flows with real
  time only while a step runs the product (so a job waiting in its batch for a concurrency key's slot
  waits as it would), stands still between steps, and `time_passes` moves it on: leases (10 s in the
  fixture), covers (a job's timeout + 10 s), hand-backs and retry backoffs end without real sleeps. A long
  poll on an empty queue (the redrive's 1 s `WaitTimeSeconds`) moves the clock by its wait.
- **A store blip.** Every DynamoDB call of the process's two clients (`shared/aws/clients.py`) answers
  a throttle or a 500 for one poll, from a `before-call` hook (so botocore's retries add no real sleeps).
- **A kill.** For one poll, every job's code runs and then its execution environment dies
  (`_WorkerDied`, a BaseException): nothing after it happens, so the batch's `finish` (its claims, its
  running slots, its outcome messages) and the dying job's slot give-back are skipped, and the event
  source never deletes; what its batch-mates wrote before is kept.
- **Duplicates.** A second copy of a stored message, with the same MessageId, visible at once: SQS's
  at-least-once delivery.
- **An expired receive budget.** A visible message moved from the jobs queue to the backstop by moto's
  own redrive code (the queue has no redrive policy here): what SQS does on the receive after the last.
- **Scaled down.** A job waits in its batch for a concurrency key's slot 0.3 s (5 s on AWS), looking for
  one every 0.05 s (0.25 s).

`make invariant` runs many examples (CORRAL_INVARIANT_EXAMPLES); `make test` runs a few.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import moto.core
import moto.sqs.models
import pytest
from botocore.awsrequest import AWSResponse
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule, run_state_machine_as_test
from moto.dynamodb.responses import DynamoHandler

from functions.worker.handler import worker
from shared import settings as corral_settings
from shared.aws.clients import client, single_attempt_client
from shared.batches import batches, callbacks
from shared.model import JobMessage, JobRecord, Status
from shared.operations import dead_letters
from shared.store import keys, table
from shared.store.batches import batch_items, batch_members
from shared.store.batches.batch_members import MemberState
from shared.store.jobs import job_items, job_store
from shared.store.tenants import running_slots
from shared.tenants import quotas, rate_limit, tenants
from shared.worker import batch as worker_batch
from shared.worker import breaker, producer
from shared.worker.run import cover, executor
from tests.unit.api_harness import answer
from tests.unit.worker_harness import WorkerContext, poll

EXAMPLES = int(os.environ.get("CORRAL_INVARIANT_EXAMPLES", "15"))
STEPS = int(os.environ.get("CORRAL_INVARIANT_STEPS", "25"))
REST_SECONDS = 120  # real seconds a poll's threads may take to end (a bound, not a measure: a hang fails)
DRAIN_ROUNDS = 500  # polls and clock jumps at an example's end before "it never drains" fails it

FINISHED = (Status.SUCCEEDED, Status.DEAD, Status.CANCELLED)
LETTER = {
    Status.SUCCEEDED: batch_members.DONE,
    Status.DEAD: batch_members.DEAD,
    Status.CANCELLED: batch_members.CANCELLED_JOB,
}
BEHAVIOURS = {
    "succeeds": {"type": "echo", "payload": {}},
    "fails_once": {"type": "fail", "payload": {"times": 1}, "max_attempts": 3},
    "always_fails": {"type": "fail", "payload": {"times": 99}, "max_attempts": 2},
}
KEY = {"key": "partner", "limit": 1}
# Many attempts: a callback killed with its worker a few times still runs (and must succeed) once.
CALLBACK = {"type": "echo", "payload": {}, "max_attempts": corral_settings.MAX_MAX_ATTEMPTS}
_EXAMPLE = itertools.count()


class _WorkerDied(BaseException):
    """The execution environment ends in the middle of a job: nothing after it runs, nothing is answered."""


class Clock:
    """Virtual time: flows with real time only inside `running()`, moves on with `advance`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped_at = time.time()  # the real clock, read before it is replaced
        self._running_since: float | None = None
        self._depth = 0

    def now(self) -> float:
        with self._lock:
            flowing = time.perf_counter() - self._running_since if self._running_since is not None else 0.0
            return self._stopped_at + flowing

    def millis(self) -> float:
        return self.now() * 1000

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._stopped_at += seconds

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        with self._lock:
            self._depth += 1
            if self._depth == 1:
                self._running_since = time.perf_counter()
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0 and self._running_since is not None:
                    self._stopped_at += time.perf_counter() - self._running_since
                    self._running_since = None


class World:
    """The simulated faults and clock, installed once per test and switched per step."""

    def __init__(self, aws: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
        self.aws = aws
        self.clock = Clock()
        self.store_error: str | None = None  # while set, every DynamoDB call answers this error
        self.dying = False  # while set, every job's environment dies once its code has run
        self.died = False
        self.holders: list[str] = []  # the running-slot holder of each batch made, in order
        self.key_jobs_running: dict[tuple[str, str], int] = {}  # (tenant, key) -> its jobs running now
        self.most_key_jobs_at_once = 0
        self.submitted: list[futures.Future[Any]] = []  # what the worker's thread pools were given
        self._lock = threading.Lock()
        self._install(monkeypatch)

    def _install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        clock = self.clock
        monkeypatch.setattr(time, "time", clock.now)
        monkeypatch.setattr(moto.sqs.models, "unix_time", lambda dt=None: clock.now())
        monkeypatch.setattr(moto.sqs.models, "unix_time_millis", lambda dt=None: clock.millis())
        monkeypatch.setattr(breaker, "time", SimpleNamespace(monotonic=clock.now))
        monkeypatch.setattr(corral_settings, "KEY_WAIT_IN_BATCH_SECONDS", 0.3)
        monkeypatch.setattr(corral_settings, "KEY_SLOT_POLL_SECONDS", 0.05)

        real_receive = moto.sqs.models.SQSBackend.receive_message

        def receive(backend: Any, queue_name: str, count: int, wait: int, visibility: int, names: Any = None) -> Any:
            """A long poll that finds nothing waits out its wait on the virtual clock, then looks again."""
            found = real_receive(backend, queue_name, count, 0, visibility, names)
            if found or not wait:
                return found
            clock.advance(wait)
            return real_receive(backend, queue_name, count, 0, visibility, names)

        monkeypatch.setattr(moto.sqs.models.SQSBackend, "receive_message", receive)

        _report_updated_attributes_as_dynamodb_does(monkeypatch)
        for dynamodb in (client("dynamodb"), single_attempt_client("dynamodb")):
            dynamodb.meta.events.register("before-call.dynamodb", self._blip)

        real_run = executor.run

        def run(message: JobMessage, *args: Any, **kwargs: Any) -> Any:
            key = (message.tenant, message.concurrency.key) if message.concurrency else None
            self._key_job(key, +1)
            try:
                ran = real_run(message, *args, **kwargs)
            finally:
                self._key_job(key, -1)
            if self.dying:
                self.died = True
                raise _WorkerDied
            return ran

        monkeypatch.setattr(executor, "run", run)

        real_give_back = running_slots.give_back
        monkeypatch.setattr(
            running_slots, "give_back", lambda *args, **kwargs: None if self.died else real_give_back(*args, **kwargs)
        )
        real_finish = worker_batch.Batch.finish
        monkeypatch.setattr(worker_batch.Batch, "finish", lambda batch: [] if self.died else real_finish(batch))
        for pool in (worker._runners, worker._claimers, worker._writers):
            monkeypatch.setattr(pool, "submit", self._recorded(pool.submit))
        real_batch = producer.Worker.batch

        def batch(process: producer.Worker, deliveries: Any) -> worker_batch.Batch:
            made = real_batch(process, deliveries)
            self.holders.append(made.share._holder)
            return made

        monkeypatch.setattr(producer.Worker, "batch", batch)

    def _recorded(self, submit: Any) -> Any:
        def recorded(*args: Any, **kwargs: Any) -> futures.Future[Any]:
            future = submit(*args, **kwargs)
            self.submitted.append(future)
            return future

        return recorded

    def _blip(self, **_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        if self.store_error is None:
            return None
        status = 400 if self.store_error.endswith("Exception") else 500
        error = {"Error": {"Code": self.store_error, "Message": "a store blip"}}
        return AWSResponse("https://dynamodb", status, {}, None), error | {
            "ResponseMetadata": {"HTTPStatusCode": status}
        }

    def _key_job(self, key: tuple[str, str] | None, change: int) -> None:
        if key is None:
            return
        with self._lock:
            self.key_jobs_running[key] = self.key_jobs_running.get(key, 0) + change
            self.most_key_jobs_at_once = max(self.most_key_jobs_at_once, self.key_jobs_running[key])

    def quiesce(self) -> None:
        """Wait until the worker's thread pools have run everything a dead batch left them (its batch-mates'
        deliveries, their claims and outcome writes): the next step starts from a system at rest."""
        while unfinished := [each for each in self.submitted if not each.done()]:
            _, still = futures.wait(unfinished, timeout=REST_SECONDS)
            assert not still, f"the worker's threads did not come to rest in {REST_SECONDS} s: {still}"
        self.submitted.clear()


def _report_updated_attributes_as_dynamodb_does(monkeypatch: pytest.MonkeyPatch) -> None:
    """moto deviates from DynamoDB: an UpdateItem's UPDATED_NEW leaves out an attribute the update sets to the
    value it had (`SET retries = if_not_exists(retries, :zero)` on a record that has one), where DynamoDB (and
    ministack, the local stack's emulator) reports every attribute the update's SET and ADD actions name. A
    batch's cancel reads a member's run from that answer (shared/store/jobs/job_control.py `cancel_member`): on
    moto uncorrected, cancelling a batch with a member that has a record answers 500."""
    real = DynamoHandler._build_updated_new_attributes
    depth = threading.local()

    def updated_new(handler: DynamoHandler, original: Any, changed: Any) -> Any:
        depth.n = getattr(depth, "n", 0) + 1
        try:
            found = real(handler, original, changed)
        finally:
            depth.n -= 1
        if depth.n or not isinstance(changed, dict):
            return found  # a nested map: moto's fragments, as DynamoDB's
        body = handler.body
        named = _named_by_update(body.get("UpdateExpression", ""), body.get("ExpressionAttributeNames", {}))
        return found | {name: changed[name] for name in named if name in changed}

    monkeypatch.setattr(DynamoHandler, "_build_updated_new_attributes", updated_new)


def _named_by_update(expression: str, names: dict[str, str]) -> set[str]:
    """The top-level attributes an update expression's SET and ADD actions name."""
    named: set[str] = set()
    for verb, actions in re.findall(
        r"\b(SET|ADD|REMOVE|DELETE)\b(.*?)(?=\b(?:SET|ADD|REMOVE|DELETE)\b|$)", expression, re.I
    ):
        if verb.upper() not in ("SET", "ADD"):
            continue
        depth, action = 0, ""
        for char in actions + ",":
            if char == "," and depth == 0:
                target = re.split(r"[=\s.\[]", action.strip(), maxsplit=1)[0]
                named.add(names.get(target, target))
                action = ""
                continue
            depth += {"(": 1, ")": -1}.get(char, 0)
            action += char
    return named


def _moto_queue(url: str) -> Any:
    return moto.sqs.models.sqs_backends[moto.core.DEFAULT_ACCOUNT_ID]["us-east-1"].queues[url.rsplit("/", 1)[-1]]


def _job_id_of(body: str) -> str | None:
    """The job a message is of: a job message's id, or the job an outcome message carries."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict) and data.get("kind") == "outcome":
        data = data.get("job")
    return data.get("id") if isinstance(data, dict) else None


@dataclass
class AcceptedJob:
    id: str
    tenant: str
    callbacks: dict[str, str]  # kind -> the callback's job id
    batch: str | None = None


@dataclass
class AcceptedBatch:
    id: str
    tenant: str
    members: list[str]
    callbacks: dict[str, str]  # kind -> the callback's job id
    due_when_cancelled: set[str] | None = None  # its callbacks due when a cancel of it was answered 200
    ever_complete: bool = False  # seen with every member ended, not cancelled
    reopened: bool = False  # a member retried after the batch was seen complete


@dataclass
class Seen:
    """What one look at the system found."""

    records: dict[str, JobRecord | None]
    live: set[str]  # job ids with a message on the jobs queue or the backstop
    pools: dict[tuple[str, str | None], dict[str, Any]]  # (tenant, concurrency key or None) -> its slots' item
    batches: dict[str, batch_members.BatchWithMembers] = field(default_factory=dict)


def _items(aws: dict[str, Any], pks: list[str]) -> dict[str, dict[str, Any]]:
    """The table's items of `pks` (consistent reads, 100 a call): one look costs a few calls, not one per job."""
    found: dict[str, dict[str, Any]] = {}
    for start in range(0, len(pks), 100):
        wanted = {
            table.name(): {"Keys": [keys.item_key(pk) for pk in pks[start : start + 100]], "ConsistentRead": True}
        }
        while wanted:
            answer = aws["dynamodb"].batch_get_item(RequestItems=wanted)
            found |= {item["pk"]["S"]: item for item in answer["Responses"].get(table.name(), [])}
            wanted = answer.get("UnprocessedKeys") or {}
    return found


class Interleavings(RuleBasedStateMachine):
    world: World  # set by the test

    def __init__(self) -> None:
        super().__init__()
        world = self.world
        for url in ("queue_url", "backstop_url", "dlq_url"):
            queue = _moto_queue(world.aws[url])
            queue._messages.clear()
            queue.pending_messages.clear()
        worker.breaker.down_until = 0.0
        worker.at_cap.clear()
        rate_limit.reset()
        world.store_error, world.dying, world.died = None, False, False
        world.most_key_jobs_at_once = 0
        n = next(_EXAMPLE)
        self.tenant = {False: f"free{n}", True: f"capped{n}"}
        self.key = {name: tenants.create_key(name) for name in self.tenant.values()}
        quotas.set_limits(self.tenant[True], max_running=1)
        self.jobs: dict[str, AcceptedJob] = {}
        self.batches: dict[str, AcceptedBatch] = {}
        self.ever_dead: set[str] = set()
        self.budget_spent: set[str] = set()  # jobs a message of which SQS moved to the backstop
        self.killed: dict[str, float] = {}  # running-slot holder of a batch whose worker died -> when
        self.failed = False

    # --- the product, driven ---------------------------------------------------------------------------

    def _api(self, tenant: str, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        with self.world.clock.running():
            return answer(method, path, self.key[tenant], body)

    def _poll(self, url_key: str = "queue_url", *, delete: bool = True) -> bool:
        """One poll of the event source, and everything it set off ended (a dead worker's batch-mates too)."""
        with self.world.clock.running():
            try:
                return poll(self.world.aws, url_key=url_key, delete=delete) is not None
            finally:
                self.world.quiesce()

    @rule(
        capped=st.booleans(),
        behaviour=st.sampled_from(sorted(BEHAVIOURS)),
        on_success=st.booleans(),
        on_failure=st.booleans(),
        keyed=st.booleans(),
    )
    def enqueue(self, capped: bool, behaviour: str, on_success: bool, on_failure: bool, keyed: bool) -> None:
        tenant = self.tenant[capped]
        kinds = [kind for kind, wanted in (("on_success", on_success), ("on_failure", on_failure)) if wanted]
        body = BEHAVIOURS[behaviour] | dict.fromkeys(kinds, CALLBACK) | ({"concurrency": KEY} if keyed else {})
        status, accepted = self._api(tenant, "POST", "/v1/jobs", body)
        assert status == 202, accepted
        job_id = accepted["id"]
        self.jobs[job_id] = AcceptedJob(job_id, tenant, {k: callbacks.callback_id(tenant, job_id, k) for k in kinds})

    @rule(
        capped=st.booleans(),
        behaviours=st.lists(st.sampled_from(sorted(BEHAVIOURS)), min_size=2, max_size=4),
        keyed=st.booleans(),
        on_complete=st.booleans(),
        on_success=st.booleans(),
    )
    def enqueue_batch(
        self, capped: bool, behaviours: list[str], keyed: bool, on_complete: bool, on_success: bool
    ) -> None:
        tenant = self.tenant[capped]
        kinds = [kind for kind, wanted in (("on_complete", on_complete), ("on_success", on_success)) if wanted]
        jobs = [BEHAVIOURS[each] | ({"concurrency": KEY} if keyed else {}) for each in behaviours]
        status, created = self._api(tenant, "POST", "/v1/batches", {"jobs": jobs} | dict.fromkeys(kinds, CALLBACK))
        assert status == 201, created
        batch_id = created["id"]
        members = batches.member_ids(tenant, batch_items.get(batch_id))
        callbacks_of = {kind: callbacks.callback_id(tenant, batch_id, kind) for kind in kinds}
        self.batches[batch_id] = AcceptedBatch(batch_id, tenant, members, callbacks_of)
        for member in members:
            self.jobs[member] = AcceptedJob(member, tenant, {}, batch=batch_id)

    @precondition(lambda self: self.jobs)
    @rule(choice=st.integers(0, 1_000))
    def cancel_job(self, choice: int) -> None:
        job = self._pick(list(self.jobs.values()), choice)
        status, shown = self._api(job.tenant, "POST", f"/v1/jobs/{job.id}/cancel")
        assert status in (200, 409), shown

    @precondition(lambda self: self.batches)
    @rule(choice=st.integers(0, 1_000))
    def cancel_batch(self, choice: int) -> None:
        batch = self._pick(list(self.batches.values()), choice)
        before = batch_items.get(batch.id)
        status, shown = self._api(batch.tenant, "POST", f"/v1/batches/{batch.id}/cancel")
        assert status in (200, 409), shown
        if status == 200 and batch.due_when_cancelled is None:
            batch.due_when_cancelled = set(before.due)

    @precondition(lambda self: self.jobs)
    @rule(choice=st.integers(0, 1_000), a_dead_one=st.booleans())
    def retry_job(self, choice: int, a_dead_one: bool) -> None:
        dead = [job for job in self.jobs.values() if (record := job_store.get(job.id)) and record.status is Status.DEAD]
        job = self._pick(dead if a_dead_one and dead else list(self.jobs.values()), choice)
        status, shown = self._api(job.tenant, "POST", f"/v1/jobs/{job.id}/retry")
        assert status in (202, 409), shown
        self._note_reopened(job)

    @rule(capped=st.booleans())
    def retry_dead_in_bulk(self, capped: bool) -> None:
        status, shown = self._api(self.tenant[capped], "POST", "/v1/jobs:retry", {"limit": 10})
        assert status in (200, 429), shown
        for job_id in shown.get("ids", []):
            if job_id in self.jobs:
                self._note_reopened(self.jobs[job_id])

    @rule()
    def redrive(self) -> None:
        """The operator's DLQ redrive (every tenant's dead jobs, run again with the same ids)."""
        with self.world.clock.running():
            report = dead_letters.redrive()
        assert report.left == [], report.left
        for job_id in report.redriven:
            if job_id in self.jobs:
                self._note_reopened(self.jobs[job_id])

    @rule(polls=st.integers(1, 3), delete_lost=st.booleans())
    def deliver(self, polls: int, delete_lost: bool) -> None:
        """The event source's polls of the jobs queue; `delete_lost`: the first one's deletes fail."""
        for n in range(polls):
            self._poll(delete=not (delete_lost and n == 0))

    @rule()
    def deliver_backstop(self) -> None:
        self._poll("backstop_url")

    @rule(choice=st.integers(0, 1_000))
    def duplicate(self, choice: int) -> None:
        """SQS's at-least-once delivery: a second copy of a stored message (same MessageId), visible now."""
        queue = _moto_queue(self.world.aws["queue_url"])
        if not queue._messages:
            return  # (not a precondition: what the queue holds depends on timing, and hypothesis must replay)
        again = copy.deepcopy(self._pick(queue._messages, choice))
        again.receipt_handle, again._old_receipt_handles, again.visible_at = None, [], 0.0
        queue._messages.append(again)

    @rule(choice=st.integers(0, 1_000))
    def receive_budget_runs_out(self, choice: int) -> None:
        """SQS moves a message received `maxReceiveCount` times to the backstop, at its next receive (moto's
        own redrive: the same message, its id, body and attributes)."""
        queue = _moto_queue(self.world.aws["queue_url"])
        visible = [m for m in queue._messages if m.visible and not m.delayed]
        if not visible:
            return
        moved = self._pick(visible, choice)
        self.budget_spent.add(_job_id_of(moved.body) or "")
        queue._messages.remove(moved)
        queue.pending_messages.discard(moved)
        _moto_queue(self.world.aws["backstop_url"]).add_message(moved)

    @rule()
    def worker_dies(self) -> None:
        """A poll whose worker environment dies mid-job (once a job's code has run)."""
        world = self.world
        made = len(world.holders)
        world.dying = True
        try:
            with contextlib.suppress(_WorkerDied):
                self._poll()
            if world.died:
                for holder in world.holders[made:]:
                    self.killed[holder] = world.clock.now()
        finally:
            world.dying = world.died = False

    @rule(code=st.sampled_from(["ProvisionedThroughputExceededException", "InternalServerError"]))
    def store_blip(self, code: str) -> None:
        """DynamoDB fails every call for one poll."""
        self.world.store_error = code
        try:
            self._poll()
        finally:
            self.world.store_error = None

    @rule(seconds=st.sampled_from([1, 4, 11, 45, 300]))
    def time_passes(self, seconds: int) -> None:
        self.world.clock.advance(seconds)

    # --- looking at it ----------------------------------------------------------------------------------

    @staticmethod
    def _pick(items: list[Any], choice: int) -> Any:
        return items[choice % len(items)]

    def _note_reopened(self, job: AcceptedJob) -> None:
        if job.batch is not None and self.batches[job.batch].ever_complete:
            self.batches[job.batch].reopened = True

    def _live(self) -> set[str]:
        messages = [m for url in ("queue_url", "backstop_url") for m in _moto_queue(self.world.aws[url])._messages]
        return {job_id for m in messages if (job_id := _job_id_of(m.body)) is not None}

    def _look(self) -> Seen:
        ids = [
            *self.jobs,
            *(cb for each in (*self.jobs.values(), *self.batches.values()) for cb in each.callbacks.values()),
        ]
        pools = {
            (tenant, key): keys.running_key(tenant) if key is None else keys.concurrency_slots_key(tenant, key)
            for tenant in self.tenant.values()
            for key in (None, KEY["key"])
        }
        items = _items(self.world.aws, [keys.job_key(job_id) for job_id in ids] + list(pools.values()))
        records = {
            job_id: job_items.record_from_item(item) if (item := items.get(keys.job_key(job_id))) else None
            for job_id in ids
        }
        seen = Seen(records, self._live(), {pool: items.get(pk, {}) for pool, pk in pools.items()})
        for batch_id in self.batches:
            found = batch_members.get_with_members(batch_id)
            assert found is not None, f"batch {batch_id} vanished"
            seen.batches[batch_id] = found
        for job_id, record in seen.records.items():
            if record is not None and record.status is Status.DEAD:
                self.ever_dead.add(job_id)
        for batch_id, found in seen.batches.items():
            if found.batch.pending == 0 and found.batch.cancel_requested_at is None:
                self.batches[batch_id].ever_complete = True
        return seen

    @invariant()
    def nothing_is_lost(self) -> None:
        try:
            self._check(final=False)
        except AssertionError:
            self.failed = True
            raise

    def teardown(self) -> None:
        if self.failed:
            return
        self._drain()
        self._check(final=True)

    def _drain(self) -> None:
        """Poll both queues until nothing is visible, jumping the clock to the next message due, until no
        message is left (every job finished, or buried in the DLQ)."""
        clock = self.world.clock
        for _ in range(DRAIN_ROUNDS):
            if self._poll() or self._poll("backstop_url"):
                continue
            held = [m for url in ("queue_url", "backstop_url") for m in _moto_queue(self.world.aws[url])._messages]
            if not held:
                return
            due = min(max(m.visible_at, m.delayed_until) / 1000 for m in held)
            clock.advance(max(due - clock.now(), 0) + 0.01)
        raise AssertionError(f"the queues still hold messages after {DRAIN_ROUNDS} polls: {self._live()}")

    def _check(self, *, final: bool) -> None:
        seen = self._look()
        self._check_jobs(seen, final)
        self._check_callbacks(seen, final)
        self._check_batches(seen, final)
        self._check_running_slots(seen)

    def _check_jobs(self, seen: Seen, final: bool) -> None:
        """1. Every accepted job has finished, or a message of it is live (only finished, once drained); a
        callback is accepted once it has a record, or its parent (its batch) has marked it sent. Once
        drained, every dead job's message is in the DLQ, for operators to redrive."""
        accepted = set(self.jobs) | {cb for cb, record in seen.records.items() if record is not None}
        for job in self.jobs.values():
            sent = (seen.records[job.id] and seen.records[job.id].callbacks) or {}
            accepted |= {cb for kind, cb in job.callbacks.items() if sent.get(kind) == cb}
        for batch in self.batches.values():
            accepted |= {cb for kind, cb in batch.callbacks.items() if kind in seen.batches[batch.id].batch.sent}
        for job_id in accepted:
            record = seen.records[job_id]
            if record is not None and record.status in FINISHED:
                continue
            state = record.status if record else "no record"
            assert not final, f"job {job_id} is {state} after draining: it never finished"
            assert job_id in seen.live, f"job {job_id} vanished: {state}, and no message of it on the queues"
        if final:
            buried = {_job_id_of(m.body) for m in _moto_queue(self.world.aws["dlq_url"])._messages}
            dead = {job_id for job_id in accepted if seen.records[job_id].status is Status.DEAD}
            assert dead <= buried, f"dead jobs with no message in the DLQ to redrive: {dead - buried}"

    def _check_callbacks(self, seen: Seen, final: bool) -> None:
        """2. A callback's record exists only if its parent's end called for it; once drained, exactly one
        record, succeeded, for each callback due."""
        for job in self.jobs.values():
            parent = seen.records[job.id]
            for kind, cb in job.callbacks.items():
                record = seen.records[cb]
                called = (
                    parent is not None and parent.status is Status.SUCCEEDED
                    if kind == "on_success"
                    else job.id in self.ever_dead
                )
                if record is not None:
                    assert called, f"{kind} of {job.id} ran, but {job.id} is {parent and parent.status}"
                    assert self._ran_right(cb, record, final=False), f"{kind} of {job.id}: {record}"
                if final:
                    must_run = parent is not None and (
                        (kind == "on_success" and parent.status is Status.SUCCEEDED)
                        or (kind == "on_failure" and parent.status is Status.DEAD)
                    )
                    if must_run:
                        assert record is not None, f"{kind} of {job.id} ({parent.status}) never ran"
                    if record is not None:
                        assert self._ran_right(cb, record, final=True), f"{kind} of {job.id}: {record}"
                        assert parent.callbacks and parent.callbacks.get(kind) == cb, f"{kind} of {job.id} not marked"
        for batch in self.batches.values():
            found = seen.batches[batch.id].batch
            for kind, cb in batch.callbacks.items():
                record = seen.records[cb]
                if record is not None:
                    assert kind in found.due, f"{kind} of batch {batch.id} ran, but was never made due"
                if batch.due_when_cancelled is not None:
                    assert kind not in found.due or kind in batch.due_when_cancelled, (
                        f"{kind} of batch {batch.id} made due after the batch was cancelled"
                    )
                if kind == "on_success" and kind in found.due:
                    assert found.succeeded == found.total, f"on_success of batch {batch.id} due: {found}"
                if kind == "on_complete" and kind in found.due and not batch.reopened:
                    assert found.pending == 0, f"on_complete of batch {batch.id} due while members pend: {found}"
                if not final:
                    continue
                assert (record is not None) == (kind in found.due), f"{kind} of batch {batch.id}: due {found.due}"
                if record is not None:
                    assert self._ran_right(cb, record, final=True), f"{kind} of batch {batch.id}: {record}"
                if found.cancel_requested_at is None and (kind == "on_complete" or found.succeeded == found.total):
                    assert kind in found.due, f"{kind} of batch {batch.id} never made due: {found}"

    def _ran_right(self, callback: str, record: JobRecord, *, final: bool) -> bool:
        """A callback's record as it should be: succeeded (drained) or on its way; never cancelled, and dead only
        where SQS moved its message after the receive budget (it never ran: its message is in the DLQ)."""
        if record.status is Status.DEAD:
            return callback in self.budget_spent
        return record.status is Status.SUCCEEDED if final else record.status is not Status.CANCELLED

    def _check_batches(self, seen: Seen, final: bool) -> None:
        """3. A batch's counts equal its members' states; its members' states equal their jobs' records
        (before draining, unless the member's end is still to be counted by a live message)."""
        for batch in self.batches.values():
            found = seen.batches[batch.id]
            letters = [
                found.states.get(index, MemberState(batch_members.PENDING)).letter
                for index in range(len(batch.members))
            ]
            counts = {name: letters.count(letter) for letter, name in batch_members._COUNTER_OF.items()}
            shown = {name: getattr(found.batch, name) for name in counts}
            assert shown == counts, f"batch {batch.id}: counts {shown}, members' states {counts}"
            for index, member in enumerate(batch.members):
                state = found.states.get(index, MemberState(batch_members.PENDING))
                record = seen.records[member]
                expected = (
                    MemberState(LETTER.get(record.status, batch_members.PENDING), record.retries)
                    if record
                    else MemberState(batch_members.PENDING)
                )
                if state == expected:
                    continue
                assert not final and member in seen.live, (
                    f"batch {batch.id}: member {index} ({member}) is {state} in its batch, "
                    f"{record.status if record else 'unrecorded'} (run {record.retries if record else 0}) on its record"
                )

    def _check_running_slots(self, seen: Seen) -> None:
        """4. Only a dead worker's batch holds running slots past their use, and only until its cover ends;
        and no two jobs of a key whose limit is 1 ran at once."""
        now = self.world.clock.now()
        cover_seconds = cover.cover_seconds(
            corral_settings.DEFAULT_JOB_TIMEOUT_SECONDS, WorkerContext().get_remaining_time_in_millis() / 1000
        )
        for (tenant, key), item in seen.pools.items():
            holders = running_slots._holders_in(item)
            running = int(item.get("running", {}).get("N", "0"))
            count = int(item.get("holders", {}).get("N", "0"))
            assert (running, count) == (sum(h.slots for h in holders), len(holders)), (tenant, key, item)
            for holder in holders:
                batch = holder.id.split(".")[0]  # a concurrency key's holder is one slot of its batch: <batch>.<n>
                if holder.until <= now:
                    continue  # its hold has ended: the next taker prunes it
                assert batch in self.killed, f"{tenant} {key or 'running'} slot held by a batch that ended: {holder}"
                assert holder.until <= self.killed[batch] + cover_seconds + 1, f"held past its cover: {holder}"
        assert self.world.most_key_jobs_at_once <= KEY["limit"], "two jobs of a key with limit 1 ran at once"


def test_an_accepted_job_never_vanishes_whatever_interleaves(aws, monkeypatch):
    world = World(aws, monkeypatch)
    machine = type("Machine", (Interleavings,), {"world": world})
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=EXAMPLES,
            stateful_step_count=STEPS,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )


def test_moto_corrected_reports_an_attribute_an_update_sets_to_the_value_it_had(aws, monkeypatch):
    # moto's deviation, which the machine corrects (`_report_updated_attributes_as_dynamodb_does`): without
    # the correction the answer is {"cancelled_at": ...} alone, and a batch's cancel cannot read its member's run.
    update = {
        "TableName": table.name(),
        "Key": keys.item_key("job#deviation"),
        "UpdateExpression": "SET retries = if_not_exists(retries, :zero), cancelled_at = :now",
        "ExpressionAttributeValues": {":zero": {"N": "0"}, ":now": {"N": "5"}},
        "ReturnValues": "UPDATED_NEW",
    }
    aws["dynamodb"].put_item(TableName=table.name(), Item=keys.item_key("job#deviation") | {"retries": {"N": "2"}})
    assert aws["dynamodb"].update_item(**update)["Attributes"] == {"cancelled_at": {"N": "5"}}

    _report_updated_attributes_as_dynamodb_does(monkeypatch)

    assert aws["dynamodb"].update_item(**update)["Attributes"] == {"cancelled_at": {"N": "5"}, "retries": {"N": "2"}}


def test_a_batch_cancel_counts_a_retried_member_in_the_run_its_record_names(aws, monkeypatch):
    _report_updated_attributes_as_dynamodb_does(monkeypatch)
    key = tenants.create_key("acme")
    jobs = [{"type": "fail", "payload": {"times": 1}, "max_attempts": 1}, {"type": "echo"}]
    created = answer("POST", "/v1/batches", key, {"jobs": jobs})[1]
    poll(aws)  # the first member ends dead, the second succeeds
    dead = batches.member_ids("acme", batch_items.get(created["id"]))[0]
    assert answer("POST", f"/v1/jobs/{dead}/retry", key)[0] == 202  # queued again, in its run 1

    status, shown = answer("POST", f"/v1/batches/{created['id']}/cancel", key)

    assert status == 200, shown
    assert (shown["status"], shown["succeeded"], shown["cancelled"], shown["pending"]) == ("cancelled", 1, 1, 0)
    found = batch_members.get_with_members(created["id"])
    assert found is not None and found.states[0] == MemberState(batch_members.CANCELLED_JOB, 1)
