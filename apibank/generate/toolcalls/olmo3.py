"""Olmo 3: one Python-style call per line inside ``<function_calls>`` ... ``</function_calls>``, values written
as Python or JSON literals (``true``, ``null``).

Python, not a spec file: transformers' ``python-call-list`` content parser reads a bracketed, comma-separated
list only (``[a(x=1), b()]``); Olmo 3 writes its calls one per line with neither, and no other content
parser or transform of the response-template format joins lines into a list (measured with transformers
5.25: the block reads as no call); that parser is also missing from the transformers 5.19 that vLLM 0.32
pins. Each line is read by the package's own Python-call reader (:mod:`ast`, literals only), its JSON
literals (``true``, ``null``) first spelt as Python's.
"""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import MAX_CALLS, ToolCall, python_calls_in, python_spelling, regions
from apibank.generate.toolcalls.registry import Reader, Schemas


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    calls: list[ToolCall] = []
    for block in regions(text, "<function_calls>", "</function_calls>"):
        for line in block.splitlines():
            calls += python_calls_in(python_spelling(line)) if line.strip() else []
    return calls[:MAX_CALLS]


READERS = (Reader("olmo3", read, template_markers=(("<function_calls>", "</function_calls>"),),
                  text_markers=(re.compile(r"<function_calls>\s*[A-Za-z_][\w.\-]*\("),),
                  summary='<function_calls>NAME(KEY="VALUE")\\nNAME2()</function_calls>'),)
