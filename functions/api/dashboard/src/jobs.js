// Jobs: a filterable, paginated list (all, dead, delayed) and one job's detail.

import { h } from "preact";
import { useState } from "preact/hooks";
import { api, query } from "./api.js";
import { formatNumber, localInputToIso } from "./format.js";
import { StepsCard } from "./steps.js";
import {
  ActionButton,
  Card,
  Empty,
  Flash,
  Json,
  Page,
  Pager,
  PollState,
  STATUSES,
  StatusBadge,
  Table,
  Time,
  fact,
  useCursors,
  useFlash,
  usePoll,
} from "./ui.js";

const PAGE_SIZE = 25;
const REFRESH_MS = 5000;
const CANCELLABLE = ["queued", "failed", "waiting"];
const RETRYABLE = ["dead", "cancelled"];

const MODES = {
  all: {
    title: "Jobs",
    lead: "Every job of yours, newest first. Filter, then open one for its payload, result and error.",
    empty: "No jobs match. Clear the filters, or enqueue one with POST /v1/jobs.",
  },
  dead: {
    title: "Dead jobs",
    lead: "Jobs that used all their attempts. Retry one, or retry all that match; each runs again with a fresh attempt budget.",
    empty: "No dead jobs. Nothing has given up.",
    status: "dead",
  },
  delayed: {
    title: "Queued and delayed",
    lead: "Jobs waiting for a worker or for their run time. Cancel one and it never runs.",
    empty: "Nothing is waiting. Jobs enqueued with delay_seconds or run_at show here once recorded.",
    status: "queued",
  },
};

export function JobsPage({ mode = "all", params, navigate }) {
  const preset = MODES[mode];
  const filters = {
    status: preset.status || params.status || "",
    type: params.type || "",
    schedule: params.schedule || "",
    since: params.since || "",
    until: params.until || "",
  };
  const pages = useCursors();
  const [flash, showFlash] = useFlash();
  const page = pages.page;
  const key = JSON.stringify(filters);
  const jobs = usePoll(
    () => api("GET", "/v1/jobs" + query({ ...filters, limit: PAGE_SIZE, cursor: pages.cursor })),
    [key, page],
    page === 0 ? REFRESH_MS : 0,
  );
  const applyFilters = (next) => {
    pages.reset();
    const path = mode === "all" ? "/jobs" : `/${mode}`;
    navigate(path + query({ ...next, status: preset.status ? "" : next.status }));
  };
  const done = (text) => {
    showFlash("success", text);
    jobs.reload();
  };
  const failed = (error) => showFlash("error", error.message);

  return h(
    Page,
    { title: preset.title, lead: preset.lead },
    h(Filters, { filters, fixedStatus: preset.status, onApply: applyFilters, key }),
    mode === "dead" ? h(RetryAll, { filters, onDone: done, onError: failed }) : null,
    mode === "delayed" ? h(CancelById, { onDone: done, onError: failed }) : null,
    h(Flash, { flash }),
    h(PollState, { poll: jobs, action: "Check the filters, then reload the page." }),
    jobs.data
      ? h(JobsTable, { jobs: jobs.data.jobs || [], mode, emptyText: preset.empty, onDone: done, onError: failed })
      : null,
    jobs.data?.note ? h("p", { class: "muted small note" }, jobs.data.note) : null,
    h(Pager, { pages, nextCursor: jobs.data?.next_cursor }),
  );
}

function Filters({ filters, fixedStatus, onApply }) {
  const [draft, setDraft] = useState({
    ...filters,
    since: isoToLocalInput(filters.since),
    until: isoToLocalInput(filters.until),
  });
  const field = (name) => ({
    id: `filter-${name}`,
    name,
    value: draft[name],
    onInput: (event) => setDraft({ ...draft, [name]: event.currentTarget.value }),
  });
  const submit = (event) => {
    event.preventDefault();
    onApply({ ...draft, since: localInputToIso(draft.since), until: localInputToIso(draft.until) });
  };
  return h(
    "form",
    { class: "filters", onSubmit: submit, role: "search", "aria-label": "Filter jobs" },
    fixedStatus
      ? null
      : h(
          "label",
          null,
          "Status",
          h("select", field("status"), h("option", { value: "" }, "any"), STATUSES.map((s) => h("option", { value: s }, s))),
        ),
    h("label", null, "Type", h("input", { ...field("type"), placeholder: "e.g. echo", autocomplete: "off" })),
    h("label", null, "Schedule", h("input", { ...field("schedule"), placeholder: "schedule name", autocomplete: "off" })),
    h("label", null, "Since", h("input", { ...field("since"), type: "datetime-local", step: 1 })),
    h("label", null, "Until", h("input", { ...field("until"), type: "datetime-local", step: 1 })),
    h(
      "div",
      { class: "filters-actions" },
      h("button", { type: "submit", class: "btn btn-primary" }, "Apply"),
      h(
        "button",
        {
          type: "button",
          class: "btn btn-secondary",
          onClick: () => onApply({ status: "", type: "", schedule: "", since: "", until: "" }),
        },
        "Clear",
      ),
    ),
  );
}

function isoToLocalInput(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const local = new Date(date.getTime() - date.getTimezoneOffset() * 60000);
  return local.toISOString().slice(0, 19);
}

function JobsTable({ jobs, mode, emptyText, onDone, onError }) {
  if (!jobs.length) return h(Empty, { title: emptyText });
  const columns = [
    "Job",
    "Type",
    "Status",
    mode === "dead" ? "Error" : null,
    { label: "Attempts", class: "num" },
    mode === "dead" ? null : "Enqueued", // a dead job's row shows why it died, and when, instead
    mode === "delayed" ? "Runs" : "Finished",
    mode === "all" ? null : { label: h("span", { class: "sr-only" }, "Actions") },
  ];
  return h(
    Table,
    { columns, testId: "jobs-table" },
    jobs.map((job) =>
      h(
        "tr",
        { key: job.id, "data-job-id": job.id },
        h("td", { class: "mono" }, h("a", { href: `#/jobs/${encodeURIComponent(job.id)}` }, shortId(job.id))),
        h("td", null, job.type || "—"),
        h("td", null, h(StatusBadge, { status: job.status })),
        // Why it died, at a glance (the whole message is its title and on the job's page).
        mode === "dead" ? h("td", { class: "error-cell", title: job.error || "" }, job.error || "—") : null,
        h("td", { class: "num" }, job.max_attempts ? `${job.attempts ?? 0} / ${job.max_attempts}` : formatNumber(job.attempts ?? 0)),
        mode === "dead" ? null : h("td", null, h(Time, { value: job.enqueued_at })),
        h("td", null, h(Time, { value: mode === "delayed" ? runsAt(job) : job.finished_at })),
        mode === "all" ? null : h("td", { class: "actions" }, h(JobActions, { job, onDone, onError })),
      ),
    ),
  );
}

function runsAt(job) {
  return job.run_at ?? job.not_before ?? job.scheduled_for ?? null;
}

function shortId(id) {
  return id.length > 18 ? `${id.slice(0, 10)}…${id.slice(-6)}` : id;
}

export function JobActions({ job, onDone, onError }) {
  return h(
    "div",
    { class: "button-row" },
    RETRYABLE.includes(job.status)
      ? h(ActionButton, {
          label: "Retry",
          busyLabel: "Retrying…",
          kind: "primary",
          testId: `retry-${job.id}`,
          run: () => api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/retry`),
          onDone: () => onDone(`Job ${job.id} is queued again.`),
          onError,
        })
      : null,
    CANCELLABLE.includes(job.status)
      ? h(ActionButton, {
          label: "Cancel",
          busyLabel: "Cancelling…",
          kind: "danger",
          testId: `cancel-${job.id}`,
          run: () => api("POST", `/v1/jobs/${encodeURIComponent(job.id)}/cancel`),
          onDone: () => onDone(`Job ${job.id} is cancelled; it will not run.`),
          onError,
        })
      : null,
  );
}

function RetryAll({ filters, onDone, onError }) {
  const body = { ...(filters.type ? { type: filters.type } : {}), ...(filters.since ? { since: filters.since } : {}) };
  const scope = [filters.type ? `type ${filters.type}` : "", filters.since ? "since the chosen time" : ""].filter(Boolean).join(", ");
  return h(
    Card,
    { className: "inline-card" },
    h(
      "div",
      { class: "inline-card-body" },
      h("p", null, "Retry every dead job", scope ? ` matching ${scope}` : "", ". Each runs again with a fresh attempt budget."),
      h(ActionButton, {
        label: "Retry all matching",
        busyLabel: "Retrying…",
        kind: "primary",
        testId: "retry-all",
        run: () => api("POST", "/v1/jobs:retry", body),
        onDone: (answer) =>
          onDone(
            `Retried ${answer.retried} job${answer.retried === 1 ? "" : "s"}.` +
              (answer.more ? " More match: press the button again for the next batch." : ""),
          ),
        onError,
      }),
    ),
  );
}

function CancelById({ onDone, onError }) {
  const [jobId, setJobId] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    const id = jobId.trim();
    if (!id) return;
    setBusy(true);
    try {
      await api("POST", `/v1/jobs/${encodeURIComponent(id)}/cancel`);
      setJobId("");
      onDone(`Job ${id} is cancelled; it will not run.`);
    } catch (error) {
      onError(error);
    } finally {
      setBusy(false);
    }
  };
  return h(
    "form",
    { class: "card inline-card inline-card-body", onSubmit: submit },
    h(
      "label",
      { class: "grow" },
      "Cancel a job by id (one enqueued a moment ago shows below only once a worker has recorded it)",
      h("input", {
        name: "job-id",
        value: jobId,
        placeholder: "job id, e.g. jt…",
        autocomplete: "off",
        spellcheck: false,
        onInput: (event) => setJobId(event.currentTarget.value),
      }),
    ),
    h("button", { type: "submit", class: "btn btn-danger", disabled: busy || !jobId.trim() }, busy ? "Cancelling…" : "Cancel job"),
  );
}

export function JobDetail({ jobId, navigate }) {
  const [flash, showFlash] = useFlash();
  const job = usePoll(() => api("GET", `/v1/jobs/${encodeURIComponent(jobId)}`), [jobId], 3000);
  const data = job.data;
  return h(
    Page,
    { title: jobId, titleClass: "mono break", back: { href: "#/jobs", label: "← All jobs" } },
    h(Flash, { flash }),
    h(PollState, { poll: job, notFound: "This id is not one of your jobs. Check it, or go back to the list." }),
    data
      ? h(
          "div",
          { class: "detail" },
          h(
            Card,
            {
              title: h("span", null, "Status ", h(StatusBadge, { status: data.status })),
              actions: h(JobActions, {
                job: data,
                onDone: (text) => {
                  showFlash("success", text);
                  job.reload();
                },
                onError: (error) => showFlash("error", error.message),
              }),
            },
            h(
              "dl",
              { class: "facts" },
              fact("Type", data.type || "—"),
              fact("Attempts", data.max_attempts ? `${data.attempts ?? 0} of ${data.max_attempts}` : String(data.attempts ?? 0)),
              fact("Enqueued", h(Time, { value: data.enqueued_at })),
              fact("Started", h(Time, { value: data.started_at })),
              fact("Finished", h(Time, { value: data.finished_at })),
              data.cancelled_at ? fact("Cancelled", h(Time, { value: data.cancelled_at })) : null,
              data.timeout_seconds ? fact("Timeout", `${data.timeout_seconds} s`) : null,
              data.schedule
                ? fact(
                    "Schedule",
                    h("a", { href: `#/schedules/${encodeURIComponent(data.schedule)}` }, data.schedule),
                  )
                : null,
              data.scheduled_for ? fact("Scheduled for", h(Time, { value: data.scheduled_for })) : null,
              data.batch ? fact("Batch", h("a", { href: `#/batches/${encodeURIComponent(data.batch)}`, class: "mono small" }, data.batch)) : null,
              data.parent ? fact(`Callback (${data.parent.callback}) of`, parentLink(data.parent)) : null,
              data.started_by
                ? fact("Started by", h("span", null, "trigger ", h("a", { href: "#/triggers" }, data.started_by.trigger), ", event ", h("span", { class: "mono small" }, data.started_by.event)))
                : null,
              data.concurrency ? fact("Concurrency key", `${data.concurrency.key} (at most ${data.concurrency.limit} at once)`) : null,
              // A queued job's wait (its throttle, its debounce group); a durable job's is its steps card's.
              data.waiting_for && data.status === "queued" ? fact("Waiting for", waitingFor(data.waiting_for), "queued-waiting-for") : null,
              data.reason ? fact("Reason", data.reason, "reason") : null,
              ...Object.entries(data.callbacks || {}).map(([kind, callbackId]) =>
                fact(
                  kind,
                  callbackId
                    ? h("a", { href: `#/jobs/${encodeURIComponent(callbackId)}`, class: "mono small" }, callbackId)
                    : h("span", { class: "muted" }, "not enqueued"),
                ),
              ),
            ),
          ),
          h(StepsCard, { job: data }),
          h(Card, { title: "Payload" }, h(Json, { value: data.payload, label: "payload" })),
          h(Card, { title: "Result" }, h(Json, { value: data.result, label: "result" })),
          h(Card, { title: "Error" }, h(Json, { value: data.error, label: "error" })),
        )
      : null,
  );
}

// What a queued or waiting job waits for (its view's `waiting_for`): its throttle's turn, its debounce group, a
// durable job's sleep, event, token or child job.
function waitingFor(waiting) {
  const what = waiting.key ? `${waiting.kind} ${waiting.key}` : waiting.kind;
  return waiting.until ? h("span", null, `${what} until `, h(Time, { value: waiting.until })) : what;
}

function parentLink(parent) {
  const path = parent.kind === "batch" ? "batches" : "jobs";
  return h("a", { href: `#/${path}/${encodeURIComponent(parent.id)}`, class: "mono small" }, `${parent.kind} ${parent.id}`);
}
