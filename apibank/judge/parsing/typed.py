"""The corrected protocol's call parser: ``ast`` literals only, never evaluated.

A call is ``[Name(key=literal, ...)]`` anywhere in the output (spaces allowed inside the brackets,
the call may span lines). Its text between ``[`` and ``]`` must parse with
``ast.parse(mode="eval")`` as a call on a bare name whose arguments are all keyword arguments with
literal values: strings, numbers (with an optional sign), booleans, None, and lists, tuples and
dicts of those. Anything else (attribute access, names, calls, f-strings, ``**kwargs``, positional
arguments) is a :class:`ParseError`.

The benchmark's own notation is not always valid Python: the annotation renders every value as
``key='value'`` without escaping, so a list value reads ``attendees='['Mary', 'Peter']'`` and a text
with an apostrophe ``content='Don't forget'``. When ``ast`` rejects the call, the argument text is
read in that notation instead: values delimited by the quotes that precede ``, key=`` or the end,
bare values parsed as literals. List-typed parameters then receive text, which the typed coercion
converts by parsing it as a literal.
"""

from __future__ import annotations

import ast
import re
import warnings
from typing import Any

from apibank.judge.parsing.call import ParsedCall, ParseError

# Bounds that keep hostile outputs cheap: ast's own recursion on deep nesting, and huge texts.
MAX_CALL_CHARS = 20_000
MAX_LITERAL_DEPTH = 50

_OPENING = re.compile(r"\[\s*([^\W\d]\w*)\s*\(")
# Escapes are consumed as a pair so that an escaped quote never ends a string.
_SIGNIFICANT = re.compile(r"\\.|['\"()\[\]{}\n]", re.DOTALL)
_CLOSE_BRACKET = re.compile(r"\)[ \t]*\]")
MAX_OPENINGS = 16
MAX_FALLBACK_CLOSERS = 4


def _matching_parenthesis(text: str, start: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``start``, skipping quoted strings; None if unbalanced."""
    depth = 0
    quote = ""
    limit = min(len(text), start + MAX_CALL_CHARS)
    for match in _SIGNIFICANT.finditer(text, start, limit):
        char = match.group(0)
        if quote:
            if char == quote or (char == "\n" and len(quote) == 1):
                quote = ""
            continue
        if char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return match.start() if char == ")" else None
            if depth < 0:
                return None
    return None


def _literal(node: ast.AST, depth: int = 0) -> Any:
    if depth > MAX_LITERAL_DEPTH:
        raise ParseError("literal nested too deeply")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, (str, int, float, bool)) or node.value is None:
            return node.value
        raise ParseError(f"unsupported constant {type(node.value).__name__}")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in (int, float):
            return -operand.value if isinstance(node.op, ast.USub) else operand.value
        raise ParseError("a sign applies to numbers only")
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ParseError("'**' inside a dict is not a literal")
        result = {}
        for key, value in zip(node.keys, node.values):
            literal_key = _literal(key, depth + 1)
            if isinstance(literal_key, (list, dict)):
                raise ParseError("unhashable dict key")
            result[literal_key] = _literal(value, depth + 1)
        return result
    raise ParseError(f"not a literal: {type(node).__name__}")


def _parse_python(call_text: str) -> ParsedCall:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in model text are not our concern
            tree = ast.parse(call_text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        raise ParseError(f"not a Python call: {error.__class__.__name__}") from None
    call = tree.body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ParseError("not a call on a bare name")
    if call.args:
        raise ParseError("positional arguments are not accepted")
    arguments: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ParseError("'**' arguments are not accepted")
        if keyword.arg in arguments:
            raise ParseError(f"repeated argument {keyword.arg!r}")
        arguments[keyword.arg] = _literal(keyword.value)
    return ParsedCall(name=call.func.id, arguments=arguments)


_NOTATION_KEY = re.compile(r"(?:^|,)\s*([^\W\d]\w*)\s*=(?!=)\s*")


def _notation_value(text: str) -> Any:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in "'\"" and stripped[-1] == stripped[0]:
        return stripped[1:-1]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _literal(ast.parse(stripped, mode="eval").body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        raise ParseError(f"value is neither quoted nor a literal: {stripped[:40]!r}") from None


def _parse_notation(name: str, argument_text: str) -> ParsedCall:
    """Arguments in the annotation's unescaped ``key='value'`` notation."""
    if not argument_text.strip():
        return ParsedCall(name=name, arguments={})
    keys = list(_NOTATION_KEY.finditer(argument_text))
    if not keys or keys[0].start() != 0:
        raise ParseError("arguments are not key=value pairs")
    # A boundary inside a quoted value is a false one: merge until the value closes its quote.
    segments: list[tuple[str, str]] = []
    index = 0
    while index < len(keys):
        key = keys[index]
        value_start = key.end()
        opening = argument_text[value_start : value_start + 1]
        end_index = index + 1
        while True:
            value_end = keys[end_index].start() if end_index < len(keys) else len(argument_text)
            value = argument_text[value_start:value_end].rstrip()
            if opening not in ("'", '"') or (len(value) >= 2 and value.endswith(opening)):
                break
            if end_index >= len(keys):
                raise ParseError("unterminated quoted value")
            end_index += 1
        segments.append((key.group(1), value))
        index = end_index
    arguments: dict[str, Any] = {}
    for key_name, value in segments:
        if key_name in arguments:
            raise ParseError(f"repeated argument {key_name!r}")
        arguments[key_name] = _notation_value(value)
    return ParsedCall(name=name, arguments=arguments)


def _closes_beyond_limit(text: str, parenthesis: int) -> bool:
    limit = parenthesis + MAX_CALL_CHARS
    return len(text) > limit and _CLOSE_BRACKET.search(text, limit) is not None


def extract_typed(text: str) -> list[tuple[str, str, str]]:
    """Candidate calls in order: (name, argument text, whole call text).

    For each ``[Name(`` opening (the first ``MAX_OPENINGS``), the balanced closing parenthesis
    comes first; when quotes do not balance (the annotation notation), the nearest ``)]`` closers
    follow as further candidates.
    """
    candidates = []
    for count, opening in enumerate(_OPENING.finditer(text)):
        if count >= MAX_OPENINGS:
            break
        parenthesis = opening.end() - 1
        closers: list[tuple[int, int]] = []
        close = _matching_parenthesis(text, parenthesis)
        if close is not None:
            bracket = _CLOSE_BRACKET.match(text, close)
            if bracket is not None:
                closers.append((close, bracket.end()))
        limit = min(len(text), parenthesis + MAX_CALL_CHARS)
        for extra, bracket in enumerate(_CLOSE_BRACKET.finditer(text, parenthesis, limit)):
            if extra >= MAX_FALLBACK_CLOSERS:
                break
            if (bracket.start(), bracket.end()) not in closers:
                closers.append((bracket.start(), bracket.end()))
        for close, end in closers:
            candidates.append((opening.group(1), text[parenthesis + 1 : close], text[opening.start() : end]))
    return candidates


def parse_typed(text: str) -> ParsedCall | None:
    """The first well-formed call in ``text``; None if no ``[Name(...)]`` is present.

    Raises :class:`ParseError` when calls are present but none has acceptable arguments.
    """
    first_error: ParseError | None = None
    candidates = extract_typed(text)
    if not candidates:
        for count, opening in enumerate(_OPENING.finditer(text)):
            if count >= MAX_OPENINGS:
                break
            if _closes_beyond_limit(text, opening.end() - 1):
                raise ParseError(f"call longer than {MAX_CALL_CHARS} characters")
        return None
    for name, argument_text, call_text in candidates:
        if len(call_text) > MAX_CALL_CHARS:
            first_error = first_error or ParseError("call text too long")
            continue
        try:
            parsed = _parse_python(f"{name}({argument_text})")
        except ParseError as error:
            try:
                parsed = _parse_notation(name, argument_text)
            except ParseError:
                first_error = first_error or error
                continue
        return ParsedCall(name=parsed.name, arguments=parsed.arguments, text=call_text)
    if first_error is not None:
        raise first_error
    return None
