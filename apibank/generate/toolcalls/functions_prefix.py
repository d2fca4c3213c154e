"""Kept in Python: nothing closes a call but the end of its JSON object, and a response template's
region needs a closing marker.

``functions.NAME:`` followed by the arguments as JSON (llama-cpp-python's functionary and chatml
function-calling formats)."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"(?:^|[\s>])functions\.({NAME})\s*:?\s*(?=[{{(])")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return prefixed_calls(text, _CALL)


READERS = (Reader("functions_prefix", read, priority=10, template_markers=(), text_markers=(_CALL,),
                  summary="functions.NAME:\\n{JSON}"),)
