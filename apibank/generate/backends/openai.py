"""Any OpenAI-compatible ``/chat/completions`` endpoint, through the package's one HTTP client
(:mod:`apibank.generate.backends.http`)."""

from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import Counter
from typing import Any, Callable, Iterator, Sequence

from apibank.errors import UsageError
from apibank.generate.backends.base import Backend, Completion, DecodingSettings
from apibank.generate.backends.http import EndpointError, HttpClient
from apibank.generate.backends.options import (CHAT_TEMPLATE_KWARGS, RESPONSE_TEMPLATE, TOOL_PARSER, Option,
                                                positive_seconds)
from apibank.generate.conversation import Conversation
from apibank.generate.interrupts import HeldInterrupt
from apibank.generate.templates import ESCALATION, ORDER, Adaptation, adapt, shape_of, tool_result_text
from apibank.generate.toolcalls import ParserChoice, calls_from_message


def _usage(reply: dict[str, Any]) -> dict[str, int] | None:
    usage = reply.get("usage")
    if not isinstance(usage, dict):
        return None
    out = {}
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = usage.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            out[key] = value
    return out or None

ENDPOINT_ESCALATION = tuple(
    [name for name in ESCALATION if name not in ("call-ids-alphanumeric", "arguments-as-json-text")]
    + ["call-ids-alphanumeric", "arguments-as-json-text"])


class OpenAIBackend(Backend):
    """An OpenAI-compatible chat-completions endpoint.

    ``base_url`` is the API root (``http://host:8000/v1``); the key comes from ``api_key`` or the
    environment variable named by ``api_key_env`` (default ``OPENAI_API_KEY``; none is sent if unset).
    Requests of a batch run concurrently (``concurrency`` threads), each retried by the
    :class:`~apibank.generate.backends.http.HttpClient` policy (``max_retries``, ``backoff``,
    ``retry_budget``, ``Retry-After`` capped, ``timeout`` bounding each whole answer). A request the
    server refuses for its content (HTTP 400/422 naming a template, role or tool problem) is not
    retried: the conversation is adapted as a chat template would be
    (:mod:`apibank.generate.templates`), the adaptations kept for the later rows of the same shape
    (:func:`~apibank.generate.templates.shape_of`, as a chat template's are) and recorded with each row's prompt; if the server still refuses, the error shows the server's message whole. A 5xx
    is a server fault, retried, never a reason to adapt.
    """

    name = "openai"
    renders_requests = True  # render() gives the request's JSON (messages and tools), the server templates it
    options = (
        Option("base_url", "API root, e.g. http://127.0.0.1:8000/v1", metavar="URL"),
        Option("api_key_env", "environment variable holding the key", default="OPENAI_API_KEY", metavar="NAME"),
        Option("concurrency", "parallel requests", type=int, default=8, minimum=1),
        Option("max_retries", "retries per request", type=int, default=5, minimum=0),
        Option("timeout", "seconds for one whole answer (a trickle included) before retrying it", type=float,
               default=120.0, flag="--request-timeout", metavar="SECONDS", check=positive_seconds),
        Option("tool_results_as_user", "chat format: send API results as user turns (the hosted OpenAI API "
               "rejects tool messages that answer no tool call)", kind="switch", default=False),
        CHAT_TEMPLATE_KWARGS,
        TOOL_PARSER,
        RESPONSE_TEMPLATE,
    )

    @classmethod
    def check_options(cls, model: str, options: dict[str, Any], *, fmt: str | None = None) -> None:
        if not options.get("base_url"):
            raise UsageError("--backend openai needs --base-url, e.g. --base-url http://127.0.0.1:8000/v1")
        check_endpoint(options["base_url"], os.environ.get(options.get("api_key_env") or "OPENAI_API_KEY"),
                       options.get("timeout") or 120.0)

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
        retry_budget: float = 300.0,
        seed: int | None = 0,
        extra_body: dict[str, Any] | None = None,
        tool_results_as_user: bool = False,
        tool_parser: str | None = None,
        response_template: str | None = None,
        chat_template_kwargs: dict[str, Any] | None = None,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.model_id = model
        # The chat format's results are ``tool`` messages that answer no structured call; vLLM,
        # TGI and llama-cpp-python accept them, the hosted OpenAI API does not: send them as user turns.
        self.tool_results_as_user = tool_results_as_user
        # Calls the server did not parse into tool_calls, read from the text: the server's template is
        # unknown here, so the family comes from --response-template, --tool-parser or each text's own markers.
        self.parser_choice = ParserChoice.make(tool_parser, None, response_template=response_template)
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get(api_key_env)
        self._stop = threading.Event()
        self.client = HttpClient(self.base_url, api_key=self.api_key, timeout=timeout, max_retries=max_retries,
                                 backoff=backoff, retry_budget=retry_budget, log=log, stop=self._stop)
        self.timeout = self.client.timeout
        self.concurrency = max(1, concurrency)
        self.seed = seed
        self.extra_body = dict(extra_body or {})
        # vLLM, SGLang and llama.cpp servers pass this body field to the model's chat template.
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self._lock = threading.Lock()
        self._adaptations: dict[str, Adaptation] = {}  # every adaptation learnt, for template_info
        self._by_shape: dict[tuple, tuple[str, ...]] = {}  # those a conversation of each shape is sent with
        self._last_names: tuple[str, ...] = ()

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": self.model_id, "model_revision": None, "dtype": None,
                "base_url": self.base_url, "concurrency": self.concurrency, "request_timeout": self.timeout}

    def template_info(self) -> dict[str, Any]:
        adaptations = [self._adaptations[name].as_dict() for name in ORDER if name in self._adaptations]
        return {"chat_template_file": None, "chat_template_sha256": None,
                "chat_template_kwargs": dict(self.chat_template_kwargs), "template_adaptations": adaptations,
                "tool_parser": self.parser_choice.as_dict()}

    # -- the request
    def wire_messages(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The OpenAI wire form: tool-call arguments travel as JSON strings; every tool message has a
        ``tool_call_id``."""
        wired = []
        answered: set[str] = set()
        for index, message in enumerate(messages):
            message = dict(message)
            if message["role"] == "tool":
                message.setdefault("tool_call_id", f"call_{index}")
                if self.tool_results_as_user and message["tool_call_id"] not in answered:
                    message = {"role": "user", "content": tool_result_text(message.get("name"), message["content"])}
            if message.get("tool_calls"):
                answered.update(str(call.get("id")) for call in message["tool_calls"])
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

    def _adapted(self, conversation: Conversation, names: Sequence[str]) -> tuple[list[dict[str, Any]], Any]:
        return adapt(conversation.messages, conversation.tools, names)

    def request_body(
        self, conversation: Conversation, settings: DecodingSettings, adaptations: Sequence[str] = ()
    ) -> dict[str, Any]:
        messages, tools = self._adapted(conversation, adaptations)
        body: dict[str, Any] = {
            "model": self.model_id,
            "messages": self.wire_messages(messages),
            "temperature": float(settings.temperature),
            "max_tokens": settings.max_tokens_for(conversation.level, conversation.kind),  # this row's budget
            "n": 1,
        }
        seed = settings.seed if settings.sampling and settings.seed is not None else self.seed
        if seed is not None:
            body["seed"] = seed
        if tools:
            body["tools"] = tools
        if settings.stop:
            body["stop"] = list(settings.stop)[:4]  # the OpenAI API accepts at most four
        if self.chat_template_kwargs:
            body["chat_template_kwargs"] = dict(self.chat_template_kwargs)
        body.update(self.extra_body)
        return body

    @property
    def last_adaptations(self) -> list[str]:
        """The adaptations of the conversation rendered last."""
        return [name for name in ORDER if name in self._last_names]

    def _known(self, conversation: Conversation) -> tuple[str, ...]:
        """The adaptations learnt for conversations of this one's shape: a refusal of one shape (a tool turn,
        a system turn) says nothing about conversations without it."""
        with self._lock:
            return self._by_shape.get(shape_of(conversation.messages, conversation.tools), ())

    def sent_prompt(self, conversation: Conversation, adaptations: Sequence[str]) -> str:
        """The prompt as recorded: the messages and tools sent with ``adaptations``, as JSON text."""
        messages, tools = self._adapted(conversation, adaptations)
        return json.dumps({"messages": self.wire_messages(messages), "tools": tools}, ensure_ascii=False)

    def render(self, conversation: Conversation) -> str:
        """The prompt with the adaptations learnt so far for its shape (a row's record keeps the one it was
        sent with)."""
        self._last_names = self._known(conversation)
        return self.sent_prompt(conversation, self._last_names)

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.client.post_json("/chat/completions", body)

    def _attempts(self, known: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        """The adaptation sets to send a conversation with, in turn: those learnt for its shape; once refused,
        each set other shapes were accepted with, the most common first (a server refusing a role refuses it
        in most shapes: one refused request per new shape instead of one per adaptation); then one adaptation more at a time
        (servers refuse roles, rarely ids or argument forms, so those come last)."""
        yield known
        with self._lock:
            learnt = Counter(self._by_shape.values())
        yield from (names for names, _ in learnt.most_common() if names != known)
        names = known
        for extra in ENDPOINT_ESCALATION:
            if extra not in names:
                names = (*names, extra)  # kept even when it changes nothing yet
                yield names

    def _reply(self, conversation: Conversation, settings: DecodingSettings) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The server's reply, adapting the conversation once per refusal until the server takes it."""
        first: EndpointError | None = None
        known = self._known(conversation)
        sent: list[Any] = []
        for names in self._attempts(known):
            body = self.request_body(conversation, settings, names)
            if body["messages"] in sent:  # a set that changes nothing more is not sent again
                continue
            sent.append(previous := body["messages"])
            try:
                reply = self._post(body)
            except EndpointError as error:
                if not error.refusal:
                    raise
                first = first or error
                continue
            if first is not None:
                # Record only what this request needed: an adaptation whose removal changes nothing is dropped.
                names = tuple(name for name in names if name in known or self.request_body(
                    conversation, settings, tuple(other for other in names if other != name))["messages"] != previous)
                with self._lock:
                    self._by_shape[shape_of(conversation.messages, conversation.tools)] = names
                    for name in names:
                        self._adaptations.setdefault(
                            name, Adaptation(name, f"row {conversation.row_id}: the server refused: {first}"))
            return reply, names
        assert first is not None
        raise EndpointError(
            f"row {conversation.row_id}: the server refuses this request even adapted ({', '.join(ORDER)}): {first}",
            status=first.status, refusal=True,
        )

    def _one(self, conversation: Conversation, settings: DecodingSettings) -> Completion:
        started = time.perf_counter()
        reply, adaptations = self._reply(conversation, settings)
        choices = reply.get("choices")
        message = choices[0].get("message") if isinstance(choices, list) and choices and isinstance(
            choices[0], dict) else None
        if not isinstance(message, dict):
            raise EndpointError(f"{self.base_url}: a reply without choices[0].message: {json.dumps(reply)[:2000]}")
        text = message.get("content") if isinstance(message.get("content"), str) else ""
        calls = None
        if conversation.format == "tools":
            calls = calls_from_message(message.get("tool_calls")) or self.parser_choice.read(
                text, conversation.tools) or None
        extra: dict[str, Any] = {"seconds": round(time.perf_counter() - started, 6),
                                 "prompt": self.sent_prompt(conversation, adaptations)}
        if adaptations:
            extra["template_adaptations"] = [name for name in ORDER if name in adaptations]
        usage = _usage(reply)
        if usage is not None:
            extra["usage"] = usage
            if "completion_tokens" in usage:
                extra["new_tokens"] = usage["completion_tokens"]
        return Completion(text=text, raw=json.dumps(message, ensure_ascii=False), tool_calls=calls, extra=extra)

    # -- a batch
    def generate(self, conversations, prompts, settings, on_completion=None):
        """One completion per conversation, ``concurrency`` requests at a time, in daemon threads; each
        response is handed to ``on_completion`` (in the calling thread) as it comes back. Ctrl-C returns at
        once, abandoning the requests still out; a request that fails for good stops the batch."""
        self._stop.clear()
        results: dict[int, Completion] = {}
        arrived: queue.SimpleQueue[tuple[int, Completion | BaseException]] = queue.SimpleQueue()
        pending = list(range(len(conversations)))
        pending_lock = threading.Lock()

        def worker() -> None:
            while not self._stop.is_set():
                with pending_lock:
                    if not pending:
                        return
                    index = pending.pop(0)
                try:
                    arrived.put((index, self._one(conversations[index], settings)))
                except BaseException as error:  # noqa: BLE001 (handed to the caller's thread)
                    self._stop.set()  # a request that failed for good (or was stopped): start no more
                    arrived.put((index, error))
                    return

        def take(index: int, outcome: Completion | BaseException) -> None:
            if isinstance(outcome, KeyboardInterrupt):  # a request stopped because another one failed
                return
            if isinstance(outcome, BaseException):
                raise outcome
            results[index] = outcome
            if on_completion is not None:
                on_completion(index, outcome)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(self.concurrency, len(pending)))]
        try:
            # Ctrl-C is held while an answer goes from the queue to on_completion, so that none that came back
            # is lost; it is acted on within one wait (0.1 s), after handing over every answer that arrived.
            with HeldInterrupt() as held:
                for thread in threads:
                    thread.start()
                while len(results) < len(conversations):
                    if held.pending:
                        self._stop.set()
                        while not arrived.empty():
                            index, outcome = arrived.get()
                            if isinstance(outcome, Completion):
                                take(index, outcome)
                        held.raise_if_pending()
                    try:
                        take(*arrived.get(timeout=0.1))
                    except queue.Empty:
                        if not any(thread.is_alive() for thread in threads) and arrived.empty():
                            raise AssertionError("the request threads ended without an answer for every row") from None
        except BaseException:
            self._stop.set()
            raise
        return [results[index] for index in range(len(conversations))]


# ---------------------------------------------------------------------------------- endpoint
def check_endpoint(base_url: str, api_key: str | None, timeout: float) -> None:
    """The server answers at all (``GET {base_url}/models``, once); only an unreachable one is an error."""
    if not base_url.startswith(("http://", "https://")):
        raise UsageError(f"--base-url {base_url}: give the API root as a URL, e.g. http://127.0.0.1:8000/v1")
    client = HttpClient(base_url, api_key=api_key, timeout=min(timeout, 10.0), max_retries=0)
    try:
        client.request("/models")
    except EndpointError as error:
        if error.status in (401, 403):
            raise UsageError(f"--base-url {base_url}: the server refuses the API key (HTTP {error.status}); set "
                             "the key in the variable named by --api-key-env") from None
        if error.status is None:
            raise UsageError(f"--base-url {base_url}: no server answers ({error.reason}); start it or fix "
                             "the URL") from None
    finally:
        client.close()
