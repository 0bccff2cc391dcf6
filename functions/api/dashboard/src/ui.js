// Small building blocks shared by the pages. Every value is passed to Preact as a child or an
// attribute, so it is rendered as text: no page builds markup from a string.

import { h } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { formatDateTime, formatRelative, prettyJson } from "./format.js";

export const STATUSES = ["queued", "running", "waiting", "succeeded", "failed", "dead", "cancelled", "skipped"];
export const STATUS_HINTS = {
  queued: "waiting for a worker (or for its run time)",
  running: "a worker has it now",
  waiting: "a durable job in a sleep or a wait: it holds no worker until it resumes",
  errored: "a step whose failure the job's code caught",
  timed_out: "a wait that ended at its timeout",
  succeeded: "finished",
  failed: "failed an attempt; will retry with backoff",
  dead: "gave up after its last attempt",
  cancelled: "cancelled; it will not run",
  skipped: "a schedule's run not started: an earlier run was still live (overlap skip)",
  paused: "the schedule does not fire until it is resumed",
  enabled: "the schedule fires on its expression",
};

// Run `load` now and every `intervalMs` while the tab is visible; `reload` runs it at once.
export function usePoll(load, deps, intervalMs = 0) {
  const [state, setState] = useState({ data: null, error: null, loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((old) => ({ data: old.data, error, loading: false }));
    }
  }, deps);
  useEffect(() => {
    setState((old) => ({ ...old, loading: true }));
    reload();
    if (!intervalMs) return () => generation.current++;
    const timer = setInterval(() => document.visibilityState === "visible" && reload(), intervalMs);
    return () => {
      clearInterval(timer);
      generation.current++;
    };
  }, [reload, intervalMs]);
  return { ...state, reload };
}

export function StatusBadge({ status }) {
  return h("span", { class: `badge badge-${status}`, title: STATUS_HINTS[status] || "" }, status);
}

export function Time({ value }) {
  if (value === null || value === undefined) return h("span", { class: "muted" }, "—");
  return h("time", { title: formatDateTime(value) }, formatDateTime(value), " ", h("span", { class: "muted small" }, formatRelative(value)));
}

export function Json({ value, label }) {
  if (value === null || value === undefined) return h("p", { class: "muted" }, `No ${label}.`);
  const text = typeof value === "string" ? value : prettyJson(value);
  return h("pre", { class: "json", tabIndex: 0, "aria-label": label, "data-testid": label }, text);
}

export function ErrorBox({ error, action }) {
  if (!error) return null;
  return h(
    "div",
    { class: "alert alert-error", role: "alert" },
    h("strong", null, error.status ? `Error ${error.status}: ` : "Error: "),
    error.message,
    action ? h("div", { class: "alert-action" }, action) : null,
  );
}

export function Empty({ title, children }) {
  return h("div", { class: "empty" }, h("p", { class: "empty-title" }, title), children ? h("p", null, children) : null);
}

export function Loading() {
  return h("p", { class: "muted loading", "aria-busy": "true" }, "Loading…");
}

export function Flash({ flash }) {
  return h(
    "div",
    { class: flash ? `alert alert-${flash.kind}` : "flash-empty", role: "status", "aria-live": "polite" },
    flash ? flash.text : "",
  );
}

// A button that runs an async action, shows it is busy and reports the outcome.
export function ActionButton({ run, label, busyLabel, kind = "secondary", onDone, onError, disabled, testId }) {
  const [busy, setBusy] = useState(false);
  const click = async () => {
    setBusy(true);
    try {
      const result = await run();
      onDone && onDone(result);
    } catch (error) {
      onError && onError(error);
    } finally {
      setBusy(false);
    }
  };
  return h(
    "button",
    { type: "button", class: `btn btn-${kind}`, onClick: click, disabled: busy || disabled, "data-testid": testId },
    busy ? busyLabel || "Working…" : label,
  );
}

// A page: its heading (after a link back, on one item's page), a line saying what it shows, then its children.
export function Page({ title, lead, back, titleClass, children }) {
  return h(
    "div",
    { class: "page" },
    h(
      "div",
      { class: "page-header" },
      back ? h("a", { href: back.href, class: "back" }, back.label) : null,
      h("h1", titleClass ? { class: titleClass } : null, title),
      lead ? h("p", { class: "muted" }, lead) : null,
    ),
    children,
  );
}

// What a poll shows before (or instead of) its data: its error, with what to do about it (`notFound` for a
// 404, else `action`), or that it is loading.
export function PollState({ poll, notFound, action }) {
  const hint = poll.error?.status === 404 && notFound ? notFound : action;
  return [h(ErrorBox, { error: poll.error, action: hint || null }), !poll.data && poll.loading ? h(Loading) : null];
}

// A table: `columns` label its header cells (a string, or { label, class }; null leaves a column out), the
// children are its rows (`<tr>`s).
export function Table({ columns, testId, children }) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "table", "data-testid": testId },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          columns
            .filter(Boolean)
            .map((column) =>
              typeof column === "string"
                ? h("th", { scope: "col" }, column)
                : h("th", { scope: "col", class: column.class }, column.label),
            ),
        ),
      ),
      h("tbody", null, children),
    ),
  );
}

// One line of a card's list of facts (`<dl class="facts">`) or figures (`<dl class="figures">`).
export function fact(label, value, testId) {
  return h("div", null, h("dt", null, label), h("dd", testId ? { "data-testid": testId } : null, value));
}

export function Card({ title, children, actions, className = "" }) {
  return h(
    "section",
    { class: `card ${className}` },
    title || actions ? h("header", { class: "card-header" }, h("h2", null, title), actions || null) : null,
    children,
  );
}

export function useFlash() {
  const [flash, setFlash] = useState(null);
  const timer = useRef(null);
  const show = useCallback((kind, text) => {
    setFlash({ kind, text });
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setFlash(null), 8000);
  }, []);
  useEffect(() => () => clearTimeout(timer.current), []);
  return [flash, show];
}

// Cursor pagination: the cursors of the pages seen so far; the page shown is the last.
export function useCursors() {
  const [cursors, setCursors] = useState([null]);
  return {
    cursor: cursors[cursors.length - 1],
    page: cursors.length - 1,
    reset: () => setCursors([null]),
    back: () => setCursors(cursors.slice(0, -1)),
    forward: (cursor) => setCursors([...cursors, cursor]),
  };
}

export function Pager({ pages, nextCursor, backLabel = "← Newer", forwardLabel = "Older →" }) {
  return h(
    "nav",
    { class: "pager", "aria-label": "Pages" },
    h("button", { type: "button", class: "btn btn-secondary", disabled: pages.page === 0, onClick: pages.back }, backLabel),
    h("span", { class: "muted" }, `Page ${pages.page + 1}`),
    h(
      "button",
      { type: "button", class: "btn btn-secondary", disabled: !nextCursor, onClick: () => pages.forward(nextCursor) },
      forwardLabel,
    ),
  );
}
