"""Model agents for ``apibank agent``: a thin adapter from a served or local model to one episode step.

- ``transformers`` (a Hub id, a local folder, or a ``.gguf`` file loaded with ``gguf_file=``): native
  tool calling through the tokenizer's chat template (``tools=``), or, for a model without a
  template (or with ``--tool-format text``), our plain-text template below;
- ``openai``: any OpenAI-compatible ``/chat/completions`` endpoint with native ``tools`` (vLLM or TGI
  servers, hosted APIs), standard library only, retries on transport errors and 429/5xx;
- ``vllm``: vLLM's offline engine (``LLM.chat(..., tools=)``), optional, imported lazily.

Tool calls in generated text are found by :func:`apibank.generate.toolcalls.calls_in_text` (JSON
objects ``{"name": ..., "arguments": {...}}``, inside ``<tool_call>`` tags or not). Nothing the model
writes is evaluated: arguments that are not a JSON object are passed on and refused by the
environment. Usage (prompt and completion tokens) is summed per episode.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from apibank.agent.agents import Step, ToolCall
from apibank.data.episodes import Episode
from apibank.errors import UsageError, require_extra

# ------------------------------------------------------------------------------ the text template
TEXT_TOOLS_HEADER = (
    "Tools you can call. To call one, answer with one line of JSON and nothing else:\n"
    '{"name": "<tool name>", "arguments": {<parameter>: <value>, ...}}\n'
    "When you have what the user asked for, answer the user in plain words.\n"
)
TEXT_STOPS = ("\nUser:", "\nTool result:", "\nSystem:")


def text_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """A plain transcript with the tools' JSON schemas, for models without a (tool-capable) chat template."""
    lines: list[str] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            lines.append(f"System: {message['content']}\n")
            lines.append(TEXT_TOOLS_HEADER)
            lines.extend(json.dumps(schema["function"], ensure_ascii=False) for schema in tools)
            lines.append("")
        elif role == "user":
            lines.append(f"User: {message['content']}")
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                for call in calls:
                    arguments = call["function"]["arguments"]
                    lines.append("Assistant: " + json.dumps({"name": call["function"]["name"], "arguments": _loads(arguments)}, ensure_ascii=False))
            else:
                lines.append(f"Assistant: {message['content']}")
        elif role == "tool":
            lines.append(f"Tool result: {message['content']}")
    lines.append("Assistant:")
    return "\n".join(lines)


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


def _cut_at_stops(text: str, stops: tuple[str, ...]) -> str:
    cut = min((i for i in (text.find(s) for s in stops) if i >= 0), default=len(text))
    return text[:cut]


class _CallIds:
    def __init__(self) -> None:
        self._ids = itertools.count()

    def next(self) -> str:
        return f"call_{next(self._ids)}"


def step_from_text(text: str, offered: set[str], ids: _CallIds) -> Step:
    """Calls written in text (JSON objects naming a tool); otherwise the text is the answer."""
    from apibank.generate.toolcalls import calls_in_text

    calls = [ToolCall(ids.next(), name, arguments) for name, arguments in calls_in_text(text)]
    return Step(text="" if calls else text.strip(), calls=calls, raw=text)


def hf_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat templates expect tool-call arguments as objects, not JSON strings."""
    out = []
    for message in messages:
        if message.get("tool_calls"):
            message = {**message, "tool_calls": [
                {**c, "function": {**c["function"], "arguments": _loads(c["function"]["arguments"])}} for c in message["tool_calls"]
            ]}
        out.append(message)
    return out


# ------------------------------------------------------------------------------ transformers
class TransformersAgent:
    def __init__(self, model: str, *, tool_format: str = "auto", temperature: float = 0.0,
                 max_new_tokens: int = 256, dtype: str = "float32", device: str = "cpu") -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        location, extra = model, {}
        tokenizer_extra: dict[str, Any] = {}
        if model.endswith(".gguf"):
            path = Path(model)
            if not path.is_file():
                raise UsageError(f"--model {model}: no such GGUF file; check the path")
            location, extra = str(path.parent), {"gguf_file": path.name}
            # a folder prepared by ``python -m apibank.agent.gguf`` holds the converted tokenizer
            tokenizer_extra = {} if (path.parent / "tokenizer_config.json").exists() else extra
        self.tokenizer = AutoTokenizer.from_pretrained(location, **tokenizer_extra)
        self.model = AutoModelForCausalLM.from_pretrained(location, dtype=getattr(torch, dtype), **extra).to(device)
        self.model.eval()
        self.device = device
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if tool_format == "native" and not has_template:
            raise UsageError(f"--model {model}: no chat template for --tool-format native; use --tool-format text")
        self.native = tool_format == "native" or (tool_format == "auto" and has_template)
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.name = model
        self.torch = torch
        # a turn ends at the template's end-of-turn marker (a base model does not stop by itself)
        ends = [t for t in ("<end_of_turn>", "<start_of_turn>", "<|im_end|>", "<|eot_id|>") if t in self.tokenizer.get_vocab()]
        self.stops = tuple(ends + [self.tokenizer.eos_token or "\x00"]) if self.native else TEXT_STOPS

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.ids = _CallIds()
        self.torch.manual_seed(trial)

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
        if self.native:
            return self.tokenizer.apply_chat_template(hf_messages(messages), tools=tools, add_generation_prompt=True, tokenize=False)
        return text_prompt(messages, tools)

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        prompt = self.render(messages, tools)
        encoded = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=not self.native).to(self.device)
        sampling = {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        with self.torch.no_grad():
            output = self.model.generate(**encoded, max_new_tokens=self.max_new_tokens,
                                         stop_strings=list(self.stops), tokenizer=self.tokenizer,
                                         pad_token_id=self.tokenizer.pad_token_id or self.tokenizer.eos_token_id, **sampling)
        new_tokens = output[0, encoded["input_ids"].shape[1]:]
        text = self.tokenizer.decode(new_tokens, skip_special_tokens=False)
        text = _cut_at_stops(text, self.stops)
        for token in self.tokenizer.all_special_tokens:
            text = text.replace(token, "")
        step = step_from_text(text, {t["function"]["name"] for t in tools}, self.ids)
        step.usage = {"prompt_tokens": int(encoded["input_ids"].shape[1]), "completion_tokens": int(new_tokens.shape[0])}
        return step


# ------------------------------------------------------------------------------ OpenAI-compatible
class EndpointAgent:
    def __init__(self, model: str, base_url: str, *, api_key: str | None = None, tool_format: str = "auto",
                 temperature: float = 0.0, max_new_tokens: int = 256, timeout: float = 120.0, max_retries: int = 4) -> None:
        self.name, self.url = model, base_url.rstrip("/") + "/chat/completions"
        self.api_key, self.native = api_key, tool_format != "text"
        self.temperature, self.max_new_tokens = temperature, max_new_tokens
        self.timeout, self.max_retries = timeout, max_retries

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.ids = _CallIds()
        self.seed = trial

    def _post(self, body: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        for attempt in range(self.max_retries + 1):
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    return json.loads(response.read(20_000_000))
            except urllib.error.HTTPError as error:
                if error.code not in (429, 500, 502, 503, 504) or attempt == self.max_retries:
                    raise RuntimeError(f"{self.url} answered {error.code}: {error.read(2000)!r}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
                if attempt == self.max_retries:
                    raise RuntimeError(f"{self.url} unreachable: {error}") from None
            time.sleep(min(2 ** attempt, 30))
        raise AssertionError("unreachable")

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        body: dict[str, Any] = {"model": self.name, "temperature": self.temperature,
                                "max_tokens": self.max_new_tokens, "seed": self.seed}
        if self.native:
            body["messages"], body["tools"] = messages, tools
        else:
            body["messages"], body["stop"] = [{"role": "user", "content": text_prompt(messages, tools)}], list(TEXT_STOPS)
        reply = self._post(body)
        try:
            message = reply["choices"][0]["message"]
        except (KeyError, IndexError, TypeError):
            raise RuntimeError(f"{self.url}: reply without choices[0].message: {str(reply)[:500]}") from None
        usage = {k: int(v) for k, v in (reply.get("usage") or {}).items() if k in ("prompt_tokens", "completion_tokens") and isinstance(v, int)}
        served = message.get("tool_calls") or []
        if served:
            calls = [ToolCall(c.get("id") or self.ids.next(), (c.get("function") or {}).get("name"),
                              _loads((c.get("function") or {}).get("arguments") or "{}")) for c in served]
            return Step(text=message.get("content") or "", calls=calls, usage=usage)
        step = step_from_text(message.get("content") or "", {t["function"]["name"] for t in tools}, self.ids)
        step.usage = usage
        return step


# ------------------------------------------------------------------------------ vLLM (offline engine)
class VLLMAgent:
    def __init__(self, model: str, *, temperature: float = 0.0, max_new_tokens: int = 256, **_: Any) -> None:
        require_extra("vllm", ("vllm",), "--backend vllm")
        from vllm import LLM, SamplingParams

        self.llm, self.SamplingParams = LLM(model), SamplingParams
        self.name, self.temperature, self.max_new_tokens = model, temperature, max_new_tokens

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.ids, self.seed = _CallIds(), trial

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        params = self.SamplingParams(temperature=self.temperature, max_tokens=self.max_new_tokens, seed=self.seed)
        result = self.llm.chat(hf_messages(messages), params, tools=tools, use_tqdm=False)[0]
        text = result.outputs[0].text
        step = step_from_text(text, {t["function"]["name"] for t in tools}, self.ids)
        step.usage = {"prompt_tokens": len(result.prompt_token_ids or []), "completion_tokens": len(result.outputs[0].token_ids)}
        return step


def model_agent_factory(args: Any):
    backend = args.backend or ("openai" if args.base_url else "transformers")
    common = {"temperature": args.temperature, "max_new_tokens": args.max_new_tokens}
    if backend == "openai":
        if not args.base_url:
            raise UsageError("--backend openai needs --base-url, e.g. --base-url http://127.0.0.1:8000/v1")
        agent = EndpointAgent(args.model, args.base_url, api_key=os.environ.get(args.api_key_env),
                              tool_format=args.tool_format, **common)
    elif backend == "vllm":
        agent = VLLMAgent(args.model, **common)
    else:
        agent = TransformersAgent(args.model, tool_format=args.tool_format, **common)
    info = {"id": args.model, "backend": backend, "tool_format": "native" if getattr(agent, "native", True) else "text",
            "temperature": args.temperature, "max_new_tokens": args.max_new_tokens}
    return (lambda: agent), info
