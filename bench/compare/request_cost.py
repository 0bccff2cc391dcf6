"""What one AWS request costs the caller's CPU (botocore's client side: checking, serializing, signing,
sending, parsing), with and without botocore's parameter validation, rounds alternating in one process.

    python -m bench.compare.request_cost [--requests 1000] [--rounds 3]

The requests go to a local server that answers each at once with an empty success, so the figure is
the client's own work (thread CPU of the calling thread), whatever the emulator or the machine's other
processes do. The request is the shape of a job's claim: a conditional UpdateItem of a dozen values.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
from botocore.config import Config

from shared.aws.clients import _config


class _EmptySuccess(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _claim_shaped_update(client: Any) -> None:
    values = {f":v{i}": {"S": f"value-{i}"} for i in range(12)} | {":now": {"N": "1796515774.5"}}
    client.update_item(
        TableName="corral",
        Key={"pk": {"S": "job#j0123456789abcdef"}, "sk": {"S": "job"}},
        UpdateExpression="SET " + ", ".join(f"a{i} = :v{i}" for i in range(12)) + ", claimed_at = :now",
        ConditionExpression="attribute_not_exists(claim) OR lease_until < :now",
        ExpressionAttributeValues=values,
    )


def cpu_ms_per_request(client: Any, requests: int) -> float:
    for _ in range(min(50, requests)):  # the connection, botocore's caches
        _claim_shaped_update(client)
    began = time.thread_time()
    for _ in range(requests):
        _claim_shaped_update(client)
    return (time.thread_time() - began) * 1000 / requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EmptySuccess)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    clients = {
        validating: boto3.session.Session().client(
            "dynamodb",
            endpoint_url=url,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=_config().merge(Config(parameter_validation=validating)),
        )
        for validating in (True, False)
    }
    try:
        for round_number in range(1, args.rounds + 1):
            figures = {validating: cpu_ms_per_request(client, args.requests) for validating, client in clients.items()}
            print(
                f"round {round_number}: {figures[True]:.3f} CPU ms per request validating parameters, "
                f"{figures[False]:.3f} without ({1 - figures[False] / figures[True]:.0%} less)",
                flush=True,
            )
    finally:
        server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
