"""Bounded reading of untrusted model text, shared by every family's reader: JSON values, call
objects of every shape, Python-style calls and literals, delimited regions, and an answer that is
nothing but a call (:func:`whole_answer_calls`).

The model's text is untrusted: parsing never evaluates anything, looks at the first
:data:`MAX_TEXT_CHARS` characters only, reads one call to :data:`apibank.notation.MAX_CALL_CHARS`
(the judge's bound), and skips JSON nested deeper than :data:`MAX_DEPTH` before the decoder sees it
(Python's ``json`` recurses once per level, so ``'[' * 5000`` would otherwise raise RecursionError).
Python-style values are read by the notation's literal rule (:func:`apibank.notation.literal`), the
one the judge applies. A call becomes the prediction through :func:`apibank.notation.call_text`, so
that the benchmark's call extraction reads back the same names and values.
"""

from __future__ import annotations

import ast
import io
import itertools
import json
import re
import tokenize
from typing import Any, Callable, Iterable, Iterator, Mapping

from apibank.notation import (
    MAX_CALL_CHARS, ParseError, UnreadableArguments, keyword_arguments, literal, python_expression, string_end,
)

ToolCall = tuple[str, dict[str, Any] | UnreadableArguments]

MAX_TEXT_CHARS = 65_536  # a call longer than this is not a call the benchmark can score anyway
MAX_DEPTH = 32  # nesting of a JSON value or Python literal; the benchmark's arguments are flat
MAX_SPANS = 256  # bracketed spans examined per text
MAX_PASSES = 16  # rescans after an opener that never closes (each pass is linear)
MAX_CALLS = 64  # named call prefixes examined per text

NAME = r"[A-Za-z_][A-Za-z0-9_.\-]*"  # a tool name as the call syntaxes write it
_PY_CALL = re.compile(rf"\b({NAME})\s*\(")
FENCE = re.compile(r"```(?:python|py|tool_code|json)?\s*\n(.*?)```", re.DOTALL)
ESCAPED = re.compile(r"&(?:#\d{1,6}|#x[0-9a-fA-F]{1,6}|quot|apos|amp|lt|gt);")
_BRACKETS_AND_QUOTE = frozenset('[]{}()"')
_CLOSERS = {"[": "]", "{": "}", "(": ")"}
_SEPARATORS = re.compile(r"(?:[\s,;]|<\|[\w.\-]{1,32}\|>)*")  # between values: blank, commas, special tokens


# ------------------------------------------------------------------------------------ shapes
def as_call(obj: Any) -> ToolCall | None:
    if not isinstance(obj, Mapping):
        return None
    if isinstance(obj.get("function"), Mapping):  # OpenAI shape {"type": "function", "function": {...}}
        return as_call(obj["function"])
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return None
    arguments = obj.get("arguments", obj.get("parameters"))
    if isinstance(arguments, str):  # the OpenAI wire form: JSON text, which must decode to an object
        text = arguments
        arguments = decode_json(text) if text.strip() else {}
        if arguments is None and text.strip() != "null":
            return name.removeprefix("functions."), UnreadableArguments(
                text[:MAX_TEXT_CHARS],
                f"the arguments are not JSON (or longer than {MAX_TEXT_CHARS} characters, or deeper than {MAX_DEPTH})")
        if arguments is not None and not isinstance(arguments, Mapping):
            return name.removeprefix("functions."), UnreadableArguments(
                text[:MAX_TEXT_CHARS], f"the arguments are JSON {type(arguments).__name__}, not an object")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return None
    return name.removeprefix("functions."), dict(arguments)


def schemas_of(tools: Iterable[Any] | None) -> dict[str, Mapping[str, Any]]:
    """Tool name -> JSON-schema ``parameters`` of OpenAI-shaped tool schemas (or bare ``{"name": ...}`` ones)."""
    schemas: dict[str, Mapping[str, Any]] = {}
    for tool in tools or ():
        function = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if isinstance(function, Mapping) and isinstance(function.get("name"), str):
            parameters = function.get("parameters")
            schemas[function["name"]] = parameters if isinstance(parameters, Mapping) else {}
    return schemas


def declared_types(schemas: Mapping[str, Mapping[str, Any]] | None, name: str, key: str) -> set[str]:
    """The JSON types the tool ``name``'s schema declares for its parameter ``key`` (empty: none)."""
    properties = ((schemas or {}).get(name) or {}).get("properties")
    declared = properties.get(key, {}).get("type") if isinstance(properties, Mapping) and isinstance(
        properties.get(key), Mapping) else None
    return {declared} if isinstance(declared, str) else set(declared) if isinstance(declared, list) else set()


def calls_from_message(tool_calls: Any) -> list[ToolCall]:
    """Tool calls of a parsed/served assistant message (OpenAI shape); malformed entries are skipped."""
    if not isinstance(tool_calls, list):
        return []
    return [call for call in (as_call(entry) for entry in tool_calls[:MAX_SPANS]) if call is not None]


# ------------------------------------------------------------------------------ bounded JSON
def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether brackets nest deeper than ``limit`` (outside JSON strings), in one linear pass."""
    depth = 0
    inside_until = -1  # the last character of the string being passed over
    for index, char in enumerate(text):
        if index <= inside_until or char not in _BRACKETS_AND_QUOTE:
            continue
        if char == '"':
            closing = string_end(text, index)
            if closing is None:  # the rest is one unclosed string
                return False
            inside_until = closing
        elif char in "[{(":
            depth += 1
            if depth > limit:
                return True
        else:
            depth = max(0, depth - 1)
    return False


def decode_json(text: str) -> Any:
    """``json.loads`` for untrusted text: None for anything invalid, too large or too deep."""
    if len(text) > MAX_TEXT_CHARS or too_deep(text):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def balanced_spans(text: str, openers: str = "[{", max_passes: int = MAX_PASSES) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of bracketed regions, outermost first, in one pass per unclosed opener.

    Strings are tracked only inside a region, so prose quotes do not matter; an opener that never
    closes is skipped and the scan restarts after it (at most :data:`MAX_SPANS` spans in all).
    """
    start_at = 0
    produced = passes = 0
    while start_at < len(text) and produced < MAX_SPANS and passes < max_passes:
        passes += 1
        stack: list[str] = []
        region_start = -1
        inside_until = -1  # the last character of the string being passed over
        # one character at a time: a hostile text is dense with brackets, where this beats a regex
        for index, char in enumerate(text[start_at:], start_at):
            if index <= inside_until or char not in _BRACKETS_AND_QUOTE:
                continue
            if not stack:
                if char in openers:
                    region_start = index
                    stack.append(_CLOSERS[char])
            elif char == '"':
                closing = string_end(text, index)
                if closing is None:  # a string that never closes: neither does the region
                    break
                inside_until = closing
            elif char in _CLOSERS:
                stack.append(_CLOSERS[char])
            else:
                if char != stack[-1]:  # mismatched: drop this region, retry after its opener
                    break
                stack.pop()
                if not stack:
                    yield region_start, index + 1
                    produced += 1
                    if produced >= MAX_SPANS:
                        return
                    region_start = -1
        if not stack:
            return
        start_at = region_start + 1


def json_values(text: str) -> Iterator[Any]:
    """Every JSON object or array in ``text`` (outermost, leftmost first), each at most MAX_DEPTH deep."""
    for start, end in balanced_spans(text):
        value = decode_json(text[start:end])
        if value is not None:
            yield value


def is_call_object(item: Any) -> bool:
    """Whether a JSON value written with no family's markers around it is a call object: it names the tool
    *and* gives its arguments (``{"name": "John", "age": 3}`` is an answer, as vLLM reads it too)."""
    return isinstance(item, Mapping) and (isinstance(item.get("function"), Mapping)
                                          or "name" in item and ("arguments" in item or "parameters" in item))


def calls_in_values(values: Iterable[Any]) -> list[ToolCall]:
    """The call objects among JSON values written with no marker around them (a list: each of its items)."""
    calls: list[ToolCall] = []
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            call = as_call(item) if is_call_object(item) else None
            if call is not None:
                calls.append(call)
    return calls


def sole_values(text: str, decode: Callable[[str], Any] = decode_json) -> list[Any]:
    """The values an answer consists of: those of each fenced block, else of the whole answer, where it is
    nothing but bracketed values (separated by commas, semicolons, blank space or special tokens such as
    ``<|end|>``); [] where prose is around them or one does not decode."""
    values: list[Any] = []
    for block in [match.group(1) for match in FENCE.finditer(text)] or [text]:
        position = 0
        for start, end in balanced_spans(block):
            value = decode(block[start:end])
            if value is None or not _SEPARATORS.fullmatch(block, position, start):
                return []
            values.append(value)
            position = end
        if not _SEPARATORS.fullmatch(block, position):
            return []
    return values


# ---------------------------------------------------------------------------- named prefixes
def span_at(text: str, start: int, limit: int = MAX_CALL_CHARS) -> int | None:
    """The end of the bracketed region opening at ``text[start]``, looked for within ``limit`` characters."""
    window = text[start : start + limit]
    for span_start, span_end in balanced_spans(window, openers=window[:1], max_passes=1):
        return start + span_end if span_start == 0 else None
    return None


def object_after(text: str, position: int) -> Any:
    """The JSON object starting at ``position`` (None if there is none)."""
    end = span_at(text, position)
    return decode_json(text[position:end]) if end is not None else None


def matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The first :data:`MAX_CALLS` matches of ``pattern`` in ``text``."""
    return itertools.islice(pattern.finditer(text), MAX_CALLS)


def regions(text: str, opener: str, closer: str) -> list[str]:
    """The text after each ``opener`` up to the next ``closer`` (or the end: a model cut off by its token
    limit), left to right; at most :data:`MAX_CALLS` regions."""
    pattern = re.compile(rf"{re.escape(opener)}(.*?)(?:{re.escape(closer)}|\Z)", re.DOTALL)
    return [match.group(1) for match in matches(pattern, text)]


def prefixed_calls(text: str, pattern: re.Pattern[str]) -> list[ToolCall]:
    """A call per match of ``pattern`` (its group 1 the name) that a JSON object of arguments follows."""
    calls = []
    for match in matches(pattern, text):
        arguments = object_after(text, match.end())
        if isinstance(arguments, Mapping):
            calls.append((match.group(1), dict(arguments)))
    return calls


# ------------------------------------------------------------------------------ Python style
def _python_call(node: ast.AST) -> ToolCall | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "call" and isinstance(func.value, ast.Name):
        name = func.value.id  # Llama 3.1 built-in style: ``<|python_tag|>brave_search.call(query=...)``
    elif isinstance(func, ast.Name):
        name = func.id
    else:
        return None
    try:
        return name, keyword_arguments(node)
    except ParseError:
        return None


_JSON_LITERALS = {"true": "True", "false": "False", "null": "None"}


def python_spelling(source: str) -> str:
    """``source`` with the JSON literals some families write in Python-style calls (``true``, ``null``) spelt as
    Python's, names only (a "true" inside a string stays); unchanged where it does not tokenize."""
    if len(source) > MAX_CALL_CHARS or not any(word in source for word in _JSON_LITERALS):
        return source
    try:
        tokens = [(token.type, _JSON_LITERALS.get(token.string, token.string) if token.type == tokenize.NAME
                   else token.string) for token in tokenize.generate_tokens(io.StringIO(source).readline)]
        return tokenize.untokenize(tokens)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return source


def python_calls_in(source: str) -> list[ToolCall]:
    source = source.strip()
    if not source or len(source) > MAX_CALL_CHARS or too_deep(source):
        return []
    try:
        tree = python_expression(source)
    except ParseError:
        return []
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    calls = [_python_call(node) for node in nodes]
    if not calls or any(call is None for call in calls):
        return []
    return [call for call in calls if call is not None]


def python_style_calls(text: str, known: frozenset[str] | None) -> list[ToolCall]:
    """Calls written as Python: in a fenced block, else as bare ``Name(...)`` (alone or in a list)."""
    fenced = [match.group(1) for match in FENCE.finditer(text)]
    candidates = fenced
    if not fenced:
        for match in list(_PY_CALL.finditer(text))[:MAX_CALLS]:
            name = match.group(1)
            if known is not None and name.removesuffix(".call") not in known:
                continue
            end = span_at(text, match.end() - 1)
            if end is not None:
                candidates.append(text[match.start() : end])
    calls: list[ToolCall] = []
    for candidate in candidates:
        found = python_calls_in(candidate)
        if known is not None:
            found = [call for call in found if call[0] in known]
        calls.extend(found)
    return calls


def whole_answer_calls(text: str, tool_names: Iterable[str] | None = None) -> list[ToolCall]:
    """Calls of an answer that is nothing but calls, in no family's markers: a JSON call object or list of
    them (after ``<|python_tag|>`` or in a fenced block), or Python-style calls of offered tools. Each
    object must name the tool *and* give its arguments: prose, or a JSON answer such as
    ``{"name": "John", "age": 3}``, is no call."""
    text = (text or "")[:MAX_TEXT_CHARS].strip().removeprefix("<|python_tag|>").strip()
    fenced = FENCE.fullmatch(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    value = decode_json(text) if text[:1] in "[{" else None
    if value is not None:
        items = value if isinstance(value, list) else [value]
        calls = calls_in_values(items) if all(map(is_call_object, items)) else []
        return calls if len(calls) == len(items) else []
    known = frozenset(tool_names or ())
    calls = python_calls_in(text) if known else []
    return calls if calls and all(name in known for name, _ in calls) else []


def decode_literal(text: str) -> Any:
    """A JSON value, else a Python literal (the notation's rule: strings, numbers, booleans, None, lists,
    dicts; never evaluated); None for anything else, too large or too deep."""
    value = decode_json(text)
    if value is not None or len(text) > MAX_CALL_CHARS or too_deep(text):
        return value
    try:
        return literal(python_expression(text))
    except ParseError:
        return None
