"""One episode's tool world as the model sees it: the offered tools, discovery, execution, the trace.

Settings (how tools are offered):

- ``searcher``: the benchmark's own discovery. Levels 2 and 3 offer only ToolSearcher; a tool becomes
  callable once a ToolSearcher result has named it (a token-paired result names GetUserToken too).
  Level 1's benchmark protocol gives the descriptions of the dialogue's own tools, so at level 1
  ``searcher`` offers exactly the tools the dialogue uses and there is nothing to search.
- ``all-tools``: every tool of the level's set except ToolSearcher is offered from the start (upstream
  PR #229's ToolSearcher-free variant).

Every call runs in the episode's own :class:`Session` (seeded, over the pristine databases, each call
under the session's time limit). A call the environment refuses (unknown or not yet discovered tool,
undeclared or badly typed parameter, missing argument) is recorded with its error and changes nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from apibank_tools.base import CallRejected, CallTimeout
from apibank_tools.environment import PristineData, Session
from apibank_tools.registry import toolset

from apibank.benchmark import LEVEL_SPECS, SEARCHER, SETTINGS
from apibank.data.episodes import Episode

SESSION_SEED = 0


def offered_at_start(episode: Episode, setting: str) -> list[str]:
    if setting not in SETTINGS:
        raise ValueError(f"unknown setting {setting!r}; expected one of {', '.join(SETTINGS)}")
    tools = toolset(episode.toolset)
    if setting == "all-tools":
        return [name for name in tools.names() if name != SEARCHER]
    if LEVEL_SPECS[episode.level].searches_tools:
        return [SEARCHER]
    return episode.tool_names()


def searched_names(output: Any) -> list[str]:
    """Tool names a ToolSearcher output makes known (a dict, or a list of dicts for token pairs)."""
    entries = output if isinstance(output, list) else [output]
    return [entry["name"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("name"), str)]


@dataclass
class CallRecord:
    """One call the model made, as executed (or refused)."""

    name: str
    arguments: Any
    result: dict[str, Any] | None = None  # the tool's result envelope
    error: str | None = None  # why the environment refused the call
    turn: int = 0

    @property
    def executed(self) -> bool:
        return self.result is not None

    def as_dict(self) -> dict[str, Any]:
        return {"turn": self.turn, "name": self.name, "arguments": self.arguments, "result": self.result, "error": self.error}

    def message(self) -> str:
        """What the model receives as the tool's result."""
        if self.error is not None:
            return json.dumps({"error": self.error}, ensure_ascii=False)
        return json.dumps(self.result, ensure_ascii=False, default=str)


class EpisodeEnvironment:
    def __init__(
        self,
        episode: Episode,
        setting: str,
        data: PristineData,
        *,
        retriever: Any = None,
        call_timeout: float | None = 10.0,
    ) -> None:
        self.episode = episode
        self.setting = setting
        self.tools = toolset(episode.toolset)
        self.session = Session(self.tools, data, seed=SESSION_SEED, retriever=retriever, timeout=call_timeout)
        self.offered: list[str] = offered_at_start(episode, setting)
        self.trace: list[CallRecord] = []
        self.turn = 0

    def schemas(self) -> list[dict[str, Any]]:
        """JSON function schemas of the tools offered now (from the registry)."""
        return self.tools.json_schemas(self.offered)

    def call(self, name: Any, arguments: Any) -> CallRecord:
        record = CallRecord(str(name), arguments, turn=self.turn)
        self.trace.append(record)
        if not isinstance(name, str) or name not in self.offered:
            hint = " (find it with ToolSearcher first)" if self.setting == "searcher" and SEARCHER in self.offered else ""
            record.error = f"tool {name!r} is not available{hint}"
            return record
        if not isinstance(arguments, dict):
            record.error = "the arguments must be a JSON object"
            return record
        try:
            record.result = self.session.call(name, arguments, coercion="typed")
        except CallRejected as rejected:
            record.error = f"{rejected.kind}: {rejected}"
        except CallTimeout as timeout:
            record.error = str(timeout)
        if record.result is not None and name == SEARCHER and record.result.get("exception") is None:
            for found in searched_names(record.result.get("output")):
                if found in self.tools and found not in self.offered:
                    self.offered.append(found)
        return record
