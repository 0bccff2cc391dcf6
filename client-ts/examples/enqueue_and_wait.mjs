// Enqueue a job, wait for it, find it in the listing, and cancel a delayed one, from Node with corral-client.
//   CORRAL_API_URL=... CORRAL_API_KEY=... node client-ts/examples/enqueue_and_wait.mjs
// Prints one JSON line: what it saw (the e2e suite reads it).
import { Corral, NotFound } from "../dist/index.js";

const corral = new Corral({ apiUrl: process.env.CORRAL_API_URL, apiKey: process.env.CORRAL_API_KEY, timeoutMs: 30_000 });

const id = await corral.enqueue("echo", { hello: "from TypeScript" });
const job = await corral.wait(id, { timeoutMs: 120_000 });

let listed = false;
for await (const each of corral.list({ type: "echo", maxItems: 200 })) {
  if (each.id === id) {
    listed = true;
    break;
  }
}

const later = await corral.enqueue("echo", "later", { delay_seconds: 600 });
const cancelled = await corral.cancel(later);
const unknown = await corral.get("jt-not-a-job").catch((error) => (error instanceof NotFound ? "not found" : String(error)));

console.log(JSON.stringify({ id, status: job.status, result: job.result, listed, cancelled: cancelled.status, unknown }));
