"""Conversations that any chat template accepts: probe what a template refuses, adapt, say so, and
check every row's prompt for what it lost.

Chat templates differ in what they take: many refuse a ``system`` role, raise on two consecutive
turns of one role ("roles must alternate"), have no ``tool`` role, drop or refuse assistant
``tool_calls``, ignore ``tools=``, want call ids of one form (Mistral: nine letters and digits) or
arguments as JSON text (they print a dict as Python). Some refuse loudly (the template raises),
others silently (the text never reaches the prompt). :class:`TemplateAdapter` finds out once per
template by rendering small probe conversations shaped like the real ones (a tool result after an
assistant tool call; a system turn with a user, an assistant or a tool turn last; ``tools=`` given in
the ``tools`` format) with marker strings, then rewrites every conversation the same way before
rendering it.

Every row's prompt is then checked for completeness (:func:`missing_pieces`): the system text, every
turn, every call's name and argument values, every result and every tool's name must be in it. A
conversation the probes did not foresee (it raises, or loses a piece) is tried again with each further
adaptation; if none gives a complete prompt, :class:`TemplateRefusal` names the row and what the
template refused or dropped. Silent loss is not possible.

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

:meth:`TemplateAdapter.thinking` says whether the template makes the model think before it answers
(a reasoning budget is then added to each answer's, :mod:`apibank.generate.runner`).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from apibank.generate.toolcalls.reasoning import THINKING_CLOSERS, THINKING_OPENERS, THINKING_SWITCHES

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


# ------------------------------------------------------------------------------- completeness
def _text_forms(text: str) -> tuple[str, ...]:
    """How a text may appear in a prompt: as given, trimmed, or escaped inside a JSON string."""
    stripped = text.strip()
    return (text, stripped, json.dumps(stripped, ensure_ascii=False)[1:-1], json.dumps(stripped)[1:-1])


def _value_forms(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return _text_forms(value)
    if isinstance(value, bool):
        return ("true", "True") if value else ("false", "False")
    if value is None:
        return ("null", "None", "none")
    return (json.dumps(value), repr(value), str(value))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


# A model's reasoning in its own earlier turns, which templates drop by design (Qwen3 and DeepSeek-R1's
# <think>, Gemma 4's thought channel, closed or not): not a piece the prompt must show.
_REASONING = re.compile(r"<think>.*?(?:</think>|$)|^.*?</think>|<\|channel>.*?(?:<channel\|>|$)", re.S)


def conversation_pieces(messages: Sequence[Message], tools: Tools) -> list[tuple[str, tuple[str, ...]]]:
    """Each piece of a conversation that its prompt must show, as (what it is, the forms it may take)."""
    pieces: list[tuple[str, tuple[str, ...]]] = []
    for index, message in enumerate(messages):
        role = message["role"]
        content = message.get("content")
        if role == "assistant" and isinstance(content, str):
            content = _REASONING.sub("", content)
        if isinstance(content, str) and content.strip():
            what = "the system text" if role == "system" else (
                f"the result in message {index}" if role == "tool" else f"the {role} turn at message {index}")
            pieces.append((what, _text_forms(content)))
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            name = str(function.get("name"))
            pieces.append((f"the name of the call {name} at message {index}", (name,)))
            arguments = function.get("arguments")
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {"": arguments}
            for leaf in _leaves(arguments):
                pieces.append((f"an argument of the call {name} at message {index} ({leaf!r})"[:200],
                               _value_forms(leaf)))
    for tool in tools or []:
        name = str(tool.get("function", tool).get("name"))
        pieces.append((f"the tool schema {name}", (name,)))
    return pieces


def missing_pieces(messages: Sequence[Message], tools: Tools, prompt: str) -> list[str]:
    """What of the conversation its rendered ``prompt`` does not show (empty: nothing is lost)."""
    return [what for what, forms in conversation_pieces(messages, tools) if not any(f in prompt for f in forms)]


# ------------------------------------------------------------------------------------ probes
_USER, _USER2, _SYSTEM = "probe-user-7f3a", "probe-user-2c9e", "probe-system-91d2"
_ANSWER, _ANSWER2, _RESULT = "probe-assistant-5b0c", "probe-assistant-e44f", "probe-result-0a6d"
_TOOL, _KEY, _VALUE = "ProbeToolA1", "probe_key", "probe-value-3c8b"
_SCHEMA_TOOL = "ProbeSchemaToolB2"
_CALL_ID = "call_0"  # the form of the conversations' own ids (apibank.generate.conversation)


def _probe_call() -> dict[str, Any]:
    return {"id": _CALL_ID, "type": "function", "function": {"name": _TOOL, "arguments": {_KEY: _VALUE}}}


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


@dataclass(frozen=True)
class _Probe:
    messages: tuple[Message, ...]
    must_show: tuple[str, ...]
    # the adaptation sets to try, least intrusive first; the first that renders every marker is kept
    candidates: tuple[tuple[str, ...], ...]
    must_not_show: tuple[str, ...] = ()


_SYS = {"role": "system", "content": _SYSTEM}
_U = {"role": "user", "content": _USER}
_A = {"role": "assistant", "content": _ANSWER}
_CALL = {"role": "assistant", "content": "", "tool_calls": [_probe_call()]}
_RES = {"role": "tool", "tool_call_id": _CALL_ID, "name": _TOOL, "content": _RESULT}
_CALL_MARKERS = (_TOOL, _VALUE, _RESULT)
_PYTHON_ARGUMENTS = repr({_KEY: _VALUE})  # a dict printed by Jinja as Python: "{'probe_key': ...}"
_SYSTEM_FIX = ((), ("system-in-first-user",))

_PROBES: dict[str, _Probe] = {
    "tools": _Probe((_U,), (_USER, _SCHEMA_TOOL), ((), ("tools-in-prompt",))),
    # A tool call and its result, the way the rows have them: the call's own adaptations first.
    "calls": _Probe(
        (_U, _CALL, _RES), _CALL_MARKERS,
        ((), ("call-ids-alphanumeric",), ("arguments-as-json-text",),
         ("call-ids-alphanumeric", "arguments-as-json-text"),
         ("tool-results-as-user",), ("call-ids-alphanumeric", "tool-results-as-user"),
         ("arguments-as-json-text", "tool-results-as-user"),
         ("call-ids-alphanumeric", "arguments-as-json-text", "tool-results-as-user"),
         ("calls-as-text",), ("calls-as-text", "tool-results-as-user")),
        must_not_show=(_PYTHON_ARGUMENTS,)),
    # The chat format's results answer no structured call: the request is assistant text.
    "results": _Probe((_U, _A, _RES), (_ANSWER, _RESULT),
                      ((), ("tool-results-as-user",))),
    "system-user-last": _Probe((_SYS, _U), (_SYSTEM, _USER), _SYSTEM_FIX),
    "system-assistant-last": _Probe((_SYS, _U, _A), (_SYSTEM, _USER, _ANSWER), _SYSTEM_FIX),
    "system-tool-last": _Probe((_SYS, _U, _CALL, _RES), (_SYSTEM, *_CALL_MARKERS), _SYSTEM_FIX),
    "system-result-last": _Probe((_SYS, _U, _A, _RES), (_SYSTEM, _ANSWER, _RESULT), _SYSTEM_FIX),
    "alternation": _Probe(
        (_U, _A, {"role": "assistant", "content": _ANSWER2}, {"role": "user", "content": _USER2}),
        (_ANSWER, _ANSWER2, _USER2), ((), ("merge-consecutive",))),
}
# The probes of each format, in order (each after the adaptations decided before it): the paper format
# sends one user turn; the chat format never sends tool_calls or tools=.
_FORMAT_PROBES = {
    "paper": (),
    "chat": ("results", "system-user-last", "system-assistant-last", "system-result-last", "alternation"),
    "tools": ("system-user-last", "tools", "calls", "system-assistant-last", "system-tool-last", "alternation"),
}


def candidate_sets(base: Sequence[str]) -> list[tuple[str, ...]]:
    """The adaptation sets to try for a conversation that ``base`` does not render whole, least intrusive
    first: ``base``, then ``base`` with one more adaptation, then with the further ones added one by one."""
    base = tuple(base)
    extras = [name for name in ESCALATION if name not in base]
    single = [(*base, extra) for extra in extras]
    cumulative = [(*base, *extras[:count]) for count in range(2, len(extras) + 1)]
    return [base, *single, *cumulative]


def _error_text(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text if len(text) <= 300 else text[:300] + "..."


def shape_of(messages: Sequence[Message], tools: Tools) -> tuple:
    """What decides whether a template accepts a conversation: its roles in order, which turns carry
    tool calls, and whether tools are passed (not the texts)."""
    return (tuple((m["role"], bool(m.get("tool_calls"))) for m in messages), bool(tools))


# What says that a generation prompt leaves the model thinking first, or that it closed an empty thought,
# and what switches a template's thinking mode: every vLLM reasoning parser's markers (reasoning_markers.json).
_OPEN_THINKING = THINKING_OPENERS
_CLOSED_THINKING = THINKING_CLOSERS
_THINKING_SWITCHES = THINKING_SWITCHES


class TemplateAdapter:
    """Renders conversations through ``render_fn`` (a chat template), adapted to what it accepts.

    ``render_fn(messages, tools)`` returns the prompt text or raises when the template refuses.
    """

    def __init__(self, render_fn: RenderFn, template_text: str | None = None) -> None:
        self._render_fn = render_fn
        self.template_text = template_text
        self.template_sha256 = hashlib.sha256(template_text.encode()).hexdigest() if template_text else None
        self._probed: set[str] = set()
        self._decided: dict[str, Adaptation] = {}
        self._by_shape: dict[tuple, tuple[str, ...]] = {}
        self.last_names: tuple[str, ...] = ()  # the adaptations of the conversation rendered last
        self._escalated: set[str] = set()  # adaptations first needed by a row, not by a probe

    # -- probing
    def _try(self, messages: list[Message], tools: Tools, must_show: Sequence[str],
             must_not_show: Sequence[str] = ()) -> str | None:
        """None if the template renders ``messages`` with every ``must_show`` string, else why not."""
        try:
            text = self._render_fn(messages, tools)
        except Exception as error:  # a template's raise_exception, or any error inside its code
            return f"the template raises: {_error_text(error)}"
        if any(marker not in text for marker in must_show):
            return "the template drops it silently (probe text missing from the prompt)"
        if any(marker in text for marker in must_not_show):
            return "the template prints the arguments in Python's notation"
        return None

    def probe(self, fmt: str) -> None:
        """Decide, once per template and format, which adaptations the format's conversations need."""
        if fmt in self._probed:
            return
        tools = [_schema()] if fmt == "tools" else None  # a template may refuse tools=None (Hermes tool_use)
        baseline = f"baseline-{fmt}"
        if baseline not in self._probed:
            for attempt in ((), ("tools-in-prompt",)) if tools else ((),):
                messages, adapted_tools = adapt([_U], tools, attempt)
                why = self._try(messages, adapted_tools, (_USER,))
                if why is None:
                    break
            if why is not None:
                raise TemplateRefusal(f"the chat template cannot render a single user message: {why}")
            self._probed.add(baseline)
        for name in _FORMAT_PROBES[fmt]:
            probe = _PROBES[name]
            decided = tuple(self._decided)
            first_why = None
            for candidate in probe.candidates:
                if all(adaptation in decided for adaptation in candidate) and candidate:
                    continue  # already tried as the decided set
                messages, adapted_tools = adapt(probe.messages, tools, (*decided, *candidate))
                why = self._try(messages, adapted_tools, probe.must_show, probe.must_not_show)
                first_why = first_why or why
                if why is None:
                    for adaptation in candidate:
                        self._decided.setdefault(adaptation, Adaptation(adaptation, first_why or ""))
                    break
            # No candidate renders this probe: rows of its shape are adapted (or refused) as they come.
        self._probed.add(fmt)

    def thinking(self) -> str | None:
        """Why a model given this template thinks before it answers, or None when it does not: the
        generation prompt opens a thinking block, switches thinking on (``<|think|>``, ``/think``), or the
        template has a thinking mode that the prompt leaves on (Qwen3's ``enable_thinking``, GPT-OSS's
        analysis channel); a prompt that closes an empty thinking block turns it off."""
        try:
            prompt = self._render_fn([dict(_U)], None)
        except Exception:
            return None
        tail = prompt.rstrip()
        text = self.template_text or ""
        if tail.endswith(_CLOSED_THINKING):
            return None
        if tail.endswith(_OPEN_THINKING):
            return "the generation prompt opens a thinking block"
        if "<|think|>" in prompt or re.search(r"(?<!no_)/think\b", prompt.replace(_USER, "")):
            return "the prompt switches thinking on"
        if "<|channel|>" in text:
            return "harmony format: the model writes its analysis channel before the answer"
        if any(opener in text for opener in _OPEN_THINKING) and any(switch in text for switch in _THINKING_SWITCHES):
            return "the template thinks unless its thinking switch turns it off (enable_thinking, thinking_budget)"
        return None

    def _probed_names(self) -> tuple[str, ...]:
        """The adaptations the probes decided (those a row's shape needed on top apply to that shape only)."""
        return tuple(name for name in self._decided if name not in self._escalated)

    def _whole(self, messages: Sequence[Message], tools: Tools, names: Sequence[str]) -> tuple[str | None, str]:
        """``(prompt, "")`` when the conversation adapted by ``names`` renders whole, else ``(None, why not)``."""
        adapted, adapted_tools = adapt(messages, tools, names)
        try:
            text = self._render_fn(adapted, adapted_tools)
        except Exception as error:
            return None, f"the template raises: {_error_text(error)}"
        lost = missing_pieces(messages, tools, text)
        if lost:
            return None, f"the template drops {'; '.join(lost[:2])}" + (
                f" (and {len(lost) - 2} more)" if len(lost) > 2 else "")
        return text, ""

    # -- rendering
    def render(self, messages: Sequence[Message], tools: Tools, *, fmt: str, row_id: str) -> str:
        """The prompt of one conversation, adapted; raises :class:`TemplateRefusal` naming the row and
        what the template refused or dropped when no adaptation gives a prompt that shows all of it."""
        self.probe(fmt)
        shape = shape_of(messages, tools)
        probed = self._probed_names()
        known = self._by_shape.get(shape)
        first_problem: str | None = None
        seen: list[Any] = []
        base = known if known is not None else probed
        for names in candidate_sets(base):
            adapted, adapted_tools = adapt(messages, tools, names)
            if (adapted, adapted_tools) in seen:
                continue
            seen.append((adapted, adapted_tools))
            text, problem = self._whole(messages, tools, names)
            if text is None:
                first_problem = first_problem or problem
                continue
            # Several added together: keep only those this conversation needs.
            for name in reversed([name for name in names if name not in base]):
                fewer = tuple(other for other in names if other != name)
                if len(names) - len(base) > 1:
                    shorter, _ = self._whole(messages, tools, fewer)
                    if shorter is not None:
                        names, text = fewer, shorter
            for name in names:
                if name not in self._decided:
                    self._decided[name] = Adaptation(name, f"row {row_id}: {first_problem}")
                    self._escalated.add(name)
            self._by_shape[shape] = names
            self.last_names = tuple(name for name in ORDER if name in names)
            return text
        raise TemplateRefusal(
            f"row {row_id}: {first_problem}, with every adaptation tried; supply a chat template that renders "
            "the whole conversation with --chat-template FILE"
        )

    @property
    def adaptations(self) -> list[dict[str, str]]:
        """Every adaptation made so far, in the order they apply, for results.json."""
        return [self._decided[name].as_dict() for name in ORDER if name in self._decided]
