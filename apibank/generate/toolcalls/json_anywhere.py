"""Kept in Python: the generic reader (registered as ``json``) reads every syntax below anywhere in the text,
JSON call objects inside prose included, which no marker delimits. Never chosen from a template or a text's markers (prose holding a JSON object with
a "name" key would become a call); chosen by name, where the prompt itself asks for JSON calls (the
agent's ``text`` tool format) or with ``--tool-parser json``:

* Hermes / Qwen: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``;
* Llama 3: a bare ``{"name": ..., "parameters": {...}}`` (``<|python_tag|>`` allowed before it), also
  when the object is left unclosed after complete arguments (the model wrote on until its token limit);
* Mistral: ``[TOOL_CALLS] [{"name": ..., "arguments": {...}}]`` and ``[TOOL_CALLS]Name[ARGS]{...}``;
* ``functions.Name:`` followed by the arguments as JSON (llama-cpp-python's function-calling format);
* Python-style calls: ``Name(key='v')``, ``[Name(key='v'), ...]`` or a fenced ``python`` block,
  read with :mod:`ast` into literals only, never evaluated;
* any of the above HTML-escaped (``{&#34;name&#34;: ...}``, ``&quot;``).
"""

from __future__ import annotations

import html
from typing import Iterable

from apibank.generate.toolcalls.generic import (
    ESCAPED, MAX_TEXT_CHARS, ToolCall, calls_in_values, json_values, prefixed_calls, python_style_calls,
)
from apibank.generate.toolcalls.functions_prefix import read as functions_prefix_calls
from apibank.generate.toolcalls.llama3_json import CALL_HEAD
from apibank.generate.toolcalls.registry import Reader, Schemas, get_reader


def calls_in_text(text: str, tool_names: Iterable[str] | None = None) -> list[ToolCall]:
    """Tool calls a model wrote as text, in the first syntax that yields any (see the module docstring).

    ``tool_names``, when given, restricts Python-style calls to those names (a sentence such as
    "print(x)" is no call); JSON calls are taken whatever their name, as the judge decides.
    """
    text = (text or "")[:MAX_TEXT_CHARS]
    known = frozenset(tool_names) if tool_names is not None else None
    for candidate in (text, html.unescape(text)) if ESCAPED.search(text) else (text,):
        calls = (get_reader("mistral").read(candidate, None) or functions_prefix_calls(candidate)
                 or calls_in_values(json_values(candidate)) or prefixed_calls(candidate, CALL_HEAD)
                 or python_style_calls(candidate, known))
        if calls:
            return calls
    return []


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    return calls_in_text(text, list(schemas) if schemas else None)


READERS = (Reader("json", read, priority=0, template_markers=(), summary="any of the syntaxes above, JSON calls in prose included"),)
