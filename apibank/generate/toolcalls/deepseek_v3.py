"""DeepSeek V3 and R1 (and R1's distills with DeepSeek's template): ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME``,
then the arguments in a fenced ``json`` block, then ``<｜tool▁call▁end｜>``, all inside
``<｜tool▁calls▁begin｜>`` ... ``<｜tool▁calls▁end｜>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, matches, object_after
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"<｜tool▁sep｜>\s*({NAME})\s*```(?:json)?\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for match in matches(_CALL, text):
        arguments = object_after(text, match.end())
        if isinstance(arguments, dict):
            calls.append((match.group(1), arguments))
    return calls


READERS = (Reader("deepseek_v3", read, template_markers=(("<｜tool▁sep｜>", "```json"),),
                  text_markers=(re.compile(r"<｜tool▁sep｜>\s*[A-Za-z_][\w.\-]*\s*```"),),
                  summary="<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ```json {JSON} ```<｜tool▁call▁end｜>"),)
