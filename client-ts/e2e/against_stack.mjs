// corral-client against a running stack, with a tenant of its own (tests/e2e/test_client_ts.py runs it):
// enqueue and wait, bulk enqueue, list across cursors, cancel, retry a dead job, errors, stats, a schedule, a batch.
//   CORRAL_API_URL=... CORRAL_API_KEY=... node client-ts/e2e/against_stack.mjs
// Prints one JSON line: what it saw, for the test to check.
import { Conflict, Corral, InvalidRequest, NotFound } from "../dist/index.js";

const corral = Corral.fromEnv({ timeoutMs: 30_000 }); // a fresh tenant's first calls may meet cold API instances
const WAIT = { timeoutMs: 120_000 };
const seen = {};

const id = await corral.enqueue("echo", { hello: "from TypeScript" });
const job = await corral.wait(id, WAIT);
seen.waited = { status: job.status, result: job.result };

const outcomes = await corral.enqueueMany([
  { type: "echo", payload: { n: 1 } },
  { type: "echo", payload: { n: 2 }, max_attempts: 0 },
  { type: "echo", payload: { n: 3 } },
]);
seen.bulk = outcomes.map((outcome) => (outcome.error ? `${outcome.error.name} ${outcome.error.field}` : "queued"));
const bulkIds = outcomes.filter((outcome) => outcome.id).map((outcome) => outcome.id);
for (const bulkId of bulkIds) await corral.wait(bulkId, WAIT);

const listed = [];
let pages = 0;
for await (const page of corral.pages({ type: "echo", pageSize: 2 })) {
  pages += 1;
  listed.push(...page.jobs.map((each) => each.id));
  if (pages >= 50) break;
}
seen.listed = { all: [id, ...bulkIds].every((each) => listed.includes(each)), pages };
const firstTwo = [];
for await (const each of corral.list({ type: "echo", maxItems: 2 })) firstTwo.push(each.id);
seen.listedFirstTwo = firstTwo.length;

const later = await corral.enqueue("echo", "later", { delay_seconds: 600 });
seen.cancelled = (await corral.cancel(later)).status;
seen.cancelledAgain = (await corral.cancel(later)).status;

const failsOnce = await corral.enqueue("fail", { times: 1 }, { max_attempts: 1 });
const dead = await corral.wait(failsOnce, WAIT);
seen.retried = { before: dead.status, answer: (await corral.retry(failsOnce)).status };
const rerun = await corral.wait(failsOnce, WAIT);
seen.retried.after = rerun.status;
seen.retried.result = rerun.result;

seen.errors = {
  unknown: await corral.get("jt-not-a-job").catch((error) => (error instanceof NotFound ? error.status : String(error))),
  invalid: await corral
    .enqueue("echo", null, { max_attempts: 0 })
    .catch((error) => (error instanceof InvalidRequest ? error.field : String(error))),
  finished: await corral.cancel(id).catch((error) => (error instanceof Conflict ? error.code : String(error))),
};

const stats = await corral.stats(3600);
seen.statsSucceeded = stats.counts.succeeded;

const name = `ts-${globalThis.crypto.randomUUID().slice(0, 8)}`;
await corral.schedules.create({ name, expression: "rate(1 day)", job: { type: "echo", payload: { from: "a schedule" } } });
const run = await corral.schedules.trigger(name);
const ranJob = await corral.wait(run.id, WAIT);
const schedules = [];
for await (const schedule of corral.schedules.list()) schedules.push(schedule.name);
seen.schedule = {
  run: ranJob.status,
  listed: schedules.includes(name),
  paused: (await corral.schedules.pause(name, "from the e2e script")).state,
};
await corral.schedules.delete(name);
seen.schedule.afterDelete = await corral.schedules.get(name).catch((error) => (error instanceof NotFound ? "not found" : String(error)));

const batch = await corral.batches.create({ jobs: [{ type: "echo" }, { type: "echo" }], on_complete: { type: "echo" } });
const ended = await corral.batches.wait(batch.id, WAIT);
seen.batch = { status: ended.status, jobs: (await corral.batches.jobs(batch.id)).length };

console.log(JSON.stringify(seen));
