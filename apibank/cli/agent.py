"""``apibank agent``: agentic episodes (the model drives the tool loop), judged on what it achieved."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from apibank.benchmark import (
    AGENT_TOOL_FORMATS, DEFAULT_AGENT_TOOL_FORMAT, DEFAULT_SETTING, SETTINGS, TEMPLATE_MODES, UNSIZED_MAX_NEW_TOKENS,
)
from apibank.cli.backend_flags import add_backend_flags, calls_read_back, chosen_backend
from apibank.cli.evaluate import hub_id, saved_lines
from apibank.cli.flags import (
    add_levels, add_output, add_overwrite, add_quiet, add_thinking_budget, check_audit, check_thinking_budget,
    checked_levels, progress_bar, show_progress,
)
from apibank.errors import UsageError
from apibank.files import TRAJECTORIES_FILE
from apibank.generate.interrupts import exit_status, what_happened


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
    add_thinking_budget(gen)
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
    check_thinking_budget(args)
    if args.time_limit is not None and not 0 < args.time_limit < float("inf"):
        raise UsageError(f"--time-limit {args.time_limit}: give a positive number of seconds")
    scripted = args.model in SCRIPTED_AGENTS
    args.backend, args.backend_choice, args.backend_options = chosen_backend(args, scripted=scripted)
    check_data_dir(args.data_dir, levels)
    check_audit(args)
    if args.output is not None:
        check_writable(args.output)
    if scripted:
        return levels, price
    if args.tool_format == "text" and "chat_template" in args.backend_options:
        if args.backend_options["chat_template"] not in TEMPLATE_MODES:
            raise UsageError("--chat-template FILE goes with the native tool format; --tool-format text sends a "
                             "plain transcript without a chat template")
        if args.backend_options.get("chat_template_kwargs"):
            raise UsageError("--chat-template-kwargs goes with the native tool format; --tool-format text sends a "
                             "plain transcript without a chat template, so no template reads them")
        args.backend_options["chat_template"] = "off"  # the transcript goes out as plain text, never in a template
    BACKEND_REGISTRY.get(args.backend).check_options(args.model, args.backend_options)
    if args.tool_format != "text":  # the native format's calls must read back, or every step reads none
        calls_read_back(args.backend, args.model, args.backend_options, way_out="--tool-format text",
                        native_only=args.tool_format == "auto")
    return levels, price


def run(args: argparse.Namespace) -> int:
    from apibank.cli.evaluate import push_target
    from apibank.run_folder import hold

    levels, price = check_arguments(args)
    repo = push_target(args)
    if repo and args.output is None:
        raise UsageError("--push-to-hub needs --output, the folder whose result file is pushed")
    output = Path(args.output) if args.output else None
    if output is None:
        return _run(args, levels, price, repo, output)
    with hold(output, "agent", getattr(args, "command_line", None)):
        return _run(args, levels, price, repo, output)


def _run(args: argparse.Namespace, levels: list[str], price: Any, repo: str | None, output: Path | None) -> int:
    from apibank.report.agentic import summary_table
    from apibank.hub.agentic import agentic_leaderboard_note
    from apibank.pipeline.agentic import Interrupted, previous_trajectories, run_agentic
    from apibank.pipeline.results import unread_calls_line

    if args.limit is not None:
        print(f"apibank agent: warning: --limit {args.limit} runs a subset of the benchmark: no result file is "
              "written or pushed under the official task ids", file=sys.stderr)
    previous = previous_trajectories(output, args.model, overwrite=args.overwrite) if output is not None else []
    if previous:
        print(f"apibank agent: resuming: {len(previous)} episodes in {output / TRAJECTORIES_FILE} are kept",
              file=sys.stderr)
    shown = show_progress(args)
    try:
        results = run_agentic(
            args.model, levels, setting=args.setting, backend=args.backend, backend_options=args.backend_options,
            backend_choice=args.backend_choice, tool_format=args.tool_format, max_new_tokens=args.max_new_tokens,
            thinking_budget=args.thinking_budget,
            data_dir=args.data_dir, output=output, previous=previous, overwrite=args.overwrite, trials=args.trials,
            limit=args.limit, max_steps=args.max_steps, time_limit=args.time_limit, batch_size=args.batch_size,
            price=price, dataset_id=args.dataset_id,
            progress_bar=lambda total, desc, initial: progress_bar(total, desc, enabled=shown, unit="episode",
                                                                   initial=initial),
        )
    except Interrupted as interrupted:
        happened, status = what_happened(interrupted.cause), exit_status(interrupted.cause)
        if output is None:
            print(f"\napibank agent: {happened}; nothing is saved without --output", file=sys.stderr)
            return status
        trajectories = output / TRAJECTORIES_FILE
        saved = saved_lines(trajectories)
        earlier = f", {len(previous)} of them from earlier runs" if previous else ""
        print(f"\napibank agent: {happened}; {saved} episodes are saved in {trajectories} ({saved - len(previous)} "
              f"by this run{earlier}); only the episodes running are lost. Run the same command again to resume "
              "where it stopped.", file=sys.stderr)
        return status
    if output is not None:
        note = agentic_leaderboard_note(results, args.dataset_id)
        if note:
            print(f"note: {note}", file=sys.stderr)
    summaries = results["levels"]
    if args.json:
        print(json.dumps(summaries, default=str))
    else:
        print(f"API-Bank agentic: model={results['model']['id']} setting={args.setting} trials={args.trials}")
        print(summary_table(summaries))
        verified = (results.get("verified") or {}).get("levels")
        if verified:
            print(f"\nverified subset (row audit {results['verified']['audit']['version']}; separate from the figures "
                  "above):")
            print(summary_table(verified))
    unread = unread_calls_line(results, "steps")
    if unread:
        print(unread, file=sys.stderr if args.json else sys.stdout)
    if output is not None:  # --json: stdout holds the JSON alone
        print(f"\nwritten to {output}/ (results.json, {TRAJECTORIES_FILE}, report.md, report.html, leaderboard/)",
              file=sys.stderr if args.json else sys.stdout)
    if repo:
        from apibank.hub.agentic import publish_agentic

        published = publish_agentic(output, repo, dataset_id=args.dataset_id)
        print(f"benchmark dataset revision: {published['dataset_revision'] or 'unknown (not on the Hub)'}",
              file=sys.stderr)
        for where, url in published["pull_requests"].items():
            print(f"pull request ({where}): {url}", file=sys.stderr)
    return 0
