"""Hermes-2-Pro/3, Qwen2.5, Qwen3, Granite 4: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``, one
block per call."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, calls_in_values, json_values, matches
from apibank.generate.toolcalls.registry import Reader, Schemas

_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in matches(_BLOCK, text):
        calls += calls_in_values(json_values(block.group(1)))
    return calls


READERS = (Reader("hermes", read, template_markers=(("<tool_call>",),), text_markers=(re.compile(r"<tool_call>\s*\{"),),
                  summary="<tool_call>{JSON}</tool_call>"),)
