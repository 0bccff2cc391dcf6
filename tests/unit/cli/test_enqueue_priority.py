"""`corral enqueue --priority`, run as the console script runs it against the stub API of tests/unit/sdk/test_python:
the body carries the job's lane, and a level that is not one is refused before anything is sent."""

from __future__ import annotations

from tests.unit.cli.test_durable_commands import run
from tests.unit.sdk.test_python import stub  # noqa: F401  (the fixture)


def test_enqueue_sends_its_priority(stub):  # noqa: F811
    stub.replies = [(202, {"id": "j1", "status": "queued"})]
    done = run(stub, "enqueue", "echo", "--priority", "high")
    assert (done.returncode, done.stdout.strip()) == (0, "j1")
    assert stub.requests[0].body["priority"] == "high"


def test_a_priority_that_is_no_level_is_a_usage_error_and_sends_nothing(stub):  # noqa: F811
    done = run(stub, "enqueue", "echo", "--priority", "urgent")
    assert done.returncode == 2 and "priority" in done.stderr
    assert stub.requests == []
