"""A receiver for corral HTTP jobs: verifies Corral-Signature (v2: the method, URL, job id and body
are signed), then does the work once per job id.

    export CORRAL_SIGNING_SECRETS="$(curl -s $URL/v1/signing-secrets -H "Authorization: Bearer $KEY" \
        | python3 -c 'import json,sys; print(",".join(s["secret"] for s in json.load(sys.stdin)["secrets"]))')"
    python -m examples.receivers.http_receiver --port 8000        # from the repository root

    curl -s -X POST $URL/v1/jobs -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \
         -d '{"type": "http", "payload": {"url": "http://127.0.0.1:8000/invoices", "body": {"invoice": 42}}}'

(The local profile, `make up`, allows http to 127.0.0.1; the aws profile calls https public hosts only.
Behind a proxy that terminates TLS, pass `--scheme https`: the signed URL is the one corral called.)
How it answers decides what corral does: 2xx succeeded; 400 (a bad signature) is dead at once, no
retry; 503 with Retry-After would be retried then.
"""

from __future__ import annotations

import argparse
import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from client.signatures import SignatureVerificationError, verify_signature


def make_server(port: int, secrets: list[str], host: str = "127.0.0.1", scheme: str = "http") -> ThreadingHTTPServer:
    done: set[str] = set()  # job ids already handled: a retry or duplicate delivery does the work once

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))  # the raw bytes: verify first
            url = f"{scheme}://{self.headers.get('Host', '')}{self.path}"  # the URL corral called, as it arrived
            try:
                verify_signature(self.headers, body, secrets, method=self.command, url=url)
            except SignatureVerificationError as error:
                self._answer(400, {"error": f"signature: {error}"})
                return
            job_id = self.headers["Corral-Job-Id"]  # signed by v2: a replay cannot pass a fresh id
            if job_id not in done:
                done.add(job_id)  # ... the real work goes here, keyed on job_id ...
            self._answer(200, {"handled": job_id, "attempt": int(self.headers["Corral-Attempt"])})

        do_PUT = do_PATCH = do_DELETE = do_POST

        def _answer(self, status: int, body: dict[str, object]) -> None:
            raw = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return ThreadingHTTPServer((host, port), Handler)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--scheme", default="http", choices=("http", "https"), help="the scheme corral calls")
    args = parser.parse_args()
    secrets = [s for s in os.environ.get("CORRAL_SIGNING_SECRETS", "").split(",") if s]
    if not secrets:
        raise SystemExit("set CORRAL_SIGNING_SECRETS to the secrets from GET /v1/signing-secrets (comma-separated)")
    server = make_server(args.port, secrets, args.host, args.scheme)
    print(f"verifying corral HTTP jobs on http://{args.host}:{args.port}/ with {len(secrets)} secret(s)")
    server.serve_forever()


if __name__ == "__main__":
    main()
