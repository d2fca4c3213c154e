"""Mistral: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}, ...]`` (v3, Nemo) and
``[TOOL_CALLS]Name[ARGS]{...}`` (v11 on: Mistral Small 3.2, Magistral, Devstral), a ``[CALL_ID]id``
allowed before ``[ARGS]``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, calls_in_values, json_values, object_after
from apibank.generate.toolcalls.registry import Reader, Schemas

_MARKER = "[TOOL_CALLS]"
_NAMED = re.compile(rf"\s*({NAME})\s*(?:\[CALL_ID\]\s*\w*\s*)?\[ARGS\]\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None, *, named_only: bool = False) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for segment in text.split(_MARKER)[1:65]:
        named = _NAMED.match(segment)
        if named is not None:
            arguments = object_after(segment, named.end())
            if isinstance(arguments, dict):
                calls.append((named.group(1), arguments))
            continue
        first = None if named_only else next(json_values(segment), None)
        if first is not None:
            calls += calls_in_values([first])
    return calls


def read_named(text: str) -> list[ToolCall]:
    """The v11 form only (``[TOOL_CALLS]Name[ARGS]{...}``), for the generic reader, which reads JSON lists itself."""
    return read(text, named_only=True)


READERS = (Reader("mistral", read, priority=55, template_markers=((_MARKER,),), text_markers=(re.compile(re.escape(_MARKER)),),
                  summary="[TOOL_CALLS][{JSON}] or [TOOL_CALLS]Name[ARGS]{JSON}"),)
