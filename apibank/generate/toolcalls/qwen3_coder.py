"""Qwen3-Coder and Qwen3.5: ``<tool_call><function=NAME><parameter=k>v</parameter>...</function></tool_call>`` (a
new line around each value, removed). Values typed by the tool's schema
(:mod:`~apibank.generate.toolcalls.values`)."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, matches
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.generate.toolcalls.values import typed_value

_FUNCTION = re.compile(rf"<function=\s*({NAME})\s*>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=\s*([^>\n]+?)\s*>\n?(.*?)\n?</parameter>", re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for function in matches(_FUNCTION, text):
        name = function.group(1)
        parameters = (schemas or {}).get(name)
        arguments = {}
        for parameter in matches(_PARAMETER, function.group(2)):
            if parameter.group(1) in arguments:
                break
            arguments[parameter.group(1)] = typed_value(parameter.group(2), parameters, parameter.group(1))
        else:
            calls.append((name, arguments))
    return calls


READERS = (Reader("qwen3_coder", read, template_markers=(("<function=", "<parameter="),),
                  text_markers=(re.compile(r"<function=\s*[A-Za-z_]"),),
                  summary="<tool_call><function=NAME><parameter=k>v</parameter></function></tool_call>"),)
