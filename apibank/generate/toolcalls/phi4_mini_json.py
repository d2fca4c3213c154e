"""Kept in Python: besides ``functools[...]``, call objects written as Python dicts are read (no
transformers content parser reads Python literals outside a call list).

Phi-4-mini: ``functools[{"name": ..., "arguments": {...}}, ...]``.

vLLM's Phi-4-mini template shows earlier calls as ``{"name": ..., "arguments": {'k': 'v'}}`` (a Python
dict), and a model imitates its history: chosen from the template, call objects written so (JSON or
Python literals, never evaluated) are read too."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import (
    ToolCall,
    balanced_spans,
    calls_in_values,
    decode_literal,
    matches,
    object_after,
)
from apibank.generate.toolcalls.registry import Reader, Schemas

_MARKER = re.compile(r"functools\s*(?=\[)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in matches(_MARKER, text):
        value = object_after(text, match.end())
        if value is not None:
            calls += calls_in_values([value])
    if calls:
        return calls
    values = (decode_literal(text[start:end]) for start, end in balanced_spans(text, openers="{"))
    return calls_in_values(value for value in values if value is not None)


READERS = (Reader("phi4_mini_json", read, priority=45, template_markers=(("functools",), ("<|tool|>", "<|/tool|>")),
                  text_markers=(_MARKER,), summary="functools[{JSON}, ...]"),)
