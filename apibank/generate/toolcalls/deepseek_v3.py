"""DeepSeek V3 and R1 (and R1's distills with DeepSeek's template): ``<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME``,
then the arguments in a fenced ``json`` block, then ``<｜tool▁call▁end｜>``, all inside
``<｜tool▁calls▁begin｜>`` ... ``<｜tool▁calls▁end｜>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"<｜tool▁sep｜>\s*({NAME})\s*```(?:json)?\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return prefixed_calls(text, _CALL)


READERS = (Reader("deepseek_v3", read, priority=85, template_markers=(("<｜tool▁sep｜>", "```json"),),
                  text_markers=(re.compile(r"<｜tool▁sep｜>\s*[A-Za-z_][\w.\-]*\s*```"),),
                  summary="<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME ```json {JSON} ```<｜tool▁call▁end｜>"),)
