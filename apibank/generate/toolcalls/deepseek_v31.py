"""DeepSeek V3.1 (and V3.2's chat template): ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>``."""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

_CALL = re.compile(rf"<｜tool▁call▁begin｜>\s*({NAME})\s*<｜tool▁sep｜>\s*(?=\{{)")


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return prefixed_calls(text, _CALL)


READERS = (Reader("deepseek_v31", read, template_markers=(("<｜tool▁sep｜>",),),
                  text_markers=(re.compile(r"<｜tool▁sep｜>\s*\{"),),
                  summary="<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{JSON}<｜tool▁call▁end｜>"),)
