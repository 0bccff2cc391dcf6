"""Cancel and retry: cancel one that has not run yet, retry a dead one, and what an impossible request raises.

    python -m examples.cancel_and_retry

Output:
cancelled cancelled
cancelled again cancelled
dead after 1 attempt(s)
retried: queued
409 conflict
"""

from client import Conflict, Corral


def main() -> None:
    corral = Corral.from_env()

    later = corral.enqueue("echo", {"when": "in a minute"}, delay_seconds=60)
    print("cancelled", corral.cancel(later)["status"])
    print("cancelled again", corral.cancel(later)["status"])  # idempotent

    doomed = corral.enqueue("fail", {"times": 5}, max_attempts=1)
    dead = corral.wait(doomed, timeout=60)
    print(dead["status"], "after", dead["attempts"], "attempt(s)")
    print("retried:", corral.retry(doomed)["status"])  # a fresh attempt budget, same id

    finished = corral.wait(corral.enqueue("echo", "done"), timeout=60)
    try:
        corral.cancel(finished["id"])
    except Conflict as error:  # every SDK error is a CorralError with status, code and field
        print(error.status, error.code)


if __name__ == "__main__":
    main()
