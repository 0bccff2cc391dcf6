"""A nightly job: every day at 02:00 Paris time, one `echo` job, listed, inspected, then deleted.

    python -m examples.nightly_schedule

Output:
created cron(0 2 * * ? *) Europe/Paris
listed True
runs so far 0
deleted
"""

import uuid

from client import Corral


def main() -> None:
    corral = Corral.from_env()
    name = f"nightly-report-{uuid.uuid4().hex[:8]}"
    schedule = corral.schedules.create(
        name, "cron(0 2 * * ? *)", "echo", {"report": "daily"}, timezone="Europe/Paris", flexible_window_minutes=15
    )
    print("created", schedule["expression"], schedule["timezone"])
    print("listed", any(s["name"] == name for s in corral.schedules.list()))
    print("runs so far", len(corral.schedules.get(name).get("runs", [])))
    corral.schedules.delete(name)
    print("deleted")


if __name__ == "__main__":
    main()
