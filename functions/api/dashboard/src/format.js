// Dates in the viewer's own time zone, numbers and JSON for people.

export const timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
const timeOnly = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
const number = new Intl.NumberFormat();

// The API gives epoch seconds (enqueued_at, started_at, finished_at) or ISO 8601 text (scheduled_for).
export function toDate(value) {
  if (value === null || value === undefined || value === "") return null;
  const date = typeof value === "number" ? new Date(value < 1e12 ? value * 1000 : value) : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

export function formatDateTime(value) {
  const date = toDate(value);
  return date ? dateTime.format(date) : "—";
}

export function formatTime(value) {
  const date = toDate(value);
  return date ? timeOnly.format(date) : "—";
}

export function formatRelative(value, now = Date.now()) {
  const date = toDate(value);
  if (!date) return "";
  const seconds = Math.round((date.getTime() - now) / 1000);
  const abs = Math.abs(seconds);
  if (abs < 60) return relative.format(seconds, "second");
  if (abs < 3600) return relative.format(Math.round(seconds / 60), "minute");
  if (abs < 86400) return relative.format(Math.round(seconds / 3600), "hour");
  return relative.format(Math.round(seconds / 86400), "day");
}

export function formatNumber(value) {
  return value === null || value === undefined ? "—" : number.format(value);
}

export function formatMs(value) {
  if (value === null || value === undefined) return "—";
  if (value < 1000) return `${number.format(Math.round(value))} ms`;
  return `${(value / 1000).toFixed(value < 10000 ? 2 : 1)} s`;
}

export function formatSeconds(value) {
  if (value === null || value === undefined) return "—";
  if (value < 120) return `${Math.round(value)} s`;
  if (value < 7200) return `${Math.round(value / 60)} min`;
  return `${(value / 3600).toFixed(1)} h`;
}

export function prettyJson(value) {
  if (value === undefined) return "";
  return JSON.stringify(value, null, 2);
}

// A datetime-local input's value (the viewer's wall clock) as ISO 8601 UTC for the API.
export function localInputToIso(value) {
  if (!value) return "";
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}
