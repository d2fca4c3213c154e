"""What of a conversation its rendered prompt must show, and what it lost.

Every row's prompt is checked for completeness (:func:`missing_pieces`): the system text, every
turn, every call's name and argument values, every result and every tool's name must be in it.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from apibank.generate.templates.adaptations import Message, Tools


def _text_forms(text: str) -> tuple[str, ...]:
    """How a text may appear in a prompt: as given, trimmed, or escaped inside a JSON string."""
    stripped = text.strip()
    return (text, stripped, json.dumps(stripped, ensure_ascii=False)[1:-1], json.dumps(stripped)[1:-1])


def _value_forms(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return _text_forms(value)
    if isinstance(value, bool):
        return ("true", "True") if value else ("false", "False")
    if value is None:
        return ("null", "None", "none")
    return (json.dumps(value), repr(value), str(value))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


# A model's reasoning in its own earlier turns, which templates drop by design (Qwen3 and DeepSeek-R1's
# <think>, Gemma 4's thought channel, closed or not): not a piece the prompt must show.
_REASONING = re.compile(r"<think>.*?(?:</think>|$)|^.*?</think>|<\|channel>.*?(?:<channel\|>|$)", re.S)


def conversation_pieces(messages: Sequence[Message], tools: Tools) -> list[tuple[str, tuple[str, ...]]]:
    """Each piece of a conversation that its prompt must show, as (what it is, the forms it may take)."""
    pieces: list[tuple[str, tuple[str, ...]]] = []
    for index, message in enumerate(messages):
        role = message["role"]
        content = message.get("content")
        if role == "assistant" and isinstance(content, str):
            content = _REASONING.sub("", content)
        if isinstance(content, str) and content.strip():
            what = "the system text" if role == "system" else (
                f"the result in message {index}" if role == "tool" else f"the {role} turn at message {index}")
            pieces.append((what, _text_forms(content)))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = str(function.get("name"))
            pieces.append((f"the name of the call {name} at message {index}", (name,)))
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {"": arguments}
            for leaf in _leaves(arguments):
                pieces.append((f"an argument of the call {name} at message {index} ({leaf!r})"[:200],
                               _value_forms(leaf)))
    for tool in tools or []:
        name = str(tool.get("function", tool).get("name"))
        pieces.append((f"the tool schema {name}", (name,)))
    return pieces


def missing_pieces(messages: Sequence[Message], tools: Tools, prompt: str) -> list[str]:
    """What of the conversation its rendered ``prompt`` does not show (empty: nothing is lost)."""
    return [what for what, forms in conversation_pieces(messages, tools) if not any(f in prompt for f in forms)]

