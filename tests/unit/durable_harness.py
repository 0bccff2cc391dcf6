"""A worker's side of a durable job, played in-process for unit tests (moto): the jobs function's side is the
real one (`fenced_job.answer`, as functions/jobs/handler.py calls it), the journal the real store module.

`DurableJob` invokes the jobs function with the steps the journal holds, reads what the run did with the
worker's own reader (shared/durable/protocol.py), records it, and takes each boundary as the worker will
(docs/decisions/durable-jobs.md "One attempt"): a `continue` is invoked again at once, a token is minted
and recorded, a sleep or a wait is recorded waiting and the attempt ends. The tests resolve waits
themselves (a timer's claim, an event, a token, a child's end), then `resume`. The clock is the test's.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pytest

from shared.durable import protocol, steps, tokens
from shared.durable.steps import StepKind
from shared.execution import fenced_job
from shared.execution.fenced_job import Answer, Request
from shared.jobs import job_types
from shared.jobs.registry import JobType
from shared.store.durable import journal_items, token_items

API_URL = "https://api.example.com"
SECRET = b"unit-test-secret"


@dataclass
class Invoke:
    """One invoke of the jobs function: what it was sent and what it answered."""

    request: dict[str, Any]
    answer: Answer


@dataclass
class DurableJob:
    job_type: str
    payload: Any = None
    job_id: str = "jt-durable"
    tenant: str = "acme"
    now: float = 1_800_000_000.0
    run: int = 0  # the job's run: 0, then 1 after a retry of the dead or cancelled job
    attempt: int = 1
    max_attempts: int = 3
    invokes: list[Invoke] = field(default_factory=list)
    journal: journal_items.Journal = field(init=False)

    def __post_init__(self) -> None:
        self.journal = journal_items.read(self.job_id) or journal_items.Journal(self.job_id, self.tenant)

    # The jobs function -----------------------------------------------------------------------------

    def invoke(self) -> Answer:
        """One invoke, as the worker sends it: the job and its recorded steps."""
        request = Request(
            type=self.job_type,
            payload=self.payload,
            job_id=self.job_id,
            attempt=self.attempt,
            max_attempts=self.max_attempts,
            tenant=self.tenant,
            seconds_left=5.0,
            steps=self.journal.replayed(self.run, token_url=self.token_url),
        ).to_dict()
        answer = Answer.from_dict(json.loads(json.dumps(fenced_job.answer(json.loads(json.dumps(request))))))
        self.invokes.append(Invoke(request, answer))
        return answer

    def token_url(self, token_id: str) -> str:
        return tokens.url(API_URL, SECRET, self.tenant, token_id)

    # The worker ------------------------------------------------------------------------------------

    def attempt_once(self, *, killed_during: int | None = None) -> Answer:
        """One attempt: invoke, record, and go on while the run stops only for the worker's own steps (the next
        step to run, a token to mint). `killed_during`: the jobs function dies during that invoke of the
        attempt (1 = the first): its answer never arrives, and nothing of it is recorded."""
        count = 0
        while True:
            count += 1
            answer = self.invoke()
            if killed_during == count:
                return Answer(failure="JobFailed: the jobs function failed (Unhandled): killed")
            progress = protocol.read(answer.steps, answer.suspend, answer.failed_step, self.journal.steps)
            self.record(progress)
            match progress.boundary:
                case protocol.Continue():
                    continue
                case protocol.CreateToken(step=step_id, timeout_seconds=timeout):
                    self.mint(step_id, timeout)
                    continue
                case None:
                    if answer.failure is not None and progress.failed_step is not None:
                        found = self.journal.steps.get(progress.failed_step)
                        self.write(
                            progress.failed_step, steps.Failed(found.kind if found else StepKind.STEP, answer.failure)
                        )
                    return answer
                case boundary:
                    self.suspend(boundary)
                    return answer

    def record(self, progress: protocol.Progress) -> None:
        if progress.new is not None:
            self.write(progress.new.id, progress.new.change())

    def write(self, step_id: str, change: steps.Change) -> steps.Transition | journal_items.TooMuch:
        return journal_items.record(self.journal, step_id, change, run=self.run, now=self.now)

    def mint(self, step_id: str, timeout: float) -> str:
        token_id = tokens.mint_id()
        token_items.create(token_id, self.tenant, self.job_id, step_id, self.now + timeout, self.now)
        self.write(step_id, steps.Ran(StepKind.CREATE_TOKEN, result_json=json.dumps({"id": token_id})))
        return token_id

    def suspend(self, boundary: protocol.Boundary) -> None:
        match boundary:
            case protocol.Sleep():
                change = steps.Suspended(StepKind.SLEEP, boundary.ends_at(self.now), "sleep", {"kind": "sleep"})
            case protocol.WaitForEvent(name=name, match=match, timeout_seconds=timeout):
                wait = {"kind": "event", "name": name, "match": match}
                until = self.now + timeout if timeout is not None else None
                change = steps.Suspended(StepKind.WAIT_FOR_EVENT, until, "event", wait)
            case protocol.WaitForToken(token=token_id):
                token = token_items.get(token_id)
                until = token.expires if token else self.now
                change = steps.Suspended(StepKind.WAIT_FOR_TOKEN, until, f"token:{token_id}", {"kind": "token"})
            case protocol.RunJob(step=step_id):
                change = steps.Suspended(StepKind.RUN_JOB, None, f"job:{self.child_id(step_id)}", {"kind": "job"})
            case protocol.RunJobs(step=step_id):
                change = steps.Suspended(StepKind.RUN_JOBS, None, f"jobs:{self.child_id(step_id)}", {"kind": "job"})
            case _:
                raise AssertionError(f"unexpected boundary {boundary!r}")
        self.write(boundary.step, change)

    def child_id(self, step_id: str) -> str:
        return f"jc-{self.job_id}-{step_id}-{self.run}"

    # What resolves a wait --------------------------------------------------------------------------

    def resolve(self, step_id: str, change: steps.Resolved | steps.TimedOut | steps.Cancelled) -> Any:
        outcome = journal_items.resolve(self.job_id, self.tenant, step_id, change, now=self.now)
        self.journal = journal_items.read(self.job_id) or self.journal
        return outcome

    def later(self, seconds: float) -> DurableJob:
        self.now += seconds
        return self

    def fresh(self) -> DurableJob:
        """The next attempt or wake reads the journal again, as a new delivery does."""
        self.journal = journal_items.read(self.job_id) or journal_items.Journal(self.job_id, self.tenant)
        return self

    def statuses(self) -> dict[str, str]:
        return {record.id: str(record.status) for record in self.journal.ordered()}


def counting(function: Callable[..., Any], calls: dict[str, int], name: str) -> Callable[..., Any]:
    """`function`, counting its calls under `name`."""

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] = calls.get(name, 0) + 1
        return function(*args, **kwargs)

    return counted


def example_type(monkeypatch: pytest.MonkeyPatch, module_name: str, type_name: str) -> ModuleType:
    """An example's module (examples/jobs/), its type (the function of that name) registered for this test only:
    importing the module registers it for good."""
    there_before = type_name in job_types._REGISTRY
    module = importlib.import_module(module_name)
    if not there_before:
        job_types._REGISTRY.pop(type_name, None)
    monkeypatch.setitem(job_types._REGISTRY, type_name, JobType(name=type_name, run=getattr(module, type_name)))
    return module
