// A stub corral API on 127.0.0.1 for the SDK's unit tests: it answers each request with the next scripted
// answer and keeps what it received. Imported by the *.test.mjs files (it holds no test of its own).
import { createServer } from "node:http";
import { after, before, beforeEach } from "node:test";

/**
 * Starts the stub before the file's tests and stops it after them. `script`: what it answers, in order:
 * [status, body, headers], or a function (request, response) for the odd ones; `seen`: the requests it
 * received, {method, url, headers, body}; both emptied before each test. `url()`: its base URL.
 */
export function stubApi() {
  const script = [];
  const seen = [];
  let server;
  let baseUrl;
  before(async () => {
    server = createServer((request, response) => {
      let text = "";
      request.on("data", (chunk) => (text += chunk));
      request.on("end", () => {
        seen.push({ method: request.method, url: request.url, headers: request.headers, body: text ? JSON.parse(text) : undefined });
        const next = script.shift() ?? [500, { error: "internal_error", message: "the test scripted no answer" }];
        if (typeof next === "function") return next(request, response);
        const [status, body, headers] = next;
        response.writeHead(status, { "content-type": "application/json", ...headers });
        response.end(body === undefined ? "" : typeof body === "string" ? body : JSON.stringify(body));
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => {
    server.closeAllConnections();
    server.close();
  });
  beforeEach(() => {
    script.length = 0;
    seen.length = 0;
  });
  return { script, seen, url: () => baseUrl };
}
