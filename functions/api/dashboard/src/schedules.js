// Schedules: the list, one schedule (expression in words, next firings, recent runs), create, delete.

import cronstrue from "cronstrue";
import { h } from "preact";
import { useState } from "preact/hooks";
import { api, query } from "./api.js";
import { formatDateTime, timeZone } from "./format.js";
import { ActionButton, Card, Empty, ErrorBox, Flash, Loading, Pager, StatusBadge, Time, useCursors, useFlash, usePoll } from "./ui.js";

// EventBridge Scheduler expressions in words; cron() via cronstrue (AWS cron: 6 fields, year last,
// day-of-week 1 = Sunday, which cronstrue reads with a leading seconds field and 1-based days).
export function describeExpression(expression, zone) {
  const match = /^(at|rate|cron)\((.*)\)$/.exec((expression || "").trim());
  if (!match) return expression;
  const [, kind, body] = match;
  if (kind === "rate") return `Every ${body.replace(/^1 (minute|hour|day)$/, "$1")}`;
  if (kind === "at") return `Once, at ${body.replace("T", " ")} (${zone})`;
  try {
    return `${cronstrue.toString(`0 ${body}`, { dayOfWeekStartIndexZero: false, use24HourTimeFormat: false, verbose: false })} (${zone})`;
  } catch {
    return expression;
  }
}

const PAGE_SIZE = 50;

export function SchedulesPage({ navigate }) {
  const [flash, showFlash] = useFlash();
  const pages = useCursors();
  const list = usePoll(() => api("GET", "/v1/schedules" + query({ limit: PAGE_SIZE, cursor: pages.cursor })), [pages.page], 0);
  const schedules = list.data?.schedules || [];
  return h(
    "div",
    { class: "page" },
    h(
      "div",
      { class: "page-header" },
      h("h1", null, "Schedules"),
      h("p", { class: "muted" }, "Jobs that fire on a cron, a rate or once at a time, on EventBridge Scheduler."),
    ),
    h(Flash, { flash }),
    h(ErrorBox, { error: list.error }),
    !list.data && list.loading ? h(Loading) : null,
    list.data && !schedules.length ? h(Empty, { title: "No schedules yet." }, "Create one with the form below.") : null,
    schedules.length
      ? h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "table" },
            h(
              "thead",
              null,
              h("tr", null, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "When"), h("th", { scope: "col" }, "Job type"), h("th", { scope: "col" }, "Created")),
            ),
            h(
              "tbody",
              null,
              schedules.map((schedule) =>
                h(
                  "tr",
                  { key: schedule.name },
                  h("td", null, h("a", { href: `#/schedules/${encodeURIComponent(schedule.name)}` }, schedule.name)),
                  h(
                    "td",
                    null,
                    describeExpression(schedule.expression, schedule.timezone),
                    h("div", { class: "mono small muted" }, schedule.expression),
                  ),
                  h("td", null, schedule.job?.type || "—"),
                  h("td", null, h(Time, { value: schedule.created_at })),
                ),
              ),
            ),
          ),
        )
      : null,
    pages.page > 0 || list.data?.next_cursor
      ? h(Pager, { pages, nextCursor: list.data?.next_cursor, backLabel: "← Previous", forwardLabel: "Next →" })
      : null,
    h(CreateSchedule, {
      onCreated: (created) => {
        showFlash("success", `Schedule ${created.name} created.`);
        list.reload();
      },
    }),
  );
}

function CreateSchedule({ onCreated }) {
  const blank = { name: "", expression: "rate(5 minutes)", timezone: timeZone || "UTC", type: "echo", payload: "{}", max_attempts: "3" };
  const [form, setForm] = useState(blank);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const field = (name) => ({
    id: `schedule-${name}`,
    name,
    value: form[name],
    onInput: (event) => setForm({ ...form, [name]: event.currentTarget.value }),
  });
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    let payload;
    try {
      payload = form.payload.trim() ? JSON.parse(form.payload) : null;
    } catch {
      setError({ message: "Payload is not valid JSON; fix it or leave it empty." });
      return;
    }
    setBusy(true);
    try {
      const created = await api("POST", "/v1/schedules", {
        name: form.name.trim(),
        expression: form.expression.trim(),
        timezone: form.timezone.trim() || "UTC",
        job: { type: form.type.trim(), payload, max_attempts: Number(form.max_attempts) || 3 },
      });
      setForm(blank);
      onCreated(created);
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return h(
    Card,
    { title: "New schedule" },
    h(
      "form",
      { class: "form-grid", onSubmit: submit },
      h("label", null, "Name", h("input", { ...field("name"), required: true, maxLength: 64, placeholder: "nightly-report", autocomplete: "off" })),
      h(
        "label",
        null,
        "Expression",
        h("input", { ...field("expression"), required: true, class: "mono", autocomplete: "off" }),
        h("span", { class: "hint" }, describeExpression(form.expression, form.timezone || "UTC")),
      ),
      h("label", null, "Time zone (IANA)", h("input", { ...field("timezone"), autocomplete: "off" })),
      h("label", null, "Job type", h("input", { ...field("type"), required: true, autocomplete: "off" })),
      h("label", null, "Max attempts", h("input", { ...field("max_attempts"), type: "number", min: 1, max: 25 })),
      h("label", { class: "span-2" }, "Payload (JSON)", h("textarea", { ...field("payload"), rows: 3, class: "mono", spellcheck: false })),
      h(
        "p",
        { class: "hint span-2" },
        "Expressions: cron(minutes hours day-of-month month day-of-week year), e.g. cron(0 9 ? * MON-FRI *); rate(5 minutes); at(2026-12-31T23:59:00).",
      ),
      error ? h("div", { class: "span-2" }, h(ErrorBox, { error })) : null,
      h("div", { class: "span-2" }, h("button", { type: "submit", class: "btn btn-primary", disabled: busy }, busy ? "Creating…" : "Create schedule")),
    ),
  );
}

export function ScheduleDetail({ name, navigate }) {
  const [flash, showFlash] = useFlash();
  const [confirming, setConfirming] = useState(false);
  const schedule = usePoll(() => api("GET", `/v1/schedules/${encodeURIComponent(name)}`), [name], 15000);
  const data = schedule.data;
  return h(
    "div",
    { class: "page" },
    h("div", { class: "page-header" }, h("a", { href: "#/schedules", class: "back" }, "← Schedules"), h("h1", { class: "break" }, name)),
    h(Flash, { flash }),
    h(ErrorBox, {
      error: schedule.error,
      action: schedule.error?.status === 404 ? "No schedule has this name (it may have been deleted)." : null,
    }),
    !data && schedule.loading ? h(Loading) : null,
    data
      ? h(
          "div",
          { class: "detail" },
          h(
            Card,
            {
              title: describeExpression(data.expression, data.timezone),
              actions: confirming
                ? h(
                    "div",
                    { class: "button-row" },
                    h(ActionButton, {
                      label: "Yes, delete it",
                      kind: "danger",
                      run: () => api("DELETE", `/v1/schedules/${encodeURIComponent(name)}`),
                      onDone: () => navigate("/schedules"),
                      onError: (error) => showFlash("error", error.message),
                    }),
                    h("button", { type: "button", class: "btn btn-secondary", onClick: () => setConfirming(false) }, "Keep it"),
                  )
                : h("button", { type: "button", class: "btn btn-danger", onClick: () => setConfirming(true) }, "Delete"),
            },
            h(
              "dl",
              { class: "facts" },
              fact("Expression", h("span", { class: "mono" }, data.expression)),
              fact("Time zone", data.timezone),
              fact("Job type", data.job?.type || "—"),
              fact("Max attempts", String(data.job?.max_attempts ?? "—")),
              fact("Flexible window", data.flexible_window_minutes ? `${data.flexible_window_minutes} min` : "fires on time"),
              data.start ? fact("Starts", h(Time, { value: data.start })) : null,
              data.end ? fact("Ends", h(Time, { value: data.end })) : null,
              fact("Created", h(Time, { value: data.created_at })),
            ),
            h("h3", null, "Payload"),
            h("pre", { class: "json", tabIndex: 0 }, JSON.stringify(data.job?.payload ?? null, null, 2)),
          ),
          h(
            Card,
            { title: "Next firings" },
            data.next_firings === null
              ? h(Empty, { title: "Not forecast for this expression." }, "W (nearest weekday) cannot be stepped through here; it still fires as EventBridge Scheduler reads it.")
              : (data.next_firings || []).length
                ? h("ol", { class: "firings" }, data.next_firings.map((at) => h("li", { key: at }, formatDateTime(at))))
                : h(Empty, { title: "No upcoming firings." }, "It has ended, or it fired its one time."),
            h("p", { class: "muted small" }, "Shown in your time zone (", timeZone, ")."),
          ),
          h(
            Card,
            { title: "Recent runs" },
            (data.runs || []).length
              ? h(
                  "ul",
                  { class: "runs" },
                  data.runs.map((run) =>
                    h(
                      "li",
                      { key: run.id },
                      h(StatusBadge, { status: run.status }),
                      " ",
                      h("a", { href: `#/jobs/${encodeURIComponent(run.id)}` }, formatDateTime(run.scheduled_for)),
                    ),
                  ),
                )
              : h(Empty, { title: "No runs yet." }, "Runs appear here once a worker has picked them up."),
          ),
        )
      : null,
  );
}

function fact(label, value) {
  return h("div", null, h("dt", null, label), h("dd", null, value));
}
