// Operator view: the platform's queue, DLQ and workers (an operator key; never a tenant's).

import { h } from "preact";
import { api } from "./api.js";
import { formatNumber, formatSeconds } from "./format.js";
import { Card, ErrorBox, Loading, Time, usePoll } from "./ui.js";

export function OperatorPage() {
  const health = usePoll(() => api("GET", "/operator/v1/queues"), [], 5000);
  const data = health.data;
  return h(
    "div",
    { class: "page" },
    h(
      "div",
      { class: "page-header" },
      h("h1", null, "Operator"),
      h("p", { class: "muted" }, "The platform's queue, dead-letter queue and workers, for every tenant. Refreshed every 5 seconds."),
    ),
    h(ErrorBox, { error: health.error }),
    !data && health.loading ? h(Loading) : null,
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
              figure("Waiting", formatNumber(data.queue.depth), "queue-depth"),
              figure("In flight", formatNumber(data.queue.in_flight), "queue-in-flight"),
              figure("Delayed", formatNumber(data.queue.delayed), "queue-delayed"),
              figure("Oldest message", formatSeconds(data.queue.oldest_age_seconds), "queue-oldest"),
            ),
          ),
          h(
            Card,
            { title: `Dead-letter queue · ${data.dlq.name}`, className: data.dlq.depth ? "card-warn" : "" },
            h(
              "dl",
              { class: "figures" },
              figure("Messages", formatNumber(data.dlq.depth), "dlq-depth"),
              figure("Oldest message", formatSeconds(data.dlq.oldest_age_seconds), "dlq-oldest"),
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
              figure("Concurrent (max)", formatNumber(data.workers.concurrent_executions), "workers-concurrency"),
              figure("Concurrency limit", formatNumber(data.workers.max_concurrency), "workers-limit"),
              figure("Errors", formatNumber(data.workers.errors), "workers-errors"),
              figure("Throttles", formatNumber(data.workers.throttles), "workers-throttles"),
            ),
          ),
        )
      : null,
    data ? h("p", { class: "muted small" }, "Counts are live from SQS; the rest ", data.metrics_note, ". As of ", h(Time, { value: data.at }), ".") : null,
  );
}

function figure(label, value, testId) {
  return h("div", null, h("dt", null, label), h("dd", { "data-testid": testId }, value));
}
