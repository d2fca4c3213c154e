"""Turning parsed call arguments into the values a tool receives.

``coerce_paper`` is the original ToolManager's rule set, bug for bug: values
arrive as text, ``int`` needs ``str.isdigit``, ``float`` allows one dot, ``bool`` is true only for the
exact text ``True``, and list types pass through *as text*.

``coerce_typed`` is the corrected protocol's rule set: values arrive as Python literals (parsed with
``ast``) and are converted to the declared schema, with a clear rejection when they cannot be.
"""

from __future__ import annotations

import ast
import math
from typing import Any, Callable

from .base import CallRejected, Tool


def _reject_name(key: str) -> CallRejected:
    return CallRejected("invalid_parameter_name", f"invalid parameter name. parameter: {key}", key)


def _paper_int(key: str, value: Any) -> int:
    if isinstance(value, str) and not value.isdigit():
        raise CallRejected("invalid_parameter_type", f"invalid parameter type. parameter: {value}", key)
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError) as error:  # '²' passes isdigit, not int(); inf
        raise CallRejected("invalid_value", str(error), key, raised=type(error)) from error


def _paper_float(key: str, value: Any) -> float:
    if isinstance(value, str) and not value.replace(".", "", 1).isdigit():
        raise CallRejected("invalid_parameter_type", "invalid parameter type.", key)
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError) as error:  # an int beyond float's range
        raise CallRejected("invalid_value", str(error), key, raised=type(error)) from error


def _unchanged(key: str, value: Any) -> Any:
    return value


Converter = Callable[[str, Any], Any]

PAPER_RULES: dict[str, Converter] = {
    "int": _paper_int,
    "float": _paper_float,
    "bool": lambda key, value: value == "True",
    "str": _unchanged,
    "list": _unchanged,
    "list(str)": _unchanged,
}


def _coerce(tool: type[Tool], arguments: dict[str, Any], rules: dict[str, Converter]) -> dict[str, Any]:
    """Check each argument's name, then convert it by its declared type, in the caller's order."""
    declared = tool.input_parameters
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if key not in declared:
            raise _reject_name(key)
        rule = rules.get(declared[key]["type"])
        if rule is None:
            raise CallRejected("invalid_parameter_type", "invalid parameter type.", key)
        result[key] = rule(key, value)
    return result


def coerce_paper(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    return _coerce(tool, arguments, PAPER_RULES)


def _type_error(key: str, value: Any, kind: str) -> CallRejected:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return CallRejected(
        "invalid_parameter_type", f"invalid parameter type. parameter: {key}={shown} (expected {kind})", key
    )


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise _type_error(key, value, "int")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        digits = text[1:] if text[:1] in "+-" else text
        if digits.isascii() and digits.isdigit():
            return int(text)
    raise _type_error(key, value, "int")


def _as_float(key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _type_error(key, value, "float")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except (ValueError, OverflowError):  # OverflowError: an int beyond float's range
        raise _type_error(key, value, "float") from None
    if not math.isfinite(number):
        raise _type_error(key, value, "float")
    return number


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _type_error(key, value, "bool")


def _as_list(key: str, value: Any, kind: str) -> list:
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, str):
        try:
            value = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise _type_error(key, value, kind) from None
        if isinstance(value, tuple):
            value = list(value)
    if not isinstance(value, list):
        raise _type_error(key, value, kind)
    if kind == "list(str)" and not all(isinstance(item, str) for item in value):
        raise _type_error(key, value, kind)
    return value


def _as_str(key: str, value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        raise _type_error(key, value, "str")
    if isinstance(value, (int, float)):
        return str(value)
    raise _type_error(key, value, "str")


TYPED_RULES: dict[str, Converter] = {
    "int": _as_int,
    "float": _as_float,
    "bool": _as_bool,
    "str": _as_str,
    "list": lambda key, value: _as_list(key, value, "list"),
    "list(str)": lambda key, value: _as_list(key, value, "list(str)"),
}


def coerce_typed(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    return _coerce(tool, arguments, TYPED_RULES)


def no_coercion(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    """Structured values used as they are (replaying recorded, already-coerced gold inputs)."""
    for key in arguments:
        if key not in tool.input_parameters:
            raise _reject_name(key)
    return dict(arguments)


COERCERS = {"paper": coerce_paper, "typed": coerce_typed, "none": no_coercion}
