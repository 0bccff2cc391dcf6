// Operator view: the platform's queue, DLQ and workers (an operator key; never a tenant's).

import { h } from "preact";
import { api } from "./api.js";
import { formatNumber, formatSeconds } from "./format.js";
import { Card, Page, PollState, Time, fact, usePoll } from "./ui.js";

export function OperatorPage() {
  const health = usePoll(() => api("GET", "/operator/v1/queues"), [], 5000);
  const data = health.data;
  return h(
    Page,
    { title: "Operator", lead: "The platform's queue, dead-letter queue and workers, for every tenant. Refreshed every 5 seconds." },
    h(PollState, { poll: health }),
    data
      ? h(
          "div",
          { class: "grid-3" },
          h(
            Card,
            { title: `Queue · ${data.queue.name}` },
            h(
              "dl",
              { class: "figures" },
              fact("Waiting", formatNumber(data.queue.depth), "queue-depth"),
              fact("In flight", formatNumber(data.queue.in_flight), "queue-in-flight"),
              fact("Delayed", formatNumber(data.queue.delayed), "queue-delayed"),
              fact("Oldest message", formatSeconds(data.queue.oldest_age_seconds), "queue-oldest"),
            ),
          ),
          h(
            Card,
            { title: `Dead-letter queue · ${data.dlq.name}`, className: data.dlq.depth ? "card-warn" : "" },
            h(
              "dl",
              { class: "figures" },
              fact("Messages", formatNumber(data.dlq.depth), "dlq-depth"),
              fact("Oldest message", formatSeconds(data.dlq.oldest_age_seconds), "dlq-oldest"),
            ),
            data.dlq.depth
              ? h("p", { class: "small" }, "Messages here are jobs that gave up or never reached a worker: inspect and redrive them with the operator commands.")
              : null,
          ),
          h(
            Card,
            { title: `Workers · ${data.workers.function}` },
            h(
              "dl",
              { class: "figures" },
              fact("Concurrent (max)", formatNumber(data.workers.concurrent_executions), "workers-concurrency"),
              fact("Concurrency limit", formatNumber(data.workers.max_concurrency), "workers-limit"),
              fact("Errors", formatNumber(data.workers.errors), "workers-errors"),
              fact("Throttles", formatNumber(data.workers.throttles), "workers-throttles"),
            ),
          ),
        )
      : null,
    data ? h("p", { class: "muted small" }, "Counts are live from SQS; the rest ", data.metrics_note, ". As of ", h(Time, { value: data.at }), ".") : null,
  );
}
