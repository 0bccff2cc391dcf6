/**
 * `Corral`: the API client (as the Python SDK's client/corral.py). Every method resolves to what the API
 * answered or rejects with a `CorralError` (errors.ts).
 */

import { Events, Tokens } from "./durable.js";
import { ConnectionFailed, CorralError, QuotaExceeded, WaitTimeout, fromAnswer } from "./errors.js";
import {
  DEFAULT_RETRY_POLICY,
  backoffSeconds,
  retryableFailure,
  retryableStatus,
  retryAfterSeconds,
  type RetryPolicy,
} from "./retrying.js";
import {
  BATCH_FINISHED,
  FINISHED,
  type Accepted,
  type BackfilledRun,
  type Batch,
  type BatchAccepted,
  type BatchPage,
  type BatchSpec,
  type BatchStatus,
  type DeadJobFilter,
  type EnqueueOutcome,
  type Job,
  type JobFilters,
  type JobPage,
  type JobSpec,
  type RetriedMany,
  type Schedule,
  type ScheduleChanges,
  type SchedulePage,
  type ScheduleSpec,
  type Stats,
  type Status,
  type Triggered,
  type When,
} from "./types.js";
import { Triggers } from "./triggers.js";

export const BATCH_SIZE = 100; // POST /v1/jobs:batch takes at most this many jobs

export interface CorralOptions {
  apiUrl: string;
  apiKey: string;
  /** Per request, in milliseconds (default 10 s). */
  timeoutMs?: number;
  /** How the SDK retries; `{ retries: 0 }` never does. */
  retry?: Partial<RetryPolicy>;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

/** Options of one job beside its type and payload (as POST /v1/jobs takes them). */
export type JobOptions = Omit<JobSpec, "type" | "payload">;

interface Call {
  /** Safe to send twice: a GET, or a write the API answers the same way when repeated (a key, a cancel). */
  idempotent: boolean;
  expect?: readonly number[];
  body?: unknown;
  query?: Query;
}

export type Query = Record<string, string | number | null | undefined>;

export class Corral {
  readonly apiUrl: string;
  readonly policy: RetryPolicy;
  readonly triggers: Triggers;
  readonly schedules: Schedules;
  readonly batches: Batches;
  readonly events: Events;
  readonly tokens: Tokens;
  readonly #apiKey: string;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;

  constructor(options: CorralOptions) {
    if (!options.apiUrl || !options.apiKey) {
      throw new CorralError("apiUrl and apiKey are required", { code: "not_configured" });
    }
    this.apiUrl = options.apiUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.triggers = new Triggers(this);
    this.schedules = new Schedules(this);
    this.batches = new Batches(this);
    this.events = new Events(this);
    this.tokens = new Tokens(this);
  }

  /** A client for CORRAL_API_URL with CORRAL_API_KEY (Node; options as the constructor's). */
  static fromEnv(options: Omit<CorralOptions, "apiUrl" | "apiKey"> = {}): Corral {
    const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
    const missing = ["CORRAL_API_URL", "CORRAL_API_KEY"].filter((name) => !env[name]);
    if (missing.length) throw new CorralError(`set ${missing.join(" and ")}`, { code: "not_configured" });
    return new Corral({ ...options, apiUrl: env.CORRAL_API_URL!, apiKey: env.CORRAL_API_KEY! });
  }

  // Transport ----------------------------------------------------------------------------------------

  /** A request with retries (retrying.ts): its JSON answer, or a CorralError. */
  async call<T>(method: string, path: string, { idempotent, expect = [200], body, query }: Call): Promise<T> {
    const url = new URL(this.apiUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    for (let retries = 0; ; retries++) {
      let response: Response;
      try {
        response = await this.#fetch(url, {
          method,
          headers: {
            Authorization: `Bearer ${this.#apiKey}`,
            ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          signal: AbortSignal.timeout(this.#timeoutMs),
        });
      } catch (error) {
        if (retries >= this.policy.retries || !retryableFailure(error, idempotent)) {
          throw new ConnectionFailed(`no answer from ${url.origin}: ${describe(error)}`, { code: "connection_error" });
        }
        await sleep(backoffSeconds(this.policy, retries + 1));
        continue;
      }
      const text = await response.text();
      const answer = text ? parsed(text) : undefined;
      if (expect.includes(response.status)) return answer as T;
      const retryAfter = retryAfterSeconds(response.headers.get("Retry-After"));
      const refused = fromAnswer(response.status, answer, retryAfter);
      const tooLong = retryAfter !== undefined && retryAfter > this.policy.maxRetryAfterSeconds;
      if (
        retries >= this.policy.retries ||
        tooLong ||
        !retryableStatus(response.status, idempotent) ||
        refused instanceof QuotaExceeded // passes only once the tenant holds less
      ) {
        throw refused;
      }
      await sleep(backoffSeconds(this.policy, retries + 1, retryAfter));
    }
  }

  // Jobs ---------------------------------------------------------------------------------------------

  /**
   * Enqueue one job; its id. An idempotency key is made per call unless `options` has one, so the SDK's
   * retries never enqueue it twice. Options: delay_seconds, run_at, max_attempts, timeout_seconds,
   * concurrency ({key, limit}), priority ("high" | "default" | "low": its lane), on_success / on_failure (a job enqueued once this one succeeded / is dead; its
   * payload gets `parent`, this job's view, with this job's payload only if it asks: include_parent_payload).
   */
  async enqueue(type: string, payload?: unknown, options: JobOptions = {}): Promise<string> {
    return (await this.enqueueJob({ ...options, type, payload })).id;
  }

  enqueueJob(spec: JobSpec): Promise<Accepted> {
    return this.call("POST", "/v1/jobs", { idempotent: true, expect: [202, 200], body: withKey(spec) });
  }

  /**
   * Enqueue any number of jobs, 100 a request; one outcome per job, in order. A job the API refuses has
   * its error in its outcome and costs the others nothing; jobs it could not queue for the moment
   * ("unavailable") are sent again with the same key. `onChunk(n)` follows each request (progress).
   */
  async enqueueMany(jobs: Iterable<JobSpec>, options: { onChunk?: (settled: number) => void } = {}): Promise<EnqueueOutcome[]> {
    const specs = [...jobs].map(withKey);
    const outcomes: EnqueueOutcome[] = [];
    for (let start = 0; start < specs.length; start += BATCH_SIZE) {
      const chunk = specs.slice(start, start + BATCH_SIZE);
      outcomes.push(...(await this.#enqueueChunk(chunk, start)));
      options.onChunk?.(chunk.length);
    }
    return outcomes;
  }

  async #enqueueChunk(chunk: JobSpec[], firstIndex: number): Promise<EnqueueOutcome[]> {
    const settled = new Map<number, EnqueueOutcome>();
    let pending = chunk.map((_, index) => index);
    for (let retry = 0; pending.length > 0; retry++) {
      const answer = await this.call<{ results: Array<Record<string, string>> }>("POST", "/v1/jobs:batch", {
        idempotent: true,
        expect: [202, 207],
        body: { jobs: pending.map((index) => chunk[index]) },
      });
      const unavailable: number[] = [];
      answer.results.forEach((result, position) => {
        const index = pending[position]!;
        if (result.status === "queued" || result.status === "duplicate") {
          const duplicate = result.status === "duplicate"; // id: the job holding its unique key
          settled.set(index, { index: firstIndex + index, id: result.id ?? null, error: null, duplicate });
          return;
        }
        const error = fromAnswer(result.error === "unavailable" ? 503 : 422, result);
        settled.set(index, { index: firstIndex + index, id: null, error });
        if (result.error === "unavailable") unavailable.push(index);
      });
      if (retry >= this.policy.retries) break;
      pending = unavailable;
      if (pending.length > 0) await sleep(backoffSeconds(this.policy, retry + 1));
    }
    return chunk.map((_, index) => settled.get(index)!);
  }

  get(jobId: string): Promise<Job> {
    return this.call("GET", `/v1/jobs/${encodeURIComponent(jobId)}`, { idempotent: true });
  }

  /** GET /v1/jobs page by page, newest first, following `next_cursor` until the last page. */
  pages(filters: JobFilters = {}): AsyncGenerator<JobPage> {
    const { status, type, schedule, pageSize } = filters;
    const query = { status, type, schedule, since: when(filters.since), until: when(filters.until), limit: pageSize };
    return pagesOf(this, "/v1/jobs", query, filters.cursor, (answer: JobPage) => ({
      jobs: answer.jobs,
      next_cursor: answer.next_cursor ?? null,
      note: answer.note ?? "",
    }));
  }

  /** The tenant's jobs, newest first, across pages: `for await (const job of corral.list({ status: "dead" }))`. */
  async *list(filters: JobFilters & { maxItems?: number } = {}): AsyncGenerator<Job> {
    yield* upTo(filters.maxItems, items(this.pages(filters), (page) => page.jobs));
  }

  /**
   * Poll (growing gently to 2 s between polls) until the job reaches one of `statuses` (default: finished);
   * rejects with WaitTimeout after `timeoutMs`.
   */
  async wait(
    jobId: string,
    options: { timeoutMs?: number; pollMs?: number; statuses?: readonly Status[] } = {},
  ): Promise<Job> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const wanted = options.statuses ?? FINISHED;
    const deadline = Date.now() + timeoutMs;
    let interval = options.pollMs ?? 250;
    for (;;) {
      const job = await this.get(jobId);
      if (wanted.includes(job.status)) return job;
      if (Date.now() > deadline) {
        throw new WaitTimeout(`job ${jobId} still ${job.status} after ${Math.round(timeoutMs / 1000)} s`, job);
      }
      await sleep(Math.min(interval, Math.max(0, deadline - Date.now()) + 10) / 1000);
      interval = Math.min(interval * 1.5, 2_000);
    }
  }

  /** Cancel a job that has not started; repeating it is harmless. A running or finished job: Conflict. */
  cancel(jobId: string): Promise<Job> {
    return this.call("POST", `/v1/jobs/${encodeURIComponent(jobId)}/cancel`, { idempotent: true });
  }

  /** Run a dead or cancelled job again with a fresh attempt budget (Conflict if it is neither). Not retried. */
  retry(jobId: string): Promise<Accepted> {
    return this.call("POST", `/v1/jobs/${encodeURIComponent(jobId)}/retry`, { idempotent: false, expect: [202] });
  }

  /** Retry the tenant's dead jobs matching the filter, up to the API's bound a call; `more`: call again. Not retried. */
  retryDead(filter: { type?: string; since?: When; limit?: number } = {}): Promise<RetriedMany> {
    const body: DeadJobFilter = { type: filter.type, since: when(filter.since), limit: filter.limit };
    return this.call("POST", "/v1/jobs:retry", { idempotent: false, body: defined(body) });
  }

  /** Counts by status, per-minute throughput and enqueue-to-run percentiles over the last `windowSeconds`. */
  stats(windowSeconds?: number): Promise<Stats> {
    return this.call("GET", "/v1/stats", { idempotent: true, query: { window_seconds: windowSeconds } });
  }
}

/** `corral.schedules`: recurring and one-time jobs (EventBridge Scheduler expressions). */
export class Schedules {
  readonly #corral: Corral;

  constructor(corral: Corral) {
    this.#corral = corral;
  }

  /**
   * E.g. `create({ name: "nightly", expression: "cron(0 2 * * ? *)", timezone: "Europe/Paris", job: { type: "report" } })`.
   * Not retried (a repeat would answer 409: the name is taken). QuotaExceeded at the tenant's quota.
   */
  create(spec: ScheduleSpec): Promise<Schedule> {
    return this.#corral.call("POST", "/v1/schedules", { idempotent: false, expect: [201], body: spec });
  }

  /** GET /v1/schedules page by page (by name), following `next_cursor` until the last page. */
  pages(options: { pageSize?: number; cursor?: string } = {}): AsyncGenerator<SchedulePage> {
    const query = { limit: options.pageSize };
    return pagesOf(this.#corral, "/v1/schedules", query, options.cursor, (answer: SchedulePage) => ({
      schedules: answer.schedules,
      next_cursor: answer.next_cursor ?? null,
    }));
  }

  /** The tenant's schedules by name, across pages. */
  async *list(options: { pageSize?: number; maxItems?: number } = {}): AsyncGenerator<Schedule> {
    yield* upTo(options.maxItems, items(this.pages(options), (page) => page.schedules));
  }

  /** The schedule and its recent runs, newest first. */
  get(name: string): Promise<Schedule> {
    return this.#corral.call("GET", at(name), { idempotent: true });
  }

  /** Change some of its fields; InvalidRequest names a bad one, and the schedule stays as it was. */
  update(name: string, changes: ScheduleChanges): Promise<Schedule> {
    return this.#corral.call("PATCH", at(name), { idempotent: true, body: changes });
  }

  /** Delete it (its runs stay). NotFound if there is none. */
  async delete(name: string): Promise<void> {
    await this.#corral.call("DELETE", at(name), { idempotent: true });
  }

  /** Stop it firing until `resume` (it can still be triggered); `note` says why. */
  pause(name: string, note?: string): Promise<Schedule> {
    return this.#corral.call("POST", `${at(name)}:pause`, { idempotent: true, body: note === undefined ? {} : { note } });
  }

  resume(name: string): Promise<Schedule> {
    return this.#corral.call("POST", `${at(name)}:resume`, { idempotent: true });
  }

  /**
   * Run its job now, as a run of the schedule: queued, or skipped (under overlap "skip" while a run is live).
   * Carries an idempotency key (one is made per call), so the SDK's retries never run it twice.
   */
  trigger(name: string, options: { idempotencyKey?: string } = {}): Promise<Triggered> {
    return this.#corral.call("POST", `${at(name)}:trigger`, {
      idempotent: true,
      expect: [200, 202],
      body: { idempotency_key: options.idempotencyKey ?? newIdempotencyKey() },
    });
  }

  /**
   * Run its firings from `start` (included) to `end` (excluded, at the latest now) now, at most 1,000, oldest
   * first. Each run has its firing's id, so a repeated backfill never runs one twice.
   */
  async backfill(name: string, start: When, end: When): Promise<BackfilledRun[]> {
    const answer = await this.#corral.call<{ runs: BackfilledRun[] }>("POST", `${at(name)}:backfill`, {
      idempotent: true,
      expect: [202],
      body: { start: when(start), end: when(end) },
    });
    return answer.runs;
  }
}

/** `corral.batches`: jobs enqueued together and counted as one, with callbacks when they have ended. */
export class Batches {
  readonly #corral: Corral;

  constructor(corral: Corral) {
    this.#corral = corral;
  }

  /**
   * Enqueue up to 1,000 jobs as a batch. `on_complete` runs once every job has ended, `on_success` once all
   * succeeded. One invalid job refuses the whole batch (InvalidRequest naming `jobs[i].field`). Carries an
   * idempotency key (one is made per call), so a retry never makes a second batch.
   */
  create(spec: BatchSpec): Promise<BatchAccepted> {
    return this.#corral.call("POST", "/v1/batches", { idempotent: true, expect: [201], body: withKey(spec) });
  }

  get(batchId: string): Promise<Batch> {
    return this.#corral.call("GET", `/v1/batches/${encodeURIComponent(batchId)}`, { idempotent: true });
  }

  /** The ids of the batch's jobs, in the order they were given. */
  async jobs(batchId: string): Promise<string[]> {
    const path = `/v1/batches/${encodeURIComponent(batchId)}/jobs`;
    return (await this.#corral.call<{ jobs: string[] }>("GET", path, { idempotent: true })).jobs;
  }

  /** GET /v1/batches page by page, newest first, following `next_cursor` until the last page. */
  pages(options: { status?: BatchStatus; pageSize?: number; cursor?: string } = {}): AsyncGenerator<BatchPage> {
    const query = { status: options.status, limit: options.pageSize };
    return pagesOf(this.#corral, "/v1/batches", query, options.cursor, (answer: BatchPage) => ({
      batches: answer.batches,
      next_cursor: answer.next_cursor ?? null,
    }));
  }

  /** The tenant's batches, newest first (optionally of one status). */
  async *list(options: { status?: BatchStatus; pageSize?: number; maxItems?: number } = {}): AsyncGenerator<Batch> {
    yield* upTo(options.maxItems, items(this.pages(options), (page) => page.batches));
  }

  /** Cancel its jobs that have not started; it runs no callback. Repeating it is harmless. */
  cancel(batchId: string): Promise<Batch> {
    return this.#corral.call("POST", `/v1/batches/${encodeURIComponent(batchId)}/cancel`, { idempotent: true });
  }

  /** Poll until the batch has ended with no job pending; WaitTimeout after `timeoutMs`. */
  async wait(batchId: string, options: { timeoutMs?: number; pollMs?: number } = {}): Promise<Batch> {
    const timeoutMs = options.timeoutMs ?? 120_000;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const batch = await this.get(batchId);
      if (BATCH_FINISHED.includes(batch.status) && batch.pending === 0) return batch;
      if (Date.now() > deadline) {
        const still = `still ${batch.status} (${batch.pending} pending) after ${Math.round(timeoutMs / 1000)} s`;
        throw new WaitTimeout(`batch ${batchId} ${still}`, batch);
      }
      await sleep((options.pollMs ?? 500) / 1000);
    }
  }
}

function newIdempotencyKey(): string {
  return `sdk-ts-${globalThis.crypto.randomUUID()}`;
}

function withKey<T extends { idempotency_key?: string | null }>(spec: T): T {
  return spec.idempotency_key ? spec : { ...spec, idempotency_key: newIdempotencyKey() };
}

function at(schedule: string): string {
  return `/v1/schedules/${encodeURIComponent(schedule)}`;
}

function when(value: When | undefined): string | undefined {
  if (value === undefined || typeof value === "string") return value;
  return (typeof value === "number" ? new Date(value * 1000) : value).toISOString();
}

function defined<T extends object>(body: T): Partial<T> {
  return Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/**
 * Every listing's pager (as Stripe's `autoPagingIter`): GET `path` with `query`, then again with each answer's
 * `next_cursor` until an answer has none; `page` reads an answer into its page. Nothing is asked before the
 * first page is wanted.
 */
export async function* pagesOf<P extends { next_cursor?: string | null }>(
  corral: Corral,
  path: string,
  query: Query,
  cursor: string | undefined,
  page: (answer: P) => P,
): AsyncGenerator<P> {
  for (;;) {
    const answer = await corral.call<P>("GET", path, { idempotent: true, query: { ...query, cursor } });
    yield page(answer);
    if (!answer.next_cursor) return;
    cursor = answer.next_cursor;
  }
}

export async function* items<P, T>(pages: AsyncIterable<P>, of: (page: P) => T[]): AsyncGenerator<T> {
  for await (const page of pages) yield* of(page);
}

/** The first `maxItems` items (all when undefined), without fetching a page beyond them. */
export async function* upTo<T>(maxItems: number | undefined, all: AsyncGenerator<T>): AsyncGenerator<T> {
  if (maxItems !== undefined && maxItems <= 0) return;
  let given = 0;
  for await (const item of all) {
    yield item;
    if (maxItems !== undefined && ++given >= maxItems) return;
  }
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text.slice(0, 500) };
  }
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } }).cause;
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return cause?.code ? `${message} (${cause.code})` : message;
}

function sleep(seconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, seconds * 1000));
}
