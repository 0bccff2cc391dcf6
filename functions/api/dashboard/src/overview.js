// Overview: counts by status, a live per-minute chart of the last hour, enqueue-to-run percentiles.

import { h } from "preact";
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import { api } from "./api.js";
import { formatMs, formatNumber, formatTime, toDate } from "./format.js";
import { Card, Empty, Page, PollState, STATUSES, STATUS_HINTS, fact, usePoll } from "./ui.js";

const REFRESH_MS = 10000;
const SERIES = [
  { key: "enqueued", label: "Enqueued", stroke: "#2563eb", fill: "rgba(37, 99, 235, 0.08)" },
  { key: "succeeded", label: "Succeeded", stroke: "#16a34a", fill: "rgba(22, 163, 74, 0.08)" },
  { key: "failed", label: "Failed", stroke: "#dc2626", fill: "rgba(220, 38, 38, 0.08)" },
];

export function Overview({ navigate }) {
  const stats = usePoll(() => api("GET", "/v1/stats?window_seconds=3600"), [], REFRESH_MS);
  const data = stats.data;
  return h(
    Page,
    { title: "Overview", lead: "The last hour, refreshed every 10 seconds." },
    h(PollState, { poll: stats }),
    data ? h(Counts, { counts: data.counts || {}, navigate }) : null,
    data
      ? h(
          "div",
          { class: "grid-2" },
          h(Card, { title: "Jobs per minute", className: "chart-card" }, h(Throughput, { perMinute: data.per_minute || [] })),
          h(Latency, { latency: data.enqueue_to_run_ms || {}, source: data.source }),
        )
      : null,
  );
}

function Counts({ counts, navigate }) {
  return h(
    "div",
    { class: "counts", "data-testid": "counts" },
    STATUSES.map((status) =>
      h(
        "a",
        {
          class: `count count-${status}`,
          href: `#/jobs?status=${status}`,
          title: `${STATUS_HINTS[status]}: show these jobs`,
          onClick: (event) => {
            event.preventDefault();
            navigate(`/jobs?status=${status}`);
          },
        },
        h("span", { class: "count-value", "data-testid": `count-${status}` }, formatNumber(counts[status] || 0)),
        h("span", { class: "count-label" }, status),
      ),
    ),
  );
}

function Latency({ latency, source }) {
  return h(
    Card,
    { title: "Enqueue to run" },
    h(
      "dl",
      { class: "figures" },
      fact("p50", formatMs(latency.p50), "p50"),
      fact("p99", formatMs(latency.p99), "p99"),
      fact("jobs measured", formatNumber(latency.count)),
    ),
    h("p", { class: "muted small" }, "From when a job was accepted to when a worker first started it, delays included."),
    source ? h("details", { class: "source small" }, h("summary", null, "How this is measured"), h("p", { class: "muted" }, source)) : null,
  );
}

function Throughput({ perMinute }) {
  const box = useRef(null);
  const plot = useRef(null);
  const rows = perMinute
    .map((row) => ({ ...row, at: toDate(row.minute) }))
    .filter((row) => row.at)
    .sort((a, b) => a.at - b.at);
  const columns = [rows.map((row) => row.at.getTime() / 1000), ...SERIES.map((s) => rows.map((row) => row[s.key] || 0))];

  useEffect(() => {
    if (!box.current || !rows.length) return undefined;
    const options = {
      width: box.current.clientWidth || 600,
      height: 240,
      legend: { live: true },
      cursor: { drag: { x: false, y: false } },
      scales: { y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
      axes: [
        { stroke: "#64748b", grid: { stroke: "#e2e8f0" }, space: 90, values: (_u, ticks) => ticks.map((t) => formatTime(t)) },
        { stroke: "#64748b", grid: { stroke: "#e2e8f0" }, size: 48 },
      ],
      series: [
        { label: "Minute", value: (_u, t) => (t === null ? "—" : formatTime(t)) },
        ...SERIES.map((s) => ({ label: s.label, stroke: s.stroke, fill: s.fill, width: 2, points: { show: false } })),
      ],
    };
    if (!plot.current) {
      plot.current = new uPlot(options, columns, box.current);
    } else {
      plot.current.setData(columns);
    }
    return undefined;
  });

  useEffect(() => {
    if (!box.current) return undefined;
    const observer = new ResizeObserver(() => {
      if (plot.current && box.current) plot.current.setSize({ width: box.current.clientWidth, height: 240 });
    });
    observer.observe(box.current);
    return () => {
      observer.disconnect();
      if (plot.current) plot.current.destroy();
      plot.current = null;
    };
  }, []);

  // The chart's box is never given children by Preact: uPlot owns what is inside it.
  return h(
    "div",
    null,
    h("div", {
      ref: box,
      class: rows.length ? "chart" : "chart chart-empty",
      role: "img",
      "aria-label": "Jobs enqueued, succeeded and failed per minute, last hour",
    }),
    rows.length
      ? null
      : h(Empty, { title: "No jobs in the last hour." }, "Enqueue one (POST /v1/jobs) and it shows here within a minute."),
  );
}
