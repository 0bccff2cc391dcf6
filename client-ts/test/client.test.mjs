// Unit tests of corral-client (node --test) against a stub API on 127.0.0.1: idempotency keys, retries and
// Retry-After, what is never sent twice, errors by kind, cursors, waiting, bulk outcomes.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { test } from "node:test";

import {
  Conflict,
  ConnectionFailed,
  Corral,
  CorralError,
  Forbidden,
  InvalidRequest,
  NotFound,
  PermissionDenied,
  QuotaExceeded,
  RateLimited,
  ServerError,
  Unauthorized,
  Unavailable,
  WaitTimeout,
} from "../dist/index.js";
import { stubApi } from "./stub.mjs";

const FAST = { retries: 3, baseSeconds: 0.001, capSeconds: 0.01 };

// What the stub answers and what it received (stub.mjs).
const { script, seen, url } = stubApi();

function client(options = {}) {
  return new Corral({ apiUrl: url() + "/", apiKey: "ck_test", retry: FAST, ...options });
}

const dropConnection = (request) => request.socket.destroy();
const neverAnswer = () => {};

test("enqueue sends the job with a fresh idempotency key per call, and the API key as a bearer token", async () => {
  const corral = client();
  script.push([202, { id: "jt1", status: "queued" }], [202, { id: "jt2", status: "queued" }], [202, { id: "jt3", status: "queued" }]);

  assert.equal(await corral.enqueue("echo", { a: 1 }, { max_attempts: 2 }), "jt1");
  await corral.enqueue("echo", { a: 1 });
  await corral.enqueue("echo", null, { idempotency_key: "mine" });

  const [first, second, third] = seen;
  assert.equal(first.method, "POST");
  assert.equal(first.url, "/v1/jobs");
  assert.equal(first.headers.authorization, "Bearer ck_test");
  assert.equal(first.headers["content-type"], "application/json");
  const { idempotency_key: key, ...job } = first.body;
  assert.deepEqual(job, { type: "echo", payload: { a: 1 }, max_attempts: 2 });
  assert.match(key, /^sdk-ts-[0-9a-f-]{36}$/);
  assert.notEqual(key, second.body.idempotency_key);
  assert.equal(third.body.idempotency_key, "mine");
});

test("a 503 then a 429 are retried with the same key, waiting at least Retry-After", async () => {
  const corral = client();
  script.push(
    [503, { error: "unavailable", message: "the store" }],
    [429, { error: "rate_limited", message: "slow down" }, { "Retry-After": "1" }],
    [202, { id: "jt1", status: "queued" }],
  );

  const started = Date.now();
  assert.equal(await corral.enqueue("echo"), "jt1");

  assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms, Retry-After said 1 s`);
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen.map((request) => request.body.idempotency_key)).size, 1);
});

test("Retry-After as an HTTP date is waited for too", async () => {
  const corral = client();
  const inASecond = new Date(Date.now() + 2000).toUTCString(); // whole seconds: between 1 and 2 s from now
  script.push([503, { error: "unavailable", message: "busy" }, { "Retry-After": inASecond }], [200, { id: "jt1", status: "queued" }]);

  const started = Date.now();
  await corral.get("jt1");

  assert.ok(Date.now() - started >= 900, `waited ${Date.now() - started} ms`);
  assert.equal(seen.length, 2);
});

test("calls without an idempotency key are never sent twice once they may have arrived", async () => {
  const corral = client();
  for (const status of [429, 502, 503, 504]) {
    script.push([status, { error: "unavailable", message: "try later" }, { "Retry-After": "0" }]);
    const error = await corral.retry("jt1").catch((failure) => failure);
    assert.equal(error.status, status);
  }
  assert.equal(seen.length, 4);

  script.push([503, { error: "unavailable", message: "try later" }]);
  await assert.rejects(corral.schedules.create({ name: "n", expression: "rate(1 hour)", job: { type: "echo" } }), Unavailable);
  script.push([503, { error: "unavailable", message: "try later" }]);
  await assert.rejects(corral.retryDead({ type: "echo" }), Unavailable);
  script.push(dropConnection);
  await assert.rejects(corral.retry("jt1"), ConnectionFailed);
  assert.equal(seen.length, 7);
});

test("calls safe to repeat are sent again after 502, 504 and a dropped connection", async () => {
  const corral = client();
  script.push([502, { message: "gateway" }], [504, { message: "gateway" }], dropConnection, [200, { id: "jt1", status: "queued" }]);
  assert.equal((await corral.get("jt1")).status, "queued");
  assert.equal(seen.length, 4);

  script.push(dropConnection, [200, { id: "jt1", status: "cancelled" }]);
  assert.equal((await corral.cancel("jt1")).status, "cancelled");
  script.push(dropConnection, [202, { id: "jt2", status: "queued" }]);
  await corral.schedules.trigger("nightly");
  assert.equal(seen.at(-2).body.idempotency_key, seen.at(-1).body.idempotency_key);
});

test("a request that gets no answer in time is given up on, and retried only when safe", async () => {
  const corral = client({ timeoutMs: 100, retry: { ...FAST, retries: 1 } });
  script.push(neverAnswer, neverAnswer);
  const error = await corral.get("jt1").catch((failure) => failure);
  assert.ok(error instanceof ConnectionFailed && error instanceof CorralError);
  assert.equal(error.status, undefined);
  assert.equal(error.code, "connection_error");
  assert.equal(seen.length, 2);

  script.push(neverAnswer);
  await assert.rejects(corral.retry("jt1"), ConnectionFailed);
  assert.equal(seen.length, 3);
});

test("a connection that never opened is tried again even for a call without a key: nothing was sent", async () => {
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  let tries = 0;
  const counting = (...args) => {
    tries += 1;
    return fetch(...args);
  };
  const corral = new Corral({ apiUrl: `http://127.0.0.1:${port}`, apiKey: "ck_test", retry: FAST, fetch: counting });

  const error = await corral.retry("jt1").catch((failure) => failure);

  assert.ok(error instanceof ConnectionFailed, String(error));
  assert.match(error.message, /ECONNREFUSED/);
  assert.equal(tries, 4);
});

test("answers become errors by kind, naming the field; quotas and long Retry-After are not waited for", async () => {
  const corral = client();
  script.push([422, { error: "invalid_request", message: "must be an object", field: "payload", fields: [{ field: "payload", message: "must be an object" }] }]);
  const invalid = await corral.enqueue("echo", 1).catch((error) => error);
  assert.ok(invalid instanceof InvalidRequest && invalid instanceof CorralError);
  assert.equal(invalid.status, 422);
  assert.equal(invalid.code, "invalid_request");
  assert.equal(invalid.field, "payload");
  assert.deepEqual(invalid.fields, [{ field: "payload", message: "must be an object" }]);
  assert.equal(invalid.message, "422 invalid_request: must be an object (field payload)");
  assert.equal(invalid.name, "InvalidRequest");
  script.push([422, { error: "invalid_request", message: "max_attempts: too small", fields: [{ field: "max_attempts", message: "too small" }] }]);
  assert.equal((await corral.enqueue("echo", null, { max_attempts: 0 }).catch((error) => error)).field, "max_attempts");

  const kinds = [
    [400, "malformed_json", InvalidRequest],
    [401, "unauthorized", Unauthorized],
    [403, "forbidden", Forbidden],
    [404, "not_found", NotFound],
    [409, "conflict", Conflict],
    [413, "payload_too_large", InvalidRequest],
    [500, "internal_error", ServerError],
  ];
  for (const [status, code, kind] of kinds) {
    script.push([status, { error: code, message: "no" }]);
    const error = await corral.get("jt1").catch((failure) => failure);
    assert.ok(error instanceof kind, `${status} gave ${error.name}`);
    assert.equal(error.code, code);
  }
  assert.equal(seen.length, 2 + kinds.length, "none of them retried");
  script.push([403, { error: "forbidden", message: "the request alone is larger than a quota" }]);
  const tooLarge = await corral.get("jt1").catch((error) => error);
  assert.ok(tooLarge instanceof Forbidden && !(tooLarge instanceof PermissionDenied));

  script.push([403, { error: "insufficient_scope", message: "this key's scope is 'read'; POST /v1/jobs needs 'enqueue' or 'full'", scope: "read", needed_scopes: ["enqueue", "full"] }]);
  const denied = await corral.enqueue("echo").catch((error) => error);
  assert.ok(denied instanceof PermissionDenied && denied instanceof Forbidden && denied instanceof CorralError);
  assert.equal(denied.name, "PermissionDenied");
  assert.equal(denied.status, 403);
  assert.equal(denied.scope, "read");
  assert.deepEqual(denied.neededScopes, ["enqueue", "full"]);
  assert.equal(seen.length, 4 + kinds.length, "a scope refusal is not retried");

  script.push([429, { error: "quota_exceeded", message: "100 schedules held" }]);
  const quota = await corral.get("jt1").catch((error) => error);
  assert.ok(quota instanceof QuotaExceeded && quota instanceof RateLimited);
  script.push([429, { error: "rate_limited", message: "slow down" }, { "Retry-After": "3600" }]);
  const limited = await corral.get("jt1").catch((error) => error);
  assert.ok(limited instanceof RateLimited && !(limited instanceof QuotaExceeded));
  assert.equal(limited.retryAfter, 3600);
  assert.equal(seen.length, 4 + kinds.length + 2);

  script.push([502, "<html>Bad Gateway</html>", { "content-type": "text/html" }]);
  const gateway = await client({ retry: { retries: 0 } }).get("jt1").catch((error) => error);
  assert.ok(gateway instanceof Unavailable);
  assert.equal(gateway.code, "http_502");
});

test("list follows cursors across pages, and stops at maxItems without asking for the next page", async () => {
  const corral = client();
  script.push(
    [200, { jobs: [{ id: "a", status: "dead" }, { id: "b", status: "dead" }], next_cursor: "c 1", note: "" }],
    [200, { jobs: [{ id: "c", status: "dead" }], next_cursor: null, note: "" }],
  );
  const ids = [];
  for await (const job of corral.list({ status: "dead", since: new Date("2026-12-01T00:00:00Z"), pageSize: 2 })) ids.push(job.id);
  assert.deepEqual(ids, ["a", "b", "c"]);
  assert.equal(seen[0].url, "/v1/jobs?status=dead&since=2026-12-01T00%3A00%3A00.000Z&limit=2");
  assert.equal(seen[1].url, "/v1/jobs?status=dead&since=2026-12-01T00%3A00%3A00.000Z&limit=2&cursor=c+1");

  script.push([200, { jobs: [{ id: "a" }, { id: "b" }], next_cursor: "c1", note: "" }], [200, { jobs: [{ id: "c" }], next_cursor: null, note: "" }]);
  const first = [];
  for await (const job of corral.list({ maxItems: 2 })) first.push(job.id);
  assert.deepEqual(first, ["a", "b"]);
  assert.equal(seen.length, 3);

  script.length = 0;
  script.push([200, { jobs: [], next_cursor: null, note: "jobs no worker has seen yet are not listed" }]);
  const pages = [];
  for await (const page of corral.pages({ type: "echo" })) pages.push(page);
  assert.equal(pages.length, 1);
  assert.match(pages[0].note, /not listed/);
});

test("every list is one pager: nothing asked before it is iterated, no page beyond maxItems", async () => {
  const corral = client();
  const listings = {
    jobs: (options) => corral.list(options),
    schedules: (options) => corral.schedules.list(options),
    batches: (options) => corral.batches.list(options),
  };
  for (const [field, list] of Object.entries(listings)) {
    seen.length = 0;
    script.push(
      [200, { [field]: [{ id: "1" }, { id: "2" }], next_cursor: "c1" }],
      [200, { [field]: [{ id: "3" }], next_cursor: null }],
    );
    const firstTwo = list({ maxItems: 2, pageSize: 2 });
    await new Promise((resolve) => setTimeout(resolve, 10)); // time enough for a request made eagerly to arrive
    assert.equal(seen.length, 0, field);
    const ids = [];
    for await (const item of firstTwo) ids.push(item.id);
    assert.deepEqual(ids, ["1", "2"], field);
    assert.equal(seen.length, 1, field);
    script.length = 0;
  }
});

test("triggers: created with their body, listed across pages, read and deleted, names encoded", async () => {
  const corral = client();
  script.push(
    [201, { name: "re/ceipt", event: "paid", match: { plan: "pro" }, job: { type: "echo" }, created_at: 1 }],
    [200, { triggers: [{ name: "a" }], next_cursor: "t1" }],
    [200, { triggers: [{ name: "b" }], next_cursor: null }],
    [200, { name: "re/ceipt" }],
    [200, { name: "re/ceipt", deleted: true }],
  );
  const spec = { name: "re/ceipt", event: "paid", match: { plan: "pro" }, job: { type: "echo", payload: { v: 2 } } };
  assert.equal((await corral.triggers.create(spec)).event, "paid");
  const names = [];
  for await (const trigger of corral.triggers.list({ pageSize: 1 })) names.push(trigger.name);
  assert.deepEqual(names, ["a", "b"]);
  await corral.triggers.get("re/ceipt");
  await corral.triggers.delete("re/ceipt");
  assert.deepEqual(seen[0].body, spec);
  assert.deepEqual(
    seen.map((request) => `${request.method} ${request.url}`),
    [
      "POST /v1/triggers",
      "GET /v1/triggers?limit=1",
      "GET /v1/triggers?limit=1&cursor=t1",
      "GET /v1/triggers/re%2Fceipt",
      "DELETE /v1/triggers/re%2Fceipt",
    ],
  );
});

test("schedules and batches: their routes, names encoded, lists across pages", async () => {
  const corral = client();
  script.push(
    [200, { schedules: [{ name: "a" }], next_cursor: "s1" }],
    [200, { schedules: [{ name: "b" }], next_cursor: null }],
    [200, { name: "night/ly", state: "paused" }],
    [200, { name: "night/ly", state: "enabled" }],
    [200, { name: "night/ly" }],
    [202, { runs: [{ id: "r1", scheduled_for: "2026-12-01T02:00:00+00:00" }] }],
    [200, { deleted: "night/ly" }],
    [200, { batches: [{ id: "b1" }], next_cursor: null }],
    [201, { id: "b2", status: "running", total: 2 }],
    [200, { jobs: ["j1", "j2"] }],
    [200, { id: "b2", status: "cancelled" }],
  );
  const names = [];
  for await (const schedule of corral.schedules.list({ pageSize: 1 })) names.push(schedule.name);
  assert.deepEqual(names, ["a", "b"]);
  assert.equal((await corral.schedules.pause("night/ly", "maintenance")).state, "paused");
  await corral.schedules.resume("night/ly");
  await corral.schedules.update("night/ly", { expression: "cron(0 3 * * ? *)" });
  const runs = await corral.schedules.backfill("night/ly", new Date("2026-12-01T00:00:00Z"), "2026-12-02T00:00:00Z");
  assert.equal(runs[0].id, "r1");
  await corral.schedules.delete("night/ly");
  const batches = [];
  for await (const batch of corral.batches.list({ status: "running" })) batches.push(batch.id);
  assert.deepEqual(batches, ["b1"]);
  await corral.batches.create({ jobs: [{ type: "echo" }, { type: "echo" }], on_complete: { type: "echo" } });
  assert.deepEqual(await corral.batches.jobs("b2"), ["j1", "j2"]);
  await corral.batches.cancel("b2");

  assert.deepEqual(
    seen.map((request) => `${request.method} ${request.url}`),
    [
      "GET /v1/schedules?limit=1",
      "GET /v1/schedules?limit=1&cursor=s1",
      "POST /v1/schedules/night%2Fly:pause",
      "POST /v1/schedules/night%2Fly:resume",
      "PATCH /v1/schedules/night%2Fly",
      "POST /v1/schedules/night%2Fly:backfill",
      "DELETE /v1/schedules/night%2Fly",
      "GET /v1/batches?status=running",
      "POST /v1/batches",
      "GET /v1/batches/b2/jobs",
      "POST /v1/batches/b2/cancel",
    ],
  );
  assert.deepEqual(seen[2].body, { note: "maintenance" });
  assert.deepEqual(seen[5].body, { start: "2026-12-01T00:00:00.000Z", end: "2026-12-02T00:00:00Z" });
  assert.match(seen[8].body.idempotency_key, /^sdk-ts-/);
});

test("stats and a bulk retry of dead jobs send their filters", async () => {
  const corral = client();
  script.push([200, { window_seconds: 600, counts: { succeeded: 3 } }], [200, { retried: 1, ids: ["j1"], more: false, skipped: [] }]);
  assert.equal((await corral.stats(600)).counts.succeeded, 3);
  assert.equal((await corral.retryDead({ type: "report", limit: 10 })).retried, 1);
  assert.equal(seen[0].url, "/v1/stats?window_seconds=600");
  assert.deepEqual(seen[1].body, { type: "report", limit: 10 });
});

test("wait polls until the job finishes, and gives up with WaitTimeout carrying its last view", async () => {
  const corral = client();
  script.push([200, { id: "jt1", status: "queued" }], [200, { id: "jt1", status: "running" }], [200, { id: "jt1", status: "succeeded", result: 7 }]);
  assert.equal((await corral.wait("jt1", { pollMs: 5 })).result, 7);
  assert.equal(seen.length, 3);

  for (let n = 0; n < 50; n++) script.push([200, { id: "jt2", status: "queued" }]);
  const timeout = await corral.wait("jt2", { timeoutMs: 50, pollMs: 5 }).catch((error) => error);
  assert.ok(timeout instanceof WaitTimeout);
  assert.equal(timeout.job.status, "queued");

  script.length = 0;
  script.push([200, { id: "jt3", status: "running" }]);
  assert.equal((await corral.wait("jt3", { statuses: ["running"] })).status, "running");
});

test("enqueueMany sends 100 jobs a request, reports refused jobs by index, and resends only the unavailable", async () => {
  const corral = client();
  const jobs = Array.from({ length: 150 }, (_, n) => ({ type: "echo", payload: n }));
  const queued = (n) => ({ status: "queued", id: `j${n}` });
  script.push(
    [207, { results: jobs.slice(0, 100).map((_, n) => (n === 42 ? { status: "refused", error: "invalid_request", message: "bad", field: "payload" } : n === 7 ? { status: "refused", error: "unavailable", message: "later" } : queued(n))) }],
    [202, { results: [queued(7)] }],
    [202, { results: jobs.slice(100).map((_, n) => queued(100 + n)) }],
  );
  const settled = [];

  const outcomes = await corral.enqueueMany(jobs, { onChunk: (n) => settled.push(n) });

  assert.equal(outcomes.length, 150);
  assert.deepEqual(settled, [100, 50]);
  assert.deepEqual(seen.map((request) => request.body.jobs.length), [100, 1, 50]);
  assert.equal(seen[1].body.jobs[0].idempotency_key, seen[0].body.jobs[7].idempotency_key);
  assert.equal(outcomes[7].id, "j7");
  assert.ok(outcomes[42].error instanceof InvalidRequest);
  assert.equal(outcomes[42].error.field, "payload");
  assert.equal(outcomes[42].id, null);
  assert.equal(outcomes[149].index, 149);
  assert.equal(outcomes[149].id, "j149");
});

test("the built package runs in a browser: no Node module, no Node global", () => {
  const dist = new URL("../dist/", import.meta.url);
  for (const name of readdirSync(dist).filter((file) => file.endsWith(".js"))) {
    const source = readFileSync(new URL(name, dist), "utf8");
    const imported = [...source.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((match) => match[1]);
    assert.ok(imported.every((path) => path.startsWith("./")), `${name} imports ${imported}`);
    assert.doesNotMatch(source.replace(/globalThis\.process\?\./g, ""), /\b(process|Buffer|require)\b[.(]/, name);
  }
});

test("fromEnv reads CORRAL_API_URL and CORRAL_API_KEY, and names what is missing", () => {
  const saved = { ...process.env };
  try {
    delete process.env.CORRAL_API_URL;
    process.env.CORRAL_API_KEY = "ck_env";
    assert.throws(() => Corral.fromEnv(), (error) => error instanceof CorralError && /CORRAL_API_URL/.test(error.message));
    process.env.CORRAL_API_URL = "http://api.example/";
    assert.equal(Corral.fromEnv().apiUrl, "http://api.example");
  } finally {
    process.env = saved;
  }
});
