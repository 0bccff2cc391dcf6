"""Running a schedule day to day: change its payload in place, pause it during an incident (a run by hand
still works), resume it, backfill the firings a window missed, and see what started each run.

    python -m examples.schedule_operations

Output:
created rate(1 minute) overlap skip
updated payload {'report': 'v2'}
paused with note incident 42
run now succeeded {'report': 'v2'}
resumed enabled
backfilled 3
runs by trigger {'backfill': 3, 'manual': 1}
deleted
"""

import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta

from client import Corral


def main() -> None:
    corral = Corral.from_env()
    name = f"minutely-report-{uuid.uuid4().hex[:8]}"
    tomorrow = (datetime.now(UTC) + timedelta(days=1)).isoformat()  # so it does not fire during the example
    schedule = corral.schedules.create(
        name, "rate(1 minute)", "echo", {"report": "v1"}, overlap="skip", start=tomorrow, description="demo"
    )
    print("created", schedule["expression"], "overlap", schedule["overlap"])

    updated = corral.schedules.update(name, job={"payload": {"report": "v2"}})  # in place: its runs stay
    print("updated payload", updated["job"]["payload"])

    paused = corral.schedules.pause(name, note="incident 42")
    print("paused with note", paused["note"])
    run = corral.schedules.trigger(name)  # by hand, even while paused
    job = corral.wait(run["id"])
    print("run now", job["status"], job["result"])

    print("resumed", corral.schedules.resume(name)["state"])

    now = datetime.now(UTC)
    backfilled = corral.schedules.backfill(name, now - timedelta(minutes=3), now)
    print("backfilled", len(backfilled))
    for each in backfilled:  # a repeated backfill would be the same runs: nothing runs twice
        corral.wait(each["id"])
    time.sleep(1)  # runs are listed once their records are indexed
    runs = corral.schedules.get(name)["runs"]
    print("runs by trigger", dict(sorted(Counter(run["trigger"] for run in runs).items())))

    corral.schedules.delete(name)
    print("deleted")


if __name__ == "__main__":
    main()
