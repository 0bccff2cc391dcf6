// Schedules: the list, one schedule (expression in words, state, next firings, recent runs with what
// started each), create; on one schedule: run now, pause and resume, edit (the next firings shown before
// saving, from a dry run of the change), delete.

import cronstrue from "cronstrue";
import { h } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, query } from "./api.js";
import { formatDateTime, timeZone } from "./format.js";
import {
  ActionButton,
  Card,
  Empty,
  ErrorBox,
  Flash,
  Page,
  Pager,
  PollState,
  StatusBadge,
  Table,
  Time,
  fact,
  useCursors,
  useFlash,
  usePoll,
} from "./ui.js";

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
    Page,
    { title: "Schedules", lead: "Jobs that fire on a cron, a rate or once at a time, on EventBridge Scheduler." },
    h(Flash, { flash }),
    h(PollState, { poll: list }),
    list.data && !schedules.length ? h(Empty, { title: "No schedules yet." }, "Create one with the form below.") : null,
    schedules.length
      ? h(
          Table,
          { columns: ["Name", "When", "State", "Job type", "Created"] },
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
              h("td", null, h(StatusBadge, { status: schedule.state || "enabled" })),
              h("td", null, schedule.job?.type || "—"),
              h("td", null, h(Time, { value: schedule.created_at })),
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
  const blank = { name: "", expression: "rate(5 minutes)", timezone: timeZone || "UTC", type: "echo", payload: "{}", max_attempts: "3", overlap: "allow" };
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
        overlap: form.overlap,
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
      h("label", null, "While a run is still going", overlapSelect(field("overlap"))),
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

function overlapSelect(props) {
  return h(
    "select",
    props,
    h("option", { value: "allow" }, "allow: run anyway"),
    h("option", { value: "skip" }, "skip: record the run as skipped"),
  );
}

const schedulePath = (name) => `/v1/schedules/${encodeURIComponent(name)}`;

// A fresh idempotency key per click: a retried request is the same run, a second click another.
function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "dash-" + Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

export function ScheduleDetail({ name, navigate }) {
  const [flash, showFlash] = useFlash();
  const [confirming, setConfirming] = useState(false);
  const [pausing, setPausing] = useState(false);
  const [note, setNote] = useState("");
  const [editing, setEditing] = useState(false);
  const schedule = usePoll(() => api("GET", schedulePath(name)), [name], 15000);
  const data = schedule.data;
  const failed = (error) => showFlash("error", error.message);
  const paused = data?.state === "paused";
  const pauseControls = pausing
    ? h(
        "div",
        { class: "inline-form" },
        h("input", {
          id: "pause-note",
          "aria-label": "Why (optional)",
          placeholder: "Why (optional)",
          value: note,
          maxLength: 512,
          onInput: (event) => setNote(event.currentTarget.value),
        }),
        h(ActionButton, {
          label: "Pause it",
          kind: "primary",
          run: () => api("POST", `${schedulePath(name)}:pause`, note.trim() ? { note: note.trim() } : {}),
          onDone: () => {
            setPausing(false);
            setNote("");
            showFlash("success", `Schedule ${name} is paused: it will not fire until you resume it.`);
            schedule.reload();
          },
          onError: failed,
        }),
        h("button", { type: "button", class: "btn btn-secondary", onClick: () => setPausing(false) }, "Keep it running"),
      )
    : paused
      ? h(ActionButton, {
          label: "Resume",
          run: () => api("POST", `${schedulePath(name)}:resume`),
          onDone: () => {
            showFlash("success", `Schedule ${name} is enabled again.`);
            schedule.reload();
          },
          onError: failed,
        })
      : h("button", { type: "button", class: "btn btn-secondary", onClick: () => setPausing(true) }, "Pause");
  const deleteControls = confirming
    ? h(
        "div",
        { class: "button-row" },
        h(ActionButton, {
          label: "Yes, delete it",
          kind: "danger",
          run: () => api("DELETE", schedulePath(name)),
          onDone: () => navigate("/schedules"),
          onError: failed,
        }),
        h("button", { type: "button", class: "btn btn-secondary", onClick: () => setConfirming(false) }, "Keep it"),
      )
    : h("button", { type: "button", class: "btn btn-danger", onClick: () => setConfirming(true) }, "Delete");
  const actions = h(
    "div",
    { class: "button-row" },
    h(ActionButton, {
      label: "Run now",
      run: () => api("POST", `${schedulePath(name)}:trigger`, { idempotency_key: newKey() }),
      onDone: (run) => {
        if (run.status === "skipped") showFlash("error", `Not run: ${run.reason}`);
        else showFlash("success", `Run ${run.id} is queued.`);
        schedule.reload();
      },
      onError: failed,
    }),
    pauseControls,
    h("button", { type: "button", class: "btn btn-secondary", onClick: () => setEditing(!editing), "aria-expanded": String(editing) }, editing ? "Close editor" : "Edit"),
    deleteControls,
  );
  return h(
    Page,
    { title: name, titleClass: "break", back: { href: "#/schedules", label: "← Schedules" } },
    h(Flash, { flash }),
    h(PollState, { poll: schedule, notFound: "No schedule has this name (it may have been deleted)." }),
    data
      ? h(
          "div",
          { class: "detail" },
          h(
            Card,
            { title: describeExpression(data.expression, data.timezone), actions },
            h(
              "dl",
              { class: "facts" },
              fact(
                "State",
                h(
                  "span",
                  null,
                  h(StatusBadge, { status: data.state || "enabled" }),
                  paused ? h("span", { class: "muted small" }, " since ", formatDateTime(data.paused_at)) : null,
                ),
              ),
              paused && data.note ? fact("Paused because", data.note) : null,
              fact("Expression", h("span", { class: "mono" }, data.expression)),
              fact("Time zone", data.timezone),
              fact("Job type", data.job?.type || "—"),
              fact("Max attempts", String(data.job?.max_attempts ?? "—")),
              fact("While a run is still going", data.overlap === "skip" ? "skip the next (recorded as skipped)" : "run anyway"),
              fact("Flexible window", data.flexible_window_minutes ? `${data.flexible_window_minutes} min` : "fires on time"),
              fact("Firings budget", `${data.firings_per_minute ?? 0} per minute at most`),
              data.description ? fact("Description", data.description) : null,
              data.start ? fact("Starts", h(Time, { value: data.start })) : null,
              data.end ? fact("Ends", h(Time, { value: data.end })) : null,
              fact("Created", h(Time, { value: data.created_at })),
              data.updated_at ? fact("Updated", h(Time, { value: data.updated_at })) : null,
            ),
            h("h3", null, "Payload"),
            h("pre", { class: "json", tabIndex: 0 }, JSON.stringify(data.job?.payload ?? null, null, 2)),
          ),
          editing
            ? h(EditSchedule, {
                name,
                schedule: data,
                onSaved: () => {
                  setEditing(false);
                  showFlash("success", `Schedule ${name} is updated.`);
                  schedule.reload();
                },
              })
            : null,
          h(
            Card,
            { title: "Next firings" },
            paused
              ? h(Empty, { title: "Paused: no firings until it is resumed." }, "Run now still runs it once.")
              : data.next_firings === null
                ? h(Empty, { title: "Not forecast for this expression." }, "W (nearest weekday) cannot be stepped through here; it still fires as EventBridge Scheduler reads it.")
                : (data.next_firings || []).length
                  ? h(Firings, { firings: data.next_firings })
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
                      { key: run.id, "data-status": run.status },
                      h(StatusBadge, { status: run.status }),
                      " ",
                      h("a", { href: `#/jobs/${encodeURIComponent(run.id)}` }, formatDateTime(run.scheduled_for)),
                      run.trigger && run.trigger !== "schedule" ? h("span", { class: "tag" }, " ", run.trigger, " ") : null,
                      run.reason ? h("span", { class: "muted small reason" }, run.reason) : null,
                    ),
                  ),
                )
              : h(Empty, { title: "No runs yet." }, "Runs appear here once a worker has picked them up."),
          ),
        )
      : null,
  );
}

function Firings({ firings }) {
  return h("ol", { class: "firings" }, firings.map((at) => h("li", { key: at }, formatDateTime(at))));
}

// The edit form: what changes is checked by a dry run of the PATCH as it is typed, so the next firings
// (or the field at fault) show before anything is saved.
function EditSchedule({ name, schedule, onSaved }) {
  const [form, setForm] = useState({
    expression: schedule.expression,
    timezone: schedule.timezone,
    payload: JSON.stringify(schedule.job?.payload ?? null, null, 2),
    max_attempts: String(schedule.job?.max_attempts ?? 3),
    overlap: schedule.overlap || "allow",
    flexible_window_minutes: String(schedule.flexible_window_minutes || 0),
    description: schedule.description || "",
  });
  const [preview, setPreview] = useState({ firings: schedule.next_firings, error: null });
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const field = (fieldName) => ({
    id: `edit-${fieldName}`,
    name: fieldName,
    value: form[fieldName],
    onInput: (event) => setForm({ ...form, [fieldName]: event.currentTarget.value }),
  });
  const changes = () => {
    let payload;
    try {
      payload = form.payload.trim() ? JSON.parse(form.payload) : null;
    } catch {
      throw new Error("Payload is not valid JSON.");
    }
    return {
      expression: form.expression.trim(),
      timezone: form.timezone.trim() || "UTC",
      overlap: form.overlap,
      flexible_window_minutes: Number(form.flexible_window_minutes) || 0,
      description: form.description.trim() || null,
      job: { payload, max_attempts: Number(form.max_attempts) || 3 },
    };
  };
  useEffect(() => {
    let live = true;
    const timer = setTimeout(async () => {
      try {
        const previewed = await api("PATCH", `${schedulePath(name)}?dry_run=true`, changes());
        if (live) setPreview({ firings: previewed.next_firings, error: null });
      } catch (failure) {
        if (live) setPreview({ firings: [], error: failure });
      }
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [form.expression, form.timezone, form.payload, form.max_attempts, form.overlap, form.flexible_window_minutes, form.description]);
  const submit = async (event) => {
    event.preventDefault();
    setError(null);
    setBusy(true);
    try {
      await api("PATCH", schedulePath(name), changes());
      onSaved();
    } catch (failure) {
      setError(failure);
    } finally {
      setBusy(false);
    }
  };
  return h(
    Card,
    { title: "Edit schedule", className: "edit-schedule" },
    h(
      "form",
      { class: "form-grid", onSubmit: submit },
      h(
        "label",
        null,
        "Expression",
        h("input", { ...field("expression"), required: true, class: "mono", autocomplete: "off" }),
        h("span", { class: "hint" }, describeExpression(form.expression, form.timezone || "UTC")),
      ),
      h("label", null, "Time zone (IANA)", h("input", { ...field("timezone"), autocomplete: "off" })),
      h("label", null, "Max attempts", h("input", { ...field("max_attempts"), type: "number", min: 1, max: 25 })),
      h("label", null, "While a run is still going", overlapSelect(field("overlap"))),
      h("label", null, "Flexible window (minutes)", h("input", { ...field("flexible_window_minutes"), type: "number", min: 0, max: 1440 })),
      h("label", null, "Description", h("input", { ...field("description"), maxLength: 512, autocomplete: "off" })),
      h("label", { class: "span-2" }, "Payload (JSON)", h("textarea", { ...field("payload"), rows: 4, class: "mono", spellcheck: false })),
      h(
        "div",
        { class: "span-2 preview", "aria-live": "polite" },
        h("h3", null, "Next firings if saved"),
        preview.error
          ? h(ErrorBox, { error: preview.error })
          : preview.firings === null
            ? h("p", { class: "muted" }, "Not forecast for this expression.")
            : (preview.firings || []).length
              ? h(Firings, { firings: preview.firings })
              : h("p", { class: "muted" }, schedule.state === "paused" ? "None while it is paused." : "No upcoming firings."),
      ),
      error ? h("div", { class: "span-2" }, h(ErrorBox, { error })) : null,
      h("div", { class: "span-2" }, h("button", { type: "submit", class: "btn btn-primary", disabled: busy }, busy ? "Saving…" : "Save changes")),
    ),
  );
}
