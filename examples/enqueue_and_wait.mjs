// Enqueue a job and wait for its result, find it in the listing, cancel one not yet run, from Node with
// the TypeScript SDK (client-ts/, the npm package corral-client).
//
//     node examples/enqueue_and_wait.mjs
//
// Output:
// succeeded {"hello":"world"}
// listed true
// cancelled cancelled
// 404 not_found

import { Corral, NotFound } from "../client-ts/dist/index.js"; // in your project: from "corral-client"

const corral = Corral.fromEnv(); // CORRAL_API_URL, CORRAL_API_KEY
const since = new Date();

const jobId = await corral.enqueue("echo", { hello: "world" }); // with an idempotency key of its own
const job = await corral.wait(jobId, { timeoutMs: 60_000 });
console.log(job.status, JSON.stringify(job.result));

let listed = false;
for await (const each of corral.list({ type: "echo", since })) listed ||= each.id === jobId; // across pages
console.log("listed", listed);

const later = await corral.enqueue("echo", { when: "in ten minutes" }, { delay_seconds: 600 });
console.log("cancelled", (await corral.cancel(later)).status);

try {
  await corral.get("jt-no-such-job");
} catch (error) {
  if (!(error instanceof NotFound)) throw error; // every SDK error is a CorralError with status, code, field
  console.log(error.status, error.code);
}
