"""Native tool calls -> the benchmark's call text ``API-Request: [Name(key='value', ...)]``.

A model prompted with ``tools=`` answers with a structured call: an OpenAI ``tool_calls`` entry from
a server, or text in its template's own syntax (``<tool_call>{...}</tool_call>``, ``[TOOL_CALLS]
[{...}]``, a bare ``{"name": ..., "arguments": ...}``). The first call is rendered so that the
benchmark's call extraction (protocol §3) reads back the same names and values.
"""

from __future__ import annotations

import json
from typing import Any, Iterator, Mapping

ToolCall = tuple[str, dict[str, Any]]


def _as_call(obj: Any) -> ToolCall | None:
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):  # OpenAI shape {"type": "function", "function": {...}}
        return _as_call(obj["function"])
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(arguments, Mapping):
        return None
    return name, dict(arguments)


def _json_values(text: str) -> Iterator[Any]:
    """Every JSON object or array that starts somewhere in ``text``, leftmost first, non-overlapping."""
    decoder = json.JSONDecoder()
    position = 0
    while position < len(text):
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            return
        start = min(starts)
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        yield value
        position = end


def calls_in_text(text: str) -> list[ToolCall]:
    """Tool calls written as JSON in generated text, in order."""
    calls: list[ToolCall] = []
    for value in _json_values(text):
        items = value if isinstance(value, list) else [value]
        for item in items:
            call = _as_call(item)
            if call is not None:
                calls.append(call)
    return calls


def calls_from_message(tool_calls: list[Mapping[str, Any]] | None) -> list[ToolCall]:
    """Tool calls of a parsed/served assistant message (OpenAI shape)."""
    return [call for call in (_as_call(entry) for entry in tool_calls or []) if call is not None]


def _argument(key: str, value: Any) -> str:
    if isinstance(value, str):
        # The paper parser ends a quoted value at the next quote of either kind; pick the quote that
        # the value does not contain so that the value survives whenever it can.
        quote = '"' if "'" in value and '"' not in value else "'"
        return f"{key}={quote}{value}{quote}"
    if isinstance(value, (list, dict)):
        # Unquoted, as a Python literal: the paper parser keeps a bracketed list whole.
        return f"{key}={value!r}"
    # Numbers and booleans are quoted: unquoted decimals and negatives are cut by the paper parser.
    return f"{key}='{value}'"


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    params = ", ".join(_argument(key, value) for key, value in arguments.items())
    return f"API-Request: [{name}({params})]"
