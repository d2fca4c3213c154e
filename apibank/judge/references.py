"""Validation of the dataset's ``reference`` fields, field by field, before anything is judged.

References are untrusted input as much as predictions: a malformed one must be a
:class:`ReferenceError` naming the row and the field, never a KeyError or RecursionError from deep
inside the judge. Sizes are capped before parsing (:data:`MAX_REFERENCE_CHARS`) and nesting while
checking (:data:`MAX_DEPTH`), so validation itself is bounded.
"""

from __future__ import annotations

import copy
import json
from typing import Any, Mapping, Sequence

from apibank_tools.registry import toolset

from apibank.benchmark import LEVEL_NUMBERS
from apibank.data.rows import REFERENCE_VERSION
from apibank.errors import InputFileError

# The largest reference of the dataset has 3,952 characters.
MAX_REFERENCE_CHARS = 1_000_000
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_ID_CHARS = 1_000


class ReferenceError(InputFileError):
    """The references are not apibank dataset ``reference`` fields (names the row and the field)."""


class _Invalid(Exception):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(field, problem)
        self.field = field
        self.problem = problem


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _check_json_value(value: Any, field: str) -> None:
    """JSON-shaped (str keys; str, int, float, bool, None, list, dict), nested at most MAX_DEPTH deep."""
    pending = [(value, field, 0)]
    nodes = 0
    while pending:
        item, where, depth = pending.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise _Invalid(field, f"has more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise _Invalid(where, f"is nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise _Invalid(where, f"has a {_kind(key)} key; keys must be strings")
                pending.append((child, f"{where}.{key}", depth + 1))
        elif isinstance(item, list):
            pending.extend((child, f"{where}[{i}]", depth + 1) for i, child in enumerate(item))
        elif isinstance(item, float):
            if item != item or item in (float("inf"), float("-inf")):
                raise _Invalid(where, "is not a finite number")
        elif not (item is None or isinstance(item, (str, int, bool))):
            raise _Invalid(where, f"is a {_kind(item)}, not a JSON value")


def _require(reference: Mapping[str, Any], key: str, types: tuple[type, ...], field: str | None = None) -> Any:
    field = field or key
    if key not in reference:
        raise _Invalid(field, "is missing")
    value = reference[key]
    if isinstance(value, bool) and bool not in types:
        raise _Invalid(field, f"must be {' or '.join(t.__name__ for t in types)}, got bool")
    if not isinstance(value, types):
        names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise _Invalid(field, f"must be {names}, got {_kind(value)}")
    return value


def _check_call(call: Any, field: str, tool_names: set[str], *, require_result: bool) -> None:
    if not isinstance(call, dict):
        raise _Invalid(field, f"must be an object, got {_kind(call)}")
    name = _require(call, "api_name", (str,), f"{field}.api_name")
    if name not in tool_names:
        raise _Invalid(f"{field}.api_name", f"{name[:100]!r} is not a tool of this toolset")
    if "arguments" in call or require_result:
        _require(call, "arguments", (dict, type(None)), f"{field}.arguments")
    result = _require(call, "result", (dict,) if require_result else (dict, type(None)), f"{field}.result")
    if isinstance(result, dict):
        if "input" in result and not isinstance(result["input"], (dict, type(None))):
            raise _Invalid(f"{field}.result.input", f"must be an object or null, got {_kind(result['input'])}")
        if "exception" in result and not isinstance(result["exception"], (str, type(None))):
            raise _Invalid(f"{field}.result.exception", f"must be a string or null, got {_kind(result['exception'])}")
        if "api_name" in result and not isinstance(result["api_name"], str):
            raise _Invalid(f"{field}.result.api_name", f"must be a string, got {_kind(result['api_name'])}")


def validate_reference(reference: Any) -> dict[str, Any]:
    """The reference as a dict, or :class:`_Invalid` naming the first bad field."""
    if not isinstance(reference, dict):
        raise _Invalid("(the reference)", f"must be a JSON object, got {_kind(reference)}")
    version = reference.get("v")
    if isinstance(version, bool) or version != REFERENCE_VERSION:
        raise _Invalid(
            "v", f"is {version!r}, not {REFERENCE_VERSION}: pass the `reference` column of the apibank dataset, "
            "not `expected_output` or another dataset's labels"
        )
    _check_json_value(reference, "(the reference)")
    identifier = _require(reference, "id", (str,))
    if not identifier or len(identifier) > MAX_ID_CHARS:
        raise _Invalid("id", f"must be a non-empty string of at most {MAX_ID_CHARS} characters")
    level = _require(reference, "level", (int,))
    if level not in LEVEL_NUMBERS:
        raise _Invalid("level", f"must be 1, 2 or 3, got {level!r}")
    kind = _require(reference, "kind", (str,))
    if kind not in ("api", "response"):
        raise _Invalid("kind", f"must be 'api' or 'response', got {kind[:50]!r}")
    name = _require(reference, "toolset", (str,))
    try:
        tools = toolset(name)
    except Exception:
        raise _Invalid("toolset", f"{name[:50]!r} is not a toolset name") from None
    tool_names = set(tools.names())
    _require(reference, "file", (str,))
    for key in ("sample_id", "api_id", "turn"):
        _require(reference, key, (int,))
    if "revision" in reference:
        _require(reference, "revision", (str, type(None)))
    earlier = _require(reference, "earlier_calls", (list,))
    for position, call in enumerate(earlier):
        _check_call(call, f"earlier_calls[{position}]", tool_names, require_result=False)
    if kind == "api":
        _check_call(_require(reference, "gold", (dict,)), "gold", tool_names, require_result=True)
        _require(reference, "gold_text", (str, type(None)))
    else:
        _require(reference, "gold", (dict, type(None)))
        _require(reference, "gold_text", (str,), "gold_text (a response row's gold text)")
    return reference


def parse_references(references: Sequence[Any]) -> list[dict[str, Any]]:
    """Parsed, validated copies of ``references`` (JSON text or mappings); ReferenceError otherwise."""
    parsed = []
    for index, reference in enumerate(references):
        if isinstance(reference, str):
            if len(reference) > MAX_REFERENCE_CHARS:
                raise ReferenceError(
                    f"references[{index}] has {len(reference)} characters, more than the {MAX_REFERENCE_CHARS} "
                    "any apibank reference needs"
                )
            try:
                reference = json.loads(reference)
            except (json.JSONDecodeError, RecursionError, ValueError) as error:
                raise ReferenceError(
                    f"references[{index}] is not JSON: pass the `reference` field of apibank dataset rows "
                    f"({str(error)[:200]})"
                ) from None
        elif isinstance(reference, Mapping):
            try:
                _check_json_value(dict(reference), "(the reference)")
            except _Invalid as invalid:
                raise ReferenceError(f"references[{index}]: field {invalid.field} {invalid.problem}") from None
            reference = copy.deepcopy(dict(reference))
        else:
            raise ReferenceError(
                f"references[{index}] is {type(reference).__name__}; expected the `reference` field (JSON text) "
                "of an apibank dataset row"
            )
        try:
            parsed.append(validate_reference(reference))
        except _Invalid as invalid:
            row = reference.get("id") if isinstance(reference, dict) else None
            named = f" ({row[:100]!r})" if isinstance(row, str) else ""
            if invalid.field == "v":
                raise ReferenceError(f"references[{index}]{named} is not an apibank reference (version "
                                     f"{REFERENCE_VERSION}): field v {invalid.problem}") from None
            raise ReferenceError(f"references[{index}]{named} is malformed: field {invalid.field} {invalid.problem}") from None
    return parsed
