// A receiver for corral HTTP jobs in Node, verifying the Standard Webhooks headers (webhook-id,
// webhook-timestamp, webhook-signature) with the npm `standardwebhooks` package, then doing the work
// once per webhook-id (the job id: the same on every attempt of a job).
//
//   export CORRAL_SIGNING_SECRETS="$(curl -s $URL/v1/signing-secrets -H "Authorization: Bearer $KEY" \
//       | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).secrets.map(x=>x.secret).join(",")))')"
//   node examples/receivers/standard_webhooks_receiver.mjs --port 8000
//
// Each valid secret (during a rotation, the old and the new) is tried: a request carries one
// signature per secret. Answers: 2xx, the job succeeded; 400 (a bad signature), dead at once.
// On start it prints one line, {"listening": <port>}, so a test can wait for it.

import { createServer } from "node:http";
import { parseArgs } from "node:util";
import { Webhook, WebhookVerificationError } from "standardwebhooks";

export function makeServer(secrets, onWork = () => {}) {
  const verifiers = secrets.map((secret) => new Webhook(secret));
  const done = new Set(); // webhook-ids already handled: a retry or duplicate delivery does the work once
  return createServer((request, response) => {
    const chunks = [];
    request.on("data", (chunk) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8"); // the raw body, as signed
      const answer = (status, document) => {
        response.writeHead(status, { "content-type": "application/json" });
        response.end(JSON.stringify(document));
      };
      let verdict = "no valid webhook-signature for this body";
      for (const verifier of verifiers) {
        try {
          verifier.verify(body, request.headers); // also parses the body: Standard Webhooks payloads are JSON
          verdict = null;
          break;
        } catch (error) {
          if (!(error instanceof WebhookVerificationError)) {
            verdict = "the body is not JSON";
            break;
          }
        }
      }
      if (verdict !== null) {
        answer(400, { error: `signature: ${verdict}` });
        return;
      }
      const id = request.headers["webhook-id"];
      const first = !done.has(id);
      if (first) {
        done.add(id);
        onWork(id, body);
      }
      answer(200, { verified: true, id, first });
    });
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { values } = parseArgs({ options: { port: { type: "string", default: "8000" } } });
  const secrets = (process.env.CORRAL_SIGNING_SECRETS ?? "").split(",").filter(Boolean);
  if (secrets.length === 0) {
    console.error("set CORRAL_SIGNING_SECRETS to your secrets (GET /v1/signing-secrets), comma separated");
    process.exit(2);
  }
  const server = makeServer(secrets, (id) => console.error(`work done for ${id}`));
  server.listen(Number(values.port), "127.0.0.1", () => {
    console.log(JSON.stringify({ listening: server.address().port }));
  });
}
