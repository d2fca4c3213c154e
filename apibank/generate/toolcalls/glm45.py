"""GLM-4.5/4.6: ``<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value>...</tool_call>`` (new lines
between the parts). A value is written as text when it is a string, as JSON otherwise: typed by the
tool's schema (:mod:`~apibank.generate.toolcalls.values`)."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, matches
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.generate.toolcalls.values import typed_value

_BLOCK = re.compile(rf"<tool_call>\s*({NAME})\s*(<arg_key>.*?)?\s*(?:</tool_call>|$)", re.DOTALL)
_PAIR = re.compile(r"<arg_key>\s*(.*?)\s*</arg_key>\s*<arg_value>(.*?)</arg_value>", re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in matches(_BLOCK, text):
        name, body = block.group(1), block.group(2) or ""
        parameters = (schemas or {}).get(name)
        arguments = {}
        for pair in matches(_PAIR, body):
            if pair.group(1) in arguments:
                break
            arguments[pair.group(1)] = typed_value(pair.group(2), parameters, pair.group(1))
        else:
            calls.append((name, arguments))
    return calls


READERS = (Reader("glm45", read, template_markers=(("<arg_key>",),),
                  text_markers=(re.compile(r"<arg_key>"), re.compile(r"<tool_call>\s*[A-Za-z_][\w.\-]*\s*</tool_call>")),
                  summary="<tool_call>NAME<arg_key>k</arg_key><arg_value>v</arg_value></tool_call>"),)
