"""``apibank evaluate``: generate predictions for a model, score them, write results, report and leaderboard files.

``--model oracle`` replays the gold answers: the ceilings of both judging protocols, offline.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from apibank.benchmark import DEFAULT_FORMAT, DEFAULT_PROTOCOL, FORMATS, MODEL_FORMAT, PROTOCOLS, SAMPLE_KINDS
from apibank.cli.checks import UsageError
from apibank.cli.backend_flags import add_backend_flags, calls_read_back, chosen_backend
from apibank.cli.flags import (
    add_levels, add_output, add_overwrite, add_quiet, add_subset, add_thinking_budget, check_audit,
    check_thinking_budget, checked_levels, show_progress,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="Hub model id, local path, endpoint model name, or 'oracle'")
    add_levels(parser, "levels to run (default: all)")
    parser.add_argument("--format", dest="fmt", choices=FORMATS, default=None,
                        help=f"prompt format (default: {MODEL_FORMAT}; {DEFAULT_FORMAT} for --model oracle)")
    parser.add_argument("--limit", type=int, default=None,
                        help="at most N API-call rows and N response rows per level (a quick subset: scores, "
                        "details and report are written and marked as a subset; leaderboard files under the "
                        "official task ids and pushes are refused)")
    parser.add_argument("--kinds", nargs="+", choices=SAMPLE_KINDS, default=None, metavar="KIND",
                        help="only these kinds of row: api (the API calls) and/or response (the answers to the "
                        "user); default both. One kind alone is a subset, like --limit")
    add_subset(parser)
    parser.add_argument("--allow-subset", action="store_true",
                        help="acknowledge that a --limit, --kinds or --subset run is a subset (silences the warning)")
    add_output(parser, "output folder (default: apibank-results/<model>-<format>)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: download)")
    add_overwrite(parser, "discard earlier predictions instead of resuming")
    gen = parser.add_argument_group("generation")
    gen.add_argument("--batch-size", type=int, default=8)
    gen.add_argument("--max-new-tokens", type=int, default=None,
                     help="cap on new tokens per sample (default: per level and sample kind, the longest gold "
                     "answer in the model's tokens + 16)")
    add_thinking_budget(gen)
    gen.add_argument("--prompts-only", action="store_true",
                     help="generate nothing: write every row's prompt, its conversation and the template's "
                     "adaptations to OUTPUT/prompts.jsonl (the model's tokenizer loads, not its weights), exit 0")
    gen.add_argument("--price-per-mtok", default=None, metavar="IN,OUT",
                     help="price per million prompt tokens and per million generated tokens: adds a cost to usage")
    gen.add_argument("--icl", action="store_true", help="level 3, paper format: the instruction with the worked example")
    add_backend_flags(gen, backend_help="auto (default): vllm where it is installed and supports the model, "
                      "openai with --base-url, else transformers")
    out = parser.add_argument_group("scoring and leaderboard")
    out.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS))
    out.add_argument("--dataset-id", type=hub_id("--dataset-id"), default=None, metavar="NAMESPACE/NAME",
                     help="the benchmark's Hub dataset (the repository holding eval.yaml) the leaderboard files "
                     "point at; without it no model leaderboard files are written; required to push")
    out.add_argument("--dataset-revision", default=None, metavar="COMMIT",
                     help="commit of that Hub dataset repository (default: read from the Hub when pushing)")
    out.add_argument("--leaderboard-protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL,
                     help="protocol of the report's per-API plot (the leaderboard files hold every protocol)")
    out.add_argument("--push-to-hub", nargs="?", const=True, default=None, metavar="MODEL_REPO",
                     help="upload the per-sample details as a dataset, then open a pull request with the results "
                     "(linking them) on the model repository (default: --model); needs --dataset-id")
    out.add_argument("--details-repo", type=hub_id("--details-repo"), default=None, metavar="NAMESPACE/NAME",
                     help="with --push-to-hub: dataset repository for the per-sample details "
                     "(default: MODEL_REPO-apibank-details)")
    out.add_argument("--push-eval-yaml", type=hub_id("--push-eval-yaml"), default=None, metavar="DATASET_REPO",
                     help="with --push-to-hub: also open a pull request adding eval.yaml to this dataset repository")
    out.add_argument("--json", action="store_true", help="print results.json instead of the table")
    add_quiet(out)
    out.add_argument("--errors", action="store_true",
                     help="also print the error analysis: wrong API calls by the paper's error types, per level "
                     "and protocol (always in results.json and report.md)")


def hub_id(flag: str):
    def parse(text: str) -> str:
        from apibank.hub.ids import HubIdError, check_repo_id

        try:
            return check_repo_id(text, flag)
        except HubIdError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def subset_asked(args: argparse.Namespace) -> str:
    """The flags that make the run a subset (``--subset verified --limit 5``); empty for the whole benchmark."""
    flags = [f"--subset {args.subset}"] if getattr(args, "subset", None) else []
    if getattr(args, "limit", None) is not None:
        flags.append(f"--limit {args.limit}")
    if one_kind(args):
        flags.append("--kinds " + " ".join(args.kinds))
    return " ".join(flags)


def one_kind(args: argparse.Namespace) -> bool:
    """``--kinds`` names one kind of row only (a subset of every level)."""
    return bool(getattr(args, "kinds", None)) and set(args.kinds) != set(SAMPLE_KINDS)


def push_target(args: argparse.Namespace) -> str | None:
    """The model repository to push to (None without --push-to-hub), checked before any work is done
    (``apibank evaluate`` and ``apibank agent``)."""
    from apibank.hub.ids import HubIdError, check_repo_id

    if not args.push_to_hub:
        if getattr(args, "push_eval_yaml", None) or getattr(args, "details_repo", None):
            raise UsageError("--push-eval-yaml and --details-repo go with --push-to-hub")
        return None
    if subset_asked(args):
        raise UsageError(f"a subset ({subset_asked(args)}) is never pushed to the Hub")
    if not args.dataset_id:
        raise UsageError("--push-to-hub needs --dataset-id NAMESPACE/NAME, the benchmark's Hub "
                         "dataset (the repository holding eval.yaml)")
    if args.push_to_hub is True and scripted_model(args.model):
        raise UsageError(f"--push-to-hub needs a repository name for --model {args.model}")
    repo = args.model if args.push_to_hub is True else args.push_to_hub
    try:
        return check_repo_id(repo, "the model repository (--push-to-hub)")
    except HubIdError as error:
        raise UsageError(f"{error}") from None


def scripted_model(model: str) -> bool:
    """``--model`` names a scripted backend (the gold-replaying oracle), not a model."""
    from apibank.generate.backends import BACKEND_REGISTRY

    return model in BACKEND_REGISTRY.names(scripted=True)


def default_format(model: str) -> str:
    return DEFAULT_FORMAT if scripted_model(model) else MODEL_FORMAT


def default_output(model: str, fmt: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/")).strip("_") or "model"
    return Path("apibank-results") / f"{slug}-{fmt}"


def check_arguments(args: argparse.Namespace, fmt: str, output: Path) -> None:
    """Everything that can be checked before the output folder is locked and the model loads; sets
    ``args.backend`` (auto resolved), ``args.backend_choice`` and ``args.backend_options``.
    Raises :class:`UsageError` (one line saying what is wrong and what to do)."""
    from apibank.cli.checks import check_output
    from apibank.cli.folders import check_data_dir
    from apibank.generate.backends import BACKEND_REGISTRY

    levels = checked_levels(args.levels)
    for name, value, low in (("--limit", args.limit, 1), ("--batch-size", args.batch_size, 1),
                             ("--max-new-tokens", args.max_new_tokens, 1)):
        if value is not None and value < low:
            raise UsageError(f"{name} {value}: must be at least {low}")
    check_thinking_budget(args)
    if args.icl and fmt != "paper":
        raise UsageError(f"--icl: the worked example is part of the paper prompt, which --format {fmt} does not "
                         "use; drop --icl, or use --format paper")
    if args.icl and "level-3" not in levels:
        raise UsageError(f"--icl: only level 3's instruction has a worked example, and --levels {' '.join(levels)} "
                         "has none; drop --icl, or add level 3")
    scripted = scripted_model(args.model)
    args.backend, args.backend_choice, args.backend_options = chosen_backend(args, scripted=scripted)
    check_data_dir(args.data_dir, levels)
    check_audit(args)
    check_output(output)
    if getattr(args, "prompts_only", False) and scripted:
        raise UsageError(f"--prompts-only renders a model's prompts; --model {args.model} has none")
    if not scripted:
        BACKEND_REGISTRY.get(args.backend).check_options(args.model, args.backend_options, fmt=fmt)
    args.prompt_renderer = None
    if not scripted and fmt == "tools":
        args.prompt_renderer = calls_read_back(args.backend, args.model, args.backend_options)



def run(args: argparse.Namespace) -> int:
    from apibank.cli.checks import check_resume
    from apibank.run_folder import hold

    fmt = args.fmt or default_format(args.model)
    output = Path(args.output) if args.output else default_output(args.model, fmt)
    check_arguments(args, fmt, output)
    if args.prompts_only:
        with hold(output, "evaluate", getattr(args, "command_line", None)):
            return prompts_only(args, fmt, output)
    repo = push_target(args)
    with hold(output, "evaluate", getattr(args, "command_line", None)):
        kept = 0 if args.overwrite else check_resume(output, fmt=fmt, model=args.model)
        return _run(args, fmt, output, repo, kept)


def _run(args: argparse.Namespace, fmt: str, output: Path, repo: str | None, kept: int) -> int:
    import sys

    from apibank.generate.interrupts import exit_status, what_happened

    if subset_asked(args) and not args.allow_subset:
        asked = subset_asked(args)
        print(f"apibank evaluate: warning: {asked} scores a subset of the benchmark: its results are "
              "marked as a subset and never written or pushed under the official task ids (--allow-subset "
              "silences this warning)", file=sys.stderr)
    if kept:
        print(f"apibank evaluate: resuming: {kept} predictions in {output / 'predictions.jsonl'} are kept",
              file=sys.stderr)

    from apibank.hub.leaderboard import leaderboard_note
    from apibank.pipeline.classic import evaluate
    from apibank.pipeline.results import results_table

    try:
        results = _evaluate(evaluate, args, fmt, output)
    except KeyboardInterrupt as interrupt:
        saved = saved_lines(output / "predictions.jsonl")
        earlier = f", {kept} of them from earlier runs" if kept else ""
        print(f"\napibank evaluate: {what_happened(interrupt)}; {saved} predictions are saved in {output / 'predictions.jsonl'} "
              f"({saved - kept} by this run{earlier}); only the rows being generated are lost. "
              "Run the same command again to resume where it stopped.", file=sys.stderr)
        return exit_status(interrupt)
    print(json.dumps(results, indent=2, default=str) if args.json else results_table(results))
    said = sys.stderr if args.json else sys.stdout  # --json: stdout holds the JSON alone
    if args.errors:
        from apibank.report.error_types import results_error_table

        print("\n" + results_error_table(results), file=said)
    print(f"\nwritten to {output}/ (results.json, predictions.jsonl, details.jsonl, report.md, report.html, leaderboard/)",
          file=said)
    note = leaderboard_note(results, args.dataset_id)
    if note:
        print(f"note: {note}", file=said)
    if repo:
        from apibank.hub.details import publish

        published = publish(output, repo, dataset_id=args.dataset_id, details_repo=args.details_repo,
                            dataset_revision=args.dataset_revision, eval_yaml_repo=args.push_eval_yaml)
        print(f"per-sample details: {published['details']}")
        print(f"benchmark dataset revision: {published['dataset_revision'] or 'unknown (not on the Hub)'}")
        for where, url in published["pull_requests"].items():
            print(f"pull request ({where}): {url}")
    return 0


def prompts_only(args: argparse.Namespace, fmt: str, output: Path) -> int:
    from apibank.pipeline.classic import write_prompts

    summary = write_prompts(args.model, levels=args.levels, fmt=fmt, backend=args.backend, limit=args.limit,
                            subset=args.subset,
                            kinds=args.kinds, output_dir=output, data_dir=args.data_dir, icl=args.icl,
                            backend_options=args.backend_options, renderer=getattr(args, "prompt_renderer", None))
    adaptations = ", ".join(a["name"] for a in summary.get("template_adaptations") or []) or "none"
    read_back = (summary.get("calls_read_back") or {}).get("result")
    print(f"{summary['rows']} prompts ({fmt} format) written to {summary['path']}; every row's prompt shows its "
          f"whole conversation; template adaptations: {adaptations}; thinking: {summary['thinking'] or 'no'}"
          + (f"; the template's calls read back: {read_back}" if read_back else ""))
    return 0


def _evaluate(evaluate, args: argparse.Namespace, fmt: str, output: Path) -> dict:
    return evaluate(
        args.model,
        levels=args.levels,
        fmt=fmt,
        backend=args.backend,
        backend_choice=args.backend_choice,
        limit=args.limit,
        kinds=args.kinds,
        output_dir=output,
        data_dir=args.data_dir,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        price_per_mtok=args.price_per_mtok,
        icl=args.icl,
        protocols=args.protocols,
        backend_options=args.backend_options,
        dataset_id=args.dataset_id,
        dataset_revision=args.dataset_revision,
        leaderboard_protocol=args.leaderboard_protocol,
        overwrite=args.overwrite,
        progress=show_progress(args),
        thinking_budget=args.thinking_budget,
        subset=args.subset,
    )


def saved_lines(path: Path) -> int:
    """The complete lines of ``path`` (a last line without its newline was cut short and is not kept)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    return sum(1 for line in text.split("\n")[:-1] if line.strip())
