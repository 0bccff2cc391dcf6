// A durable job's steps as a timeline (docs/guides/durable-jobs.md): a waterfall of its steps, sleeps and waits
// in the order they first ran, each bar from its start to its end (or to now while it runs or waits), and what
// a waiting job waits for in words: a sleep's end, an event's name and match, a token, a child job.

import { h } from "preact";
import { formatDateTime, formatMs } from "./format.js";
import { Card, StatusBadge, Time, fact } from "./ui.js";

const KIND_LABELS = {
  step: "step",
  sleep: "sleep",
  wait_for_event: "wait for event",
  create_token: "create token",
  wait_for_token: "wait for token",
  run_job: "child job",
  run_jobs: "child jobs",
};
const OPEN = ["waiting", "failed"]; // still going: its bar runs to now

export function StepsCard({ job, now = Date.now() / 1000 }) {
  const steps = job.steps || [];
  if (!steps.length && !job.waiting_for) return null;
  return h(
    Card,
    { title: `Steps (${steps.length})`, className: "steps-card" },
    job.waiting_for ? h(WaitingFor, { wait: job.waiting_for }) : null,
    steps.length ? h(Timeline, { steps, wait: job.status === "waiting" ? job.waiting_for : null, now }) : null,
  );
}

function WaitingFor({ wait }) {
  const until = wait.kind === "sleep" ? wait.until : wait.timeout_at;
  return h(
    "dl",
    { class: "facts waiting-for", "data-testid": "waiting-for" },
    fact("Waiting for", h("span", null, waitReason(wait))),
    wait.step ? fact("In step", h("span", { class: "mono" }, wait.step)) : null,
    until !== undefined && until !== null ? fact(wait.kind === "sleep" ? "Until" : "Times out", h(Time, { value: until })) : null,
  );
}

// What the wait is for, in words, with a link for a child job.
export function waitReason(wait) {
  switch (wait.kind) {
    case "sleep":
      return `a sleep until ${formatDateTime(wait.until)}`;
    case "event": {
      const match = wait.match && Object.keys(wait.match).length ? ` matching ${JSON.stringify(wait.match)}` : "";
      return `the event ${wait.name}${match}`;
    }
    case "token":
      return `the token ${wait.token}`;
    case "job": {
      // run_job: the child's id; run_jobs: their count and their batch (their ids when few).
      const children = wait.job_ids || [];
      const count = wait.count ?? children.length;
      if (count === 1 && children.length === 1) {
        return h("span", null, "the child job ", h("a", { href: `#/jobs/${encodeURIComponent(children[0])}`, class: "mono small" }, children[0]));
      }
      const batch = wait.batch ? h("a", { href: `#/batches/${encodeURIComponent(wait.batch)}`, class: "mono small" }, wait.batch) : null;
      return h("span", null, `${count || "its"} child jobs`, batch ? " of batch " : "", batch);
    }
    default:
      return JSON.stringify(wait);
  }
}

function Timeline({ steps, wait, now }) {
  const starts = steps.map((step) => step.started_at).filter((value) => value !== null && value !== undefined);
  const ends = steps.map((step) => end(step, now)).filter((value) => value !== null);
  const first = starts.length ? Math.min(...starts) : now;
  const span = Math.max(...ends, first + 0.001) - first;
  return h(
    "ol",
    { class: "timeline", "data-testid": "steps", "aria-label": "Steps in the order they first ran" },
    steps.map((step) => {
      const started = step.started_at ?? first;
      const left = (100 * (started - first)) / span;
      const width = Math.max(0.6, (100 * ((end(step, now) ?? started) - started)) / span);
      const waitingHere = wait && wait.step === step.id;
      return h(
        "li",
        { key: step.id, class: `timeline-row step-${step.status}`, "data-step-id": step.id },
        h(
          "div",
          { class: "timeline-label" },
          h("span", { class: "mono timeline-id" }, step.id),
          h("span", { class: "tag" }, KIND_LABELS[step.kind] || step.kind),
        ),
        h(
          "div",
          { class: "timeline-track" },
          h("span", {
            class: `timeline-bar badge-${step.status}`,
            title: `${step.id}: ${step.status}`,
            style: { left: `${Math.min(left, 99.4)}%`, width: `${Math.min(width, 100 - Math.min(left, 99.4))}%` },
          }),
        ),
        h(
          "div",
          { class: "timeline-facts small" },
          h(StatusBadge, { status: step.status }),
          step.attempts > 1 ? h("span", { class: "muted" }, ` ${step.attempts} attempts`) : null,
          h("span", { class: "muted" }, " ", took(step, now)),
          waitingHere ? h("span", { class: "timeline-reason" }, " waits for ", waitReason(wait)) : null,
        ),
      );
    }),
  );
}

function end(step, now) {
  if (step.finished_at !== null && step.finished_at !== undefined) return step.finished_at;
  if (OPEN.includes(step.status) && step.started_at !== null && step.started_at !== undefined) return now;
  return step.started_at ?? null;
}

function took(step, now) {
  const stop = end(step, now);
  if (step.started_at === null || step.started_at === undefined || stop === null) return "";
  const ms = formatMs(Math.max(0, stop - step.started_at) * 1000);
  return step.finished_at === null || step.finished_at === undefined ? `${ms} so far` : ms;
}
