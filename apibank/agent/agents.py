"""Agents: what decides the next step of an episode.

An agent sees what a model would see: the conversation as chat messages (OpenAI layout: ``user``,
``assistant`` with ``tool_calls``, ``tool``) and the JSON schemas of the tools offered now. It returns
one step: tool calls to execute, or none and an answer to the user.

The two scripted agents validate the judge:

- :class:`OracleAgent` issues the gold calls of the current user turn one by one, then answers with
  the recorded reply. It reads its own results as a model would: a random id or token its session
  generated replaces the recorded one in its later calls. In the ``searcher`` setting it issues the
  recorded ToolSearcher calls; if the next tool is still not offered, it searches with the tool's
  name split into words, then with its description.
- :class:`NoCallAgent` answers every user turn with the recorded reply and never calls a tool.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from apibank_tools.registry import toolset
from apibank_tools.text import space_before_capitals

from apibank.benchmark import SEARCHER
from apibank.data.episodes import Episode, GoldCall
from apibank.agent.episode_judge import random_substitutions, substitute


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: Any  # a dict when the model produced a JSON object; anything else is refused


@dataclass
class Step:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, int] = field(default_factory=dict)
    raw: str | None = None  # the model's raw output when calls were parsed from text
    seconds: float | None = None  # the model's generation time for this step (a batched step's share)


class Agent(Protocol):
    name: str

    def start(self, episode: Episode, setting: str, trial: int) -> None: ...

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step: ...


def offered_names(tools: list[dict[str, Any]]) -> set[str]:
    return {schema["function"]["name"] for schema in tools}


def user_turns_seen(messages: list[dict[str, Any]]) -> int:
    return sum(1 for m in messages if m["role"] == "user")


class NoCallAgent:
    name = "none"

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.episode = episode

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        turn = self.episode.turns[user_turns_seen(messages) - 1]
        return Step(text=turn.answer or "")


class OracleAgent:
    name = "oracle"

    def __init__(self, search_attempts: int = 2) -> None:
        self.search_attempts = search_attempts

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        self.episode = episode
        self.setting = setting
        self.tools = toolset(episode.toolset)
        self.turn = -1
        self.queue: list[GoldCall] = []
        self.mapping: dict[str, str] = {}
        self.pending: GoldCall | None = None
        self.searches: dict[str, int] = {}
        self.ids = itertools.count()

    def _read_last_result(self, messages: list[dict[str, Any]]) -> None:
        call, self.pending = self.pending, None
        if call is None or call.recorded is None or not messages or messages[-1]["role"] != "tool":
            return
        try:
            result = json.loads(messages[-1]["content"])
        except (TypeError, ValueError):
            return
        if isinstance(result, dict) and result.get("exception") is None and call.name in self.tools:
            if self.tools.get(call.name).generates_random_values:
                self.mapping.update(random_substitutions(call.recorded.get("output"), result.get("output")))

    def _call(self, name: str, arguments: dict[str, Any]) -> Step:
        return Step(calls=[ToolCall(f"call_{next(self.ids)}", name, arguments)])

    def act(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Step:
        self._read_last_result(messages)
        turn = user_turns_seen(messages) - 1
        if turn != self.turn:
            self.turn = turn
            calls = self.episode.turns[turn].calls
            self.queue = [c for c in calls if c.name != SEARCHER] if self.setting == "all-tools" else list(calls)
        offered = offered_names(tools)
        while self.queue:
            call = self.queue[0]
            if call.name == SEARCHER and SEARCHER not in offered:
                self.queue.pop(0)  # level 1 under ``searcher`` offers the dialogue's tools directly
                continue
            if call.name not in offered and SEARCHER in offered and call.name in self.tools:
                attempt = self.searches.get(call.name, 0)
                if attempt < self.search_attempts:
                    self.searches[call.name] = attempt + 1
                    keywords = space_before_capitals(call.name) if attempt == 0 else self.tools.get(call.name).description
                    return self._call(SEARCHER, {"keywords": keywords})
            self.queue.pop(0)
            self.pending = call
            return self._call(call.name, substitute(call.arguments, self.mapping))
        return Step(text=self.episode.turns[turn].answer or "")


SCRIPTED_AGENTS = {"oracle": OracleAgent, "none": NoCallAgent}
