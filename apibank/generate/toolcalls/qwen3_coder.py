"""Qwen3-Coder and Qwen3.5: ``<tool_call><function=NAME><parameter=k>v</parameter>...</function></tool_call>`` (a
new line around each value, removed). Values typed by the tool's schema
(:mod:`~apibank.generate.toolcalls.values`)."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, delimited
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.generate.toolcalls.values import typed_value

_FUNCTION = re.compile(rf"<function=\s*({NAME})\s*>")
_PARAMETER = re.compile(r"<parameter=\s*([^>\n]+?)\s*>")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for function, body in delimited(text, _FUNCTION, "</function>", last_unclosed=True):
        name = function.group(1)
        parameters = (schemas or {}).get(name)
        arguments = {}
        for parameter, value in delimited(body, _PARAMETER, "</parameter>"):
            key = parameter.group(1)
            if key in arguments:
                break
            value = value[1:] if value.startswith("\n") else value
            arguments[key] = typed_value(value[:-1] if value.endswith("\n") else value, parameters, key)
        else:
            if body.count("<parameter=") == len(arguments):  # none left unclosed
                calls.append((name, arguments))
    return calls


READERS = (Reader("qwen3_coder", read, priority=60, aliases=("mimo", "qwen3_xml", "step3p5"), template_markers=(("<function=", "<parameter="),),
                  text_markers=(re.compile(r"<function=\s*[A-Za-z_]"),),
                  summary="<tool_call><function=NAME><parameter=k>v</parameter></function></tool_call>"),)
