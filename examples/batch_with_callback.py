"""Enqueue jobs as a batch with a callback that runs once they have all ended.

    python -m examples.batch_with_callback

`on_complete` runs once every job has ended (succeeded or dead), `on_success` only if all succeeded;
each runs exactly once, with the batch's view in its payload as `batch`. An `http` callback is a
callback URL, signed like every HTTP job.

Output:
batch succeeded: 3 of 3 succeeded
on_complete ran once and saw succeeded
"""

from client import Corral  # with the SDK installed (pip install ./client): from corral_client import Corral


def main() -> None:
    corral = Corral.from_env()  # CORRAL_API_URL, CORRAL_API_KEY
    created = corral.batches.create(
        [{"type": "echo", "payload": {"page": page}} for page in range(3)],
        on_complete={"type": "echo", "payload": {"report": "pages"}},
        description="three pages",
    )
    batch = corral.batches.wait(created["id"], timeout=120)
    print(f"batch {batch['status']}: {batch['succeeded']} of {batch['total']} succeeded")
    callback = corral.wait(batch["callbacks"]["on_complete"], timeout=60)
    times = "once" if callback["attempts"] == 1 else "again"
    print(f"on_complete ran {times} and saw {callback['result']['batch']['status']}")


if __name__ == "__main__":
    main()
