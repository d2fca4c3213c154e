"""Conversations that any chat template accepts: probe what a template refuses, adapt, and say so.

Chat templates differ in what they take: many refuse a ``system`` role, raise on two consecutive
turns of one role ("roles must alternate"), have no ``tool`` role, drop or refuse assistant
``tool_calls``, or ignore ``tools=``. Some refuse loudly (the template raises), others silently
(the text never reaches the prompt). :class:`TemplateAdapter` finds out once per template by
rendering small probe conversations with marker strings, then rewrites every conversation the same
way before rendering it. A conversation shape the probes did not foresee is tried once as it comes;
if it still cannot be rendered, :class:`TemplateRefusal` names the row and the template's own rule.

The adaptations, in the order they are applied:

* ``tools-in-prompt``: the template ignores ``tools=``: the tools' JSON schemas, and how to call
  one, are written into the system text;
* ``calls-as-text``: assistant ``tool_calls`` are refused or vanish: each earlier call becomes
  assistant text, the JSON object ``{"name": ..., "arguments": {...}}``;
* ``tool-results-as-user``: there is no ``tool`` role: each result becomes a user turn saying which
  tool returned what;
* ``system-in-first-user``: there is no ``system`` role: the system text opens the first user turn;
* ``merge-consecutive``: roles must alternate: consecutive turns of one role become one turn.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable, Sequence

Message = dict[str, Any]
Tools = list[dict[str, Any]] | None
RenderFn = Callable[[list[Message], Tools], str]

ADAPTATIONS: dict[str, str] = {
    "tools-in-prompt": "tool schemas written into the system text (the template ignores tools=)",
    "calls-as-text": "earlier tool calls written as assistant text (the template refuses or drops tool_calls)",
    "tool-results-as-user": "tool results sent as user turns naming the tool (the template has no tool role)",
    "system-in-first-user": "system text folded into the first user turn (the template has no system role)",
    "merge-consecutive": "consecutive turns of one role merged (the template needs alternating roles)",
}
ORDER = tuple(ADAPTATIONS)
# When a refusal comes without a probe to explain it, the least intrusive rewrites are tried first.
ESCALATION = ("system-in-first-user", "merge-consecutive", "tool-results-as-user", "calls-as-text", "tools-in-prompt")

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
        if previous is not None and previous["role"] == message["role"] and message["role"] != "tool":
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


# ------------------------------------------------------------------------------------ probes
_USER, _USER2, _SYSTEM = "probe-user-7f3a", "probe-user-2c9e", "probe-system-91d2"
_ANSWER, _ANSWER2, _RESULT = "probe-assistant-5b0c", "probe-assistant-e44f", "probe-result-0a6d"
_TOOL, _KEY, _VALUE = "ProbeToolA1", "probe_key", "probe-value-3c8b"
_SCHEMA_TOOL = "ProbeSchemaToolB2"


def _probe_call() -> dict[str, Any]:
    return {"id": "call_0", "type": "function", "function": {"name": _TOOL, "arguments": {_KEY: _VALUE}}}


def _schema() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": _SCHEMA_TOOL,
            "description": "probe",
            "parameters": {"type": "object", "properties": {_KEY: {"type": "string", "description": "probe"}},
                           "required": [_KEY]},
        },
    }


# name -> (messages, tools, strings that must reach the prompt); each probe isolates one feature
_PROBES: dict[str, tuple[list[Message], Tools, tuple[str, ...]]] = {
    "system-in-first-user": (
        [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": _USER}], None, (_SYSTEM, _USER)),
    "merge-consecutive": (
        [{"role": "user", "content": _USER}, {"role": "assistant", "content": _ANSWER},
         {"role": "assistant", "content": _ANSWER2}, {"role": "user", "content": _USER2}],
        None, (_ANSWER, _ANSWER2, _USER2)),
    "tool-results-as-user": (
        [{"role": "user", "content": _USER}, {"role": "assistant", "content": _ANSWER},
         {"role": "tool", "tool_call_id": "call_0", "name": _TOOL, "content": _RESULT}],
        None, (_RESULT,)),
    "calls-as-text": (
        [{"role": "user", "content": _USER}, {"role": "assistant", "content": "", "tool_calls": [_probe_call()]},
         {"role": "tool", "tool_call_id": "call_0", "name": _TOOL, "content": _RESULT}],
        None, (_TOOL, _VALUE, _RESULT)),
    "tools-in-prompt": ([{"role": "user", "content": _USER}], [_schema()], (_SCHEMA_TOOL,)),
}
# The probes each format needs: the paper and chat formats never send tool_calls or tools=.
_FORMAT_PROBES = {
    "paper": (),
    "chat": ("system-in-first-user", "merge-consecutive", "tool-results-as-user"),
    "tools": ("system-in-first-user", "merge-consecutive", "tool-results-as-user", "calls-as-text", "tools-in-prompt"),
}


def _error_text(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def shape_of(messages: Sequence[Message], tools: Tools) -> tuple:
    """What decides whether a template accepts a conversation: its roles in order, which turns carry
    tool calls, and whether tools are passed (not the texts)."""
    return (tuple((m["role"], bool(m.get("tool_calls"))) for m in messages), bool(tools))


class TemplateAdapter:
    """Renders conversations through ``render_fn`` (a chat template), adapted to what it accepts.

    ``render_fn(messages, tools)`` returns the prompt text or raises when the template refuses.
    """

    def __init__(self, render_fn: RenderFn, template_text: str | None = None) -> None:
        self._render_fn = render_fn
        self.template_sha256 = hashlib.sha256(template_text.encode()).hexdigest() if template_text else None
        self._probed: set[str] = set()
        self._decided: dict[str, Adaptation] = {}
        self._by_shape: dict[tuple, tuple[str, ...]] = {}

    # -- probing
    def _try(self, messages: list[Message], tools: Tools, must_show: Sequence[str]) -> str | None:
        """None if the template renders ``messages`` with every ``must_show`` string, else why not."""
        try:
            text = self._render_fn(messages, tools)
        except Exception as error:  # a template's raise_exception, or any error inside its code
            return f"the template raises: {_error_text(error)}"
        missing = [marker for marker in must_show if marker not in text]
        if missing:
            return "the template drops it silently (probe text missing from the prompt)"
        return None

    def probe(self, fmt: str) -> None:
        """Decide, once per template and format, which adaptations the format's conversations need."""
        if fmt in self._probed:
            return
        if "baseline" not in self._probed:
            why = self._try([{"role": "user", "content": _USER}], None, (_USER,))
            if why is not None:
                raise TemplateRefusal(f"the chat template cannot render a single user message: {why}")
            self._probed.add("baseline")
        for name in _FORMAT_PROBES[fmt]:
            if name in self._decided:
                continue
            messages, tools, must_show = _PROBES[name]
            current = tuple(self._decided)
            adapted, adapted_tools = adapt(messages, tools, current)
            why = self._try(adapted, adapted_tools, must_show)
            if why is not None:
                self._decided[name] = Adaptation(name, why)
        self._probed.add(fmt)

    # -- rendering
    def render(self, messages: Sequence[Message], tools: Tools, *, fmt: str, row_id: str) -> str:
        self.probe(fmt)
        shape = shape_of(messages, tools)
        names = self._by_shape.get(shape)
        if names is not None:
            adapted, adapted_tools = adapt(messages, tools, names)
            return self._render_fn(adapted, adapted_tools)
        names = tuple(self._decided)
        first_error: str | None = None
        previous = None
        # The probed adaptations first; if this shape still fails, add the others one by one
        # (skipping any that leave this conversation unchanged).
        for extra in (None, *[name for name in ESCALATION if name not in names]):
            candidate = names if extra is None else (*names, extra)
            adapted, adapted_tools = adapt(messages, tools, candidate)
            if (adapted, adapted_tools) == previous:
                continue
            names, previous = candidate, (adapted, adapted_tools)
            try:
                text = self._render_fn(adapted, adapted_tools)
            except Exception as error:
                first_error = first_error or _error_text(error)
                continue
            for name in names:
                if name not in self._decided:
                    self._decided[name] = Adaptation(name, f"row {row_id}: the template raises: {first_error}")
            self._by_shape[shape] = names
            return text
        raise TemplateRefusal(
            f"row {row_id}: the chat template refuses this conversation even adapted "
            f"({', '.join(ORDER)}): {first_error}; supply a template that accepts it with --chat-template FILE"
        )

    @property
    def adaptations(self) -> list[dict[str, str]]:
        """Every adaptation made so far, in the order they apply, for results.json."""
        return [self._decided[name].as_dict() for name in ORDER if name in self._decided]
