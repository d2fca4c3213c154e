"""Granite 3.x: ``<|tool_call|>[{"name": ..., "arguments": {...}}, ...]``. (Granite 4 writes Hermes'
``<tool_call>`` blocks: its template selects :mod:`~apibank.generate.toolcalls.hermes`.)"""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, calls_in_values, json_values
from apibank.generate.toolcalls.registry import Reader, Schemas

_MARKER = "<|tool_call|>"


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for segment in text.split(_MARKER)[1:65]:
        first = next(json_values(segment), None)
        if first is not None:
            calls += calls_in_values([first])
    return calls


READERS = (Reader("granite", read, priority=50, template_markers=((_MARKER,),), text_markers=(re.compile(re.escape(_MARKER)),),
                  summary="<|tool_call|>[{JSON}, ...]"),)
