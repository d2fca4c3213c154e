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



# ------------------------------------------------------------------------------ calls read back
# The calls a template is made to write as an earlier assistant turn, to be read back with the run's
# reader (:mod:`apibank.generate.templates.readback`): one call, then two in one turn. String values only:
# what is checked is the call markup; typing values by the schema is the readers' own concern.
_TOOL2, _KEY2, _VALUE2 = "ProbeToolC3", "probe_city", "probe-value-9e27"
PROBE_CALLS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    "one call": ((_TOOL, {_KEY: _VALUE}),),
    "two parallel calls": ((_TOOL, {_KEY: _VALUE}), (_TOOL2, {_KEY2: _VALUE2, _KEY: _VALUE})),
}
RESULT_MARKER = "probe-result-"  # opens the text of every probe result


def _function(name: str, keys: Any) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": "probe",
        "parameters": {"type": "object", "properties": {key: {"type": "string", "description": "probe"}
                                                         for key in keys}, "required": list(keys)}}}


def call_probe_tools() -> list[dict[str, Any]]:
    """The schemas of the tools the probe calls call (offered as ``tools=``, as a row's are)."""
    return [_function(_TOOL, (_KEY,)), _function(_TOOL2, (_KEY2, _KEY))]


def call_probe_conversation(calls: tuple[tuple[str, dict[str, Any]], ...]) -> tuple[list[Message], list[Message]]:
    """``(before, after)``: the conversation up to the user turn, and the same with the assistant turn
    making ``calls`` and their results after it (the shape of the rows: system, user, calls, results)."""
    before = [dict(_SYS), dict(USER_TURN)]
    ids = [f"call_{index}" for index in range(len(calls))]
    turn = {"role": "assistant", "content": "", "tool_calls": [
        {"id": id_, "type": "function", "function": {"name": name, "arguments": dict(arguments)}}
        for id_, (name, arguments) in zip(ids, calls)]}
    results = [{"role": "tool", "tool_call_id": id_, "name": name, "content": f"{RESULT_MARKER}{index}"}
               for index, (id_, (name, _)) in enumerate(zip(ids, calls))]
    return before, [*before, turn, *results]
