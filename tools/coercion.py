"""Turning parsed call arguments into the values a tool receives.

``coerce_paper`` is the original ToolManager's rule set (spec protocol §4.1), bug for bug: values
arrive as text, ``int`` needs ``str.isdigit``, ``float`` allows one dot, ``bool`` is true only for the
exact text ``True``, and list types pass through *as text*.

``coerce_typed`` is the corrected protocol's rule set: values arrive as Python literals (parsed with
``ast``) and are converted to the declared schema, with a clear rejection when they cannot be.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from .base import CallRejected, Tool


def _reject_name(key: str) -> CallRejected:
    return CallRejected("invalid_parameter_name", f"invalid parameter name. parameter: {key}", key)


def coerce_paper(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    declared = tool.input_parameters
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if key not in declared:
            raise _reject_name(key)
        kind = declared[key]["type"]
        if kind == "int":
            if isinstance(value, str) and not value.isdigit():
                raise CallRejected(
                    "invalid_parameter_type", f"invalid parameter type. parameter: {value}", key
                )
            try:
                result[key] = int(value)
            except (TypeError, ValueError) as error:  # e.g. '²' passes isdigit but not int()
                raise CallRejected("invalid_value", str(error), key) from error
        elif kind == "float":
            if isinstance(value, str) and not value.replace(".", "", 1).isdigit():
                raise CallRejected("invalid_parameter_type", "invalid parameter type.", key)
            try:
                result[key] = float(value)
            except (TypeError, ValueError) as error:
                raise CallRejected("invalid_value", str(error), key) from error
        elif kind == "bool":
            result[key] = value == "True"
        elif kind in ("str", "list", "list(str)"):
            result[key] = value
        else:
            raise CallRejected("invalid_parameter_type", "invalid parameter type.", key)
    return result


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
    if isinstance(value, bool):
        raise _type_error(key, value, "float")
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise _type_error(key, value, "float") from None
    else:
        raise _type_error(key, value, "float")
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


def coerce_typed(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    declared = tool.input_parameters
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if key not in declared:
            raise _reject_name(key)
        kind = declared[key]["type"]
        if kind == "int":
            result[key] = _as_int(key, value)
        elif kind == "float":
            result[key] = _as_float(key, value)
        elif kind == "bool":
            result[key] = _as_bool(key, value)
        elif kind in ("list", "list(str)"):
            result[key] = _as_list(key, value, kind)
        elif kind == "str":
            result[key] = _as_str(key, value)
        else:
            raise CallRejected("invalid_parameter_type", "invalid parameter type.", key)
    return result


def no_coercion(tool: type[Tool], arguments: dict[str, Any]) -> dict[str, Any]:
    """Structured values used as they are (replaying recorded, already-coerced gold inputs)."""
    for key in arguments:
        if key not in tool.input_parameters:
            raise _reject_name(key)
    return dict(arguments)


COERCERS = {"paper": coerce_paper, "typed": coerce_typed, "none": no_coercion}
