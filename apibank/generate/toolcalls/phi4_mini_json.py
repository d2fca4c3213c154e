"""Phi-4-mini: ``functools[{"name": ..., "arguments": {...}}, ...]``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, calls_in_values, matches, object_after
from apibank.generate.toolcalls.registry import Reader, Schemas

_MARKER = re.compile(r"functools\s*(?=\[)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in matches(_MARKER, text):
        value = object_after(text, match.end())
        if value is not None:
            calls += calls_in_values([value])
    return calls


READERS = (Reader("phi4_mini_json", read, template_markers=(("functools",),), text_markers=(_MARKER,),
                  summary="functools[{JSON}, ...]"),)
