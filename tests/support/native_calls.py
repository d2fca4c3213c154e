"""Each tool-call family's native call text, written from ``(name, arguments)`` pairs: what a model of the
family writes for those calls, as the family's parser (vLLM's ``--tool-call-parser`` of that name) reads it.

``WRITERS[name](calls)`` is that text for one or more parallel calls; ``BARE_JSON`` and ``UNMARKED`` say which
families have no marker of their own. The tests of the readers and the parity checks against vLLM share them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


Call = tuple[str, dict[str, Any]]


def typed(name: str, arguments: dict[str, Any], schemas: dict[str, Any] | None) -> dict[str, Any]:
    """String values typed by the tool's schema with transformers' own rule, the one its engine applies to the
    values a family writes as bare text (``"1"`` for an integer is 1, ``"True"`` for a boolean is True)."""
    from transformers.utils.chat_parsing.response_parser import _coerce, _schema_types

    properties = ((schemas or {}).get(name) or {}).get("properties")
    if not isinstance(properties, dict):
        return arguments
    return {key: _coerce(value, types) if isinstance(value, str) and (types := _schema_types(properties.get(key)))
            and "string" not in types else value for key, value in arguments.items()}
QUOTE = '<|"|>'  # Gemma 4's string mark


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


def _dsml(calls: list[Call], wrapper: str = "function_calls", space: str = "") -> str:
    marker = f"｜DSML｜{space}"
    return f"<{marker}{wrapper}>\n" + "".join(
        f'<{marker}invoke name="{n}">\n' + "".join(
            f'<{marker}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">{_bare(v)}'
            f"</{marker}parameter>\n" for k, v in a.items()) + f"</{marker}invoke>\n" for n, a in calls) + f"</{marker}{wrapper}>"


def _invoke(calls: list[Call], prefix: str = "", invoke: str = "invoke", parameter: str = "parameter") -> str:
    return "".join(f'<{prefix}{invoke} name="{n}">\n' + "".join(
        f'<{prefix}{parameter} name="{k}">{_bare(v)}</{prefix}{parameter}>\n' for k, v in a.items())
        + f"</{prefix}{invoke}>\n" for n, a in calls)


_M3 = "]<]minimax[>["


def _olmo3_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


WRITERS.update({
    "deepseek_v32": _dsml,
    "minimax_m2": lambda calls: "<minimax:tool_call>\n" + _invoke(calls) + "</minimax:tool_call>",
    "minimax_m3": lambda calls: f"{_M3}<tool_call>\n" + "".join(
        f'{_M3}<invoke name="{n}">\n' + "".join(f"{_M3}<{k}>{_bare(v)}{_M3}</{k}>\n" for k, v in a.items())
        + f"{_M3}</invoke>\n" for n, a in calls) + f"{_M3}</tool_call>",
    "seed_oss": lambda calls: "".join(f"<seed:tool_call>\n<function={n}>\n" + "".join(
        f"<parameter={k}>{_bare(v)}</parameter>\n" for k, v in a.items()) + "</function>\n</seed:tool_call>"
        for n, a in calls),
    "hunyuan_a13b": lambda calls: "<tool_calls>" + json.dumps([{"name": n, "arguments": a} for n, a in calls],
                                                               ensure_ascii=False) + "</tool_calls>",
    "longcat": lambda calls: "\n".join(f"<longcat_tool_call>{_object(n, a)}</longcat_tool_call>" for n, a in calls),
    "lfm2": lambda calls: "<|tool_call_start|>[" + ", ".join(
        f"{n}({', '.join(f'{k}={json.dumps(v, ensure_ascii=False)}' for k, v in a.items())})" for n, a in calls)
        + "]<|tool_call_end|>",
    "functiongemma": lambda calls: "".join(
        f"<start_function_call>call:{n}{{" + ",".join(f"{k}:<escape>{_bare(v)}<escape>" for k, v in a.items())
        + "}<end_function_call>" for n, a in calls),
    "gigachat3": lambda calls: "<|function_call|>" + _object(*calls[0]),
    "granite_20b_fc": lambda calls: " ".join(f"<function_call> {_object(n, a)}" for n, a in calls),
    "hy_v3": lambda calls: "<tool_calls>" + "".join(f"<tool_call>{n}<tool_sep>" + "".join(
        f"<arg_key>{k}</arg_key><arg_value>{_bare(v)}</arg_value>" for k, v in a.items()) + "</tool_call>"
        for n, a in calls) + "</tool_calls>",
    "hy_v4": lambda calls: "<tool_calls>\n" + "".join(f"<tool_call>{n}\n" + "".join(
        f"<arg_key>{k}</arg_key>\n<arg_value>{_bare(v)}</arg_value>\n" for k, v in a.items()) + "</tool_call>\n"
        for n, a in calls) + "</tool_calls>",
    "k2_horizon": lambda calls: "<ifm|tool_calls>" + "".join(f"<ifm|tool_call>{n}" + "".join(
        f"<ifm|arg_key>{k}</ifm|arg_key><ifm|arg_value>{_bare(v)}</ifm|arg_value>" for k, v in a.items())
        + "</ifm|tool_call>" for n, a in calls) + "</ifm|tool_calls>",
    "kimi_k3": lambda calls: "<|open|>tools<|sep|>" + "".join(f'<|open|>call tool="{n}" index="{i + 1}"<|sep|>' + "".join(
        f'<|open|>argument key="{k}" type="{"string" if isinstance(v, str) else "json"}"<|sep|>{_bare(v)}'
        "<|close|>argument<|sep|>" for k, v in a.items()) + "<|close|>call<|sep|>" for i, (n, a) in enumerate(calls))
        + "<|close|>tools<|sep|>",
    "minicpm5": lambda calls: "".join(f'<function name="{n}">' + "".join(
        f'<param name="{k}">{_bare(v)}</param>' for k, v in a.items()) + "</function>" for n, a in calls),
    "plamo3": lambda calls: "<|plamo:begin_tool_requests:plamo|>" + "".join(
        f"<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{n}<|plamo:end_tool_name:plamo|>"
        f"<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{json.dumps(a, ensure_ascii=False)}"
        "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>" for n, a in calls)
        + "<|plamo:end_tool_requests:plamo|>",
    "inkling": lambda calls: "".join(f"<|message_model|><|content_invoke_tool_json|>"
                                     f"{json.dumps({'name': n, 'args': a}, ensure_ascii=False)}<|end_message|>"
                                     for n, a in calls),
    "step3": lambda calls: "<｜tool_calls_begin｜>" + "".join(
        "<｜tool_call_begin｜>function<｜tool_sep｜>" + _invoke([(n, a)], "steptml:") + "<｜tool_call_end｜>"
        for n, a in calls) + "<｜tool_calls_end｜>",
    "cohere_command3": lambda calls: "<|START_ACTION|>" + json.dumps(
        [{"tool_call_id": str(i), "tool_name": n, "parameters": a} for i, (n, a) in enumerate(calls)],
        ensure_ascii=False) + "<|END_ACTION|>",
    "muse_glimmer": lambda calls: "<|start|>assistant to=functions.call<|message|><atem:function_calls>\n"
                                  + _invoke(calls, "atem:") + "</atem:function_calls><|eom|>",
    "nemotron_json": lambda calls: "<TOOLCALL>" + json.dumps([{"name": n, "arguments": a} for n, a in calls],
                                                             ensure_ascii=False) + "</TOOLCALL>",
    "apertus": lambda calls: "<|tools_prefix|>" + json.dumps([{n: a} for n, a in calls], ensure_ascii=False)
                             + "<|tools_suffix|>",
    "olmo3": lambda calls: "<function_calls>" + "\n".join(
        f"{n}({', '.join(f'{k}={_olmo3_value(v)}' for k, v in a.items())})" for n, a in calls) + "</function_calls>",
})
# vLLM names that read a family's format under another name: the same text.
ALIASES = {
    "deepseek_v4": lambda calls: _dsml(calls, "tool_calls"), "deepseek_v41": lambda calls: _dsml(calls, "calls", " "),
    "dots": lambda calls: "<dots_function_call>\n" + _invoke(calls) + "</dots_function_call>",
    "jamba": WRITERS["hunyuan_a13b"], "cohere_command4": WRITERS["cohere_command3"],
    "granite4": WRITERS["hermes"], "qwen3_json": WRITERS["hermes"], "ernie45": WRITERS["hermes"],
    "glm47": WRITERS["glm45"], "ling3": WRITERS["glm45"], "poolside_v1": WRITERS["glm45"],
    "qwen3_xml": WRITERS["qwen3_coder"], "mimo": WRITERS["qwen3_coder"], "step3p5": WRITERS["qwen3_coder"],
}
WRITERS.update(ALIASES)
# Families that can write one call per turn only.
SINGLE_CALL = {"gigachat3"}
