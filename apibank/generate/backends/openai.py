"""Any OpenAI-compatible ``/chat/completions`` endpoint, standard library only."""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from apibank.generate.backends.base import Backend, Completion, DecodingSettings
from apibank.generate.conversation import Conversation
from apibank.generate.toolcalls import calls_from_message, calls_in_text


# ---------------------------------------------------------------------------- OpenAI-compatible
class EndpointError(RuntimeError):
    pass


_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}


class OpenAIBackend(Backend):
    """An OpenAI-compatible chat-completions endpoint.

    ``base_url`` is the API root (``http://host:8000/v1``); the key comes from ``api_key`` or the
    environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; none is sent if unset).
    Requests of a batch run concurrently (``concurrency`` threads); failed ones are retried with
    exponential backoff on connection errors and on 408/409/429/5xx, honouring ``Retry-After``.
    """

    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        concurrency: int = 8,
        max_retries: int = 5,
        timeout: float = 120.0,
        backoff: float = 1.0,
        seed: int | None = 0,
        extra_body: dict[str, Any] | None = None,
        tool_results_as_user: bool = False,
    ) -> None:
        self.model_id = model
        # The chat format's results are ``tool`` messages without a preceding ``tool_calls`` entry;
        # vLLM and TGI servers accept them, the hosted OpenAI API does not: send them as user turns.
        self.tool_results_as_user = tool_results_as_user
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self.concurrency = max(1, concurrency)
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.seed = seed
        self.extra_body = dict(extra_body or {})

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": self.model_id, "model_revision": None, "dtype": None,
                "base_url": self.base_url, "concurrency": self.concurrency}

    def wire_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The OpenAI wire form: tool-call arguments travel as JSON strings."""
        wired = []
        for message in messages:
            message = dict(message)
            if self.tool_results_as_user and message["role"] == "tool" and "tool_call_id" not in message:
                message = {"role": "user", "content": f"API-Response: {message['content']}"}
            if message.get("tool_calls"):
                message["tool_calls"] = [
                    {
                        **call,
                        "function": {
                            "name": call["function"]["name"],
                            "arguments": json.dumps(call["function"]["arguments"], ensure_ascii=False),
                        },
                    }
                    for call in message["tool_calls"]
                ]
            wired.append(message)
        return wired

    def request_body(self, conversation: Conversation, settings: DecodingSettings) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": self.wire_messages(conversation.messages),
            "temperature": 0.0,
            "max_tokens": settings.max_new_tokens,
            "n": 1,
        }
        if self.seed is not None:
            body["seed"] = self.seed
        if conversation.tools:
            body["tools"] = conversation.tools
        if settings.stop:
            body["stop"] = list(settings.stop)[:4]  # the OpenAI API accepts at most four
        body.update(self.extra_body)
        return body

    def render(self, conversation: Conversation) -> str:
        return json.dumps(
            {"messages": self.wire_messages(conversation.messages), "tools": conversation.tools}, ensure_ascii=False
        )

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = json.dumps(body).encode()
        url = f"{self.base_url}/chat/completions"
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read())
            except urllib.error.HTTPError as error:
                detail = error.read().decode(errors="replace")[:500]
                if error.code not in _RETRY_STATUS or attempt == self.max_retries:
                    raise EndpointError(f"{url}: HTTP {error.code}: {detail}") from error
                delay = _retry_after(error.headers.get("Retry-After")) or self.backoff * 2**attempt
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                if attempt == self.max_retries:
                    raise EndpointError(f"{url}: {error}") from error
                delay = self.backoff * 2**attempt
            time.sleep(delay * (1 + 0.1 * random.random()))
        raise AssertionError("unreachable")

    def _one(self, conversation: Conversation, settings: DecodingSettings) -> Completion:
        reply = self._post(self.request_body(conversation, settings))
        message = reply["choices"][0]["message"]
        text = message.get("content") or ""
        calls = calls_from_message(message.get("tool_calls")) if conversation.format == "tools" else None
        if conversation.format == "tools" and not calls:
            calls = calls_in_text(text) or None
        return Completion(text=text, raw=json.dumps(message, ensure_ascii=False), tool_calls=calls,
                          extra={"usage": reply.get("usage")})

    def generate(self, conversations, prompts, settings):
        if len(conversations) <= 1 or self.concurrency == 1:
            return [self._one(c, settings) for c in conversations]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(conversations))) as pool:
            return list(pool.map(lambda c: self._one(c, settings), conversations))


def _retry_after(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value else None
    except ValueError:
        return None
