/**
 * The shapes the SDK sends and receives (as the Python SDK's client/types.py).
 *
 * What it sends is typed from the API's OpenAPI document (schema.ts, generated at build time); what the
 * API answers is declared there only as JSON objects, so those shapes are written here.
 */

import type { CorralError } from "./errors.js";
import type { components, paths } from "./schema.js";

type Schemas = components["schemas"];

/** One job to enqueue: the body of POST /v1/jobs. */
export type JobSpec = Schemas["JobIn"];
/** A job enqueued when another ends (on_success, on_failure) or a batch does (on_complete, on_success). */
export type Callback = Schemas["OnSuccessIn"];
export type Concurrency = Schemas["ConcurrencyIn"];
/** At most `limit` of the tenant's jobs with `key` start in any window of `period_seconds`; the rest wait their turn. */
export type Throttle = Schemas["ThrottleIn"];
/**
 * The tenant's jobs with `key` arriving within `period_seconds` of each other run once, the last one's payload,
 * `period_seconds` after it (at most `max_wait_seconds` after the first); the others end `skipped`, naming it.
 */
export type Debounce = Schemas["DebounceIn"];
/** POST /v1/schedules. */
export type ScheduleSpec = Schemas["ScheduleIn"];
/** PATCH /v1/schedules/{name}: a field given as null is cleared (start, end, description). */
export type ScheduleChanges = Schemas["ScheduleChangesIn"];
/** POST /v1/batches. */
export type BatchSpec = Schemas["BatchIn"];
/** POST /v1/jobs:retry: which dead jobs to run again. */
export type DeadJobFilter = Partial<Schemas["BulkRetryIn"]>;
/** POST /v1/events. */
export type EventSpec = Schemas["EventIn"];
/** POST /v1/tokens/{id}:complete. */
export type TokenCompleted = Schemas["TokenCompletedOut"];
/** One step of a durable job (`context.step`, `sleep`, `wait_for_event`, ...), as its view shows it. */
export type Step = Schemas["StepOut"];

export type Status = Schemas["Status"];
export const FINISHED: readonly Status[] = ["succeeded", "dead", "cancelled", "skipped"];

/** A time as the API's filters take it: ISO 8601 (a Date, or epoch seconds, is converted). */
export type When = string | Date | number;

type JobsQuery = NonNullable<paths["/v1/jobs"]["get"]["parameters"]["query"]>;

/** GET /v1/jobs's filters; `pageSize` is its `limit`. */
export interface JobFilters {
  status?: JobsQuery["status"];
  type?: string;
  schedule?: string;
  since?: When;
  until?: When;
  pageSize?: number;
  cursor?: string;
}

/** GET /v1/jobs/{id}; list items leave out `result` and `payload`. */
export interface Job {
  id: string;
  type: string | null;
  status: Status;
  attempts: number;
  error: string | null;
  enqueued_at: number | null;
  started_at: number | null;
  finished_at: number | null;
  result?: unknown;
  payload?: unknown;
  max_attempts?: number | null;
  timeout_seconds?: number;
  schedule?: string;
  scheduled_for?: string;
  trigger?: "schedule" | "manual" | "backfill"; // a schedule's run: what started it
  reason?: string; // a skipped run: why it did not run
  cancelled_at?: number;
  retries?: number;
  concurrency?: Concurrency;
  batch?: string; // the batch it belongs to
  parent?: Record<string, string>; // a callback's: {kind: "job" | "batch", id, callback}
  started_by?: { trigger: string; event: string }; // a job an event trigger started
  callbacks?: Record<string, string | null>; // its callbacks: kind -> the callback job's id once enqueued
  priority?: "high" | "low"; // its lane, once a worker has seen it; absent: default
  waiting_for?: Record<string, unknown>; // a waiting durable job's wait: {kind, step, ...}
  steps?: Step[]; // a durable job's steps, in the order they first ran
}

/** One page of GET /v1/jobs. `note` says what the listing cannot show (jobs no worker has seen yet). */
export interface JobPage {
  jobs: Job[];
  next_cursor: string | null;
  note: string;
}

/** POST /v1/jobs, POST /v1/jobs/{id}/retry. */
export interface Accepted {
  id: string;
  /** duplicate: `id` is the job holding its unique key; nothing was enqueued. */
  status: Status | "duplicate";
}

/** One job of `enqueueMany`, in the order given: its id, or the error that refused it. */
export interface EnqueueOutcome {
  index: number;
  id: string | null;
  error: CorralError | null;
  /** `id` is the job holding its unique key: nothing was enqueued. */
  duplicate?: boolean;
}

/** POST /v1/jobs:retry. While `more`, call again. */
export interface RetriedMany {
  retried: number;
  ids: string[];
  more: boolean;
  skipped: Array<{ id: string; reason: string }>;
}

export interface Percentiles {
  p50: number | null;
  p99: number | null;
  count: number;
}

/** GET /v1/stats. */
export interface Stats {
  window_seconds: number;
  counts: Record<string, number>;
  per_minute: Array<Record<string, unknown>>;
  enqueue_to_run_ms: Percentiles;
  source: string;
  [more: string]: unknown;
}

/** One of a schedule's runs (GET /v1/schedules/{name}), newest first. */
export interface ScheduleRun {
  id: string;
  status: Status;
  scheduled_for: string;
  trigger: "schedule" | "manual" | "backfill";
  reason?: string; // skipped: why
}

export interface Schedule {
  name: string;
  expression: string;
  timezone: string;
  job: Record<string, unknown>;
  flexible_window_minutes: number;
  start?: string | null;
  end?: string | null;
  overlap: "allow" | "skip";
  description?: string | null;
  state: "enabled" | "paused";
  paused_at?: string | null;
  note?: string | null; // given at pause
  firings_per_minute?: number; // what it holds of the tenant's max_firings_per_minute
  created_at: string;
  updated_at?: string | null;
  next_firings?: string[] | null;
  runs?: ScheduleRun[];
}

/** One page of GET /v1/schedules, by name. */
export interface SchedulePage {
  schedules: Schedule[];
  next_cursor: string | null;
}

/** POST /v1/triggers: each event `event` whose data holds `match` starts `job` (a POST /v1/jobs body). */
export type TriggerSpec = Schemas["EventTriggerIn"];

/** An event trigger. */
export interface Trigger {
  name: string;
  event: string;
  match: Record<string, unknown> | null;
  job: Record<string, unknown>;
  created_at: number;
}

/** One page of GET /v1/triggers, by name. */
export interface TriggerPage {
  triggers: Trigger[];
  next_cursor: string | null;
}

/** POST /v1/schedules/{name}:trigger: its run, queued or skipped (`reason`: why). */
export interface Triggered {
  id: string;
  status: "queued" | "skipped";
  reason?: string;
}

/** POST /v1/schedules/{name}:backfill: one run per firing, oldest first. */
export interface BackfilledRun {
  id: string;
  scheduled_for: string;
}

export type BatchStatus = "running" | "succeeded" | "completed_with_failures" | "cancelled";
export const BATCH_FINISHED: readonly BatchStatus[] = ["succeeded", "completed_with_failures", "cancelled"];

/** GET /v1/batches/{id}: its counts, and its callbacks' job ids once enqueued (null until then). */
export interface Batch {
  id: string;
  status: BatchStatus;
  total: number;
  pending: number;
  succeeded: number;
  dead: number;
  cancelled: number;
  created_at: number;
  finished_at: number | null;
  callbacks: Record<string, string | null>;
  description?: string;
  cancelled_at?: number;
}

/** POST /v1/batches. */
export interface BatchAccepted {
  id: string;
  status: "running";
  total: number;
}

/** One page of GET /v1/batches, newest first. */
export interface BatchPage {
  batches: Batch[];
  next_cursor: string | null;
}
