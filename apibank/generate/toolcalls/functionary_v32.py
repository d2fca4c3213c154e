"""Functionary v3.2: ``>>>NAME\n{...}`` per call (``>>>all`` starts plain text). The template's generation
prompt ends with ``>>>``, so the output's first call has no marker of its own: read as if the text began
with one."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, object_after
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"\s*({NAME})\s*\n\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for segment in text.split(">>>")[:65]:
        call = _CALL.match(segment)
        if call is None or call.group(1) == "all":
            continue
        arguments = object_after(segment, call.end())
        if isinstance(arguments, dict):
            calls.append((call.group(1), arguments))
    return calls


READERS = (Reader("functionary_v32", read, priority=35, template_markers=((">>>all",),),
                  text_markers=(re.compile(r">>>\s*[A-Za-z_][\w.\-]*\s*\n\s*\{"),),
                  summary=">>>NAME\\n{JSON}"),)
