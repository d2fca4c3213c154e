"""Single mutations of the gold trajectory, to show the judge catches them.

A :class:`MutatedOracle` is the oracle agent playing a gold trajectory with one change:

- ``argument``: the last successful non-ToolSearcher gold call with an argument gets its first
  argument changed (text: `` (changed)`` appended; number: plus one; list: one more element);
- ``drop``: the last successful non-ToolSearcher gold call is not made;
- ``extra-write``: after the last user turn's gold calls, one extra call that writes
  (level 1/2: RecordHealthData for a new user; level 3: AddMeeting).

A mutation is *caught* when the episode is judged unsuccessful. Episodes where a mutation does not
apply (no such call) are counted apart. Run them in the ``all-tools`` setting, where the extra
write's tool is offered.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from apibank.agent.agents import OracleAgent
from apibank.benchmark import SEARCHER
from apibank.data.episodes import Episode, GoldCall
from apibank.agent.episode_judge import GoldReference, GoldStep

MUTATIONS = ("argument", "drop", "extra-write")
EXTRA_WRITES = {
    "level-1-2": GoldCall("RecordHealthData", {"user_id": "M-0", "time": "2023-04-01 10:00:00",
                                               "health_data": [{"name": "heart_rate", "value": "80"}]}, None),
    "level-3": GoldCall("AddMeeting", {"meeting_topic": "Extra meeting", "start_time": "2023-04-01 10:00:00",
                                       "end_time": "2023-04-01 11:00:00", "location": "Room X", "attendees": ["Mallory"]}, None),
}


def _target(gold: GoldReference, with_arguments: bool = False) -> GoldStep | None:
    """The last gold call that succeeded on replay, ToolSearcher excluded."""
    for step in reversed(gold.steps):
        if step.call.name != SEARCHER and step.result is not None and step.result.get("exception") is None:
            if not with_arguments or step.call.arguments:
                return step
    return None


def changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return value + ["(changed)"]
    return f"{value} (changed)"


def mutate(episode: Episode, gold: GoldReference, mutation: str) -> Episode | None:
    """The episode with a mutated gold trajectory, or None when the mutation does not apply."""
    turns = list(episode.turns)
    if mutation == "extra-write":
        last = turns[-1]
        turns[-1] = dataclasses.replace(last, calls=last.calls + (EXTRA_WRITES[episode.toolset],))
        return dataclasses.replace(episode, turns=tuple(turns))
    target = _target(gold, with_arguments=mutation == "argument")
    if target is None:
        return None
    turn_index, call_index = target.turn, target.index
    calls = list(turns[turn_index].calls)
    if mutation == "drop":
        del calls[call_index]
    elif mutation == "argument":
        call = calls[call_index]
        arguments: dict[str, Any] = dict(call.arguments)
        name = next(iter(arguments))
        arguments[name] = changed(arguments[name])
        calls[call_index] = dataclasses.replace(call, arguments=arguments)
    else:
        raise ValueError(f"unknown mutation {mutation!r}; expected one of {', '.join(MUTATIONS)}")
    turns[turn_index] = dataclasses.replace(turns[turn_index], calls=tuple(calls))
    return dataclasses.replace(episode, turns=tuple(turns))


class MutatedOracle(OracleAgent):
    """The oracle playing a mutated trajectory (the judge still sees the real episode)."""

    def __init__(self, mutated: dict[str, Episode]) -> None:
        super().__init__()
        self.name = "oracle-mutated"
        self.mutated = mutated

    def start(self, episode: Episode, setting: str, trial: int) -> None:
        super().start(self.mutated.get(episode.id, episode), setting, trial)


def _why_not_caught(mutation: str, gold: GoldReference, record: dict[str, Any]) -> str:
    """Why a mutated trajectory still achieved what the gold one did (checked, not assumed)."""
    target = _target(gold, with_arguments=mutation == "argument")
    others = [s for s in gold.steps if s is not target and s.result is not None and s.call.name == target.call.name]
    if mutation == "drop" and any(s.result.get("output") == target.result.get("output") for s in others):
        return "duplicate: another gold call obtains the same result"
    if mutation == "argument":
        made = [t for t in record["trajectory"] if t["name"] == target.call.name and t["result"] is not None]
        if any(t["result"].get("output") == target.result.get("output") for t in made):
            return "the gold result is still obtained (a repeated call, or a result that does not depend on the argument)"
    return "unexplained"


def mutation_report(episodes, gold_cache, setting: str = "all-tools") -> dict[str, Any]:
    """Per mutation: episodes where it applies, how many the judge catches, and why the others are not."""
    from apibank.agent.episode_runner import run_level

    report: dict[str, Any] = {}
    for mutation in MUTATIONS:
        mutated = {}
        for episode in episodes.episodes:
            changed_episode = mutate(episode, gold_cache.get(episode), mutation)
            if changed_episode is not None:
                mutated[episode.id] = changed_episode
        records = run_level(lambda: MutatedOracle(mutated), episodes, setting, gold_cache)
        by_id = {e.id: e for e in episodes.episodes}
        missed = [
            {"episode": r["episode"], "why": _why_not_caught(mutation, gold_cache.get(by_id[r["episode"]]), r)}
            for r in records if r["episode"] in mutated and r["verdict"]["success"]
        ]
        report[mutation] = {"applicable": len(mutated), "caught": len(mutated) - len(missed), "not_caught": missed}
    return report
