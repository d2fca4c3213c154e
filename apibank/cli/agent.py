"""``apibank agent``: agentic episodes (the model drives the tool loop), judged on what it achieved."""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
from pathlib import Path

from apibank.benchmark import DEFAULT_SETTING, SETTINGS
from apibank.cli.evaluate import hub_id
from apibank.cli.flags import (
    add_levels, add_output, add_overwrite, add_quiet, checked_levels, progress_bar, show_progress,
)
from apibank.errors import OutputError, UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True,
                        help="oracle (scripted gold agent), none (answers without calls), a Hub id or local path "
                             "(transformers; a .gguf file works), or a model name served by --base-url")
    add_levels(parser, "levels to run (default: all)")
    parser.add_argument("--setting", default=DEFAULT_SETTING, choices=SETTINGS,
                        help="searcher: find tools with ToolSearcher (level 1: the dialogue's tools are given); "
                             "all-tools: every tool of the set offered")
    parser.add_argument("--data-dir", default=None, help="local upstream copy (default: $APIBANK_DATA_DIR or download)")
    add_output(parser, "folder for results.json, trajectories.jsonl, report.md, leaderboard/")
    parser.add_argument("--trials", type=int, default=1, help="runs per episode (pass^k and pass@k with k = trials)")
    parser.add_argument("--limit", type=int, default=None, help="first N episodes per level (a subset: not comparable)")
    parser.add_argument("--max-steps", type=int, default=None, help="model steps per episode (default 40)")
    parser.add_argument("--time-limit", type=float, default=None, help="seconds per episode (default 300)")
    parser.add_argument("--backend", default=None, choices=["transformers", "vllm", "openai"],
                        help="default: openai with --base-url, else transformers")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (…/v1)")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoint's key")
    parser.add_argument("--tool-format", default="auto", choices=["auto", "native", "text"],
                        help="native: the chat template's / endpoint's tool calling; text: our JSON-in-text "
                             "template (models without a tool-capable template); auto: native when available")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-new-tokens", type=int, default=256)
    add_overwrite(parser, "discard trajectories already in --output (default: resume)")
    parser.add_argument("--json", action="store_true", help="print one JSON object: per level the headline figures")
    add_quiet(parser)
    parser.add_argument("--dataset-id", type=hub_id("--dataset-id"), default=None, metavar="NAMESPACE/NAME",
                        help="the benchmark's Hub dataset (the repository holding eval.yaml) the result file "
                        "points at; without it no result file is written; required to push")
    parser.add_argument("--push-to-hub", nargs="?", const=True, default=None, metavar="MODEL_REPO",
                        help="open a pull request with the results on the model repository (default: --model); "
                        "needs --dataset-id and --output, never with --limit")


def run(args: argparse.Namespace) -> int:
    from apibank.agent.files import summary_table
    from apibank.agent.runner import DEFAULT_MAX_STEPS, DEFAULT_TIME_LIMIT, Limits, default_gold_cache, run_level, summarise
    from apibank.cli.evaluate import push_target
    from apibank.data.episodes import load_episodes
    from apibank.hub.agentic import agentic_leaderboard_note
    from apibank.pipeline.agentic import write_agentic_outputs

    levels = check_arguments(args)
    repo = push_target(args)
    if repo and args.output is None:
        raise UsageError("--push-to-hub needs --output, the folder whose result file is pushed")
    if args.limit is not None:
        print(f"apibank agent: warning: --limit {args.limit} runs a subset of the benchmark: no result file is "
              "written or pushed under the official task ids", file=sys.stderr)
    output = Path(args.output) if args.output else None
    previous = _previous_trajectories(output, args) if output is not None else []
    agent_factory, model_info = _agent(args)
    limits = Limits(max_steps=args.max_steps or DEFAULT_MAX_STEPS, time_limit=args.time_limit or DEFAULT_TIME_LIMIT)
    trajectories = None
    done: dict = {}
    if output is not None:
        output.mkdir(parents=True, exist_ok=True)
        trajectories = output / "trajectories.jsonl"
        if args.overwrite and trajectories.exists():
            trajectories.unlink()
        for record in previous:
            done[(record["episode"], record["setting"], record["trial"])] = record
    gold = default_gold_cache(args.data_dir)
    summaries = {}
    for level in levels:
        episodes = load_episodes(level, args.data_dir)
        if args.limit:
            episodes.episodes = episodes.episodes[: args.limit]
        keys = [(episode.id, args.setting, trial) for trial in range(args.trials) for episode in episodes.episodes]
        with progress_bar(len(keys), f"agent {level}", enabled=show_progress(args), unit="episode",
                          initial=sum(key in done for key in keys)) as bar:
            records = run_level(agent_factory, episodes, args.setting, gold, trials=args.trials, limits=limits,
                                trajectories=trajectories, done=done, progress=lambda line: bar.update())
        summaries[level] = summarise(episodes, records, args.trials)
    results = {
        "model": model_info,
        "setting": args.setting,
        "trials": args.trials,
        "limit": args.limit,
        "limits": {"max_steps": limits.max_steps, "time_limit": limits.time_limit, "call_timeout": limits.call_timeout},
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "levels": summaries,
    }
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


def check_arguments(args: argparse.Namespace) -> list[str]:
    """Everything that can be checked before a model loads or a file is written; returns the levels."""
    from apibank.agent.agents import SCRIPTED_AGENTS
    from apibank.cli.checks import check_model
    from apibank.cli.folders import check_data_dir, check_writable

    levels = checked_levels(args.levels)
    for name, value, low in (("--trials", args.trials, 1), ("--limit", args.limit, 1),
                             ("--max-steps", args.max_steps, 1), ("--max-new-tokens", args.max_new_tokens, 1)):
        if value is not None and value < low:
            raise UsageError(f"{name} {value}: must be at least {low}")
    if args.time_limit is not None and not 0 < args.time_limit < float("inf"):
        raise UsageError(f"--time-limit {args.time_limit}: give a positive number of seconds")
    check_data_dir(args.data_dir, levels)
    if args.output is not None:
        check_writable(args.output)
    if args.model in SCRIPTED_AGENTS:
        return levels
    backend = args.backend or ("openai" if args.base_url else "transformers")
    if backend == "openai":
        if not args.base_url:
            raise UsageError("--backend openai needs --base-url, e.g. --base-url http://127.0.0.1:8000/v1")
    else:
        check_model(args.model, backend, None)
    return levels


def _previous_trajectories(output: Path, args: argparse.Namespace) -> list[dict]:
    """The trajectories a resumed run keeps (none with --overwrite)."""
    from apibank.agent.runner import read_trajectories

    trajectories = output / "trajectories.jsonl"
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
    from apibank.agent.agents import SCRIPTED_AGENTS

    if args.model in SCRIPTED_AGENTS:
        cls = SCRIPTED_AGENTS[args.model]
        return cls, {"id": args.model, "backend": "scripted"}
    from apibank.agent.backends import model_agent_factory

    return model_agent_factory(args)
