"""GLM-4.5/4.6: ``<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value>...</tool_call>`` (new lines
between the parts). A value is written as text when it is a string, as JSON otherwise: typed by the
tool's schema (:mod:`~apibank.generate.toolcalls.values`)."""

from __future__ import annotations

import re
from typing import Any

from apibank.generate.toolcalls.generic import NAME, ToolCall, delimited
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.generate.toolcalls.values import typed_value

_BLOCK = re.compile(rf"<tool_call>\s*({NAME})")
_VALUE = re.compile(r"\s*<arg_value>")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block, body in delimited(text, _BLOCK, "</tool_call>", last_unclosed=True):
        name = block.group(1)
        if body.strip() and not body.lstrip().startswith("<arg_key>"):
            continue  # a name followed by anything but its arguments: not this syntax
        parameters = (schemas or {}).get(name)
        arguments, complete = _pairs(body, parameters)
        if complete:
            calls.append((name, arguments))
    return calls


def _pairs(body: str, parameters: Any) -> tuple[dict[str, Any], bool]:
    """The ``<arg_key>k</arg_key><arg_value>v</arg_value>`` pairs of one call (False: malformed)."""
    arguments: dict[str, Any] = {}
    position = 0
    while True:
        opening = body.find("<arg_key>", position)
        if opening < 0:
            return arguments, not body[position:].strip()
        if body[position:opening].strip():
            return arguments, False
        key_end = body.find("</arg_key>", opening)
        value = _VALUE.match(body, key_end + len("</arg_key>")) if key_end >= 0 else None
        value_end = body.find("</arg_value>", value.end()) if value else -1
        if value_end < 0:
            return arguments, False
        key = body[opening + len("<arg_key>"):key_end].strip()
        if key in arguments:
            return arguments, False
        arguments[key] = typed_value(body[value.end():value_end], parameters, key)
        position = value_end + len("</arg_value>")


READERS = (Reader("glm45", read, priority=65, aliases=("glm47", "ling3", "poolside_v1"), template_markers=(("<arg_key>",),),
                  text_markers=(re.compile(r"<arg_key>"), re.compile(r"<tool_call>\s*[A-Za-z_][\w.\-]*\s*</tool_call>")),
                  summary="<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>"),)
