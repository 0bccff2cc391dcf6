"""A real HTTP server on 127.0.0.1 for HTTP-job tests: scripted answers per path, every request recorded.

Each test takes its own path (`receiver.path()`), scripts the answers it wants there (the last one
repeats) and reads back what arrived, so one server serves a whole session.
"""

from __future__ import annotations

import ssl
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Answer:
    status: int = 200
    body: bytes = b'{"ok": true}'
    headers: dict[str, str] = field(default_factory=lambda: {"Content-Type": "application/json"})
    delay_seconds: float = 0.0


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: bytes
    at: float  # time.time()


class Receiver:
    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self._answers: dict[str, list[Answer]] = defaultdict(list)
        self._received: dict[str, list[Received]] = defaultdict(list)
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.scheme = "https" if tls else "http"
        self.server_names: list[str | None] = []  # the TLS server name (SNI) of each handshake
        if tls is not None:
            tls.sni_callback = lambda sock, name, context: self.server_names.append(name)  # type: ignore[assignment]
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)

    def path(self, *answers: Answer) -> str:
        """A fresh path answering `answers` in turn (the last repeats; none: 200 {"ok": true})."""
        path = f"/hook/{uuid.uuid4().hex}"
        self._answers[path] = list(answers) or [Answer()]
        return path

    def url(self, path: str) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    def received(self, path: str) -> list[Received]:
        with self._lock:
            return list(self._received[path.split("?", 1)[0]])

    def wait_for(self, path: str, count: int, timeout: float = 30) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(got := self.received(path)) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return got

    def total(self) -> int:
        with self._lock:
            return sum(len(requests) for requests in self._received.values())

    def _answer(self, request: Received) -> Answer:
        with self._lock:
            requests = self._received[request.path]
            requests.append(request)
            script = self._answers.get(request.path) or [Answer(status=404, body=b"no such path")]
            return script[min(len(requests), len(script)) - 1]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                request = Received(
                    method=self.command,
                    path=self.path.split("?", 1)[0],
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                    at=time.time(),
                )
                answer = receiver._answer(request)
                if answer.delay_seconds:
                    time.sleep(answer.delay_seconds)
                self.send_response(answer.status)
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        return Handler


@contextmanager
def receiver(tls: ssl.SSLContext | None = None) -> Iterator[Receiver]:
    running = Receiver(tls)
    thread = threading.Thread(target=running.server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.server.shutdown()
        running.server.server_close()
