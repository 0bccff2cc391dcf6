// Unit tests of corral-client's `events` and `tokens` (node --test) against a stub API on 127.0.0.1: what they
// send, what they answer, which of their requests are sent again.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Conflict, ConnectionFailed, Corral, CorralError, InvalidRequest, NotFound } from "../dist/index.js";
import { stubApi } from "./stub.mjs";

const FAST = { retries: 3, baseSeconds: 0.001, capSeconds: 0.01 };

// What the stub answers and what it received (stub.mjs).
const { script, seen, url } = stubApi();

const client = () => new Corral({ apiUrl: url(), apiKey: "ck_test", retry: FAST });
const dropConnection = (request) => request.socket.destroy();

test("an event is sent with its name, data and id, and answers its id", async () => {
  script.push([202, { id: "pay-42" }]);
  assert.equal(await client().events.send("payment.received", { order: 42 }, { id: "pay-42" }), "pay-42");
  assert.deepEqual(
    seen.map(({ method, url, body }) => ({ method, url, body })),
    [{ method: "POST", url: "/v1/events", body: { name: "payment.received", data: { order: 42 }, id: "pay-42" } }],
  );
});

test("an event without an id gets one, which the SDK's retries keep", async () => {
  script.push(dropConnection, [503, { error: "unavailable", message: "try again" }], [202, { id: "whatever" }]);
  await client().events.send("payment.received");
  const ids = seen.map((request) => request.body.id);
  assert.equal(ids.length, 3);
  assert.equal(new Set(ids).size, 1);
  assert.match(ids[0], /^ev_[0-9a-f]{32}$/);
  assert.equal(seen[0].body.data, null);
});

test("an event id sent again with other content is a Conflict; a bad name an InvalidRequest naming it", async () => {
  script.push([409, { error: "conflict", message: "event pay-42 was sent with other content" }]);
  await assert.rejects(client().events.send("payment.received", { order: 43 }, { id: "pay-42" }), Conflict);
  script.push([422, { error: "invalid_request", message: "too long", field: "name" }]);
  await assert.rejects(client().events.send("x".repeat(300)), (error) => error instanceof InvalidRequest && error.field === "name");
  assert.equal(seen.length, 2);
});

test("a token is completed with its data, and a second completion is a Conflict", async () => {
  const corral = client();
  script.push([200, { id: "tk_1", status: "completed" }], [409, { error: "conflict", message: "token tk_1 was completed already" }]);
  assert.deepEqual(await corral.tokens.complete("tk_1", { approved: true }), { id: "tk_1", status: "completed" });
  await assert.rejects(corral.tokens.complete("tk_1"), (error) => {
    assert.ok(error instanceof Conflict && error instanceof CorralError);
    assert.equal(error.status, 409);
    return true;
  });
  assert.deepEqual(
    seen.map((request) => [request.method, request.url, request.body]),
    [
      ["POST", "/v1/tokens/tk_1:complete", { data: { approved: true } }],
      ["POST", "/v1/tokens/tk_1:complete", { data: null }],
    ],
  );
});

test("a token completion dropped mid-request is not sent again; an unknown token is NotFound", async () => {
  script.push(dropConnection);
  await assert.rejects(client().tokens.complete("tk_1", { approved: true }), ConnectionFailed);
  assert.equal(seen.length, 1);
  script.push([404, { error: "not_found", message: "no such token" }]);
  await assert.rejects(client().tokens.complete("tk_nope"), NotFound);
});
