"""Each tool-call family's native call text, written from ``(name, arguments)`` pairs: what a model of the
family writes for those calls, as the family's parser (vLLM's ``--tool-call-parser`` of that name) reads it.

``WRITERS[name](calls)`` is that text for one or more parallel calls; ``BARE_JSON`` and ``UNMARKED`` say which
families have no marker of their own. The tests of the readers and the parity checks against vLLM share them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from apibank.generate.toolcalls.gemma4 import QUOTE

Call = tuple[str, dict[str, Any]]


def _gemma(value: Any) -> str:
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}:{_gemma(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_gemma(item) for item in value) + "]"
    return json.dumps(value)


def _bare(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _object(name: str, arguments: dict, key: str = "arguments") -> str:
    return json.dumps({"name": name, key: arguments}, ensure_ascii=False)


def _python(name: str, arguments: dict) -> str:
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"


WRITERS: dict[str, Callable[[list[Call]], str]] = {
    "hermes": lambda calls: "\n".join(f"<tool_call>\n{_object(n, a)}\n</tool_call>" for n, a in calls),
    "llama3_json": lambda calls: "; ".join(_object(n, a, "parameters") for n, a in calls),
    "llama4_json": lambda calls: "; ".join(_object(n, a, "parameters") for n, a in calls),
    "pythonic": lambda calls: "[" + ", ".join(_python(n, a) for n, a in calls) + "]",
    "llama4_pythonic": lambda calls: "<|python_start|>[" + ", ".join(_python(n, a) for n, a in calls) + "]<|python_end|>",
    "mistral": lambda calls: "[TOOL_CALLS]" + json.dumps([{"name": n, "arguments": a} for n, a in calls],
                                                         ensure_ascii=False),
    "openai": lambda calls: "<|channel|>analysis<|message|>Need a tool.<|end|>" + "".join(
        f"<|start|>assistant<|channel|>commentary to=functions.{n} <|constrain|>json<|message|>"
        f"{json.dumps(a, ensure_ascii=False)}<|call|>" for n, a in calls),
    "deepseek_v3": lambda calls: "<｜tool▁calls▁begin｜>" + "".join(
        f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{json.dumps(a, ensure_ascii=False)}\n```"
        "<｜tool▁call▁end｜>" for n, a in calls) + "<｜tool▁calls▁end｜>",
    "deepseek_v31": lambda calls: "<｜tool▁calls▁begin｜>" + "".join(
        f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{json.dumps(a, ensure_ascii=False)}<｜tool▁call▁end｜>"
        for n, a in calls) + "<｜tool▁calls▁end｜>",
    "kimi_k2": lambda calls: "<|tool_calls_section_begin|>" + "".join(
        f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{json.dumps(a, ensure_ascii=False)}"
        "<|tool_call_end|>" for i, (n, a) in enumerate(calls)) + "<|tool_calls_section_end|>",
    "gemma4": lambda calls: "".join(f"<|tool_call>call:{n}{_gemma(a)}<tool_call|>" for n, a in calls),
    "glm45": lambda calls: "\n".join(f"<tool_call>{n}\n" + "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{_bare(v)}</arg_value>\n" for k, v in a.items()) + "</tool_call>"
        for n, a in calls),
    "qwen3_coder": lambda calls: "\n".join(f"<tool_call>\n<function={n}>\n" + "".join(
        f"<parameter={k}>\n{_bare(v)}\n</parameter>\n" for k, v in a.items()) + "</function>\n</tool_call>"
        for n, a in calls),
    "granite": lambda calls: "<|tool_call|>" + json.dumps([{"name": n, "arguments": a} for n, a in calls],
                                                           ensure_ascii=False),
    "phi4_mini_json": lambda calls: "functools" + json.dumps([{"name": n, "arguments": a} for n, a in calls],
                                                             ensure_ascii=False),
    "internlm": lambda calls: "".join(f"<|action_start|><|plugin|>\n{_object(n, a, 'parameters')}<|action_end|>"
                                      for n, a in calls),
    "functionary_v32": lambda calls: "".join(f">>>{n}\n{json.dumps(a, ensure_ascii=False)}" for n, a in calls),
    "xlam": lambda calls: json.dumps([{"name": n, "arguments": a} for n, a in calls], ensure_ascii=False),
    "functions_prefix": lambda calls: "\n".join(f"functions.{n}:\n{json.dumps(a, ensure_ascii=False)}"
                                                for n, a in calls),
    "json": lambda calls: "Calling: " + " then ".join(_object(n, a) for n, a in calls),
}
# Families whose calls are bare JSON with no marker of their own: chosen, they read JSON call objects in prose.
BARE_JSON = {"llama3_json", "llama4_json", "xlam", "phi4_mini_json", "json"}
# Families read only when chosen (by name or template): their text has no marker of its own.
UNMARKED = {"llama4_json", "json"}
