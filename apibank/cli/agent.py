"""``apibank agent``: agentic episodes (the model drives the tool loop), judged on what it achieved."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path
from typing import Any

from apibank.agent.environment import SETTINGS
from apibank.cli.checks import UsageError

BACKENDS = ("transformers", "vllm", "openai")
TEMPLATE_MODES = ("auto", "on", "off")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="oracle (scripted gold agent), none (answers without calls), a Hub id or local path "
                             "(transformers; a .gguf file works), or a model name served by --base-url")
    parser.add_argument("--levels", nargs="+", default=None, metavar="LEVEL",
                        help="levels to run: 1 2 3 or level-1 ... (default: all)")
    parser.add_argument("--setting", default="searcher", choices=SETTINGS,
                        help="searcher: find tools with ToolSearcher (level 1: the dialogue's tools are given); "
                             "all-tools: every tool of the set offered")
    parser.add_argument("--data-dir", default=None, help="local upstream copy (default: $APIBANK_DATA_DIR or download)")
    parser.add_argument("--output", default=None, help="folder for results.json, trajectories.jsonl, report.md, leaderboard/")
    parser.add_argument("--trials", type=int, default=1, help="runs per episode (pass^k and pass@k with k = trials)")
    parser.add_argument("--limit", type=int, default=None, help="first N episodes per level (a subset: not comparable)")
    parser.add_argument("--max-steps", type=int, default=None, help="model steps per episode (default 40)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per episode (default 300)")
    parser.add_argument("--fresh", action="store_true", help="ignore trajectories already in --output (default: resume)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: per level the headline figures")
    gen = parser.add_argument_group("generation (as for evaluate)")
    gen.add_argument("--backend", default=None, choices=BACKENDS,
                     help="default: openai with --base-url, else transformers")
    gen.add_argument("--tool-format", default="auto", choices=["auto", "native", "text"],
                     help="native: the chat template's / endpoint's tool calling; text: our JSON-in-text "
                          "transcript (models without a tool-capable template); auto: native when available")
    gen.add_argument("--batch-size", type=int, default=8,
                     help="episodes stepped together: each model step is one batched call (1: one at a time)")
    gen.add_argument("--max-new-tokens", type=int, default=256, help="cap on new tokens per model step")
    gen.add_argument("--price-per-mtok", default=None, metavar="IN,OUT",
                     help="price per million prompt tokens and per million generated tokens: adds a cost to usage")
    gen.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    gen.add_argument("--device", default=None, help="transformers: device (default: cuda if available)")
    gen.add_argument("--chat-template", default="auto", metavar="auto|on|off|FILE",
                     help="FILE: a Jinja chat template replacing the model's (adapted to what it accepts; the "
                          "adaptations are recorded in results.json)")
    gen.add_argument("--base-url", default=None, help="openai: API root, e.g. http://127.0.0.1:8000/v1")
    gen.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: environment variable holding the key")
    gen.add_argument("--concurrency", type=int, default=8, help="openai: parallel requests of a step")


def check_arguments(args: argparse.Namespace) -> tuple[list[str], Any]:
    """Everything that can be checked before any work; returns the levels and the price (or None)."""
    import os

    from apibank.cli.checks import check_endpoint, check_model, check_output
    from apibank.pipeline import normalise_levels, parse_price

    try:
        levels = normalise_levels(args.levels)
    except ValueError as error:
        raise UsageError(f"--levels: {error}") from None
    try:
        price = parse_price(args.price_per_mtok)
    except ValueError as error:
        raise UsageError(str(error)) from None
    for name, value, low in (("--trials", args.trials, 1), ("--limit", args.limit, 1),
                             ("--batch-size", args.batch_size, 1), ("--max-new-tokens", args.max_new_tokens, 1),
                             ("--concurrency", args.concurrency, 1), ("--max-steps", args.max_steps, 1)):
        if value is not None and value < low:
            raise UsageError(f"{name} {value}: must be at least {low}")
    if args.data_dir is not None and not Path(args.data_dir).is_dir():
        raise UsageError(f"--data-dir {args.data_dir}: no such folder; give the upstream API-Bank folder, or "
                         "leave it out to download the data")
    if args.output is not None:
        check_output(Path(args.output))
    if args.model in ("oracle", "none"):
        return levels, price
    args.backend = args.backend or ("openai" if args.base_url else "transformers")
    template_file = args.chat_template not in TEMPLATE_MODES
    if template_file and args.tool_format == "text":
        raise UsageError("--chat-template FILE goes with the native tool format; --tool-format text sends a plain "
                         "transcript without a chat template")
    if args.backend == "openai":
        if not args.base_url:
            raise UsageError("--backend openai needs --base-url, e.g. --base-url http://127.0.0.1:8000/v1")
        if template_file:
            raise UsageError("--chat-template FILE: the server applies its own template; give the template to the "
                             "server instead (e.g. vLLM --chat-template)")
        check_endpoint(args.base_url, os.environ.get(args.api_key_env), 120.0)
        return levels, price
    check_model(args.model, args.backend, None)
    if template_file:
        from apibank.generate.backends.hf import read_chat_template

        try:
            read_chat_template(args.chat_template)
        except ValueError as error:
            raise UsageError(f"{error}; give a Jinja chat template file, or auto/on/off") from None
    return levels, price


def model_backend_options(args: argparse.Namespace) -> dict[str, Any]:
    """The backend options ``evaluate`` builds from the same flags (those the agent has not take their defaults)."""
    from apibank.cli.evaluate import backend_options

    defaults = {"revision": None, "device_map": None, "trust_remote_code": False, "tensor_parallel_size": 1,
                "max_retries": 5, "request_timeout": 120.0, "tool_results_as_user": False}
    options = backend_options(argparse.Namespace(**{**defaults, **vars(args)}))
    if args.tool_format == "text" and "chat_template" in options:
        options["chat_template"] = "off"  # the transcript goes out as plain text, never inside a template
    return options


def run(args: argparse.Namespace) -> int:
    import time

    from apibank.agent.episodes import load_episodes
    from apibank.agent.files import summary_table, write_outputs
    from apibank.agent.runner import DEFAULT_MAX_STEPS, DEFAULT_TIME_LIMIT, Limits, default_gold_cache, read_trajectories, run_level, summarise
    from apibank.pipeline import library_versions, package_version, usage_totals

    levels, price = check_arguments(args)
    output = Path(args.output) if args.output else None
    trajectories = output / "trajectories.jsonl" if output is not None else None
    done: dict = {}
    if trajectories is not None and not args.fresh:
        for record in read_trajectories(trajectories):
            if record.get("agent") != args.model:
                raise UsageError(f"{trajectories} holds trajectories of {record.get('agent')!r}, not "
                                 f"{args.model!r}; use another --output or --fresh")
            done[(record["episode"], record["setting"], record["trial"])] = record
    sets = [load_episodes(level, args.data_dir) for level in levels]
    gold = default_gold_cache(args.data_dir)
    agent_factory, driver = _agent(args)
    try:
        limits = Limits(max_steps=args.max_steps or DEFAULT_MAX_STEPS, time_limit=args.time_limit or DEFAULT_TIME_LIMIT)
        if output is not None:
            output.mkdir(parents=True, exist_ok=True)
            if args.fresh and trajectories.exists():
                trajectories.unlink()
        progress = None if args.json or driver is None else (lambda line: print(line, file=sys.stderr, flush=True))
        summaries, records = {}, []
        started = time.perf_counter()
        for episodes in sets:
            if args.limit:
                episodes.episodes = episodes.episodes[: args.limit]
            level_records = run_level(agent_factory, episodes, args.setting, gold, trials=args.trials, limits=limits,
                                      trajectories=trajectories, done=done, progress=progress,
                                      batch_size=args.batch_size)
            summaries[episodes.level] = summarise(episodes, level_records, args.trials)
            records += level_records
        wall = time.perf_counter() - started
        model_info = driver.info() if driver is not None else {"id": args.model, "backend": "scripted"}
        template = driver.backend.template_info() if driver is not None and hasattr(driver.backend, "template_info") else None
    finally:
        if driver is not None:
            driver.close()
    usage = usage_totals([{"prompt_tokens": r["usage"].get("prompt_tokens"),
                           "generated_tokens": r["usage"].get("completion_tokens"),
                           "seconds": r.get("model_seconds")} for r in records],
                         price_per_mtok=price, wall_seconds=wall)
    fresh = sum(1 for r in records if (r["episode"], r["setting"], r["trial"]) not in done)
    usage["episodes_per_second"] = round(fresh / wall, 4) if fresh and wall > 0 else None
    results = {
        "model": model_info,
        "setting": args.setting,
        "trials": args.trials,
        "limit": args.limit,
        "limits": {"max_steps": limits.max_steps, "time_limit": limits.time_limit, "call_timeout": limits.call_timeout},
        "batch_size": args.batch_size,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "apibank_version": package_version(),
        "levels": summaries,
        "usage": usage,
        "versions": library_versions(),
    }
    if driver is not None:
        results["decoding"] = driver.settings.as_dict()
    if template is not None:  # the chat template used and each adaptation it needed
        results["chat_template"] = template
    if output is not None:
        write_outputs(results, output)
    if args.json:
        print(json.dumps(summaries, default=str))
    else:
        print(f"API-Bank agentic: model={model_info['id']} setting={args.setting} trials={args.trials}")
        print(summary_table(summaries))
    return 0


def _agent(args: argparse.Namespace):
    """``(agent factory, model driver or None)``: a scripted agent class, or handles on one loaded model."""
    from apibank.agent.agents import SCRIPTED_AGENTS

    if args.model in SCRIPTED_AGENTS:
        return SCRIPTED_AGENTS[args.model], None
    from apibank.agent.model_agent import AgentSetupError, ModelAgent, ModelDriver
    from apibank.generate.backends import make_backend

    backend = make_backend(args.model, args.backend, **model_backend_options(args))
    try:
        driver = ModelDriver(backend, tool_format=args.tool_format, max_new_tokens=args.max_new_tokens,
                             label=args.model)
    except AgentSetupError as error:
        backend.close()
        raise UsageError(str(error)) from None
    return (lambda: ModelAgent(driver)), driver
