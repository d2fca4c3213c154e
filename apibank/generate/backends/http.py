"""The one HTTP client of the package (standard library only): JSON requests to a model server, with
the retry policy every caller shares.

Connection errors, timeouts and 408/409/429/5xx are retried with exponential backoff, honouring a
``Retry-After`` header up to :data:`MAX_RETRY_AFTER` seconds, at most ``max_retries`` times and
``retry_budget`` seconds of waiting per request; each retry is said through ``log``. A request the
server rejects (other 4xx, a 500 whose text names a validation or template error, or the same 500
twice) fails at once as a *refusal*, with the server's message whole.
"""

from __future__ import annotations

import json
import random
import re
import sys
import threading
import time
import urllib.error
import urllib.request
from email.utils import parsedate_to_datetime
from typing import Any, Callable


class EndpointError(RuntimeError):
    """A request that failed for good. ``status`` is the HTTP status (None when no server answered);
    ``refusal`` when the server rejected the request itself."""

    def __init__(self, message: str, *, status: int | None = None, refusal: bool = False,
                 reason: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.refusal = refusal
        self.reason = reason or message  # the failure without the URL


RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})
# A 500 whose text says the request itself is wrong will fail the same way every time
# (llama-cpp-python answers a schema or chat-template violation with HTTP 500).
_VALIDATION = re.compile(
    r"validation|invalid|required|missing|must |alternate|not supported|unsupported|template|"
    r"KeyError|TypeError|ValueError|AttributeError|IndexError|unexpected keyword",
    re.IGNORECASE,
)
MAX_REPLY_BYTES = 16 * 1024 * 1024  # an answer is a few KB; a bigger reply is a broken endpoint
MAX_ERROR_CHARS = 20_000  # the server's error text is shown whole up to this size
MAX_RETRY_AFTER = 60.0  # seconds: a larger Retry-After is capped (it would stall the run)


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


class HttpClient:
    """Requests to one API root (``http://host:8000/v1``), with the retry policy above.

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
        self.log = log or (lambda line: print(line, file=sys.stderr, flush=True))
        self.stop = stop or threading.Event()

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

    def request(self, path: str, data: bytes | None = None, *, content_type: str | None = None) -> bytes:
        """The reply body of a GET (``data`` None) or POST to ``base_url + path``, retried as above."""
        url = self.base_url + path
        headers = {"Content-Type": content_type} if content_type else {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        waited = 0.0
        last_error: str | None = None
        for attempt in range(self.max_retries + 1):
            if self.stop.is_set():
                raise KeyboardInterrupt
            try:
                request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
            except ValueError as error:  # not a URL at all
                raise EndpointError(f"{url}: {error}", reason=str(error)) from None
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = response.read(MAX_REPLY_BYTES + 1)
                if len(payload) > MAX_REPLY_BYTES:
                    raise EndpointError(f"{url}: the reply is larger than {MAX_REPLY_BYTES} bytes")
                return payload
            except urllib.error.HTTPError as error:
                detail = error_text(error.read(MAX_REPLY_BYTES))
                status = error.code
                # A refusal of the request itself, which an adapted request may pass
                refusal = status in (400, 422) or (
                    status == 500 and (bool(_VALIDATION.search(detail)) or detail == last_error)
                )
                if refusal or status not in RETRY_STATUS or attempt == self.max_retries:
                    raise EndpointError(f"{url}: HTTP {status}: {detail}", status=status, refusal=refusal,
                                        reason=f"HTTP {status}: {detail}") from None
                last_error = detail
                reason = f"HTTP {status}" + (f" ({detail[:200]})" if detail else "")
                delay = retry_after(error.headers.get("Retry-After"))
                if delay is None:
                    delay = self.backoff * 2**attempt
            except (urllib.error.URLError, TimeoutError, ConnectionError, ValueError) as error:
                reason = f"{getattr(error, 'reason', error)}"
                if attempt == self.max_retries or isinstance(error, ValueError):
                    raise EndpointError(f"{url}: {reason}", reason=reason) from None
                if isinstance(error, TimeoutError) or "timed out" in reason:
                    reason = f"no answer within --request-timeout {self.timeout:g} s"
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
