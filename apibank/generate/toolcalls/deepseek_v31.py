"""DeepSeek V3.1 (and V3.2's chat template): ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, matches, object_after
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"<｜tool▁call▁begin｜>\s*({NAME})\s*<｜tool▁sep｜>\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in matches(_CALL, text):
        arguments = object_after(text, match.end())
        if isinstance(arguments, dict):
            calls.append((match.group(1), arguments))
    return calls


READERS = (Reader("deepseek_v31", read, template_markers=(("<｜tool▁sep｜>",),),
                  text_markers=(re.compile(r"<｜tool▁sep｜>\s*\{"),),
                  summary="<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜>"),)
