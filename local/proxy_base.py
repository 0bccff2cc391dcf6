"""What the local stand-ins in front of the emulator share: a threaded HTTP server that forwards requests.

Requests are forwarded verbatim (Host header included, so SigV4 signatures stay
valid) over a pooled, keep-alive urllib3 connection.
"""

from __future__ import annotations

import argparse
import json
import socket
import zlib
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import urllib3

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade"}


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"{}")

    @classmethod
    def of_json(cls, status: int, document: Any, headers: dict[str, str] | None = None) -> Reply:
        body = json.dumps(document, separators=(",", ":")).encode()
        # botocore checks DynamoDB bodies against x-amz-crc32.
        content = {"Content-Type": "application/x-amz-json-1.0", "x-amz-crc32": str(zlib.crc32(body))}
        return cls(status, {**(headers or {}), **content}, body)


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def target(self) -> str:
        """The AWS JSON-protocol operation, e.g. DynamoDB_20120810.GetItem or AmazonSQS.SendMessage."""
        return self.headers.get("X-Amz-Target", self.headers.get("x-amz-target", ""))

    def json(self) -> Any:
        return json.loads(self.body or b"{}")


class Forwarder:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self._pool = urllib3.PoolManager(maxsize=64, block=False, retries=False, timeout=urllib3.Timeout(30))

    def __call__(self, request: Request, body: bytes | None = None) -> Reply:
        response = self._pool.request(
            request.method,
            self.upstream + request.path,
            body=request.body if body is None else body,
            headers={k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP},
            preload_content=True,
            redirect=False,
        )
        headers = {k: v for k, v in response.headers.items() if k.lower() not in _HOP_BY_HOP}
        return Reply(response.status, headers, response.data)


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def __init__(self, port: int, handle: Any) -> None:
        """`handle(Request) -> Reply` answers every request."""
        self.handle_request_ = handle
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the functions' boto3 pools reuse connections
    server: ProxyServer

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle + delayed ACK stall each reply ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        request = Request(self.command, self.path, dict(self.headers.items()), body)
        try:
            reply = self.server.handle_request_(request)
        except Exception as error:  # the upstream is down or the handler broke: answer like a 5xx AWS error
            reply = Reply.of_json(502, {"__type": "ProxyError", "message": f"{type(error).__name__}: {error}"})
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:
        pass


def serve_main(description: str, build: Any) -> None:
    """`python -m local.<stand-in> --port P --upstream URL`: build(args) -> handler; serve until killed."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True, help="where requests go on, e.g. http://127.0.0.1:4566")
    args = parser.parse_args()
    server = ProxyServer(args.port, build(args))
    print(f"listening on {server.url}", flush=True)
    server.serve_forever()
