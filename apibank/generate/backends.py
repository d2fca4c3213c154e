"""Generation backends behind one interface.

A backend renders a :class:`Conversation` into the exact prompt it sends (``render``) and turns a
batch of them into :class:`Completion` objects with greedy decoding (``generate``).

* :class:`TransformersBackend`: ``AutoModelForCausalLM`` + ``AutoTokenizer``, batched, left padding;
* :class:`VLLMBackend`: vLLM's offline ``LLM`` engine (optional extra, imported lazily), for
  throughput, tensor parallelism and models bigger than one GPU;
* :class:`OpenAIBackend`: any OpenAI-compatible ``/chat/completions`` endpoint (vLLM or TGI servers,
  hosted APIs), with concurrent requests and retries, standard library only;
* :class:`OracleBackend`: replays the gold answers (a self-check that needs no model).
"""

from __future__ import annotations

import json
import os
import random
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

from apibank.generate.conversation import Conversation
from apibank.generate.toolcalls import ToolCall, calls_from_message, calls_in_text

BACKENDS = ("transformers", "vllm", "openai")


@dataclass(frozen=True)
class DecodingSettings:
    """Greedy decoding; ``stop`` strings end an answer (the text from the first one on is dropped)."""

    max_new_tokens: int = 256
    stop: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"do_sample": False, "temperature": 0.0, "max_new_tokens": self.max_new_tokens, "stop": list(self.stop)}


@dataclass
class Completion:
    text: str  # the answer as text (special tokens removed)
    raw: str  # what the backend produced, special tokens / the served message included
    tool_calls: list[ToolCall] | None = None  # structured calls, where the backend parsed them
    extra: dict[str, Any] = field(default_factory=dict)


class Backend(ABC):
    name: str = ""

    @abstractmethod
    def render(self, conversation: Conversation) -> str:
        """The exact prompt this backend sends for ``conversation``."""

    @abstractmethod
    def generate(
        self, conversations: Sequence[Conversation], prompts: Sequence[str], settings: DecodingSettings
    ) -> list[Completion]:
        """One completion per conversation (``prompts[i]`` is ``render(conversations[i])``)."""

    def info(self) -> dict[str, Any]:
        return {"backend": self.name}

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------------------- oracle
class OracleBackend(Backend):
    """Answers every row with its gold ``expected_output``: the ceiling of the judging protocols."""

    name = "oracle"

    def render(self, conversation: Conversation) -> str:
        return conversation.plain_text if conversation.plain_text is not None else json.dumps(conversation.messages)

    def generate(self, conversations, prompts, settings):
        return [Completion(text=c.gold, raw=c.gold) for c in conversations]

    def info(self) -> dict[str, Any]:
        return {"backend": self.name, "model_id": "oracle", "model_revision": None, "dtype": None}


# ------------------------------------------------------------------------------ HF tokenizer use
class _HFRendering:
    """Prompt rendering and tool-call parsing shared by the backends that hold a HF tokenizer."""

    tokenizer: Any
    chat_template: str  # "auto", "on" or "off"

    def _uses_template(self, conversation: Conversation) -> bool:
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if conversation.format == "paper":
            return has_template and self.chat_template != "off"
        if not has_template:
            raise ValueError(
                f"the {conversation.format!r} format needs a chat template, and this tokenizer has none; "
                "use --format paper"
            )
        return True

    def render(self, conversation: Conversation) -> str:
        if not self._uses_template(conversation):
            return conversation.plain_text or ""
        try:
            return self.tokenizer.apply_chat_template(
                conversation.messages, tools=conversation.tools, add_generation_prompt=True, tokenize=False
            )
        except Exception as error:  # jinja raises its own errors, e.g. for a role the template rejects
            if not any(m["role"] == "tool" for m in conversation.messages):
                raise
            # Templates without a tool role: show each result as a user turn instead.
            messages = [
                {"role": "user", "content": f"API-Response: {m['content']}"} if m["role"] == "tool" else m
                for m in conversation.messages
            ]
            try:
                return self.tokenizer.apply_chat_template(
                    messages, tools=conversation.tools, add_generation_prompt=True, tokenize=False
                )
            except Exception:
                raise error

    def _add_special_tokens(self, conversation: Conversation) -> bool:
        # A chat template writes BOS itself; a plain paper prompt gets the tokenizer's usual tokens.
        return not self._uses_template(conversation)

    def _parse_tool_calls(self, raw: str, prompt: str, conversation: Conversation) -> list[ToolCall] | None:
        if conversation.format != "tools":
            return None
        if getattr(self.tokenizer, "response_template", None) is not None:
            try:
                message = self.tokenizer.parse_response(raw, prefix=prompt, tools=conversation.tools)
                calls = calls_from_message(message.get("tool_calls"))
                if calls:
                    return calls
            except Exception:  # a template-specific parser failing on odd output: fall back to JSON scan
                pass
        return calls_in_text(raw)


def _torch_dtype(dtype: str):
    import torch

    if dtype == "auto":
        return "auto"
    try:
        value = getattr(torch, dtype)
    except AttributeError:
        raise ValueError(f"unknown dtype {dtype!r}") from None
    if not isinstance(value, torch.dtype):
        raise ValueError(f"unknown dtype {dtype!r}")
    return value


# ------------------------------------------------------------------------------- transformers
class TransformersBackend(_HFRendering, Backend):
    name = "transformers"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        device: str | None = None,
        device_map: str | dict | None = None,
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        model_kwargs: dict[str, Any] | None = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.model_id = model
        self.revision = revision
        self.chat_template = chat_template
        self.tokenizer = AutoTokenizer.from_pretrained(model, revision=revision, trust_remote_code=trust_remote_code)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        kwargs = dict(model_kwargs or {})
        kwargs["dtype"] = _torch_dtype(dtype)
        if device_map is not None:
            kwargs["device_map"] = device_map
        self.model = AutoModelForCausalLM.from_pretrained(
            model, revision=revision, trust_remote_code=trust_remote_code, **kwargs
        )
        if device_map is None:
            self.model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model.eval()
        eos = self.model.generation_config.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        if self.tokenizer.eos_token_id is not None:
            eos_ids.add(self.tokenizer.eos_token_id)
        self.eos_ids = sorted(eos_ids)

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": self.revision or getattr(self.model.config, "_commit_hash", None),
            "dtype": str(self.model.dtype).removeprefix("torch."),
            "device": str(self.model.device),
            "chat_template": self.chat_template,
        }

    def _trim(self, ids: list[int]) -> list[int]:
        for index, token in enumerate(ids):
            if token in self.eos_ids:
                ids = ids[:index]
                break
        pad = self.tokenizer.pad_token_id
        while ids and ids[-1] == pad:
            ids = ids[:-1]
        return ids

    def generate(self, conversations, prompts, settings):
        import torch

        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        encoded = self.tokenizer(
            list(prompts), return_tensors="pt", padding=True, add_special_tokens=add_special
        ).to(self.model.device)
        stop_kwargs: dict[str, Any] = {}
        if settings.stop:
            stop_kwargs = {"stop_strings": list(settings.stop), "tokenizer": self.tokenizer}
        with torch.inference_mode():
            output = self.model.generate(
                **encoded,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                max_new_tokens=settings.max_new_tokens,
                pad_token_id=self.tokenizer.pad_token_id,
                eos_token_id=self.eos_ids or None,
                **stop_kwargs,
            )
        new_tokens = output[:, encoded["input_ids"].shape[1] :].tolist()
        completions = []
        for conversation, prompt, ids in zip(conversations, prompts, new_tokens):
            ids = self._trim(ids)
            raw = self.tokenizer.decode(ids, skip_special_tokens=False)
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
            calls = self._parse_tool_calls(raw, prompt, conversation)
            completions.append(Completion(text=text, raw=raw, tool_calls=calls, extra={"new_tokens": len(ids)}))
        return completions


# ----------------------------------------------------------------------------------------- vLLM
class VLLMBackend(_HFRendering, Backend):
    """vLLM's offline engine. ``pip install 'apibank[vllm]'``; needs a GPU.

    Prompts are rendered with the model's HF tokenizer exactly as for the transformers backend and
    sent as token ids, so both backends see identical inputs.
    """

    name = "vllm"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: str = "auto",
        tensor_parallel_size: int = 1,
        trust_remote_code: bool = False,
        chat_template: str = "auto",
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        try:
            from vllm import LLM
        except ImportError as error:
            raise RuntimeError("the vllm backend needs vLLM: pip install 'apibank[vllm]'") from error
        self.model_id = model
        self.revision = revision
        self.dtype = dtype
        self.chat_template = chat_template
        self.tensor_parallel_size = tensor_parallel_size
        self.llm = LLM(
            model=model,
            revision=revision,
            tokenizer_revision=revision,
            dtype=dtype,
            tensor_parallel_size=tensor_parallel_size,
            trust_remote_code=trust_remote_code,
            seed=0,
            **(engine_kwargs or {}),
        )
        self.tokenizer = self.llm.get_tokenizer()

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model_id": self.model_id,
            "model_revision": self.revision,
            "dtype": self.dtype,
            "tensor_parallel_size": self.tensor_parallel_size,
            "chat_template": self.chat_template,
        }

    def generate(self, conversations, prompts, settings):
        from vllm import SamplingParams

        if not conversations:
            return []
        add_special = self._add_special_tokens(conversations[0])
        inputs = [
            {"prompt_token_ids": self.tokenizer(prompt, add_special_tokens=add_special)["input_ids"]}
            for prompt in prompts
        ]
        params = SamplingParams(
            temperature=0.0,
            max_tokens=settings.max_new_tokens,
            stop=list(settings.stop) or None,
            skip_special_tokens=False,
        )
        outputs = self.llm.generate(inputs, params, use_tqdm=False)
        completions = []
        for conversation, prompt, output in zip(conversations, prompts, outputs):
            generated = output.outputs[0]
            raw = generated.text
            text = self.tokenizer.decode(list(generated.token_ids), skip_special_tokens=True)
            calls = self._parse_tool_calls(raw, prompt, conversation)
            completions.append(Completion(text=text, raw=raw, tool_calls=calls))
        return completions


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


def make_backend(model: str, backend: str = "transformers", **options: Any) -> Backend:
    """A backend by name; ``model="oracle"`` gives the gold-replaying backend whatever ``backend`` says."""
    if model == "oracle":
        return OracleBackend()
    options = {key: value for key, value in options.items() if value is not None}
    if backend == "transformers":
        return TransformersBackend(model, **options)
    if backend == "vllm":
        return VLLMBackend(model, **options)
    if backend == "openai":
        return OpenAIBackend(model, **options)
    raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


__all__ = [
    "BACKENDS",
    "Backend",
    "Completion",
    "DecodingSettings",
    "EndpointError",
    "OpenAIBackend",
    "OracleBackend",
    "TransformersBackend",
    "VLLMBackend",
    "make_backend",
]
