"""``apibank agent``: agentic episodes (the model drives the tool loop), judged on what it achieved."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path
from typing import Any

from apibank.benchmark import (
    AGENT_TOOL_FORMATS, DEFAULT_AGENT_TOOL_FORMAT, DEFAULT_SETTING, SETTINGS, TEMPLATE_MODES, UNSIZED_MAX_NEW_TOKENS,
)
from apibank.cli.backend_flags import add_backend_flags, chosen_backend
from apibank.cli.evaluate import hub_id, saved_lines
from apibank.cli.flags import (
    add_levels, add_output, add_overwrite, add_quiet, checked_levels, progress_bar, show_progress,
)
from apibank.errors import OutputError, UsageError
from apibank.files import TRAJECTORIES_FILE, write_json_lines


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="oracle (scripted gold agent), none (answers without calls), a Hub id or local path "
                             "(transformers; a .gguf file works), or a model name served by --base-url")
    add_levels(parser, "levels to run (default: all)")
    parser.add_argument("--setting", default=DEFAULT_SETTING, choices=SETTINGS,
                        help="searcher: find tools with ToolSearcher (level 1: the dialogue's tools are given); "
                             "all-tools: every tool of the set offered")
    parser.add_argument("--data-dir", default=None, help="local upstream copy (default: $APIBANK_DATA_DIR or download)")
    add_output(parser, "folder for results.json, trajectories.jsonl, report.md, report.html, leaderboard/")
    parser.add_argument("--trials", type=int, default=1, help="runs per episode (pass^k and pass@k with k = trials)")
    parser.add_argument("--limit", type=int, default=None, help="first N episodes per level (a subset: not comparable)")
    parser.add_argument("--max-steps", type=int, default=None, help="model steps per episode (default 40)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per episode (default 300)")
    add_overwrite(parser, "discard trajectories already in --output (default: resume)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: per level the headline figures")
    add_quiet(parser)
    parser.add_argument("--dataset-id", type=hub_id("--dataset-id"), default=None, metavar="NAMESPACE/NAME",
                        help="the benchmark's Hub dataset (the repository holding eval.yaml) the result file "
                        "points at; without it no result file is written; required to push")
    parser.add_argument("--push-to-hub", nargs="?", const=True, default=None, metavar="MODEL_REPO",
                        help="open a pull request with the results on the model repository (default: --model); "
                        "needs --dataset-id and --output, never with --limit")
    gen = parser.add_argument_group("generation (as for evaluate)")
    gen.add_argument("--tool-format", default=DEFAULT_AGENT_TOOL_FORMAT, choices=AGENT_TOOL_FORMATS,
                     help="native: the chat template's / endpoint's tool calling; text: our JSON-in-text "
                          "transcript (models without a tool-capable template); auto: native when available")
    gen.add_argument("--batch-size", type=int, default=8,
                     help="episodes stepped together: each model step is one batched call (1: one at a time)")
    gen.add_argument("--max-new-tokens", type=int, default=UNSIZED_MAX_NEW_TOKENS,
                     help=f"cap on new tokens per model step (default {UNSIZED_MAX_NEW_TOKENS}: a step has no gold "
                          "answer to size a budget from)")
    gen.add_argument("--price-per-mtok", default=None, metavar="IN,OUT",
                     help="price per million prompt tokens and per million generated tokens: adds a cost to usage")
    add_backend_flags(gen, backend_help="auto (default): vllm where it is installed and supports the model, "
                      "openai with --base-url, else transformers")


def check_arguments(args: argparse.Namespace) -> tuple[list[str], Any]:
    """Everything that can be checked before a model loads or a file is written; returns the levels and
    the price (or None)."""
    from apibank.agent.agents import SCRIPTED_AGENTS
    from apibank.cli.folders import check_data_dir, check_writable
    from apibank.generate.backends import BACKEND_REGISTRY
    from apibank.pipeline.results import parse_price

    levels = checked_levels(args.levels)
    try:
        price = parse_price(args.price_per_mtok)
    except ValueError as error:
        raise UsageError(str(error)) from None
    for name, value, low in (("--trials", args.trials, 1), ("--limit", args.limit, 1),
                             ("--batch-size", args.batch_size, 1), ("--max-new-tokens", args.max_new_tokens, 1),
                             ("--max-steps", args.max_steps, 1)):
        if value is not None and value < low:
            raise UsageError(f"{name} {value}: must be at least {low}")
    if args.time_limit is not None and not 0 < args.time_limit < float("inf"):
        raise UsageError(f"--time-limit {args.time_limit}: give a positive number of seconds")
    scripted = args.model in SCRIPTED_AGENTS
    args.backend, args.backend_choice, args.backend_options = chosen_backend(args, scripted=scripted)
    check_data_dir(args.data_dir, levels)
    if args.output is not None:
        check_writable(args.output)
    if scripted:
        return levels, price
    if args.tool_format == "text" and "chat_template" in args.backend_options:
        if args.backend_options["chat_template"] not in TEMPLATE_MODES:
            raise UsageError("--chat-template FILE goes with the native tool format; --tool-format text sends a "
                             "plain transcript without a chat template")
        args.backend_options["chat_template"] = "off"  # the transcript goes out as plain text, never in a template
    BACKEND_REGISTRY.get(args.backend).check_options(args.model, args.backend_options)
    return levels, price


def run(args: argparse.Namespace) -> int:
    from apibank.agent.files import summary_table
    from apibank.agent.runner import DEFAULT_MAX_STEPS, DEFAULT_TIME_LIMIT, Limits, default_gold_cache, run_level, summarise
    from apibank.cli.evaluate import push_target
    from apibank.data.episodes import load_episodes
    from apibank.hub.agentic import agentic_leaderboard_note
    from apibank.pipeline.agentic import write_agentic_outputs
    from apibank.pipeline.results import library_versions, package_version, usage_totals

    levels, price = check_arguments(args)
    repo = push_target(args)
    if repo and args.output is None:
        raise UsageError("--push-to-hub needs --output, the folder whose result file is pushed")
    if args.limit is not None:
        print(f"apibank agent: warning: --limit {args.limit} runs a subset of the benchmark: no result file is "
              "written or pushed under the official task ids", file=sys.stderr)
    output = Path(args.output) if args.output else None
    previous = _previous_trajectories(output, args) if output is not None else []
    done = {_key(record): record for record in previous}
    if previous:
        print(f"apibank agent: resuming: {len(previous)} episodes in {output / TRAJECTORIES_FILE} are kept",
              file=sys.stderr)
    sets = [load_episodes(level, args.data_dir) for level in levels]
    gold = default_gold_cache(args.data_dir)
    agent_factory, driver = _agent(args)
    limits = Limits(max_steps=args.max_steps or DEFAULT_MAX_STEPS, time_limit=args.time_limit or DEFAULT_TIME_LIMIT)
    trajectories = output / TRAJECTORIES_FILE if output is not None else None
    try:
        if output is not None:
            output.mkdir(parents=True, exist_ok=True)
            if args.overwrite and trajectories.exists():
                trajectories.unlink()
        summaries, records = {}, []
        started = time.perf_counter()
        for episodes in sets:
            if args.limit:
                episodes.episodes = episodes.episodes[: args.limit]
            keys = [(e.id, args.setting, trial) for trial in range(args.trials) for e in episodes.episodes]
            with progress_bar(len(keys), f"agent {episodes.level}", enabled=show_progress(args), unit="episode",
                              initial=sum(key in done for key in keys)) as bar:
                level_records = run_level(agent_factory, episodes, args.setting, gold, trials=args.trials,
                                          limits=limits, trajectories=trajectories, done=done,
                                          progress=lambda line: bar.update(), batch_size=args.batch_size)
            summaries[episodes.level] = summarise(episodes, level_records, args.trials)
            records += level_records
        wall = time.perf_counter() - started
        model_info = driver.info() if driver is not None else {"id": args.model, "backend": "scripted"}
        if args.backend_choice:
            model_info["backend_choice"] = args.backend_choice
        template = driver.backend.template_info() if driver is not None and hasattr(driver.backend, "template_info") else None
    except KeyboardInterrupt:
        if trajectories is None:
            print("\napibank agent: interrupted; nothing is saved without --output", file=sys.stderr)
            return 130
        saved = saved_lines(trajectories)
        earlier = f", {len(previous)} of them from earlier runs" if previous else ""
        print(f"\napibank agent: interrupted; {saved} episodes are saved in {trajectories} ({saved - len(previous)} "
              f"by this run{earlier}); only the episodes running are lost. Run the same command again to resume "
              "where it stopped.", file=sys.stderr)
        return 130
    finally:
        if driver is not None:
            driver.close()
    if trajectories is not None:  # written as the episodes ended: now in the order of a one-at-a-time run
        ran = {_key(record) for record in records}
        write_json_lines(trajectories, [*(r for r in previous if _key(r) not in ran), *records])
    this_run = [r for r in records if _key(r) not in done]

    def model_usage(among: list[dict]) -> list[dict]:
        return [{"prompt_tokens": r["usage"].get("prompt_tokens"), "generated_tokens": r["usage"].get("completion_tokens"),
                 "seconds": r.get("model_seconds")} for r in among]

    usage = usage_totals(model_usage(this_run), earlier=model_usage([r for r in records if _key(r) in done]),
                         price_per_mtok=price, wall_seconds=wall)
    usage["episodes_per_second"] = round(len(this_run) / wall, 4) if this_run and wall > 0 else None
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
        write_agentic_outputs(results, output, dataset_id=args.dataset_id)
        note = agentic_leaderboard_note(results, args.dataset_id)
        if note:
            print(f"note: {note}", file=sys.stderr)
    if args.json:
        print(json.dumps(summaries, default=str))
    else:
        print(f"API-Bank agentic: model={model_info['id']} setting={args.setting} trials={args.trials}")
        print(summary_table(summaries))
    if repo:
        from apibank.hub.agentic import publish_agentic

        published = publish_agentic(output, repo, dataset_id=args.dataset_id)
        print(f"benchmark dataset revision: {published['dataset_revision'] or 'unknown (not on the Hub)'}",
              file=sys.stderr)
        for where, url in published["pull_requests"].items():
            print(f"pull request ({where}): {url}", file=sys.stderr)
    return 0


def _key(record: dict) -> tuple[str, str, int]:
    """What identifies an episode's run: the episode, the setting and the trial."""
    return record["episode"], record["setting"], record["trial"]


def _previous_trajectories(output: Path, args: argparse.Namespace) -> list[dict]:
    """The trajectories a resumed run keeps (none with --overwrite)."""
    from apibank.agent.runner import read_trajectories

    trajectories = output / TRAJECTORIES_FILE
    if args.overwrite or not trajectories.exists():
        return []
    try:
        records = read_trajectories(trajectories)
    except ValueError as error:
        raise OutputError(f"{error}, or give --overwrite to discard the file") from None
    for record in records:
        if record.get("agent") != args.model:
            raise OutputError(f"{trajectories} holds trajectories of {record.get('agent')!r}, not {args.model!r}; "
                              "use another --output, or --overwrite to discard them")
    return records


def _agent(args: argparse.Namespace):
    """``(agent factory, model driver or None)``: a scripted agent class, or handles on one loaded model."""
    from apibank.agent.agents import SCRIPTED_AGENTS

    if args.model in SCRIPTED_AGENTS:
        return SCRIPTED_AGENTS[args.model], None
    from apibank.agent.model_agent import AgentSetupError, ModelAgent, ModelDriver
    from apibank.generate.backends import make_backend

    backend = make_backend(args.model, args.backend, **args.backend_options)
    try:
        driver = ModelDriver(backend, tool_format=args.tool_format, max_new_tokens=args.max_new_tokens,
                             label=args.model)
    except AgentSetupError as error:
        backend.close()
        raise UsageError(str(error)) from None
    return (lambda: ModelAgent(driver)), driver
