"""An HTTP stand-in for one test: a server on 127.0.0.1 (a free port) served from a daemon thread."""

from __future__ import annotations

import http.server
import threading


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
