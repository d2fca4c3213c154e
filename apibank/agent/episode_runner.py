"""Running episodes: the tool loop of our CLI, episodes stepped together, trials, resume, and the per-level summary.

The loop (the same protocol as the inspect-ai task in :mod:`apibank.evals.agentic`): each recorded
user turn is appended in order; the agent steps until it answers without a call; each call runs in the
episode's environment and its result goes back as a ``tool`` message. An episode stops early at the
step limit (agent steps over the whole episode) or the time limit (the episode's own time: its tool
calls and the agent's time for its steps, checked between steps); it is judged on whatever state it
reached.

Each episode is an :class:`EpisodeRun`; :func:`run_level` keeps up to ``batch_size`` of them running
and steps them together: each round, every running episode takes one step, a model agent's steps in
ONE batched generate call (:class:`~apibank.agent.model_agent.ModelDriver`). An episode's steps depend
on that episode alone, so the records are those of the one-at-a-time run, in the same order."""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from apibank_tools.environment import PristineData, pristine_data

from apibank.agent.agents import Agent, Step
from apibank.agent.environment import EpisodeEnvironment
from apibank.data.episodes import Episode, EpisodeSet
from apibank.agent.episode_judge import GoldReference, judge_episode, replay_gold
from apibank.agent.prompts import system_prompt
from apibank.agent.trials import mean_over_episodes, pass_at_k, pass_hat_k
from apibank.data.upstream import upstream_source
from apibank.files import JsonLinesAppender
from apibank.generate.runner import cut_texts

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


class EpisodeRun:
    """One trial of one episode as a state machine, so that many can step together: :meth:`request`
    gives what the agent sees next (None once finished), :meth:`advance` takes its step."""

    def __init__(self, agent: Agent, episode: Episode, setting: str, gold: GoldCache, *, trial: int = 0,
                 limits: Limits = Limits()) -> None:
        self.agent, self.episode, self.setting, self.gold = agent, episode, setting, gold
        self.trial, self.limits = trial, limits
        self.env = EpisodeEnvironment(episode, setting, gold.data, retriever=gold.retriever,
                                      call_timeout=limits.call_timeout)
        agent.start(episode, setting, trial)
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt(episode, setting)}]
        self.answers: list[str | None] = []
        self.usage: dict[str, int] = {}
        self.model_seconds: float | None = None
        self.steps, self.stopped, self.finished = 0, None, False
        self.turn = -1
        # This episode's own time: its tool calls, its judging, and the agent's time for its steps (a
        # batched model step counts its share), so that the time limit means the same at any batch size.
        self.elapsed = 0.0
        self._next_turn()

    def _next_turn(self) -> None:
        if self.turn + 1 >= len(self.episode.turns):
            self.finished = True
            return
        self.turn += 1
        self.env.turn = self.turn
        self.messages.append({"role": "user", "content": self.episode.turns[self.turn].user})

    def _stop(self, reason: str) -> None:
        self.stopped, self.finished = reason, True
        self.answers.append(None)

    def request(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """The messages and tool schemas the agent acts on now; None when the episode is over."""
        if not self.finished and self.steps >= self.limits.max_steps:
            self._stop("step_limit")
        elif not self.finished and self.elapsed > self.limits.time_limit:
            self._stop("time_limit")
        return None if self.finished else (self.messages, self.env.schemas())

    def advance(self, step: Step | BaseException, seconds: float = 0.0) -> None:
        """Take the agent's step (or its failure), which took the agent ``seconds``."""
        started = time.perf_counter()
        try:
            self._advance(step)
        finally:
            self.elapsed += seconds + time.perf_counter() - started

    def _advance(self, step: Step | BaseException) -> None:
        if isinstance(step, BaseException):  # a model/endpoint failure ends this episode, judged as it stands
            self._stop(f"agent_error: {type(step).__name__}: {step}"[:500])
            return
        self.steps += 1
        for key, value in step.usage.items():
            self.usage[key] = self.usage.get(key, 0) + int(value)
        if step.seconds is not None:
            self.model_seconds = (self.model_seconds or 0.0) + step.seconds
        self.messages.append(_assistant_message(step))
        if not step.calls:
            self.answers.append(step.text)
            self._next_turn()
            return
        for call in step.calls:
            record = self.env.call(call.name, call.arguments)
            self.messages.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": record.message()})

    def record(self) -> dict[str, Any]:
        """The judged trajectory record (JSON-ready)."""
        started = time.perf_counter()
        verdict = judge_episode(self.episode, self.gold.get(self.episode), self.env.session, self.env.trace, self.answers)
        self.elapsed += time.perf_counter() - started
        record = {
            "episode": self.episode.id,
            "level": self.episode.level,
            "setting": self.setting,
            "trial": self.trial,
            "agent": self.agent.name,
            "steps": self.steps,
            "stopped": self.stopped,
            "seconds": round(self.elapsed, 4),
            "usage": self.usage,
            "verdict": verdict.as_dict(),
            "trajectory": [r.as_dict() for r in self.env.trace],
            "answers": self.answers,
            "messages": self.messages,
        }
        if self.model_seconds is not None:
            record["model_seconds"] = round(self.model_seconds, 4)
        # The model's texts (answers, messages, call arguments) are kept as predictions are: up to
        # MAX_STORED_CHARS each, the record flagged when one was cut (judged above on the whole).
        record, cut = cut_texts(record)
        if cut:
            record["truncated"] = True
        return record


def step_all(runs: list[EpisodeRun], requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]
             ) -> list[tuple[Any, float]]:
    """``(step or failure, the agent's seconds)`` for each run: the runs of a model agent in one batched
    call per model (each run's seconds: its share), scripted ones each on its own."""
    steps: list[Any] = [None] * len(runs)
    by_driver: dict[int, list[int]] = {}
    for index, run in enumerate(runs):
        driver = getattr(run.agent, "driver", None)
        if driver is not None:
            by_driver.setdefault(id(driver), []).append(index)
            continue
        started = time.perf_counter()
        try:
            step: Any = run.agent.act(*requests[index])
        except Exception as error:  # noqa: BLE001 (ends this episode only)
            step = error
        steps[index] = (step, time.perf_counter() - started)
    for members in by_driver.values():
        driver = runs[members[0]].agent.driver  # type: ignore[attr-defined]
        started = time.perf_counter()
        answers = driver.act_many([(runs[i].agent, *requests[i]) for i in members])
        share = (time.perf_counter() - started) / len(members)
        for index, step in zip(members, answers):
            steps[index] = (step, share)
    return steps


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
    run = EpisodeRun(agent, episode, setting, gold, trial=trial, limits=limits)
    while (request := run.request()) is not None:
        run.advance(*step_all([run], [request])[0])
    return run.record()


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
        **_no_interval(by_episode),
    }


def _no_interval(by_episode: dict[str, list[bool]]) -> dict[str, str]:
    """``{"ci95_reason": ...}`` where the episodes give no interval (one episode), else nothing."""
    from apibank.judge.intervals import no_interval_reason

    reason = no_interval_reason(len(by_episode), "episode") if by_episode else None
    return {"ci95_reason": reason} if reason else {}


def _intervals(by_episode: dict[str, list[bool]], rouge: dict[str, list[float]], trials: int, level: str) -> dict:
    """95% intervals over episodes (resampled whole, with all their trials) for success, pass^k, pass@k, ROUGE-L."""
    from apibank.judge.intervals import episode_intervals

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
    batch_size: int = 1,
) -> list[dict[str, Any]]:
    """Every trial of every episode of a level (records already in ``done`` are reused: resume).

    Up to ``batch_size`` episodes run at once, each with its own agent from ``agent_factory``; each
    round, every running episode takes one step (a model agent's steps in one batched call), and a
    finished episode's place goes to the next. Each record is appended to ``trajectories`` the moment
    its episode ends (Ctrl-C loses only the episodes running); records come back in the order of the
    one-at-a-time run (``batch_size=1``), with the same content: each episode's steps depend on that
    episode alone."""
    done = done if done is not None else {}
    selected = episodes.episodes[:limit] if limit else episodes.episodes
    jobs = [(trial, episode) for trial in range(trials) for episode in selected]
    records: list[dict[str, Any] | None] = [done.get((e.id, setting, t)) for t, e in jobs]
    waiting = [index for index, record in enumerate(records) if record is None]
    waiting.reverse()
    active: list[tuple[int, EpisodeRun]] = []
    log = JsonLinesAppender(trajectories) if trajectories is not None else None
    try:
        while waiting or active:
            while waiting and len(active) < max(1, batch_size):
                index = waiting.pop()
                trial, episode = jobs[index]
                active.append((index, EpisodeRun(agent_factory(), episode, setting, gold, trial=trial, limits=limits)))
            asking = [(index, run, run.request()) for index, run in active]
            for index, run, request in asking:
                if request is None:
                    record = records[index] = run.record()
                    if log is not None:
                        log.write([record])
                    if progress is not None:
                        verdict = "success" if record["verdict"]["success"] else "fail"
                        progress(f"{record['episode']} trial {record['trial']}: {verdict}")
            stepping = [(run, request) for _, run, request in asking if request is not None]
            if stepping:
                runs = [run for run, _ in stepping]
                for run, (step, seconds) in zip(runs, step_all(runs, [request for _, request in stepping])):
                    run.advance(step, seconds)
            active = [(index, run) for index, run, request in asking if request is not None]
    finally:
        if log is not None:
            log.close()
    return records  # type: ignore[return-value]


def default_gold_cache(data_dir: str | os.PathLike[str] | None, retriever: Any = None, call_timeout: float = 10.0) -> GoldCache:
    return GoldCache(pristine_data(upstream_source(data_dir)), retriever=retriever, call_timeout=call_timeout)
