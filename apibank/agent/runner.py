"""Running episodes: the tool loop of our CLI, trials, resume, and the per-level summary.

The loop (the same protocol as the inspect-ai task in :mod:`apibank.evals.agentic`): each recorded
user turn is appended in order; the agent steps until it answers without a call; each call runs in the
episode's environment and its result goes back as a ``tool`` message. An episode stops early at the
step limit (agent steps over the whole episode) or the time limit (checked between steps); it is
judged on whatever state it reached.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from apibank_tools.environment import PristineData, pristine_data

from apibank.agent.agents import Agent
from apibank.agent.environment import EpisodeEnvironment
from apibank.data.episodes import Episode, EpisodeSet
from apibank.agent.judge import GoldReference, judge_episode, replay_gold
from apibank.agent.prompts import system_prompt
from apibank.agent.trials import mean_over_episodes, pass_at_k, pass_hat_k
from apibank.data.upstream import upstream_source
from apibank.files import JsonLinesAppender

DEFAULT_MAX_STEPS = 40
DEFAULT_TIME_LIMIT = 300.0


@dataclass
class Limits:
    max_steps: int = DEFAULT_MAX_STEPS
    time_limit: float = DEFAULT_TIME_LIMIT
    call_timeout: float = 10.0


class GoldCache:
    """Gold replays, one per episode per process (they do not depend on the setting or the agent)."""

    def __init__(self, data: PristineData, retriever: Any = None, call_timeout: float | None = 10.0) -> None:
        self.data, self.retriever, self.call_timeout = data, retriever, call_timeout
        self._cache: dict[str, GoldReference] = {}
        self._lock = threading.Lock()

    def get(self, episode: Episode) -> GoldReference:
        with self._lock:
            if episode.id not in self._cache:
                self._cache[episode.id] = replay_gold(episode, self.data, retriever=self.retriever, timeout=self.call_timeout)
            return self._cache[episode.id]


def _assistant_message(step) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text}
    if step.calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False, default=str)}}
            for c in step.calls
        ]
    return message


def run_episode(
    agent: Agent,
    episode: Episode,
    setting: str,
    gold: GoldCache,
    *,
    trial: int = 0,
    limits: Limits = Limits(),
) -> dict[str, Any]:
    """Run one trial of one episode and judge it; returns the trajectory record (JSON-ready)."""
    env = EpisodeEnvironment(episode, setting, gold.data, retriever=gold.retriever, call_timeout=limits.call_timeout)
    agent.start(episode, setting, trial)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(episode, setting)}]
    answers: list[str | None] = []
    usage: dict[str, int] = {}
    steps, stopped = 0, None
    started = time.monotonic()
    for turn_index, turn in enumerate(episode.turns):
        env.turn = turn_index
        messages.append({"role": "user", "content": turn.user})
        answer = None
        while True:
            if steps >= limits.max_steps:
                stopped = "step_limit"
                break
            if time.monotonic() - started > limits.time_limit:
                stopped = "time_limit"
                break
            try:
                step = agent.act(messages, env.schemas())
            except Exception as error:  # a model/endpoint failure ends this episode, judged as it stands
                stopped = f"agent_error: {type(error).__name__}: {error}"[:500]
                break
            steps += 1
            for key, value in step.usage.items():
                usage[key] = usage.get(key, 0) + int(value)
            messages.append(_assistant_message(step))
            if not step.calls:
                answer = step.text
                break
            for call in step.calls:
                record = env.call(call.name, call.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": record.message()})
        answers.append(answer)
        if stopped:
            break
    verdict = judge_episode(episode, gold.get(episode), env.session, env.trace, answers)
    return {
        "episode": episode.id,
        "level": episode.level,
        "setting": setting,
        "trial": trial,
        "agent": agent.name,
        "steps": steps,
        "stopped": stopped,
        "seconds": round(time.monotonic() - started, 4),
        "usage": usage,
        "verdict": verdict.as_dict(),
        "trajectory": [r.as_dict() for r in env.trace],
        "answers": answers,
        "messages": messages,
    }


# ------------------------------------------------------------------------------------------ summary
def summarise(episodes: EpisodeSet, records: Iterable[dict[str, Any]], trials: int) -> dict[str, Any]:
    """Per-level figures over every (episode, trial) record of this level."""
    by_episode: dict[str, list[bool]] = {e.id: [] for e in episodes.episodes}
    rouge, precision_num, model_calls, gold_calls, steps = [], 0, 0, 0, 0
    state_ok = info_ok = 0
    excluded = drifted = needs_no_call = 0
    stopped_early: dict[str, int] = {}
    runs = 0
    rouge_by_episode: dict[str, list[float]] = {}
    for record in records:
        if record["episode"] not in by_episode:
            continue
        verdict = record["verdict"]
        runs += 1
        by_episode[record["episode"]].append(bool(verdict["success"]))
        state_ok += verdict["state_ok"]
        info_ok += verdict["information_ok"]
        if verdict["rouge_l"] is not None:
            rouge.append(verdict["rouge_l"])
            rouge_by_episode.setdefault(record["episode"], []).append(verdict["rouge_l"])
        precision_num += verdict["matched_calls"]
        model_calls += verdict["model_calls"]
        gold_calls += verdict["gold_calls"]
        steps += record["steps"]
        if record.get("stopped"):
            stopped_early[record["stopped"].split(":")[0]] = stopped_early.get(record["stopped"].split(":")[0], 0) + 1
        if record["trial"] == 0:
            needs_no_call += bool(verdict.get("needs_no_call"))
            excluded += len(verdict["excluded"])
            drifted += verdict["drifted"]
    complete = [outcomes for outcomes in by_episode.values() if len(outcomes) >= trials]
    succeeded = sum(sum(o) for o in by_episode.values())
    return {
        "episodes": len(episodes.episodes),
        "trials": trials,
        "runs": runs,
        "succeeded": succeeded,
        "success_rate": succeeded / runs if runs else None,
        "pass_k": mean_over_episodes((o[:trials] for o in complete), trials, pass_hat_k),
        "pass_at_k": mean_over_episodes((o[:trials] for o in complete), trials, pass_at_k),
        "state_ok": state_ok,
        "information_ok": info_ok,
        "call_precision": precision_num / model_calls if model_calls else None,
        "call_recall": precision_num / gold_calls if gold_calls else None,
        "response_rouge_l": sum(rouge) / len(rouge) if rouge else None,
        "mean_steps": steps / runs if runs else None,
        "stopped_early": stopped_early,
        "needs_no_call": needs_no_call,
        "gold_calls_excluded": excluded,
        "gold_reads_drifted": drifted,
        "skipped_files": episodes.skipped,
        "ci95": _intervals(by_episode, rouge_by_episode, trials, episodes.level),
    }


def _intervals(by_episode: dict[str, list[bool]], rouge: dict[str, list[float]], trials: int, level: str) -> dict:
    """95% intervals over episodes (resampled whole, with all their trials) for success, pass^k, pass@k, ROUGE-L."""
    from apibank.report.intervals import episode_intervals

    per_episode: dict[str, dict[str, float | None]] = {}
    for episode, outcomes in by_episode.items():
        complete = len(outcomes) >= trials
        per_episode[episode] = {
            "success_rate": float(sum(outcomes)) if outcomes else None,
            "success_rate/": float(len(outcomes)),
            "pass_k": pass_hat_k(trials, sum(outcomes[:trials]), trials) if complete else None,
            "pass_at_k": pass_at_k(trials, sum(outcomes[:trials]), trials) if complete else None,
            "response_rouge_l": sum(rouge[episode]) if episode in rouge else None,
            "response_rouge_l/": float(len(rouge.get(episode, ()))),
        }
    return episode_intervals(per_episode, level)


# ------------------------------------------------------------------------------------------ runs
def read_trajectories(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    records = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not a JSON line ({error}); remove it to resume") from None
    return records


def run_level(
    agent_factory: Callable[[], Agent],
    episodes: EpisodeSet,
    setting: str,
    gold: GoldCache,
    *,
    trials: int = 1,
    limits: Limits = Limits(),
    trajectories: Path | None = None,
    done: dict[tuple[str, str, int], dict[str, Any]] | None = None,
    limit: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Every trial of every episode of a level (records already in ``done`` are reused: resume)."""
    done = done if done is not None else {}
    selected = episodes.episodes[:limit] if limit else episodes.episodes
    records = []
    agent = agent_factory()
    log = JsonLinesAppender(trajectories) if trajectories is not None else None
    try:
        for trial in range(trials):
            for episode in selected:
                key = (episode.id, setting, trial)
                if key in done:
                    records.append(done[key])
                    continue
                record = run_episode(agent, episode, setting, gold, trial=trial, limits=limits)
                records.append(record)
                if log is not None:
                    log.write([record])
                if progress is not None:
                    progress(f"{episode.id} trial {trial}: {'success' if record['verdict']['success'] else 'fail'}")
    finally:
        if log is not None:
            log.close()
    return records


def default_gold_cache(data_dir: str | os.PathLike[str] | None, retriever: Any = None, call_timeout: float = 10.0) -> GoldCache:
    return GoldCache(pristine_data(upstream_source(data_dir)), retriever=retriever, call_timeout=call_timeout)
