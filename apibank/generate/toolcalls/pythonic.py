"""Python-style calls: ``[Name(key='v'), Other()]`` (vLLM's Llama 3.2 and ToolACE templates), Llama 4 between
``<|python_start|>`` and ``<|python_end|>``, or in a fenced ``python``/``tool_code`` block.

Read with :mod:`ast` into literals only, never evaluated. Every call of a bracketed list is taken,
whatever its name (at levels 2 and 3 a model is offered ToolSearcher alone, yet calls the tools it was
told of); a bare ``Name(...)`` outside a list only for a tool the schemas name ("print(x)" is no call).
"""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import ToolCall, balanced_spans, python_calls_in, python_style_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

_FENCE = re.compile(r"```(?:python|py|tool_code)\s*\n(.*?)```", re.DOTALL)


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    text = text.replace("<|python_start|>", "").replace("<|python_end|>", "")
    calls: list[ToolCall] = []
    for block in (match.group(1) for match in _FENCE.finditer(text)):
        calls += python_calls_in(block)
    if calls:
        return calls
    for start, end in balanced_spans(text, openers="["):
        calls += python_calls_in(text[start:end])
    if calls or not schemas:
        return calls
    return python_style_calls(text, frozenset(schemas))


_LIST_START = re.compile(r"\A\s*(?:<\|python_start\|>\s*)?\[\s*[A-Za-z_][\w.]*\(")
READERS = (
    Reader("pythonic", read, template_markers=(("[func_name1(",),), text_markers=(_LIST_START,),
           summary="[Name(key='v'), ...]"),
    Reader("llama4_pythonic", read, template_markers=(("<|python_start|>",),),
           text_markers=(re.compile(r"<\|python_start\|>"),), summary="<|python_start|>[Name(key='v')]<|python_end|>"),
)
