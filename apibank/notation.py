"""The API-Bank call notation, ``API-Request: [Name(key='value', ...)]``: written, read and bounded here.

Upstream writes a request with every value shown by Python's ``str()`` between single quotes, never
escaped, and an executed call's result after ``->`` on the call's line, shown the same way. Every
room writes and reads the notation through this module: the rows' prompts and gold answers (data),
the chat prompts and native tool calls turned into predictions (generate), the training files read
back (train) and the corrected protocol's parser (judge). The paper protocol reads calls with the
original evaluator's regular expressions instead, bug for bug: :mod:`apibank.judge.parsing.paper`.

Three readers, for three kinds of text:

* :func:`parse_call`, model output (untrusted): the first ``[Name(...)]`` anywhere, read as Python
  (``ast`` literals only, never evaluated), else in the notation itself; bounded by
  :data:`MAX_CALL_CHARS` and :data:`MAX_LITERAL_DEPTH`;
* :func:`parse_request`, upstream's own requests (the training files): exactly one request, split
  so that writing it back with :func:`render_request` gives the same text, or :class:`ParseError`;
* :func:`shown_value`, a result as a prompt shows it: the value whose ``str()`` it is.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

REQUEST_PREFIX = "API-Request: "
RESULT_ARROW = "->"
# The notation as prompts describe it to a model.
REQUEST_FORMAT = f"{REQUEST_PREFIX}[ApiName(key1='value1', key2='value2', ...)]"
# The longest call read in model output (the judge's bound, which generate/toolcalls.py reads native
# calls to as well, so that no call the judge could score is lost before it). Gold calls are far
# shorter: at most 270 characters in the test rows, 367 in the training files. The bound only keeps
# hostile outputs cheap; 20,000 leaves a model room to write long values (an email body) and still
# be judged.
MAX_CALL_CHARS = 20_000
MAX_LITERAL_DEPTH = 50  # nesting of a literal value in model output (ast recurses once per level)
# Longest result text handed to the literal reader; longer ones stay text (nested literals this size
# would only be an attack on the parser, upstream results are far shorter).
MAX_RESULT_CHARS = 100_000


class ParseError(ValueError):
    """Text that holds a call but not a readable one: ``cause`` is a short label, ``detail`` where."""

    def __init__(self, cause: str, detail: str = "") -> None:
        super().__init__(f"{cause}: {detail}" if detail else cause)
        self.cause = cause
        self.detail = detail


@dataclass(frozen=True)
class ParsedCall:
    """``name`` and keyword ``arguments`` in text order; ``text`` is the matched call span."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    text: str = ""


# ------------------------------------------------------------------------------------- writing
def display(value: Any) -> str:
    """Python's ``str()`` display of a JSON value, as upstream prompts show results and arguments."""
    return value if isinstance(value, str) else str(value)


def render_request(name: str, arguments: Mapping[str, Any], quoting: Mapping[str, str] | None = None) -> str:
    """A request as upstream writes it: values displayed raw, never escaped. ``quoting`` gives each
    value's quote (``'``, ``"`` or none, as the training files vary); without it every value is
    single-quoted, as the test files write them."""
    def shown(key: str, value: Any) -> str:
        quote = "'" if quoting is None else quoting.get(key, "'")
        return f"{key}={quote}{display(value)}{quote}"

    return f"{REQUEST_PREFIX}[{name}({', '.join(shown(key, value) for key, value in arguments.items())})]"


def render_result_line(name: str, arguments: Mapping[str, Any], result: Any,
                       quoting: Mapping[str, str] | None = None) -> str:
    """An executed call's line of a prompt's dialogue: the request, ``->``, the result shown."""
    return f"{render_request(name, arguments, quoting)}{RESULT_ARROW}{display(result)}\n"


def _readable_argument(key: str, value: Any) -> str:
    if isinstance(value, str):
        # The paper parser ends a quoted value at the next quote of either kind; pick the quote that
        # the value does not contain so that the value survives whenever it can.
        quote = '"' if "'" in value and '"' not in value else "'"
        return f"{key}={quote}{value}{quote}"
    if isinstance(value, (list, dict)):
        # Unquoted, as a Python literal: the paper parser keeps a bracketed list whole.
        return f"{key}={value!r}"
    # Numbers and booleans are quoted: unquoted decimals and negatives are cut by the paper parser.
    return f"{key}='{value}'"


def call_text(name: str, arguments: Mapping[str, Any]) -> str:
    """A model's structured call (a native tool call) as a prediction: written so that both protocols'
    readers get back its name and values wherever the notation allows."""
    params = ", ".join(_readable_argument(key, value) for key, value in arguments.items())
    return f"{REQUEST_PREFIX}[{name}({params})]"


# A native tool call whose arguments are not a JSON object, as a prediction: the arguments kept as the
# model wrote them (as one JSON string) after a mark that no reader takes for arguments, so that the
# judge gives the call its own category (INVALID_TOOL_ARGUMENTS) under both protocols.
UNREADABLE_MARK = "<arguments not a JSON object>"
_UNREADABLE = re.compile(re.escape(REQUEST_PREFIX) + r"\[([^(]+)\(" + re.escape(UNREADABLE_MARK) + r" (\".*\")\)\]",
                         re.DOTALL)


class UnreadableArguments(str):
    """A native tool call's arguments that are not a JSON object, as the model wrote them (the readers
    keep up to their bound); ``error`` says why they cannot be read."""

    error: str

    def __new__(cls, text: str, error: str) -> "UnreadableArguments":
        value = super().__new__(cls, text)
        value.error = error
        return value


def unreadable_call_text(name: str, arguments_text: str) -> str:
    """A native call with unreadable arguments as a prediction (read back by :func:`unreadable_call`)."""
    return f"{REQUEST_PREFIX}[{name}({UNREADABLE_MARK} {json.dumps(arguments_text, ensure_ascii=False)})]"


def unreadable_call(text: str) -> tuple[str, str] | None:
    """(name, arguments as written) when ``text`` is exactly a call written by :func:`unreadable_call_text`."""
    match = _UNREADABLE.fullmatch(text.strip())
    if match is None:
        return None
    try:
        written = json.loads(match.group(2))
    except (ValueError, RecursionError):
        return None
    return (match.group(1), written) if isinstance(written, str) else None


# ---------------------------------------------------------------------------- quoted strings
def _string_body(quote: str, line_ends: bool) -> re.Pattern[str]:
    # everything up to the closing character, a backslash taking the character after it along
    plain = "[^" + re.escape(quote) + r"\\" + (r"\n" if line_ends else "") + "]*"
    return re.compile(plain + r"(?:\\." + plain + ")*", re.DOTALL)


_STRING_BODIES = {(quote, line_ends): _string_body(quote, line_ends) for quote in "'\"" for line_ends in (False, True)}


def string_end(text: str, opening: int, limit: int | None = None, *, line_ends: bool = False) -> int | None:
    """The index of the character closing the quoted string opened at ``text[opening]``: its quote
    (or, with ``line_ends``, a newline), a backslash escaping the character after it; None when
    nothing closes it before ``limit``. The one scanner of quoted text for every bracket matcher."""
    end = len(text) if limit is None else min(limit, len(text))
    closing = _STRING_BODIES[(text[opening], line_ends)].match(text, opening + 1, end).end()
    # the body stops at its closing character, at the end, or at a backslash with nothing left to escape
    return closing if closing < end and text[closing] != "\\" else None


# ---------------------------------------------------------------------------- Python literals
def python_expression(source: str) -> ast.expr:
    """``source`` parsed as one Python expression (never evaluated); ParseError if it is not one."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences in model text are not our concern
            return ast.parse(source, mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        raise ParseError(f"not a Python call: {error.__class__.__name__}") from None


def literal(node: ast.AST, depth: int = 0) -> Any:
    """The value of a literal node: strings, numbers (with an optional sign), booleans, None, and
    lists, tuples (as lists) and dicts of those; ParseError for anything else."""
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
        return [literal(item, depth + 1) for item in node.elts]
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise ParseError("'**' inside a dict is not a literal")
        result = {}
        for key, value in zip(node.keys, node.values):
            literal_key = literal(key, depth + 1)
            if isinstance(literal_key, (list, dict)):
                raise ParseError("unhashable dict key")
            result[literal_key] = literal(value, depth + 1)
        return result
    raise ParseError(f"not a literal: {type(node).__name__}")


def keyword_arguments(call: ast.Call) -> dict[str, Any]:
    """The arguments of a call written with literal keyword arguments only; ParseError otherwise."""
    if call.args:
        raise ParseError("positional arguments are not accepted")
    arguments: dict[str, Any] = {}
    for keyword in call.keywords:
        if keyword.arg is None:
            raise ParseError("'**' arguments are not accepted")
        if keyword.arg in arguments:
            raise ParseError(f"repeated argument {keyword.arg!r}")
        arguments[keyword.arg] = literal(keyword.value)
    return arguments


def shown_value(text: str) -> Any:
    """The value a result text displays: a Python literal when it reads back to the same text
    (``{'a': 1}``, ``33.0``, ``None``), else the text itself (``Success``). Never evaluated."""
    if len(text) <= MAX_RESULT_CHARS:
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return text
        if display(value) == text:
            try:
                json.dumps(value)
            except (TypeError, ValueError):  # a set, bytes or complex number has no JSON form
                return text
            return value
    return text


# ------------------------------------------------------------------------------ model output
# A call is ``[Name(`` ... ``)]`` anywhere (spaces allowed inside the brackets; it may span lines).
_OPENING = re.compile(r"\[\s*([^\W\d]\w*)\s*\(")
# Escapes are consumed as a pair, so that an escaped quote never opens or ends a string.
_SIGNIFICANT = re.compile(r"\\.|['\"()\[\]{}\n]", re.DOTALL)
_CLOSE_BRACKET = re.compile(r"\)[ \t]*\]")
_NOTATION_KEY = re.compile(r"(?:^|,)\s*([^\W\d]\w*)\s*=(?!=)\s*")
MAX_OPENINGS = 16
MAX_FALLBACK_CLOSERS = 4


def _matching_parenthesis(text: str, start: int) -> int | None:
    """Index of the ``)`` closing the ``(`` at ``start``, skipping quoted strings (a line ends an
    unclosed one); None if unbalanced within :data:`MAX_CALL_CHARS`."""
    depth = 0
    limit = min(len(text), start + MAX_CALL_CHARS)
    inside_until = -1  # the last character of the quoted string being passed over
    for match in _SIGNIFICANT.finditer(text, start, limit):
        if inside_until >= 0:
            if match.start() <= inside_until:
                continue
            inside_until = -1
        char = match.group(0)
        if char in "'\"":
            closing = string_end(text, match.start(), limit, line_ends=True)
            if closing is None:
                return None
            inside_until = closing
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return match.start() if char == ")" else None
            if depth < 0:
                return None
    return None


def _python_call(call_text: str) -> ParsedCall:
    call = python_expression(call_text)
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ParseError("not a call on a bare name")
    return ParsedCall(name=call.func.id, arguments=keyword_arguments(call))


def _notation_value(text: str) -> Any:
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] in "'\"" and stripped[-1] == stripped[0]:
        return stripped[1:-1]
    try:
        return literal(python_expression(stripped))
    except ParseError:
        raise ParseError(f"value is neither quoted nor a literal: {stripped[:40]!r}") from None


def _notation_call(name: str, argument_text: str) -> ParsedCall:
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


def call_candidates(text: str) -> list[tuple[str, str, str]]:
    """Candidate calls in order: (name, argument text, whole call text).

    For each ``[Name(`` opening (the first :data:`MAX_OPENINGS`), the balanced closing parenthesis
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


def parse_call(text: str) -> ParsedCall | None:
    """The first well-formed call in model output ``text``; None if no ``[Name(...)]`` is present.

    The call's text between ``[`` and ``]`` is read as Python: a call on a bare name whose arguments
    are all keyword arguments with literal values (:func:`literal`); anything else (attribute access,
    names, calls, f-strings, ``**kwargs``, positional arguments) is refused. The benchmark's own
    notation is not always Python (a list value reads ``attendees='['Mary', 'Peter']'``, a text with
    an apostrophe ``content='Don't forget'``): when ``ast`` refuses the call, the argument text is read
    in that notation instead, values delimited by the quotes that precede ``, key=`` or the end, bare
    values read as literals. Raises :class:`ParseError` when calls are present but none is readable.
    """
    first_error: ParseError | None = None
    candidates = call_candidates(text)
    if not candidates:
        for count, opening in enumerate(_OPENING.finditer(text)):
            if count >= MAX_OPENINGS:
                break
            if _closes_beyond_limit(text, opening.end() - 1):
                raise ParseError(f"call longer than {MAX_CALL_CHARS} characters")
        return None
    for name, argument_text, whole in candidates:
        if len(whole) > MAX_CALL_CHARS:
            first_error = first_error or ParseError("call text too long")
            continue
        try:
            parsed = _python_call(f"{name}({argument_text})")
        except ParseError as error:
            try:
                parsed = _notation_call(name, argument_text)
            except ParseError:
                first_error = first_error or error
                continue
        return ParsedCall(name=parsed.name, arguments=parsed.arguments, text=whole)
    if first_error is not None:
        raise first_error
    return None


# ---------------------------------------------------------------------------- upstream's own
_REQUEST = re.compile(re.escape(REQUEST_PREFIX) + r"\[(\w+)\((.*)\)\]", re.DOTALL)
_KEY = re.compile(r"(\w+)=")
_NEXT_KEY = re.compile(r", (\w+)=")
_SEVERAL_CALLS = re.compile(r"\)\], \[?\w+\(|\), \w+\(")


def _request_arguments(text: str) -> tuple[dict[str, Any], dict[str, str]]:
    """(arguments, quoting) of ``key=value`` pairs joined by ``, ``.

    The training files quote text with ``'`` or ``"`` or not at all and write numbers and lists
    bare, quotes inside values unescaped. A quoted value here ends at its quote that closes the text or
    precedes ``, <key>=``; an unquoted one at the next ``, <key>=``: read as a number, list or boolean
    when it is one (:func:`shown_value`), else kept as text. :func:`parse_request` confirms each split
    by writing it back.
    """
    arguments: dict[str, Any] = {}
    quoting: dict[str, str] = {}
    position = 0
    while position < len(text):
        key = _KEY.match(text, position)
        if key is None:
            raise ParseError("unparsable request", text[position:position + 200])
        start = key.end()
        quote = text[start:start + 1] if text[start:start + 1] in ("'", '"') else ""
        if quote:
            end = start + 1
            while True:
                end = text.find(quote, end)
                if end < 0:
                    raise ParseError("unparsable request", text[start:start + 200])
                if end == len(text) - 1 or _NEXT_KEY.match(text, end + 1):
                    break
                end += 1
            value: Any = text[start + 1:end]
            position = end + 1
        else:
            following = _NEXT_KEY.search(text, start)
            end = following.start() if following else len(text)
            value = shown_value(text[start:end])
            position = end
        if key.group(1) in arguments:
            raise ParseError("repeated parameter in a request", key.group(1))
        arguments[key.group(1)], quoting[key.group(1)] = value, quote
        if position < len(text):
            position += len(", ")
    return arguments, quoting


def parse_request(text: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(tool name, arguments, quoting) of one upstream ``API-Request: [Name(...)]`` text, checked by
    writing it back with :func:`render_request`; ParseError (with a short ``cause``) otherwise."""
    call = _REQUEST.fullmatch(text)
    if call is None:
        raise ParseError("unparsable request", text[:200])
    name = call.group(1)
    try:
        arguments, quoting = _request_arguments(call.group(2))
    except ParseError:
        if _SEVERAL_CALLS.search(call.group(2)):
            raise ParseError("several calls in one request", text[:200]) from None
        raise
    if render_request(name, arguments, quoting) != text:
        raise ParseError("request does not round-trip", text[:200])
    return name, arguments, quoting


def split_result_line(text: str) -> tuple[str, str] | None:
    """(request, result text) of an executed call's dialogue line (without its newline), split at the
    first ``)]->``; None if there is none."""
    end = text.find(")]" + RESULT_ARROW)
    if end < 0:
        return None
    return text[: end + 2], text[end + 2 + len(RESULT_ARROW):]


__all__ = [
    "MAX_CALL_CHARS", "MAX_LITERAL_DEPTH", "MAX_RESULT_CHARS", "REQUEST_FORMAT", "REQUEST_PREFIX", "RESULT_ARROW", "ParseError",
    "ParsedCall", "call_candidates", "call_text", "display", "keyword_arguments", "literal", "parse_call",
    "parse_request", "python_expression", "render_request", "render_result_line", "shown_value",
    "split_result_line", "string_end",
]
