// Batches: the list with a progress bar per batch, one batch (its counts, its callbacks, its jobs), cancel.

import { h } from "preact";
import { useState } from "preact/hooks";
import { api, query } from "./api.js";
import { ActionButton, Card, Empty, ErrorBox, Flash, Page, Pager, PollState, Table, Time, fact, useCursors, useFlash, usePoll } from "./ui.js";

export const BATCH_STATUSES = ["running", "succeeded", "completed_with_failures", "cancelled"];
const BATCH_HINTS = {
  running: "some of its jobs have not ended",
  succeeded: "every job succeeded",
  completed_with_failures: "every job ended; some are dead or were cancelled",
  cancelled: "cancelled: its jobs that had not started never run, and it runs no callback",
};
const PAGE_SIZE = 20;
const JOBS_SHOWN = 100;

function BatchBadge({ status }) {
  return h("span", { class: `badge badge-${status}`, title: BATCH_HINTS[status] || "" }, status.replace(/_/g, " "));
}

// One bar per batch: a segment per ended state, in proportion to its total; what is left is pending.
export function Progress({ batch }) {
  const ended = batch.total - batch.pending;
  const segments = [
    ["succeeded", batch.succeeded],
    ["dead", batch.dead],
    ["cancelled", batch.cancelled],
  ];
  const label = `${ended} of ${batch.total} ended: ${batch.succeeded} succeeded, ${batch.dead} dead, ${batch.cancelled} cancelled`;
  return h(
    "div",
    { class: "progress", role: "img", "aria-label": label, title: label },
    segments.map(([status, count]) =>
      count ? h("span", { key: status, class: `progress-part count-${status}`, style: { width: `${(100 * count) / batch.total}%` } }) : null,
    ),
  );
}

export function BatchesPage() {
  const [status, setStatus] = useState("");
  const pages = useCursors();
  const list = usePoll(
    () => api("GET", "/v1/batches" + query({ status: status || undefined, limit: PAGE_SIZE, cursor: pages.cursor })),
    [status, pages.page],
    5000,
  );
  const batches = list.data?.batches || [];
  return h(
    Page,
    { title: "Batches", lead: "Jobs enqueued together and counted as one, with callbacks when they have all ended." },
    h(
      "label",
      { class: "filter" },
      "Status ",
      h(
        "select",
        {
          id: "batch-status",
          value: status,
          onChange: (event) => {
            setStatus(event.currentTarget.value);
            pages.reset();
          },
        },
        h("option", { value: "" }, "any"),
        BATCH_STATUSES.map((name) => h("option", { value: name }, name.replace(/_/g, " "))),
      ),
    ),
    h(PollState, { poll: list }),
    list.data && !batches.length ? h(Empty, { title: "No batches." }, "POST /v1/batches, or `corral batches create`, makes one.") : null,
    batches.length
      ? h(
          Table,
          { columns: ["Batch", "Status", "Progress", "Ended", "Created", "Description"] },
          batches.map((batch) =>
            h(
              "tr",
              { key: batch.id },
              h("td", { class: "mono small" }, h("a", { href: `#/batches/${encodeURIComponent(batch.id)}` }, batch.id)),
              h("td", null, h(BatchBadge, { status: batch.status })),
              h("td", { class: "progress-cell" }, h(Progress, { batch })),
              h("td", null, `${batch.total - batch.pending} / ${batch.total}`),
              h("td", null, h(Time, { value: batch.created_at })),
              h("td", null, batch.description || ""),
            ),
          ),
        )
      : null,
    pages.page > 0 || list.data?.next_cursor ? h(Pager, { pages, nextCursor: list.data?.next_cursor }) : null,
  );
}

export function BatchDetail({ batchId }) {
  const [flash, showFlash] = useFlash();
  const batch = usePoll(() => api("GET", `/v1/batches/${encodeURIComponent(batchId)}`), [batchId], 3000);
  const jobs = usePoll(() => api("GET", `/v1/batches/${encodeURIComponent(batchId)}/jobs`), [batchId], 0);
  const data = batch.data;
  const callbacks = Object.entries(data?.callbacks || {});
  const jobIds = jobs.data?.jobs || [];
  return h(
    Page,
    { title: batchId, titleClass: "mono break", back: { href: "#/batches", label: "← All batches" } },
    h(Flash, { flash }),
    h(PollState, { poll: batch, notFound: "This id is not one of your batches." }),
    data
      ? h(
          "div",
          { class: "detail" },
          h(
            Card,
            {
              title: h("span", null, "Status ", h(BatchBadge, { status: data.status })),
              actions:
                data.status === "running"
                  ? h(ActionButton, {
                      label: "Cancel batch",
                      busyLabel: "Cancelling…",
                      kind: "danger",
                      testId: "cancel-batch",
                      run: () => api("POST", `/v1/batches/${encodeURIComponent(batchId)}/cancel`),
                      onDone: (after) => {
                        showFlash("success", `Batch cancelled: ${after.cancelled} job(s) will not run.`);
                        batch.reload();
                      },
                      onError: (error) => showFlash("error", error.message),
                    })
                  : null,
            },
            h(Progress, { batch: data }),
            h(
              "dl",
              { class: "facts" },
              fact("Total", String(data.total)),
              fact("Pending", String(data.pending)),
              fact("Succeeded", String(data.succeeded)),
              fact("Dead", String(data.dead)),
              fact("Cancelled", String(data.cancelled)),
              fact("Created", h(Time, { value: data.created_at })),
              fact("Finished", h(Time, { value: data.finished_at })),
              data.description ? fact("Description", data.description) : null,
            ),
          ),
          h(
            Card,
            { title: "Callbacks" },
            callbacks.length
              ? h(
                  "dl",
                  { class: "facts" },
                  callbacks.map(([kind, jobId]) =>
                    fact(kind, jobId ? h("a", { href: `#/jobs/${encodeURIComponent(jobId)}`, class: "mono small" }, jobId) : h("span", { class: "muted" }, "not enqueued")),
                  ),
                )
              : h("p", { class: "muted" }, "No callbacks."),
          ),
          h(
            Card,
            { title: `Jobs (${data.total})` },
            h(ErrorBox, { error: jobs.error }),
            h(
              "ol",
              { class: "id-list", start: 0 },
              jobIds.slice(0, JOBS_SHOWN).map((jobId) => h("li", { key: jobId }, h("a", { href: `#/jobs/${encodeURIComponent(jobId)}`, class: "mono small" }, jobId))),
            ),
            jobIds.length > JOBS_SHOWN ? h("p", { class: "muted small" }, `The first ${JOBS_SHOWN} shown; GET /v1/batches/{id}/jobs lists them all.`) : null,
          ),
        )
      : null,
  );
}
