"""Agentic API-Bank as inspect-ai tasks: ``apibank_agentic`` (one task per level and setting).

What inspect-ai provides and is reused: the agent loop (``react`` without a submit tool; its
``on_continue`` hook gives the next recorded user turn once the model answers without a call),
dynamic tools (a ``ToolSource`` that offers the tools found so far), tool execution and result
messages, model providers (any inspect-ai model; ``mockllm`` offline), epochs with the ``pass_k``
(pass^k) and ``pass_at`` (pass@k) reducers, sample time and message limits, logs and retries.

What is ours: the episodes, the per-episode environment (registry JSON schemas, execution in the
episode's ``Session``, discovery), and the judge of what was achieved (:mod:`apibank.agent.episode_judge`),
shared with ``apibank agent``.

    inspect eval apibank/evals/agentic.py@apibank_agentic -T level=level-3 -T setting=all-tools \\
        --model mockllm/model --limit 3 --log-dir out/inspect-logs
"""

from __future__ import annotations

import os
import sys
from typing import Any

from apibank.errors import require_extra

require_extra("inspect", ("inspect_ai",), "API-Bank's inspect-ai tasks")

from inspect_ai import Epochs, Task, task  # noqa: E402
from inspect_ai.agent import AgentState, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.scorer import Score, Target, mean, pass_at, pass_k, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import Tool, ToolDef, ToolParams

from apibank.agent.environment import EpisodeEnvironment
from apibank.evals.spec import AGENTIC_SCORER_NAME, AGENTIC_SOLVER_NAME, registration_name
from apibank.benchmark import DATA_DIR_ENV, DEFAULT_SETTING, LEVELS, SETTINGS
from apibank.data.episodes import Episode, load_episodes
from apibank.agent.episode_judge import judge_episode
from apibank.agent.prompts import system_prompt
from apibank.agent.episode_runner import (
    DEFAULT_MAX_STEPS,
    DEFAULT_TIME_LIMIT,
    GoldCache,
    default_gold_cache,
)
from apibank.evals import _offline

VERDICT_KEY = "apibank_agentic_verdict"

# None when inspect-ai loads this file by its path (then the names stay unqualified, as inspect expects).
_THIS = sys.modules.get(__name__)


def _registered(name: str) -> str:
    return registration_name(_THIS, name) if _THIS is not None else name


_offline.install()  # mockllm's usage estimate must not need tiktoken's download
SCORE_KEYS = ("success", "state", "information", "rouge_l")


def _tool(env: EpisodeEnvironment, name: str) -> Tool:
    schema = env.tools.json_schema(name)["function"]

    async def execute(**arguments: Any) -> str:
        return env.call(name, arguments).message()

    return ToolDef(execute, name=name, description=schema["description"],
                   parameters=ToolParams.model_validate(schema["parameters"]), max_output=0).as_tool()


class OfferedTools:
    """inspect-ai ToolSource: the tools the episode offers now (grows as ToolSearcher finds tools)."""

    def __init__(self, env: EpisodeEnvironment) -> None:
        self.env = env
        self._built: dict[str, Tool] = {}

    async def tools(self) -> list[Tool]:
        for name in self.env.offered:
            if name not in self._built:
                self._built[name] = _tool(self.env, name)
        return [self._built[name] for name in self.env.offered]


@solver(name=_registered(AGENTIC_SOLVER_NAME))
def episode_solver(episodes: dict[str, Episode], gold: GoldCache, setting: str, max_steps: int = DEFAULT_MAX_STEPS):
    """Run one episode with inspect-ai's ``react`` loop, then judge the environment it left."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        episode = episodes[str(state.sample_id)]
        env = EpisodeEnvironment(episode, setting, gold.data, retriever=gold.retriever, call_timeout=gold.call_timeout)
        answers: list[str | None] = []
        progress = {"turn": 0, "steps": 0, "stopped": None}

        async def on_continue(agent_state: AgentState) -> bool | str:
            progress["steps"] += 1
            if progress["steps"] >= max_steps:
                progress["stopped"] = "step_limit"
                return False
            if agent_state.output.message.tool_calls:
                return True
            answers.append(agent_state.output.completion)
            progress["turn"] += 1
            if progress["turn"] >= len(episode.turns):
                return False
            env.turn = progress["turn"]
            return episode.turns[progress["turn"]].user

        agent = react(prompt=system_prompt(episode, setting), tools=[OfferedTools(env)], submit=False, on_continue=on_continue)
        agent_state = AgentState(messages=list(state.messages))
        try:
            agent_state = await agent(agent_state)
        finally:
            # judged whatever happened (a limit, an error): the state the episode reached
            verdict = judge_episode(episode, gold.get(episode), env.session, env.trace, answers)
            state.metadata[VERDICT_KEY] = {
                **verdict.as_dict(),
                "steps": progress["steps"],
                "stopped": progress["stopped"],
                "trajectory": [r.as_dict() for r in env.trace],
            }
            state.messages = agent_state.messages
            state.output = agent_state.output
        return state

    return solve


@scorer(metrics={key: [mean()] for key in SCORE_KEYS}, name=_registered(AGENTIC_SCORER_NAME))
def achieved():
    """Success (state and information), each component, and ROUGE-L beside them (never inside success)."""

    async def score(state: TaskState, target: Target) -> Score:
        verdict = state.metadata.get(VERDICT_KEY)
        if verdict is None:
            return Score(value={k: 0.0 for k in SCORE_KEYS}, explanation="the episode did not run")
        value = {
            "success": float(verdict["success"]),
            "state": float(verdict["state_ok"]),
            "information": float(verdict["information_ok"]),
            "rouge_l": float(verdict["rouge_l"] or 0.0),
        }
        explanation = "success" if verdict["success"] else (
            f"state differs in {sorted(verdict['state_diff'])}; missing results of "
            f"{[m['name'] for m in verdict['missing']]}"
        )
        return Score(value=value, explanation=explanation, metadata=verdict)

    return score


@task(name=_registered("apibank_agentic"))
def apibank_agentic(
    level: str = "level-3",
    setting: str = DEFAULT_SETTING,
    data_dir: str | None = None,
    trials: int = 1,
    max_steps: int = DEFAULT_MAX_STEPS,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> Task:
    """API-Bank agentic episodes of one level and tool-discovery setting; ``trials`` epochs give pass^k."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {', '.join(SETTINGS)}, not {setting!r}")
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    episodes = load_episodes(level, data_dir).episodes
    samples = [
        Sample(id=e.id, input=e.turns[0].user, target=[t.answer for t in e.turns if t.answer] or [""],
               metadata={"level": level, "setting": setting, "turns": len(e.turns), "source": e.source})
        for e in episodes
    ]
    reducers = ["mean"] + ([pass_k(trials), pass_at(trials)] if trials > 1 else [])
    return Task(
        dataset=MemoryDataset(samples, name=f"apibank-agentic-{level}-{setting}"),
        solver=episode_solver({e.id: e for e in episodes}, default_gold_cache(data_dir), setting, max_steps),
        scorer=achieved(),
        epochs=Epochs(trials, reducers),
        time_limit=int(time_limit),
        message_limit=4 * max_steps + 8,
        name=f"apibank_agentic_{level.replace('-', '_')}_{setting.replace('-', '_')}",
    )
