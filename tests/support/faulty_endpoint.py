"""A misbehaving OpenAI-compatible server on 127.0.0.1: each request plays the next fault of a script.

``FaultyEndpoint(["reset", "500", "ok"])`` drops the first connection, answers the second with HTTP 500
and the third (and every later one, ``then="ok"``) with a chat completion. A step is one of:

* ``"ok"``: a chat completion whose message is ``message(body)`` (by default ``API-Request: [GetToday()]``);
* ``"huge"``: a chat completion whose content is ``huge_chars`` characters long;
* ``"STATUS"`` or ``"STATUS:text"`` (e.g. ``"503"``, ``"400:Conversation roles must alternate"``): that
  HTTP status with an OpenAI-style error body (``text`` or ``"fault STATUS"``);
* ``"reset"``: the connection reset (RST) before any answer; ``"close"``: closed before any answer;
* ``"bad-status"``: a garbage status line; ``"cut-chunked"``: a chunked body cut after its first chunk;
  ``"cut-length"``: a body cut short of its ``Content-Length``;
* ``"trickle"``: status line, headers and then one byte of the body every 50 ms, never complete;
* ``"hang"``: no answer at all.

The last two end when the server closes. Verdicts never depend on timing: a test counts requests
(``requests``), and only the two never-ending steps need a (small) deadline.
"""

from __future__ import annotations

import http.server
import json
import socket
import struct
import threading
from typing import Any, Callable, Sequence

from support.local_endpoint import LocalEndpoint, QuietHandler, send_json

DEFAULT_MESSAGE = {"role": "assistant", "content": "API-Request: [GetToday()]"}


def completion(message: dict[str, Any]) -> dict[str, Any]:
    return {"id": "x", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}}


class FaultyEndpoint(LocalEndpoint):
    def __init__(self, script: Sequence[str] = (), then: str = "ok",
                 message: Callable[[dict], dict] = lambda body: DEFAULT_MESSAGE, huge_chars: int = 200_000):
        self.script, self.then, self.message, self.huge_chars = list(script), then, message, huge_chars
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        self.closed = threading.Event()
        server = self

        class Handler(QuietHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                send_json(self, {"object": "list", "data": []})

            def do_POST(self):
                body = self.json_body()
                with server.lock:
                    server.requests.append(body)
                    number = len(server.requests)
                step = server.script[number - 1] if number <= len(server.script) else server.then
                try:
                    server.play(self, step, body)
                except OSError:  # the client went away (a deadline): nothing more to send
                    self.close_connection = True

        self.listen(Handler)

    def __exit__(self, *exc) -> None:
        self.closed.set()
        super().__exit__(*exc)

    def play(self, handler: http.server.BaseHTTPRequestHandler, step: str, body: dict) -> None:
        raw = handler.wfile
        if step == "ok":
            send_json(handler, completion(self.message(body)))
        elif step == "huge":
            send_json(handler, completion({"role": "assistant", "content": "x" * self.huge_chars}))
        elif step[:3].isdigit():
            status, _, text = step.partition(":")
            send_json(handler, {"error": {"message": text or f"fault {status}"}}, int(status))
        elif step in ("reset", "close"):
            if step == "reset":  # SO_LINGER 0: close() sends RST
                handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            handler.close_connection = True
            handler.rfile.close()
            raw.close()
            handler.connection.close()
        elif step == "bad-status":
            raw.write(b"SPAM 42 not-http\r\nfoo\r\n\r\n")
            handler.close_connection = True
        elif step == "cut-chunked":
            raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                      b"5\r\n{\"id\"\r\n")
            handler.close_connection = True
        elif step == "cut-length":
            data = json.dumps(completion(self.message(body))).encode()
            raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
                      + data[: len(data) // 2])
            handler.close_connection = True
        elif step == "trickle":
            raw.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n")
            while not self.closed.wait(0.05):
                raw.write(b" ")
                raw.flush()
            handler.close_connection = True
        elif step == "hang":
            self.closed.wait()
            handler.close_connection = True
        else:
            raise ValueError(f"unknown step {step!r}")
