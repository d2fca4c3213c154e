"""Agentic episodes: the recorded dialogues (levels 1, 2) and requirements (level 3) as on-policy tasks.

An episode is a list of user turns. Each turn carries the user's text as recorded, the gold calls
the annotators made before the next user turn, and the last AI reply of that stretch (the gold
answer). The model sees only the user texts; the gold calls are what the judge replays.

- levels 1 and 2: one episode per dialogue file of ``lv1-lv2-samples/level-1-given-desc`` (214 files,
  one of them empty upstream, so 213 episodes) and ``level-2-toolsearcher`` (50); each recorded
  user turn is given after the model's answer to the previous one;
- level 3: one episode per requirement of ``test-data/level-3.json`` (50), a single user turn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Iterable

from apibank.benchmark import LEVEL_SPECS, LEVELS, SEARCHER, TOOLSETS, LevelSpec
from apibank.data.dialogues import LEVEL_3_DIALOGUES, iter_dialogues, level3_dialogues
from apibank.data.renames import renamed


@dataclass(frozen=True)
class GoldCall:
    """One recorded call: the tool, its structured arguments (renames applied) and the recorded record."""

    name: str
    arguments: dict[str, Any]
    recorded: dict[str, Any] | None


@dataclass(frozen=True)
class Turn:
    user: str
    calls: tuple[GoldCall, ...]
    answer: str | None  # the last recorded AI reply before the next user turn (None: the dialogue ends)


@dataclass(frozen=True)
class Episode:
    id: str
    level: str
    toolset: str
    source: str  # upstream file (and index for level 3)
    turns: tuple[Turn, ...]

    @property
    def gold_calls(self) -> list[GoldCall]:
        return [call for turn in self.turns for call in turn.calls]

    def tool_names(self) -> list[str]:
        """The tools the gold trajectory uses, ToolSearcher excluded, in first-use order."""
        names: list[str] = []
        for call in self.gold_calls:
            if call.name != SEARCHER and call.name not in names:
                names.append(call.name)
        return names


@dataclass
class EpisodeSet:
    level: str
    episodes: list[Episode]
    skipped: list[dict[str, str]] = field(default_factory=list)  # upstream files that give no episode


def _dialogue_turns(lines: Iterable[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    user: str | None = None
    calls: list[GoldCall] = []
    answer: str | None = None
    preamble: list[str] = []
    for line in lines:
        role = line["role"]
        if role == "User":
            if user is not None:
                turns.append(Turn(user, tuple(calls), answer))
            user, calls, answer = line["text"], [], None
        elif user is None:
            # nothing precedes the first user turn in the shipped data; kept visible if it ever does
            preamble.append(role)
        elif role == "API":
            result = line.get("result") or {}
            calls.append(GoldCall(line["api_name"], renamed(line["api_name"], result.get("input") or line.get("param_dict") or {}), result))
        elif role == "AI":
            answer = line["text"]
    if user is not None:
        turns.append(Turn(user, tuple(calls), answer))
    if preamble:
        raise ValueError(f"dialogue has turns before the first user turn: {preamble}")
    return turns


def dialogue_episodes(level: str, data_dir: str | os.PathLike[str] | None = None) -> EpisodeSet:
    result = EpisodeSet(level, [])
    for dialogue in iter_dialogues(level, data_dir):
        turns = _dialogue_turns(dialogue.turns)
        if not turns:
            result.skipped.append({"file": dialogue.path, "reason": "the upstream dialogue file is empty"})
            continue
        result.episodes.append(Episode(f"{level}/{dialogue.stem}", level, TOOLSETS[level], dialogue.path, tuple(turns)))
    return result


def requirement_episodes(spec: LevelSpec, data_dir: str | os.PathLike[str] | None = None) -> EpisodeSet:
    """One episode per requirement of a requirements file (level 3): a single user turn."""
    result = EpisodeSet(spec.name, [])
    for index, dialogue in enumerate(level3_dialogues(data_dir)):
        calls = tuple(
            GoldCall(api["api_name"], renamed(api["api_name"], api["output"].get("input") or api["input"] or {}), api["output"])
            for api in dialogue["apis"]
        )
        turn = Turn(dialogue["requirement"].strip(), calls, dialogue["response"])
        result.episodes.append(Episode(f"{spec.name}/{index}", spec.name, spec.toolset, f"{LEVEL_3_DIALOGUES}#{index}", (turn,)))
    return result


def load_episodes(level: str, data_dir: str | os.PathLike[str] | None = None) -> EpisodeSet:
    if level not in LEVELS:
        raise ValueError(f"unknown level {level!r}; expected one of {', '.join(LEVELS)}")
    spec = LEVEL_SPECS[level]
    return requirement_episodes(spec, data_dir) if spec.from_requirements else dialogue_episodes(level, data_dir)
