"""A durable job: an order's flow across a payment that may never come (docs/decisions/durable-jobs.md).

    reserve the stock ─▶ wait for the payment (an hour at most) ─▶ charge ─▶ notify
                                     └── no payment in time ─▶ release the stock

Each step runs once and is recorded: a retry, the payment's arrival, a redelivery or a worker killed
mid-flow resumes after the last recorded step. While it waits the job holds no worker and no attempt.
The payment arrives as an event of the job's tenant:

    curl -s -X POST $URL/v1/events -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \\
         -d '{"name": "payment.received", "data": {"order": "o-1", "amount_cents": 1999}, "id": "pay-o-1"}'

The code between steps runs again on every run, so it decides nothing from the clock, randomness or
I/O: those go in steps. The steps below stand in for an inventory, a payment provider and a mailer;
each keys its side effect on what it is given (the order), as a real one would on `context.job_id`.
"""

from __future__ import annotations

from typing import Any

from corral_jobs import JobContext, job_type

ORDER = {
    "type": "object",
    "properties": {
        "order": {"type": "string", "minLength": 1, "maxLength": 64},
        "items": {"type": "integer", "minimum": 1},
        "pay_within_seconds": {"type": "integer", "minimum": 1, "maximum": 31_536_000},
    },
    "required": ["order"],
}


@job_type("order_flow", timeout_seconds=30, max_attempts=5, payload_schema=ORDER)
def order_flow(payload: dict[str, Any], context: JobContext) -> dict[str, Any]:
    order = payload["order"]
    reservation = context.step("reserve", reserve, order, payload.get("items", 1))
    payment = context.wait_for_event(
        "payment",
        "payment.received",
        match={"order": order},
        timeout_seconds=payload.get("pay_within_seconds", 3600),
    )
    if payment is None:  # no payment in time: the stock goes back
        context.step("release", release, reservation)
        return {"order": order, "status": "expired"}
    charge = context.step("charge", charge_card, order, payment["amount_cents"])
    context.step("notify", notify, order, charge)
    return {"order": order, "status": "paid", "charge": charge}


def reserve(order: str, items: int) -> dict[str, Any]:
    return {"reservation": f"res-{order}", "items": items}


def release(reservation: dict[str, Any]) -> dict[str, Any]:
    return {"released": reservation["reservation"]}


def charge_card(order: str, amount_cents: int) -> dict[str, Any]:
    return {"charge": f"ch-{order}", "amount_cents": amount_cents}


def notify(order: str, charge: dict[str, Any]) -> dict[str, Any]:
    return {"receipt_for": order, "charge": charge["charge"]}
