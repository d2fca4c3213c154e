"""The small conversations a chat template is probed with, shaped like the real ones, with marker strings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from apibank.generate.templates.adaptations import Message

USER_TEXT, _USER2, _SYSTEM = "probe-user-7f3a", "probe-user-2c9e", "probe-system-91d2"
_ANSWER, _ANSWER2, _RESULT = "probe-assistant-5b0c", "probe-assistant-e44f", "probe-result-0a6d"
_TOOL, _KEY, _VALUE = "ProbeToolA1", "probe_key", "probe-value-3c8b"
_SCHEMA_TOOL = "ProbeSchemaToolB2"
_CALL_ID = "call_0"  # the form of the conversations' own ids (apibank.generate.conversation)


def _probe_call() -> dict[str, Any]:
    return {"id": _CALL_ID, "type": "function", "function": {"name": _TOOL, "arguments": {_KEY: _VALUE}}}


def probe_schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": _SCHEMA_TOOL,
            "description": "probe",
            "parameters": {"type": "object", "properties": {_KEY: {"type": "string", "description": "probe"}},
                           "required": [_KEY]},
        },
    }


@dataclass(frozen=True)
class Probe:
    messages: tuple[Message, ...]
    must_show: tuple[str, ...]
    # the adaptation sets to try, least intrusive first; the first that renders every marker is kept
    candidates: tuple[tuple[str, ...], ...]
    must_not_show: tuple[str, ...] = ()


_SYS = {"role": "system", "content": _SYSTEM}
USER_TURN = {"role": "user", "content": USER_TEXT}
_A = {"role": "assistant", "content": _ANSWER}
_CALL = {"role": "assistant", "content": "", "tool_calls": [_probe_call()]}
_RES = {"role": "tool", "tool_call_id": _CALL_ID, "name": _TOOL, "content": _RESULT}
_CALL_MARKERS = (_TOOL, _VALUE, _RESULT)
_PYTHON_ARGUMENTS = repr({_KEY: _VALUE})  # a dict printed by Jinja as Python: "{'probe_key': ...}"
_SYSTEM_FIX = ((), ("system-in-first-user",))

PROBES: dict[str, Probe] = {
    "tools": Probe((USER_TURN,), (USER_TEXT, _SCHEMA_TOOL), ((), ("tools-in-prompt",))),
    # A tool call and its result, the way the rows have them: the call's own adaptations first.
    "calls": Probe(
        (USER_TURN, _CALL, _RES), _CALL_MARKERS,
        ((), ("call-ids-alphanumeric",), ("arguments-as-json-text",),
         ("call-ids-alphanumeric", "arguments-as-json-text"),
         ("tool-results-as-user",), ("call-ids-alphanumeric", "tool-results-as-user"),
         ("arguments-as-json-text", "tool-results-as-user"),
         ("call-ids-alphanumeric", "arguments-as-json-text", "tool-results-as-user"),
         ("calls-as-text",), ("calls-as-text", "tool-results-as-user")),
        must_not_show=(_PYTHON_ARGUMENTS,)),
    # The chat format's results answer no structured call: the request is assistant text.
    "results": Probe((USER_TURN, _A, _RES), (_ANSWER, _RESULT),
                      ((), ("tool-results-as-user",))),
    "system-user-last": Probe((_SYS, USER_TURN), (_SYSTEM, USER_TEXT), _SYSTEM_FIX),
    "system-assistant-last": Probe((_SYS, USER_TURN, _A), (_SYSTEM, USER_TEXT, _ANSWER), _SYSTEM_FIX),
    "system-tool-last": Probe((_SYS, USER_TURN, _CALL, _RES), (_SYSTEM, *_CALL_MARKERS), _SYSTEM_FIX),
    "system-result-last": Probe((_SYS, USER_TURN, _A, _RES), (_SYSTEM, _ANSWER, _RESULT), _SYSTEM_FIX),
    "alternation": Probe(
        (USER_TURN, _A, {"role": "assistant", "content": _ANSWER2}, {"role": "user", "content": _USER2}),
        (_ANSWER, _ANSWER2, _USER2), ((), ("merge-consecutive",))),
}
# The probes of each format, in order (each after the adaptations decided before it): the paper format
# sends one user turn; the chat format never sends tool_calls or tools=.
FORMAT_PROBES = {
    "paper": (),
    "chat": ("results", "system-user-last", "system-assistant-last", "system-result-last", "alternation"),
    "tools": ("system-user-last", "tools", "calls", "system-assistant-last", "system-tool-last", "alternation"),
}

