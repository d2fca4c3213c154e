"""Reading upstream's flattened samples back into dialogue rows.

The upstream training files (and the flattened test files) hold each sample as three strings: an
``instruction`` ending in ``API descriptions:`` and one JSON description per line, an ``input`` with
the dialogue so far (``User: ...``, ``AI: ...``, ``API-Request: [Name(key='value')]->result``)
closed by ``Generate API Request:`` or ``Generate AI Response:``, and the expected ``output``.
Level-3 inputs open with a description line of their own (ToolSearcher, ``apiCode`` keys).

:func:`parse_flattened` turns such a sample into the row shape of the test configs (``history``,
``tools``, ``target``), so that one converter serves training and test rows. Parsing is checked by
rendering back: the dialogue, every request and the trailer must reproduce the input byte for byte,
and the expected request must reproduce the output. Requests and results are read by the call
notation's reader of upstream's own text (:func:`apibank.notation.parse_request`), dialogues written
back by the one dialogue renderer (:func:`apibank.data.rendering.render_dialogue`). A sample that
fails raises :class:`Unconvertible` with a short cause (for counting) and a detail (for the listing).
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Iterator, Mapping

from apibank.benchmark import level_spec
# turn_record and json_text make a dialogue turn exactly as the test rows hold it (arguments and result as
# JSON text); parsed training turns must be the same shape.
from apibank.data.rendering import QUOTING, instruction_lines, json_text, render_dialogue, turn_record
from apibank.notation import MAX_RESULT_CHARS, REQUEST_PREFIX, ParseError, parse_request, shown_value, split_result_line

TRAILERS = {"Generate API Request:": "api", "Generate AI Response:": "response"}
# What follows the trailer's colon: levels 1/2 end with a newline, level-3 test files with a space
# and a newline, the level-3 training files with a space only.
TRAILER_ENDINGS = ("\n", " \n", " ", "")
ROLE_PREFIXES = {"User: ": "User", "AI: ": "AI"}
RESPONSE_PREFIX = "AI: "
# A description written as text that no literal reader takes: its name and parameter keys.
_DESCRIBED_NAME = re.compile(r"^\{'name': '(\w+)'")
_INPUT_SECTION = re.compile(r"'input_parameters': (.*?)(?:, 'output_parameters'|$)", re.DOTALL)
_PARAMETER_KEY = re.compile(r"'(\w+)': \{'type")


class Unconvertible(ParseError):
    """A sample that cannot be converted: ``cause`` is one of a few short labels (for counting),
    ``detail`` where (for the listing)."""


# ---------------------------------------------------------------------------------- pieces
def lenient_literal(text: str) -> Any:
    """A result text read as a literal where bare names stand for their own text (``'type': str``
    in some upstream descriptions), or None. Used to find tool descriptions, never to show a value;
    nothing is evaluated."""
    if len(text) > MAX_RESULT_CHARS:
        return None
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None

    def value(node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, (ast.List, ast.Tuple)):
            return [value(item) for item in node.elts]
        if isinstance(node, ast.Dict) and all(key is not None for key in node.keys):
            return {value(key): value(item) for key, item in zip(node.keys, node.values)}
        raise ValueError("not a literal")

    try:
        return value(tree.body)
    except (ValueError, TypeError, RecursionError):
        return None


def request(text: str) -> tuple[str, dict[str, Any], dict[str, str]]:
    """(tool name, arguments, quoting) of one upstream request, read back exactly; Unconvertible otherwise."""
    try:
        return parse_request(text)
    except ParseError as error:
        raise Unconvertible(error.cause, error.detail) from None


def _description_name(line: str) -> str:
    try:
        described = json.loads(line)
    except json.JSONDecodeError:
        raise Unconvertible("unreadable API description", line[:200]) from None
    name = described.get("name", described.get("apiCode")) if isinstance(described, dict) else None
    if not isinstance(name, str) or not name:
        raise Unconvertible("unreadable API description", line[:200])
    return name


def instruction_descriptions(instruction: str) -> list[str]:
    lines = instruction_lines(instruction)
    if lines is None:
        raise Unconvertible("instruction without API descriptions", instruction[-200:])
    return lines


def split_trailer(text: str) -> tuple[str, str, str]:
    """(dialogue text, trailer as written, sample kind) of an input."""
    for trailer, kind in TRAILERS.items():
        position = text.rfind(trailer)
        if position >= 0 and text[position + len(trailer):] in TRAILER_ENDINGS:
            return text[:position], text[position:], kind
    raise Unconvertible("input without a Generate trailer", text[-200:])


def _dialogue_lines(body: str) -> list[tuple[str, str]]:
    """(kind, text) per turn; a line that opens no turn continues the previous one."""
    if body and not body.endswith("\n"):
        raise Unconvertible("unreadable dialogue", "the dialogue does not end with a newline")
    turns: list[list[str]] = []
    for line in body[:-1].split("\n") if body else []:
        opener = next((p for p in (*ROLE_PREFIXES, REQUEST_PREFIX) if line.startswith(p)), None)
        if opener is not None:
            turns.append([opener, line])
        elif turns:
            turns[-1][1] += "\n" + line
        else:
            raise Unconvertible("unreadable dialogue", line[:200])
    return [(opener, text) for opener, text in turns]


def _api_turn(text: str, level: int) -> dict[str, str]:
    parts = split_result_line(text)
    if parts is None:
        raise Unconvertible("unparsable request", text[:200])
    name, arguments, quoting = request(parts[0])
    shown = shown_value(parts[1])
    # What the prompt showed of the result is stored as a test row stores the result, so that the
    # conversation builder and the dialogue renderer show exactly what the prompt showed.
    stored = shown if level_spec(level).full_results else {"output": shown}
    return {**turn_record("API", api_name=name, arguments=arguments, result=stored), QUOTING: json_text(quoting)}


# ---------------------------------------------------------------------------------- descriptions
def declared_parameters(description: Mapping[str, Any]) -> dict[str, Any] | None:
    """The input parameters of a description in either key style (``input_parameters`` or the
    level-3 header's ``parameters``)."""
    params = description.get("input_parameters", description.get("parameters"))
    return params if isinstance(params, dict) else None


def described_tools(value: Any) -> Iterator[dict[str, Any]]:
    """Tool descriptions in a ToolSearcher result: the description itself, a list of them, or a
    result record whose ``output`` holds them; a result kept as text is read leniently."""
    if isinstance(value, str):
        read = lenient_literal(value)
        if read is None:
            yield from _description_in_text(value)
            return
        value = read
    if isinstance(value, list):
        for item in value:
            yield from described_tools(item)
    elif isinstance(value, dict):
        if isinstance(value.get("name"), str) and ("input_parameters" in value or "description" in value):
            yield value
        elif "output" in value:
            yield from described_tools(value["output"])


def _description_in_text(text: str) -> Iterator[dict[str, Any]]:
    """The name and parameter names of one description upstream wrote with unescaped quotes inside
    its texts (``'The user's preferences.'``), which no literal reader takes; a description without
    input parameters declares none."""
    name, section = _DESCRIBED_NAME.match(text), _INPUT_SECTION.search(text)
    if name is not None:
        keys = _PARAMETER_KEY.findall(section.group(1)) if section is not None else []
        yield {"name": name.group(1), "input_parameters": {key: {} for key in keys}}


# ---------------------------------------------------------------------------------- samples
def parse_flattened(record: Mapping[str, Any], *, row_id: str, level: int, kind: str | None = None) -> dict[str, Any]:
    """A flattened upstream sample as a dialogue row; raises :class:`Unconvertible`.

    ``kind`` ("api" or "response"), when given, must agree with the input's trailer.
    """
    instruction, text = record["instruction"], record["input"]
    output = record["output"] if "output" in record else record["expected_output"]
    descriptions = instruction_descriptions(instruction)
    header = ""
    first, newline, rest = text.partition("\n")
    if first.startswith("{") and newline:
        header, text = first, rest
        descriptions.append(first)
    tools = [{"name": _description_name(line), "description": line} for line in descriptions]

    body, trailer, trailer_kind = split_trailer(text)
    if kind is not None and trailer_kind != kind:
        raise Unconvertible("trailer disagrees with the file", f"{trailer!r} in a {kind} file")
    history = []
    for opener, turn_text in _dialogue_lines(body):
        if opener == REQUEST_PREFIX:
            history.append(_api_turn(turn_text, level))
        else:
            history.append(turn_record(ROLE_PREFIXES[opener], text=turn_text[len(opener):]))
    rendered = (header + "\n" if header else "") + render_dialogue(history, level) + trailer
    if rendered != record["input"]:
        raise Unconvertible("dialogue does not round-trip", _first_difference(rendered, record["input"]))

    if trailer_kind == "api":
        name, arguments, quoting = request(output)
        target = {**turn_record("API", api_name=name, arguments=arguments), QUOTING: json_text(quoting)}
    else:
        target = turn_record("AI", text=response_text(output))
    return {
        "id": row_id,
        "level": level,
        "kind": trailer_kind,
        "history": history,
        "tools": tools,
        "target": target,
        "instruction": instruction,
        "input": record["input"],
        "expected_output": output,
        "instruction_icl": "",
    }


def response_text(output: str) -> str:
    """The assistant's words of a response output (level-3 training outputs read ``AI: ...\\n``)."""
    if output.startswith(RESPONSE_PREFIX):
        output = output[len(RESPONSE_PREFIX):]
    return output.rstrip("\n")


def _first_difference(rendered: str, original: str) -> str:
    index = next((i for i, (a, b) in enumerate(zip(rendered, original)) if a != b), min(len(rendered), len(original)))
    return f"at character {index}: rendered {rendered[index:index + 60]!r}, input {original[index:index + 60]!r}"
