"""InternLM2/2.5: ``<|action_start|><|plugin|>\n{"name": ..., "parameters": {...}}<|action_end|>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, calls_in_values, json_values, matches
from apibank.generate.toolcalls.registry import Reader, Schemas

_BLOCK = re.compile(r"<\|action_start\|>\s*<\|plugin\|>(.*?)(?:<\|action_end\|>|$)", re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in matches(_BLOCK, text):
        first = next(json_values(block.group(1)), None)
        if first is not None:
            calls += calls_in_values([first])
    return calls


READERS = (Reader("internlm", read, priority=40, template_markers=(("<|plugin|>",),),
                  text_markers=(re.compile(r"<\|action_start\|>\s*<\|plugin\|>"),),
                  summary="<|action_start|><|plugin|>{JSON}<|action_end|>"),)
