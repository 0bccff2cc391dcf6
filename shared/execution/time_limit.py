"""What stops a job at its timeout: `run_within`, used by the worker for every attempt and by the jobs
function for a customer's job (docs/decisions/timeouts.md).

The job's code runs on a thread of its own; the calling thread waits for it up to the timeout. At
the timeout the attempt ends `timed out` whatever the job is doing, and the job's thread is sent an
exception that stops Python code at its next instruction. What that cannot stop at once: a blocking
call (a sleep, a socket read without its own timeout) or a C extension that holds its thread stops
when the call returns; a job that catches BaseException can swallow the exception. Such a job runs
on, detached, and whatever it returns is discarded: its attempt is recorded as timed out, and a
retry may run beside it. Bounded by the invocation's own timeout on AWS (a frozen environment's
threads resume at its next invocation and end there).

Light on purpose (no AWS, no store): the jobs function imports it on its cold start.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import TypeVar

from shared.jobs.registry import JobTimedOut


class _Expired(BaseException):
    """Raised into a job whose time is up. A BaseException, so a job's own `except Exception` cannot swallow it."""


# How long a job's thread is given to stop once its exception is sent, before it is left running, detached.
STOP_GRACE_SECONDS = 0.2
_detached = 0  # jobs of this process left running after their timeout; logged, see `detached_jobs`


def detached_jobs() -> int:
    """How many timed-out jobs this process left running because they did not stop."""
    return _detached


T = TypeVar("T")


def run_within(seconds: float, job: Callable[[], T]) -> T:
    """Run `job` on a thread of its own and return what it returns, or raise what it raises; raise
    JobTimedOut('timed out after N s') once it has run `seconds`, whether or not it has stopped."""
    global _detached
    ended = threading.Event()
    returned: list[T] = []
    raised: list[BaseException] = []

    def run() -> None:
        try:
            returned.append(job())
        except _Expired:
            pass
        except BaseException as error:  # handed to the waiting thread, which judges it
            raised.append(error)
        finally:
            ended.set()

    thread = threading.Thread(target=run, name="job", daemon=True)
    thread.start()
    if ended.wait(seconds):
        if raised:
            raise raised[0]
        return returned[0]
    _interrupt(thread)
    if not ended.wait(STOP_GRACE_SECONDS):
        _detached += 1
    raise JobTimedOut(f"timed out after {seconds:g} s")


def _interrupt(thread: threading.Thread) -> None:
    """Raise _Expired in `thread` at its next Python instruction (CPython's asynchronous exception)."""
    if thread.ident is not None:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Expired))
