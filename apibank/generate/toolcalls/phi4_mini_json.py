"""Kept in Python: besides ``functools[...]``, call objects written as Python dicts are read (no
transformers content parser reads Python literals outside a call list).

Phi-4-mini: ``functools[{"name": ..., "arguments": {...}}, ...]``.

vLLM's Phi-4-mini template shows earlier calls as ``{"name": ..., "arguments": {'k': 'v'}}`` (a Python
dict), and a model imitates its history: chosen from the template, an answer that is nothing but call
objects written so (JSON or Python literals, never evaluated) is read too; such objects inside prose are not."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import (
    ToolCall, calls_in_values, decode_literal, matches, object_after, sole_values,
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
    return calls_in_values(sole_values(text, decode_literal))


READERS = (Reader("phi4_mini_json", read, priority=45, template_markers=(("functools",), ("<|tool|>", "<|/tool|>")),
                  text_markers=(_MARKER,), summary="functools[{JSON}, ...]"),)
