// Unit tests of corral-client against a stub server on 127.0.0.1 (node --test): retries and Retry-After,
// idempotency keys, errors by kind, pagination, waiting.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { Conflict, Corral, InvalidRequest, NotFound, QuotaExceeded, RateLimited, WaitTimeout } from "../dist/index.js";

let server;
let baseUrl;
const script = []; // answers to give, in order: [status, body, headers]
const seen = []; // requests received: {method, url, headers, body}

before(async () => {
  server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body: body ? JSON.parse(body) : undefined });
      const [status, document, headers] = script.shift() ?? [500, { error: "internal", message: "no answer scripted" }, {}];
      response.writeHead(status, { "content-type": "application/json", ...headers });
      response.end(document === undefined ? "" : JSON.stringify(document));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

function client(retry = { retries: 3, baseSeconds: 0.001, capSeconds: 0.01 }) {
  script.length = 0;
  seen.length = 0;
  return new Corral({ apiUrl: baseUrl + "/", apiKey: "ck_test", retry });
}

test("enqueue sends the job with a fresh idempotency key and the key as a bearer token", async () => {
  const corral = client();
  script.push([202, { id: "jt1", status: "queued" }], [202, { id: "jt2", status: "queued" }]);

  assert.equal(await corral.enqueue("echo", { a: 1 }, { max_attempts: 2 }), "jt1");
  await corral.enqueue("echo", { a: 1 });

  const [first, second] = seen;
  assert.equal(first.method, "POST");
  assert.equal(first.url, "/v1/jobs");
  assert.equal(first.headers.authorization, "Bearer ck_test");
  assert.deepEqual({ ...first.body, idempotency_key: undefined }, { type: "echo", payload: { a: 1 }, max_attempts: 2, idempotency_key: undefined });
  assert.match(first.body.idempotency_key, /^sdk-ts-/);
  assert.notEqual(first.body.idempotency_key, second.body.idempotency_key);
});

test("a 503 then a 429 with Retry-After are retried with the same key, waiting at least Retry-After", async () => {
  const corral = client();
  script.push([503, { error: "unavailable", message: "store" }], [429, { error: "rate_limited", message: "slow down" }, { "Retry-After": "1" }], [202, { id: "jt1", status: "queued" }]);

  const started = Date.now();
  assert.equal(await corral.enqueue("echo"), "jt1");

  assert.ok(Date.now() - started >= 950, "waited for Retry-After");
  assert.equal(seen.length, 3);
  assert.equal(new Set(seen.map((request) => request.body.idempotency_key)).size, 1);
});

test("a non-idempotent call is not retried after a 502, and an idempotent one is", async () => {
  const corral = client();
  script.push([502, { error: "bad_gateway", message: "gateway" }]);
  await assert.rejects(corral.retry("jt1"), (error) => error.status === 502);
  assert.equal(seen.length, 1);

  script.push([502, { error: "bad_gateway", message: "gateway" }], [200, { id: "jt1", status: "queued" }]);
  assert.equal((await corral.get("jt1")).status, "queued");
  assert.equal(seen.length, 3);
});

test("answers become typed errors naming the field, and a long Retry-After is not waited for", async () => {
  const corral = client();
  script.push([422, { error: "invalid_request", message: "must be an object", field: "payload", fields: [{ field: "payload", message: "must be an object" }] }]);
  const invalid = await corral.enqueue("echo", 1).catch((error) => error);
  assert.ok(invalid instanceof InvalidRequest);
  assert.equal(invalid.field, "payload");
  assert.match(invalid.message, /field payload/);

  script.push([404, { error: "not_found", message: "no job" }]);
  assert.ok((await corral.get("nope").catch((error) => error)) instanceof NotFound);
  script.push([409, { error: "conflict", message: "running" }]);
  assert.ok((await corral.cancel("jt1").catch((error) => error)) instanceof Conflict);
  script.push([429, { error: "quota_exceeded", message: "too many schedules" }, { "Retry-After": "3600" }]);
  const quota = await corral.get("jt1").catch((error) => error);
  assert.ok(quota instanceof QuotaExceeded && quota instanceof RateLimited);
  assert.equal(quota.retryAfter, 3600);
});

test("list follows cursors across pages and stops at maxItems", async () => {
  const corral = client();
  script.push([200, { jobs: [{ id: "a", status: "dead" }, { id: "b", status: "dead" }], next_cursor: "c1", note: "" }], [200, { jobs: [{ id: "c", status: "dead" }], next_cursor: null, note: "" }]);
  const ids = [];
  for await (const job of corral.list({ status: "dead", pageSize: 2 })) ids.push(job.id);
  assert.deepEqual(ids, ["a", "b", "c"]);
  assert.equal(seen[0].url, "/v1/jobs?status=dead&limit=2");
  assert.equal(seen[1].url, "/v1/jobs?status=dead&limit=2&cursor=c1");

  script.push([200, { jobs: [{ id: "a", status: "queued" }, { id: "b", status: "queued" }], next_cursor: "c1", note: "" }]);
  const first = [];
  for await (const job of corral.list({ maxItems: 1 })) first.push(job.id);
  assert.deepEqual(first, ["a"]);
});

test("wait polls until the job finishes, and gives up with WaitTimeout", async () => {
  const corral = client();
  script.push([200, { id: "jt1", status: "queued" }], [200, { id: "jt1", status: "running" }], [200, { id: "jt1", status: "succeeded", result: 7 }]);
  assert.equal((await corral.wait("jt1", { pollMs: 5 })).result, 7);

  for (let n = 0; n < 50; n++) script.push([200, { id: "jt2", status: "queued" }]);
  await assert.rejects(corral.wait("jt2", { timeoutMs: 50, pollMs: 5 }), WaitTimeout);
});

test("enqueueMany sends 100 jobs a request and reports each refused job by its index", async () => {
  const corral = client();
  const jobs = Array.from({ length: 150 }, (_, n) => ({ type: "echo", payload: n }));
  script.push(
    [202, { results: jobs.slice(0, 100).map((_, n) => (n === 42 ? { status: "refused", error: "invalid_request", message: "bad", field: "payload" } : { status: "queued", id: `j${n}` })) }],
    [207, { results: jobs.slice(100).map((_, n) => ({ status: "queued", id: `j${100 + n}` })) }],
  );
  const outcomes = await corral.enqueueMany(jobs);
  assert.equal(outcomes.length, 150);
  assert.equal(seen[0].body.jobs.length, 100);
  assert.ok(outcomes[42].error instanceof InvalidRequest);
  assert.equal(outcomes[149].id, "j149");
});
