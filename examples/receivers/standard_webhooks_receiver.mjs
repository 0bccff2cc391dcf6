// A receiver for corral HTTP jobs in Node, verifying the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature) with the npm `standardwebhooks` package, then doing the work
// once per webhook-id (the job id: the same on every attempt of a job).
//
//   export CORRAL_SIGNING_SECRETS="$(curl -s $URL/v1/signing-secrets -H "Authorization: Bearer $KEY" \
//       | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).secrets.map(x=>x.standard_webhooks_secret).join(",")))')"
//   node examples/receivers/standard_webhooks_receiver.mjs --port 8000
//
// Give it each secret's `standard_webhooks_secret`: the same key as `secret`, in the form the libraries
// decode (the two differ only for secrets issued before corral signed Standard Webhooks). Each valid
// secret (during a rotation, the old and the new) is tried: a request carries one signature per secret.
// Answers: 2xx, the job succeeded; 400 (a bad signature), dead at once.
// On start it prints one line, {"listening": <port>}, so a test can wait for it.

import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

function verifies(verifier, body, headers) {
  try {
    // The raw bytes as received, not parsed: a job's body may be JSON or plain text.
    verifier.verify(body, headers, { jsonParse: false });
    return true;
  } catch (error) {
    if (error instanceof WebhookVerificationError) return false;
    throw error;
  }
}

export function makeServer(secrets, onWork = () => {}) {
  const verifiers = secrets.map((secret) => new Webhook(secret)); // throws on a secret that is not whsec_<base64>
  const done = new Set(); // webhook-ids already handled: a retry or duplicate delivery does the work once
  return createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const answer = (status, document) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(document));
      };
      if (!verifiers.some((verifier) => verifies(verifier, body, request.headers))) {
        answer(400, { error: "signature: no valid webhook-signature for this body" });
        return;
      }
      const id = request.headers["webhook-id"];
      const first = !done.has(id);
      if (first) {
        done.add(id);
        onWork(id, body); // ... the real work goes here, keyed on id ...
      }
      answer(200, { verified: true, id, first });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { port: { type: "string", default: "8000" } } });
  const secrets = (process.env.CORRAL_SIGNING_SECRETS ?? "").split(",").filter(Boolean);
  if (secrets.length === 0) {
    console.error("set CORRAL_SIGNING_SECRETS to your secrets' standard_webhooks_secret (GET /v1/signing-secrets), comma separated");
    process.exit(2);
  }
  let server;
  try {
    server = makeServer(secrets, (id) => console.error(`work done for ${id}`));
  } catch (error) {
    console.error(`CORRAL_SIGNING_SECRETS: ${error.message} (use each secret's standard_webhooks_secret)`);
    process.exit(2);
  }
  server.listen(Number(values.port), "127.0.0.1", () => {
    console.log(JSON.stringify({ listening: server.address().port }));
  });
}
