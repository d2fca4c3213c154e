"""Model agents: an episode step (chat messages + the tools offered now) as a :class:`Conversation` for
the one model layer (:mod:`apibank.generate.backends`), and its :class:`Completion` back as a :class:`Step`.

Two ways to show the tools to a model:

- ``native``: the ``tools`` format: the tools' JSON schemas go to the chat template (or the endpoint),
  adapted by :class:`~apibank.generate.templates.TemplateAdapter` to what the template accepts; calls
  come back parsed by the backend;
- ``text``: for models without a (tool-capable) chat template: a plain transcript with the tools'
  JSON schemas (:func:`text_prompt`), sent as completion text; calls are JSON objects in the text.

Many episodes step together: :meth:`ModelDriver.act_many` turns the steps of every episode waiting for
the model into ONE batched ``Backend.generate`` call. The prompts go out sorted, so that episodes
sharing the system text and tool schemas are adjacent and the transformers backend reuses the KV
cache of that prefix (vLLM has prefix caching; an endpoint gets the step's requests concurrently).
Greedy decoding gives each episode the same answer whatever it is batched with.
"""

from __future__ import annotations

import itertools
import json
from typing import Any, Sequence

from apibank.agent.agents import Step, ToolCall
from apibank.benchmark import (
    AGENT_TOOL_FORMATS, DEFAULT_AGENT_TOOL_FORMAT, LEVEL_SPECS, UNSIZED_MAX_NEW_TOKENS,
)
from apibank.data.episodes import Episode
from apibank.generate.backends import Backend, Completion, DecodingSettings
from apibank.generate.conversation import Conversation, call_with_object_arguments, chat_conversation
from apibank.generate.runner import cut_inside_reasoning, thinking_of, thinking_plan, usage_of
from apibank.generate.stops import TRANSCRIPT_STOPS, cut_at_stop, tools_probe, turn_end_markers
from apibank.generate.templates import TemplateRefusal
from apibank.generate.templates.readback import CallsUnread
from apibank.generate.toolcalls import answer_of, read_tool_calls
from apibank.generate.toolcalls.markup import holds_call_markup

# ------------------------------------------------------------------------------ the text template
TEXT_TOOLS_HEADER = (
    "Tools you can call. To call one, answer with one line of JSON and nothing else:\n"
    '{"name": "<tool name>", "arguments": {<parameter>: <value>, ...}}\n'
    "When you have what the user asked for, answer the user in plain words.\n"
)

class AgentSetupError(ValueError):
    """A model agent that cannot run as asked (a format the model cannot take, a bad option)."""


def text_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """A plain transcript with the tools' JSON schemas, for models without a (tool-capable) chat template."""
    lines: list[str] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            lines.append(f"System: {message['content']}\n")
            lines.append(TEXT_TOOLS_HEADER)
            lines.extend(json.dumps(schema["function"], ensure_ascii=False) for schema in tools)
            lines.append("")
        elif role == "user":
            lines.append(f"User: {message['content']}")
        elif role == "assistant":
            calls = message.get("tool_calls") or []
            if calls:
                for call in map(call_with_object_arguments, calls):
                    shown = {"name": call["function"]["name"], "arguments": call["function"]["arguments"]}
                    lines.append("Assistant: " + json.dumps(shown, ensure_ascii=False))
            else:
                lines.append(f"Assistant: {message['content']}")
        elif role == "tool":
            lines.append(f"Tool result: {message['content']}")
    lines.append("Assistant:")
    return "\n".join(lines)


class CallIds:
    """Call ids of one episode: ``call_0``, ``call_1``, ..."""

    def __init__(self) -> None:
        self._ids = itertools.count()

    def next(self) -> str:
        return f"call_{next(self._ids)}"


def step_from_text(text: str, ids: CallIds) -> Step:
    """Calls written in text (JSON objects naming a tool, as the text format's prompt asks: the generic
    ``json`` reader); otherwise the text, reasoning removed, is the answer."""
    calls = [ToolCall(ids.next(), name, arguments) for name, arguments in read_tool_calls(text, parser="json")]
    return Step(text="" if calls else answer_of(text).strip(), calls=calls, raw=text)


# ------------------------------------------------------------------------------ the driver
class ModelDriver:
    """One backend serving every episode of a run; :meth:`act_many` steps many episodes in one call."""

    def __init__(self, backend: Backend, *, tool_format: str = DEFAULT_AGENT_TOOL_FORMAT,
                 max_new_tokens: int = UNSIZED_MAX_NEW_TOKENS, thinking_budget: int | None = None,
                 label: str | None = None) -> None:
        if tool_format not in AGENT_TOOL_FORMATS:
            raise AgentSetupError(f"--tool-format {tool_format!r}: expected one of {', '.join(AGENT_TOOL_FORMATS)}")
        self.backend = backend
        self.label = label or str(backend.info().get("model_id"))
        self.native = self._resolve_native(tool_format)
        if self.native and hasattr(backend, "check_calls_read"):
            try:  # the reader reads back the calls the template writes, or every step would read none
                backend.check_calls_read()
            except CallsUnread as error:
                raise AgentSetupError(f"{error}, or --tool-format text") from None
        self.end_tokens: list[str] = []
        self.unread_calls = 0  # steps whose output holds call markup that no reader read
        stops = self._turn_end_stops() if self.native else TRANSCRIPT_STOPS
        # A model that thinks before it answers gets the reasoning budget on top of each step's.
        self.thinking = thinking_plan(thinking_of(backend, "tools") if self.native else None, thinking_budget)
        self.settings = DecodingSettings(max_new_tokens=max_new_tokens, stop=stops,
                                         thinking_budget=self.thinking["budget"])

    def _resolve_native(self, tool_format: str) -> bool:
        if tool_format == "text":
            return False
        try:
            self.backend.render(tools_probe())
        except TemplateRefusal as error:
            if tool_format == "native":
                raise AgentSetupError(f"--tool-format native: {error}; or use --tool-format text") from None
            return False
        return True

    def _turn_end_stops(self) -> tuple[str, ...]:
        """The template's turn markers end every answer: as tokens where the backend can (tokenizers
        drop them from decoded text), else as stop strings (vLLM keeps them in its text)."""
        markers = turn_end_markers(self.backend)
        end_answers_at = getattr(self.backend, "end_answers_at", None)
        if end_answers_at is None:
            return markers
        self.end_tokens = end_answers_at(markers)
        return ()

    @property
    def tool_format(self) -> str:
        return "native" if self.native else "text"

    def conversation(self, key: str, level: int, messages: list[dict[str, Any]],
                     tools: list[dict[str, Any]]) -> Conversation:
        if self.native:
            return chat_conversation(messages, tools, conversation_id=key, level=level)
        text = text_prompt(messages, tools)
        return Conversation(key, level, "api", "paper", [{"role": "user", "content": text}], plain_text=text)

    def _step(self, completion: Completion, ids: CallIds, share: float,
              tools: Sequence[dict[str, Any]] = (), prompt: str = "") -> Step:
        usage = usage_of(completion, share)
        if cut_inside_reasoning(completion, self.settings, prompt):  # cut while thinking: no answer, no call
            step = Step(text="", raw=completion.raw)
        elif self.native:  # the backend read the family's calls; the rest is the answer, never JSON guessed at
            step = Step(text="" if completion.tool_calls else answer_of(cut_at_stop(completion.text, self.settings.stop),
                                                                        completion.raw).strip(),
                        calls=[ToolCall(ids.next(), name, arguments) for name, arguments in completion.tool_calls or []],
                        raw=completion.raw)
        else:
            step = step_from_text(cut_at_stop(completion.text, self.settings.stop), ids)
        if not step.calls and holds_call_markup(completion.raw or completion.text or "", tools):
            self.unread_calls += 1  # call markup that no reader read: the step counts as an answer
        step.usage = {key: int(usage[name]) for key, name in (("prompt_tokens", "prompt_tokens"),
                                                              ("completion_tokens", "generated_tokens"))
                      if usage.get(name) is not None}
        step.seconds = usage["seconds"]
        return step

    def _generate(self, conversations: list[Conversation], prompts: list[str]) -> list[Completion | BaseException]:
        try:
            return list(self.backend.generate(conversations, prompts, self.settings))
        except Exception:
            if len(conversations) == 1:
                raise
        # Which request failed: each one alone, so that only its own episode ends with the error.
        out: list[Completion | BaseException] = []
        for conversation, prompt in zip(conversations, prompts):
            try:
                out.extend(self.backend.generate([conversation], [prompt], self.settings))
            except Exception as error:  # noqa: BLE001 (the episode records it and stops)
                out.append(error)
        return out

    def act_many(self, requests: Sequence[tuple["ModelAgent", list[dict[str, Any]], list[dict[str, Any]]]]
                 ) -> list[Step | BaseException]:
        """One step for each ``(agent, messages, tools)``, in one batched generate call."""
        import time

        results: list[Step | BaseException | None] = [None] * len(requests)
        conversations, prompts, where = [], [], []
        for index, (agent, messages, tools) in enumerate(requests):
            conversation = self.conversation(agent.key, agent.level, messages, tools)
            try:
                prompts.append(self.backend.render(conversation))
            except Exception as error:  # noqa: BLE001 (a conversation the template refuses ends its episode)
                results[index] = error
                continue
            conversations.append(conversation)
            where.append(index)
        # Shared prefixes next to each other: the transformers backend reuses the previous prompt's KV cache.
        order = sorted(range(len(prompts)), key=lambda i: prompts[i])
        started = time.perf_counter()
        completions = self._generate([conversations[i] for i in order], [prompts[i] for i in order]) if order else []
        share = (time.perf_counter() - started) / max(1, len(order))
        for position, completion in zip(order, completions):
            index = where[position]
            if isinstance(completion, BaseException):
                results[index] = completion
            else:
                results[index] = self._step(completion, requests[index][0].ids, share, requests[index][2],
                                            prompts[position])
        return results  # type: ignore[return-value]

    def info(self) -> dict[str, Any]:
        return {"id": self.label, **{k: v for k, v in self.backend.info().items() if k != "model_id"},
                "tool_format": self.tool_format, "max_new_tokens": self.settings.max_new_tokens,
                "end_tokens": self.end_tokens}

    def close(self) -> None:
        self.backend.close()


class ModelAgent:
    """One episode's handle on a :class:`ModelDriver` (its call ids); the runner batches its steps."""

    def __init__(self, driver: ModelDriver) -> None:
        self.driver = driver
        self.name = driver.label
        self.ids = CallIds()
        self.key, self.level = "", 0

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.ids = CallIds()
        self.key = f"{episode.id}#{setting}#{trial}"
        self.level = LEVEL_SPECS[episode.level].number

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        result = self.driver.act_many([(self, messages, tools)])[0]
        if isinstance(result, BaseException):
            raise result
        return result
