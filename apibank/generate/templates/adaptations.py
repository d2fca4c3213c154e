"""The rewrites that make a conversation fit a chat template, and the order they are tried in.

The adaptations, in the order they are applied:

* ``tools-in-prompt``: the template ignores ``tools=``: the tools' JSON schemas, and how to call
  one, are written into the system text;
* ``calls-as-text``: assistant ``tool_calls`` are refused or vanish: each earlier call becomes
  assistant text, the JSON object ``{"name": ..., "arguments": {...}}``;
* ``call-ids-alphanumeric``: the template refuses ids such as ``call_3``: each call's id (and its
  result's ``tool_call_id``) becomes nine letters and digits;
* ``arguments-as-json-text``: the template needs the arguments as a JSON string (it concatenates
  them, or prints a dict in Python's notation);
* ``tool-results-as-user``: there is no ``tool`` role: each result becomes a user turn saying which
  tool returned what;
* ``system-in-first-user``: there is no ``system`` role (or it shows only in some shapes): the system
  text opens the first user turn;
* ``merge-consecutive``: roles must alternate: consecutive turns of one role become one turn.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

Message = dict[str, Any]
Tools = list[dict[str, Any]] | None
RenderFn = Callable[[list[Message], Tools], str]

ADAPTATIONS: dict[str, str] = {
    "tools-in-prompt": "tool schemas written into the system text (the template ignores tools=)",
    "calls-as-text": "earlier tool calls written as assistant text (the template refuses or drops tool_calls)",
    "call-ids-alphanumeric": "tool-call ids written as nine letters and digits (the template's id rule)",
    "arguments-as-json-text": "tool-call arguments passed as JSON text (the template needs a string, or prints "
                              "a dict in Python's notation)",
    "tool-results-as-user": "tool results sent as user turns naming the tool (the template has no tool role)",
    "system-in-first-user": "system text folded into the first user turn (the template has no system role, or "
                            "shows it only in some conversations)",
    "merge-consecutive": "consecutive turns of one role merged (the template needs alternating roles)",
}
ORDER = tuple(ADAPTATIONS)
# When a row raises or loses a piece with the probed adaptations, the least intrusive rewrites are tried first.
ESCALATION = ("system-in-first-user", "merge-consecutive", "call-ids-alphanumeric", "arguments-as-json-text",
              "tool-results-as-user", "calls-as-text", "tools-in-prompt")

CALL_INSTRUCTION = (
    'To call a tool, reply with only a JSON object: {"name": "<tool name>", "arguments": {"<parameter>": <value>}}.'
)


class TemplateRefusal(ValueError):
    """A conversation the chat template cannot render, even adapted."""


@dataclass(frozen=True)
class Adaptation:
    name: str
    reason: str  # the template's error message, or what vanished from the prompt

    def as_dict(self) -> dict[str, str]:
        return {"name": self.name, "description": ADAPTATIONS[self.name], "reason": self.reason}


# ---------------------------------------------------------------------------- the rewrites
def _tools_in_prompt(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    if not tools:
        return messages, None
    lines = "\n".join(json.dumps(tool.get("function", tool), ensure_ascii=False) for tool in tools)
    text = f"Tools you can call (JSON schemas):\n{lines}\n{CALL_INSTRUCTION}"
    if messages and messages[0]["role"] == "system":
        first = {**messages[0], "content": f"{messages[0]['content']}\n\n{text}"}
        return [first, *messages[1:]], None
    return [{"role": "system", "content": text}, *messages], None


def call_as_text(name: str, arguments: Any) -> str:
    if isinstance(arguments, str):  # already JSON text
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    return json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)


def _calls_as_text(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    out = []
    for message in messages:
        if message["role"] == "assistant" and message.get("tool_calls"):
            parts = [message["content"]] if message.get("content") else []
            parts += [call_as_text(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]
            message = {"role": "assistant", "content": "\n".join(parts)}
        out.append(message)
    return out, tools


def alphanumeric_id(position: int) -> str:
    """The id of a conversation's ``position``-th call in the form Mistral's templates require."""
    return f"call{position:05d}"


def _call_ids_alphanumeric(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    ids: dict[str, str] = {}
    out = []
    for message in messages:
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                new = ids.setdefault(str(call.get("id")), alphanumeric_id(len(ids)))
                calls.append({**call, "id": new})
            message = {**message, "tool_calls": calls}
        elif message["role"] == "tool" and message.get("tool_call_id") is not None:
            old = str(message["tool_call_id"])
            message = {**message, "tool_call_id": ids.setdefault(old, alphanumeric_id(len(ids)))}
        out.append(message)
    return out, tools


def _arguments_as_json_text(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    out = []
    for message in messages:
        if message.get("tool_calls"):
            calls = [
                {**call, "function": {**call["function"], "arguments": json.dumps(
                    call["function"]["arguments"], ensure_ascii=False)}}
                if not isinstance(call["function"].get("arguments"), str) else call
                for call in message["tool_calls"]
            ]
            message = {**message, "tool_calls": calls}
        out.append(message)
    return out, tools


def tool_result_text(name: str | None, content: str) -> str:
    return f"Result of {name}: {content}" if name else f"Tool result: {content}"


def _tool_results_as_user(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    out = [
        {"role": "user", "content": tool_result_text(m.get("name"), m["content"])} if m["role"] == "tool" else m
        for m in messages
    ]
    return out, tools


def _system_in_first_user(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    system = [m["content"] for m in messages if m["role"] == "system"]
    if not system:
        return messages, tools
    rest = [m for m in messages if m["role"] != "system"]
    text = "\n\n".join(system)
    if rest and rest[0]["role"] == "user":
        return [{**rest[0], "content": f"{text}\n\n{rest[0]['content']}"}, *rest[1:]], tools
    return [{"role": "user", "content": text}, *rest], tools


def _merge_consecutive(messages: list[Message], tools: Tools) -> tuple[list[Message], Tools]:
    out: list[Message] = []
    for message in messages:
        previous = out[-1] if out else None
        # A turn carrying tool calls stays apart: templates that render calls drop the content beside them.
        if (previous is not None and previous["role"] == message["role"] and message["role"] != "tool"
                and not previous.get("tool_calls") and not message.get("tool_calls")):
            merged = dict(previous)
            merged["content"] = "\n".join(part for part in (previous.get("content"), message.get("content")) if part)
            calls = [*(previous.get("tool_calls") or []), *(message.get("tool_calls") or [])]
            if calls:
                merged["tool_calls"] = calls
            out[-1] = merged
        else:
            out.append(message)
    return out, tools


_REWRITES: dict[str, Callable[[list[Message], Tools], tuple[list[Message], Tools]]] = {
    "tools-in-prompt": _tools_in_prompt,
    "calls-as-text": _calls_as_text,
    "call-ids-alphanumeric": _call_ids_alphanumeric,
    "arguments-as-json-text": _arguments_as_json_text,
    "tool-results-as-user": _tool_results_as_user,
    "system-in-first-user": _system_in_first_user,
    "merge-consecutive": _merge_consecutive,
}


def adapt(messages: Sequence[Message], tools: Tools, names: Sequence[str]) -> tuple[list[Message], Tools]:
    """``messages`` and ``tools`` rewritten by the adaptations ``names`` (applied in :data:`ORDER`)."""
    current, current_tools = [dict(m) for m in messages], tools
    for name in ORDER:
        if name in names:
            current, current_tools = _REWRITES[name](current, current_tools)
    return current, current_tools


def candidate_sets(base: Sequence[str]) -> list[tuple[str, ...]]:
    """The adaptation sets to try for a conversation that ``base`` does not render whole, least intrusive
    first: ``base``, then ``base`` with one more adaptation, then with the further ones added one by one."""
    base = tuple(base)
    extras = [name for name in ESCALATION if name not in base]
    single = [(*base, extra) for extra in extras]
    cumulative = [(*base, *extras[:count]) for count in range(2, len(extras) + 1)]
    return [base, *single, *cumulative]



def shape_of(messages: Sequence[Message], tools: Tools) -> tuple:
    """What decides whether a template accepts a conversation: its roles in order, which turns carry
    tool calls, and whether tools are passed (not the texts)."""
    return (tuple((m["role"], bool(m.get("tool_calls"))) for m in messages), bool(tools))

