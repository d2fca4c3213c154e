"""Values written as bare text (XML-style parameters of GLM-4.5 and Qwen3-Coder), typed by the tool's schema.

Such templates write a string value as it is and any other value as JSON, so ``2`` may be the string
"2" or the number 2: only the tool's JSON schema tells. Where the schema gives the parameter a type other
than ``string``, the text is read as JSON (vLLM's readers of these families do the same); without a
schema, or where the text is no JSON of that kind, the value stays text.
"""

from __future__ import annotations

from typing import Any, Mapping

from apibank.generate.toolcalls.generic import decode_json

_JSON_TYPES = {"integer": (int,), "number": (int, float), "boolean": (bool,), "array": (list,), "object": (dict,),
               "null": (type(None),)}


def typed_value(text: str, parameters: Mapping[str, Any] | None, key: str) -> Any:
    """``text`` as the value of parameter ``key`` of a tool whose JSON-schema ``parameters`` are given."""
    spec = (parameters or {}).get("properties", {}).get(key) if isinstance(parameters, Mapping) else None
    kinds = spec.get("type") if isinstance(spec, Mapping) else None
    kinds = [kinds] if isinstance(kinds, str) else list(kinds or [])
    if not kinds or "string" in kinds:
        return text
    value = decode_json(text.strip())
    allowed = tuple(t for kind in kinds for t in _JSON_TYPES.get(kind, ()))
    if isinstance(value, bool) and bool not in allowed:
        return text
    return value if isinstance(value, allowed) or (value is None and "null" in kinds) else text
