"""Kimi-K2: ``<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}<|tool_call_end|>`` inside
``<|tool_calls_section_begin|>`` ... ``<|tool_calls_section_end|>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"<\|tool_call_begin\|>\s*(?:functions\.)?({NAME})(?::\d+)?\s*<\|tool_call_argument_begin\|>\s*"
                   r"(?=\{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return prefixed_calls(text, _CALL)


READERS = (Reader("kimi_k2", read, template_markers=(("<|tool_calls_section_begin|>",),),
                  text_markers=(re.compile(r"<\|tool_call_begin\|>"),),
                  summary="<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{JSON}<|tool_call_end|>"),)
