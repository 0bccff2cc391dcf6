"""Drive a durable job from your code: start an order's flow, see it wait for its payment, send the payment.

    python -m examples.order_flow

The `order_flow` job type (examples/jobs/orders.py) reserves the stock, then waits, holding no worker,
for a `payment.received` event whose data matches its order. `events.send` is that event: the same id is
one event however often it is sent, so a retry of your own code never pays twice. The job view's
`steps` say what ran, in order.

Output:
order_flow waiting for event payment.received
steps so far: reserve succeeded, payment waiting
order_flow succeeded: paid (reserve, payment, charge, notify)
"""

import uuid

from client import Corral  # with the SDK installed (pip install ./client): from corral_client import Corral


def main() -> None:
    corral = Corral.from_env()  # CORRAL_API_URL, CORRAL_API_KEY
    order = f"o-{uuid.uuid4().hex[:8]}"
    job_id = corral.enqueue("order_flow", {"order": order, "pay_within_seconds": 300})
    waiting = corral.wait(job_id, statuses=["waiting"], timeout=120)
    print(f"order_flow waiting for {waiting['waiting_for']['kind']} {waiting['waiting_for']['name']}")
    print("steps so far: " + ", ".join(f"{step['id']} {step['status']}" for step in waiting["steps"]))

    corral.events.send("payment.received", {"order": order, "amount_cents": 1999}, id=f"pay-{order}")
    done = corral.wait(job_id, timeout=120)
    steps = ", ".join(step["id"] for step in done["steps"])
    print(f"order_flow {done['status']}: {done['result']['status']} ({steps})")


if __name__ == "__main__":
    main()
