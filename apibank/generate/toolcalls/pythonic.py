"""Kept in Python: transformers' ``python-call-list`` parser reads strict lists only, and these families
write beyond it (ToolACE's template prints values unquoted, ``k=Paris``: of the 779 gold calls ToolACE's
template renders, that parser reads 7 back exactly, this module 734 with the rows' tools; fenced blocks and
bare calls of offered tools have no list at all).

LFM2 and LFM2.5 write the same list between ``<|tool_call_start|>`` and ``<|tool_call_end|>``: read here too,
since transformers' ``python-call-list`` content parser arrived after the transformers that vLLM 0.32 pins
(5.19 has none), and a spec file this package's floor cannot run would leave the family unread there.

Python-style calls: ``[Name(key='v'), Other()]`` (vLLM's Llama 3.2 and ToolACE templates), Llama 4 between
``<|python_start|>`` and ``<|python_end|>``, or in a fenced ``python``/``tool_code`` block.

Read with :mod:`ast` into literals only, never evaluated. Every call of a bracketed list is taken,
whatever its name (at levels 2 and 3 a model is offered ToolSearcher alone, yet calls the tools it was
told of); a bare ``Name(...)`` outside a list only for a tool the schemas name ("print(x)" is no call).
"""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import (
    FENCE, ToolCall, balanced_spans, declared_types, python_calls_in, python_spelling, python_style_calls, regions,
)
from apibank.generate.toolcalls.registry import Reader, Schemas
from apibank.notation import MAX_CALL_CHARS

_CALL = re.compile(r"\s*([A-Za-z_][\w.]*)\((.*?)\)\s*(?:,|\Z)", re.DOTALL)
_FIRST_KEY = re.compile(r"\s*(\w+)=")
_NEXT_KEY = re.compile(r",\s*(\w+)=")


def _bare_arguments(text: str) -> dict[str, str] | None:
    """``k=v, k2=v2`` as text values: a value runs to the next ``, key=`` and loses one pair of quotes."""
    first = _FIRST_KEY.match(text)
    if first is None:
        return {} if not text.strip() else None
    arguments: dict[str, str] = {}
    key, start = first.group(1), first.end()
    while True:
        following = _NEXT_KEY.search(text, start)
        value = text[start:following.start() if following else len(text)].strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if key in arguments:
            return None
        arguments[key] = value
        if following is None:
            return arguments
        key, start = following.group(1), following.end()


def bare_calls(source: str) -> list[ToolCall]:
    """Calls of a ``[Name(k=v, ...)]`` list whose values the template wrote unquoted (ToolACE's and vLLM's
    Llama 3.2 pythonic templates print ``k=Paris``): every value read as text. Values holding ``), ``
    are beyond this reading."""
    body = source.strip()
    if not (body.startswith("[") and body.endswith("]")) or len(body) > MAX_CALL_CHARS:
        return []
    calls: list[ToolCall] = []
    position = 1
    while position < len(body) - 1:
        call = _CALL.match(body, position, len(body) - 1)
        if call is None:
            return []
        arguments = _bare_arguments(call.group(2))
        if arguments is None:
            return []
        calls.append((call.group(1), arguments))
        position = call.end()
    return calls


def _as_written(calls: list[ToolCall], source: str, schemas: Schemas | None) -> list[ToolCall]:
    """``calls`` read from the list ``source``, where a value the tool's schema declares a string was written
    unquoted (ToolACE: ``id=78901234``, ``lon=74.0060``, ``flag=True``) taken as the text written, as the
    families that write bare values read it, not as the number or boolean Python makes of it."""
    written = bare_calls(source) if schemas else []
    if len(written) != len(calls):
        return calls
    return [(name, {key: as_text.get(key, value) if not isinstance(value, str)
                    and declared_types(schemas, name, key) == {"string"} else value for key, value in arguments.items()})
            if isinstance(arguments, dict) else (name, arguments) for (name, arguments), (_, as_text) in zip(calls, written)]


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    text = text.replace("<|python_start|>", "").replace("<|python_end|>", "")
    calls: list[ToolCall] = []
    for block in (match.group(1) for match in FENCE.finditer(text)):
        calls += python_calls_in(block)
    if calls:
        return calls
    # The list as a whole first: its strings may hold brackets and quotes the span scan cannot pair.
    first, last = text.find("["), text.rfind("]")
    if 0 <= first < last:
        calls = python_calls_in(text[first:last + 1])
        if calls:
            return _as_written(calls, text[first:last + 1], schemas)
    for start, end in balanced_spans(text, openers="["):
        found = python_calls_in(text[start:end])
        calls += _as_written(found, text[start:end], schemas) if found else bare_calls(text[start:end])
    if calls or not schemas:
        return calls
    return python_style_calls(text, frozenset(schemas))


def read_lfm2(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    """The lists between LFM2's call markers only: a list in its prose is no call."""
    return [call for region in regions(text, "<|tool_call_start|>", "<|tool_call_end|>")
            for call in read(python_spelling(region))]


_LIST_START = re.compile(r"\A\s*(?:<\|python_start\|>\s*)?\[\s*[A-Za-z_][\w.]*\(")
READERS = (
    Reader("llama4_pythonic", read, priority=25, template_markers=(("<|header_start|>", "[func_name1("), ("<|python_start|>",)),
           text_markers=(re.compile(r"<\|python_start\|>"),), summary="[Name(key='v')] (<|python_start|> allowed)"),
    Reader("lfm2", read_lfm2, priority=50, template_markers=(("<|tool_call_start|>",), ("List of tools: [",)),
           text_markers=(re.compile(r"<\|tool_call_start\|>\s*\["),),
           summary='<|tool_call_start|>[NAME(KEY="VALUE")]<|tool_call_end|>'),
    Reader("pythonic", read, priority=24, template_markers=(("[func_name1(",),), text_markers=(_LIST_START,),
           summary="[Name(key='v'), ...]"),
)
