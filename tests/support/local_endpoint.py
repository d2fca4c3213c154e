"""An HTTP stand-in for one test: a server on 127.0.0.1 (a free port) served from a daemon thread."""

from __future__ import annotations

import http.server
import json
import threading
from typing import Any, Callable, Iterable


class LocalEndpoint:
    """Subclasses build their request handler and call :meth:`listen`; used as a context manager, the
    server runs inside the ``with`` block. ``base_url`` is its OpenAI-style ``/v1`` root."""

    def listen(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that logs nothing and reads JSON request bodies."""

    def log_message(self, *args) -> None:
        pass

    def json_body(self) -> Any:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))


def send_json(handler: http.server.BaseHTTPRequestHandler, payload: Any, status: int = 200,
              headers: Iterable[tuple[str, str]] = ()) -> None:
    """Answer ``handler``'s request with ``payload`` as JSON (bytes are sent as they are)."""
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    handler.send_response(status)
    for key, value in headers:
        handler.send_header(key, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


class ChatCompletions(LocalEndpoint):
    """``POST /v1/chat/completions`` answering each request with the assistant message ``reply(body)``,
    whatever the request asks for (``stop``, ``max_tokens`` included); ``requests`` keeps the bodies, and
    ``usage`` (when given) and ``finish_reason`` go into every reply."""

    def __init__(self, reply: Callable[[dict], dict], usage: dict | None = None, finish_reason: str = "stop"):
        self.requests: list[dict] = []
        server = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.json_body()
                server.requests.append(body)
                answer = {"choices": [{"index": 0, "message": reply(body), "finish_reason": finish_reason}]}
                send_json(self, {**answer, "usage": usage} if usage is not None else answer)

        self.listen(Handler)
