"""The one HTTP client of the package: JSON requests to a model server over ``httpx``, with the deadline
and the retry policy every caller shares.

* **Deadline.** Each attempt must deliver its whole answer (status line, headers and body) within
  ``timeout`` seconds (``--request-timeout``); a server that never answers, stalls, or trickles its
  answer a byte at a time is abandoned at that moment. httpx's own timeouts bound each read, not the
  answer, so the attempt runs in a thread of its own that the caller stops waiting for at the deadline
  (the thread drops the connection at its next byte).
* **Retried**: the statuses in :data:`RETRY_STATUS` (408, 409, 429 and 500, 502, 503, 504) and every
  transport fault: no connection, a connection reset or closed early, a malformed status line or
  headers, a body cut short (chunked or under its ``Content-Length``), a missed deadline. A request that
  fails on a reused kept-alive connection before the answer's status line and headers are read (the
  server had closed it: httpcore drops an idle connection whose close it has seen, not one closed as the
  request goes out) is sent again at once, once, within the same attempt's deadline: no wait, no retry
  counted (a second such failure is a fault like the others). Each retry
  waits ``backoff * 2**attempt`` seconds (plus up to 10 % jitter), or the server's ``Retry-After``
  capped at :data:`MAX_RETRY_AFTER`; at most ``max_retries`` retries and ``retry_budget`` seconds of
  waiting per request; each retry is said through ``log`` as one whole line.
* **Not retried**: every other status (the server's message shown whole, up to
  :data:`MAX_ERROR_CHARS`), a URL httpx cannot use, a reply over :data:`MAX_REPLY_BYTES`. A 400 or 422
  whose message names a chat-template, role or tool problem is a *refusal* (``EndpointError.refusal``),
  which a caller may answer by adapting the request; a 5xx never is.
"""

from __future__ import annotations

import json
import random
import re
import sys
import threading
import time
from email.utils import parsedate_to_datetime
from typing import Any, Callable

import httpx


class EndpointError(RuntimeError):
    """A request that failed for good. ``status`` is the HTTP status (None when no server answered);
    ``refusal`` when the server rejected the request's content (see :data:`REFUSAL`)."""

    def __init__(self, message: str, *, status: int | None = None, refusal: bool = False,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.refusal = refusal
        self.reason = reason or message  # the failure without the URL


# 408: the server gave up waiting for the request; 409: a conflict that OpenAI's API and some gateways
# answer for a request that may pass a moment later; 429: rate limits; 5xx: server faults.
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
REFUSAL_STATUS = frozenset({400, 422})
# What makes a 400/422 a refusal that an adapted conversation may pass (vLLM and TGI answer a chat
# template's raise_exception, e.g. "Conversation roles must alternate", and a tool message without
# a call with 400); a context-length or parameter error is not one.
REFUSAL = re.compile(r"template|\brole|alternat|tool|function[ _]call", re.IGNORECASE)
MAX_REPLY_BYTES = 16 * 1024 * 1024  # an answer is a few KB; a bigger reply is a broken endpoint
MAX_ERROR_CHARS = 20_000  # the server's error text is shown whole up to this size
MAX_RETRY_AFTER = 60.0  # seconds: a larger Retry-After is capped (it would stall the run)

_LOG_LOCK = threading.Lock()


def say(line: str) -> None:
    """One line on stderr in one write, so that the lines of parallel requests never interleave."""
    with _LOG_LOCK:
        sys.stderr.write(line.rstrip("\n") + "\n")
        sys.stderr.flush()


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or an HTTP date), None if unusable."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    if seconds != seconds:  # NaN
        return None
    return min(max(0.0, seconds), MAX_RETRY_AFTER)


def error_text(data: bytes) -> str:
    """A server's error body as one readable text: an OpenAI-style ``{"error": {"message": ...}}``
    gives its message; anything longer than :data:`MAX_ERROR_CHARS` is shortened."""
    text = data.decode("utf-8", errors="replace").strip()
    try:
        body = json.loads(text)
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else error if isinstance(error, str) else None
        if isinstance(message, str) and message:
            text = message
    except (ValueError, RecursionError):
        pass
    if len(text) > MAX_ERROR_CHARS:
        text = text[:MAX_ERROR_CHARS] + f"... ({len(text) - MAX_ERROR_CHARS} more characters)"
    return text


class _Fault(Exception):
    """An attempt that failed in a way worth retrying; ``args[0]`` says how."""


class _TooLarge(Exception):
    pass


class _Stale(Exception):
    """A request that failed on a reused kept-alive connection before the answer's status line and headers
    were read (``__cause__``: the httpx error)."""


# How a kept-alive connection that the server closed fails the next request sent on it: closed before
# any answer ("Server disconnected without sending a response"), or reset while sending or reading.
_STALE_FAULTS = (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError)


class HttpClient:
    """Requests to one API root (``http://host:8000/v1``), with the deadline and retry policy above.

    ``stop`` (an event) ends the waits and the requests not yet sent with KeyboardInterrupt, so that a
    caller's Ctrl-C returns at once.
    """

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        retry_budget: float = 300.0,
        log: Callable[[str], None] | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        if not timeout or timeout <= 0:
            raise ValueError(f"request timeout must be a positive number of seconds, got {timeout!r}")
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = float(timeout)
        self.max_retries = max(0, max_retries)
        self.backoff = backoff
        self.retry_budget = retry_budget
        self.log = log or say
        self.stop = stop or threading.Event()
        # one pool of kept-alive connections for every thread; no cap on connections, the caller's
        # concurrency is the cap
        self.client = httpx.Client(timeout=self.timeout, limits=httpx.Limits(max_connections=None),
                                   follow_redirects=True)

    def close(self) -> None:
        self.client.close()

    def post_json(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` as JSON to ``base_url + path``; the reply, which must be a JSON object."""
        url = self.base_url + path
        payload = self.request(path, json.dumps(body).encode(), content_type="application/json")
        try:
            reply = json.loads(payload)
        except (ValueError, RecursionError):
            raise EndpointError(f"{url}: the reply is not JSON: {error_text(payload[:2000])}") from None
        if not isinstance(reply, dict):
            raise EndpointError(f"{url}: the reply is not a JSON object: {error_text(payload[:2000])}")
        return reply

    def _attempt(self, method: str, url: str, data: bytes | None,
                 headers: dict[str, str]) -> tuple[int, httpx.Headers, bytes]:
        """One request: (status, headers, body), read whole by the deadline."""
        outcome: dict[str, Any] = {}
        finished, abandoned = threading.Event(), threading.Event()

        def send() -> None:
            events: list[str] = []
            try:
                with self.client.stream(method, url, content=data, headers=headers,
                                        extensions={"trace": lambda name, info: events.append(name)}) as response:
                    body = bytearray()
                    for chunk in response.iter_bytes():
                        if abandoned.is_set():  # the caller has gone: drop the connection
                            return
                        body += chunk
                        if len(body) > MAX_REPLY_BYTES:
                            raise _TooLarge
                    outcome["reply"] = (response.status_code, response.headers, bytes(body))
            except _STALE_FAULTS as error:
                if "connection.connect_tcp.started" in events or "http11.receive_response_headers.complete" in events:
                    raise
                raise _Stale from error

        def run() -> None:
            try:
                try:
                    send()
                except _Stale as stale:
                    # A kept-alive connection the server had closed: the request goes out again at once,
                    # once (the pool drops the dead connection), within this attempt's deadline.
                    if abandoned.is_set():
                        raise stale.__cause__ from None
                    try:
                        send()
                    except _Stale as again:
                        raise again.__cause__ from None
            except BaseException as error:  # noqa: BLE001 (handed to the caller's thread)
                outcome["error"] = error
            finally:
                finished.set()

        threading.Thread(target=run, daemon=True, name="apibank-http").start()
        if not finished.wait(self.timeout):
            abandoned.set()
            raise _Fault(f"no complete answer within --request-timeout {self.timeout:g} s")
        error = outcome.get("error")
        if error is None:
            return outcome["reply"]
        if isinstance(error, _TooLarge):
            raise EndpointError(f"{url}: the reply is larger than {MAX_REPLY_BYTES} bytes")
        if isinstance(error, (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.LocalProtocolError)):
            raise EndpointError(f"{url}: {error}", reason=str(error)) from None
        if isinstance(error, httpx.TimeoutException):
            raise _Fault(f"no complete answer within --request-timeout {self.timeout:g} s")
        if isinstance(error, httpx.TransportError):  # reset, refused, cut body, bad status line, ...
            raise _Fault(f"{type(error).__name__}: {error}" if str(error) else type(error).__name__)
        if isinstance(error, httpx.HTTPError):  # a body that cannot be decoded, a redirect loop
            raise EndpointError(f"{url}: {type(error).__name__}: {error}", reason=str(error)) from None
        raise error

    def request(self, path: str, data: bytes | None = None, *, content_type: str | None = None) -> bytes:
        """The reply body of a GET (``data`` None) or POST to ``base_url + path``, retried as above."""
        url = self.base_url + path
        headers = {"Content-Type": content_type} if content_type else {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        method = "POST" if data is not None else "GET"
        waited = 0.0
        for attempt in range(self.max_retries + 1):
            if self.stop.is_set():
                raise KeyboardInterrupt
            delay: float | None = None
            try:
                status, reply_headers, payload = self._attempt(method, url, data, headers)
            except _Fault as fault:
                reason = str(fault)
                if attempt == self.max_retries:
                    raise EndpointError(f"{url}: {reason}", reason=reason) from None
            else:
                if status < 400:
                    return payload
                detail = error_text(payload)
                refusal = status in REFUSAL_STATUS and bool(REFUSAL.search(detail))
                if status not in RETRY_STATUS or attempt == self.max_retries:
                    raise EndpointError(f"{url}: HTTP {status}: {detail}", status=status, refusal=refusal,
                                        reason=f"HTTP {status}: {detail}")
                reason = f"HTTP {status}" + (f" ({detail[:200]})" if detail else "")
                delay = retry_after(reply_headers.get("Retry-After"))
            if delay is None:
                delay = self.backoff * 2**attempt
            delay = min(delay * (1 + 0.1 * random.random()), MAX_RETRY_AFTER)
            if waited + delay > self.retry_budget:
                raise EndpointError(
                    f"{url}: {reason}; gave up after {attempt + 1} attempts and {waited:.0f} s of waiting "
                    f"(retry budget {self.retry_budget:g} s)"
                )
            self.log(f"apibank: {url}: {reason}; retry {attempt + 1}/{self.max_retries} in {delay:.1f} s")
            waited += delay
            if self.stop.wait(delay):
                raise KeyboardInterrupt
        raise AssertionError("unreachable")
