"""Kept in Python: the calls have no marker around them (a bare JSON object anywhere in the answer, several
joined by ``;``, one left unclosed by the token limit), and a response template reads regions between markers.

Llama 3.1/3.2/3.3 (and Llama 4's JSON mode): a bare ``{"name": ..., "parameters": {...}}``, after
``<|python_tag|>`` or alone, several joined by ``;``.

The family has no marker of its own around a call: chosen from the template, every JSON call object in
the answer is a call (also one left unclosed after complete arguments, as a model cut off by its token
limit writes it); recognised from the text alone, only an answer that *starts* with a call object (or
with ``<|python_tag|>``) is one, so that prose quoting a JSON object with a "name" key makes no call.
"""

from __future__ import annotations

import re

from apibank.generate.toolcalls.generic import NAME, ToolCall, calls_in_values, json_values, prefixed_calls
from apibank.generate.toolcalls.registry import Reader, Schemas

# A call object whose arguments are complete although the object itself is not.
CALL_HEAD = re.compile(rf'\{{\s*"name"\s*:\s*"({NAME})"\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\{{)')


def read(text: str, schemas: Schemas | None = None) -> list[ToolCall]:
    text = text.replace("<|python_tag|>", "")
    return calls_in_values(json_values(text)) or prefixed_calls(text, CALL_HEAD)


READERS = (
    Reader("llama3_json", read, priority=20, template_markers=(('"parameters": dictionary of argument name',),),
           text_markers=(re.compile(r"<\|python_tag\|>\s*[\[{]"),
                         re.compile(r'\A\s*\[?\s*\{\s*"name"\s*:\s*"[^"]+"\s*,\s*"(?:parameters|arguments)"\s*:')),
           aliases=("llama4_json",), summary='{"name": ..., "parameters": {...}}'),
)
