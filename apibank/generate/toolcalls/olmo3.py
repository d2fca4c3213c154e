"""Olmo 3: one Python-style call per line inside ``<function_calls>`` ... ``</function_calls>``, values written
as Python or JSON literals (``true``, ``null``).

Python, not a spec file: transformers' ``python-call-list`` content parser reads a bracketed, comma-separated
list only (``[a(x=1), b()]``); Olmo 3 writes its calls one per line with neither, and no other content
parser or transform of the response-template format joins lines into a list (measured with transformers
5.25: the block reads as no call). Each line is read by that same parser, wrapped in brackets here.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from apibank.generate.toolcalls.generic import MAX_CALLS, ToolCall, too_deep
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.notation import MAX_CALL_CHARS



def blocks(text: str, opener: str, closer: str) -> list[str]:
    """The text after each ``opener`` up to the next ``closer`` (or the end: a model cut off by its token
    limit), left to right, in linear time; at most MAX_CALLS blocks."""
    found: list[str] = []
    position = text.find(opener)
    while position >= 0 and len(found) < MAX_CALLS:
        start = position + len(opener)
        end = text.find(closer, start)
        found.append(text[start:] if end < 0 else text[start:end])
        if end < 0:
            break
        position = text.find(opener, end + len(closer))
    return found


def _line_calls(line: str) -> list[dict[str, Any]]:
    from transformers.utils.chat_parsing.content_parsers import parse_content

    if len(line) > MAX_CALL_CHARS or too_deep(line):
        return []
    try:
        calls = parse_content(f"[{line}]", "python-call-list", {})
    except (ValueError, RecursionError):
        return []
    return calls if isinstance(calls, list) else []


def typed(name: str, arguments: dict[str, Any], schemas: Schemas | None) -> dict[str, Any]:
    """String values typed by the tool's schema with transformers' own rule, the one its engine applies to
    the spec files' calls (``"1"`` for an integer is 1, ``"True"`` for a boolean is True), so that every
    family reads a call alike."""
    from transformers.utils.chat_parsing.response_parser import _coerce, _schema_types

    parameters = (schemas or {}).get(name)
    properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
    if not isinstance(properties, Mapping):
        return arguments
    return {key: _coerce(value, types) if isinstance(value, str) and (types := _schema_types(properties.get(key)))
            and "string" not in types else value for key, value in arguments.items()}


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in blocks(text, "<function_calls>", "</function_calls>"):
        for line in block.splitlines():
            for call in _line_calls(line.strip()) if line.strip() else ():
                calls.append((call["name"], typed(call["name"], call["arguments"], schemas)))
    return calls[:MAX_CALLS]


READERS = (Reader("olmo3", read, template_markers=(("<function_calls>", "</function_calls>"),),
                  text_markers=(re.compile(r"<function_calls>\s*[A-Za-z_][\w.\-]*\("),),
                  summary='<function_calls>NAME(KEY="VALUE")\\nNAME2()</function_calls>'),)
