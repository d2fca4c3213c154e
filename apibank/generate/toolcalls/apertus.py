"""Apertus: ``<|tools_prefix|>[{"NAME": {arguments}}, ...]<|tools_suffix|>``, each call an object whose one key
is the tool's name.

Python, not a spec file: a response template's ``transform`` puts parsed values at fixed places
(``{content.name}``, ``{arguments}``); a tool name written as an object's *key* has no fixed place, so no
transform reads it (measured with transformers 5.25: ``transform_each`` over the list gives no name).
"""

from __future__ import annotations

import re
from typing import Mapping

from apibank.generate.toolcalls.generic import MAX_CALLS, ToolCall, decode_json, regions
from apibank.generate.toolcalls.registry import Reader, Schemas


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in regions(text, "<|tools_prefix|>", "<|tools_suffix|>"):
        value = decode_json(block.strip())
        for item in value if isinstance(value, list) else []:
            if isinstance(item, Mapping) and len(item) == 1:
                name, arguments = next(iter(item.items()))
                if isinstance(name, str) and name and isinstance(arguments, Mapping):
                    calls.append((name, dict(arguments)))
    return calls[:MAX_CALLS]


READERS = (Reader("apertus", read, template_markers=(("<|tools_prefix|>",),),
                  text_markers=(re.compile(r"<\|tools_prefix\|>\s*\["),),
                  summary='<|tools_prefix|>[{"NAME": {JSON}}]<|tools_suffix|>'),)
