"""Kept in Python: a bare JSON list with no marker around it, which a response template's regions (between
markers) cannot find.

xLAM-2 and other JSON-list models: ``[{"name": ..., "arguments": {...}}, ...]``, as the whole answer or in
fenced blocks; a list inside prose is no call."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, calls_in_values, sole_values
from apibank.generate.toolcalls.registry import Reader, Schemas


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return calls_in_values(sole_values(text))


READERS = (Reader("xlam", read, priority=15, template_markers=(('"name": "tool_call_name"',),),
                  text_markers=(re.compile(r'\A\s*(?:```(?:json)?\s*)?\[\s*\{\s*"name"\s*:'),),
                  summary='[{"name": ..., "arguments": {...}}]'),)
