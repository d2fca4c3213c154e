"""``apibank evaluate``: generate predictions for a model, score them, write results, report and leaderboard files.

``--model oracle`` replays the gold answers: the ceilings of both judging protocols, offline.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

FORMATS = ("paper", "chat", "tools")
BACKENDS = ("transformers", "vllm", "openai")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", required=True, help="Hub model id, local path, endpoint model name, or 'oracle'")
    parser.add_argument("--levels", nargs="+", default=None, metavar="LEVEL",
                        help="levels to run: 1 2 3 or level-1 ... (default: all)")
    parser.add_argument("--format", dest="fmt", choices=FORMATS, default=None,
                        help="prompt format (default: chat; paper for --model oracle)")
    parser.add_argument("--backend", choices=BACKENDS, default="transformers")
    parser.add_argument("--limit", type=int, default=None,
                        help="at most N API-call rows and N response rows per level (a quick subset)")
    parser.add_argument("--output", default=None, help="output folder (default: apibank-results/<model>-<format>)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: download)")
    parser.add_argument("--overwrite", action="store_true", help="discard earlier predictions instead of resuming")
    gen = parser.add_argument_group("generation")
    gen.add_argument("--batch-size", type=int, default=8)
    gen.add_argument("--max-new-tokens", type=int, default=None,
                     help="cap on new tokens per sample (default: per level and sample kind, the longest gold "
                     "answer in the model's tokens + 16)")
    gen.add_argument("--price-per-mtok", default=None, metavar="IN,OUT",
                     help="price per million prompt tokens and per million generated tokens: adds a cost to usage")
    gen.add_argument("--icl", action="store_true", help="level 3, paper format: the instruction with the worked example")
    gen.add_argument("--revision", default=None, help="model revision (branch, tag or commit)")
    gen.add_argument("--dtype", default="auto", help="auto, float32, bfloat16, float16")
    gen.add_argument("--device", default=None, help="transformers: device (default: cuda if available)")
    gen.add_argument("--device-map", default=None, help="transformers: e.g. 'auto' to spread a model over GPUs")
    gen.add_argument("--trust-remote-code", action="store_true")
    gen.add_argument("--chat-template", choices=("auto", "on", "off"), default="auto",
                     help="paper format: wrap the prompt in the chat template (auto: if the tokenizer has one)")
    gen.add_argument("--tensor-parallel-size", type=int, default=1, help="vllm: GPUs per model")
    gen.add_argument("--base-url", default=None, help="openai: API root, e.g. http://127.0.0.1:8000/v1")
    gen.add_argument("--api-key-env", default="OPENAI_API_KEY", help="openai: environment variable holding the key")
    gen.add_argument("--concurrency", type=int, default=8, help="openai: parallel requests")
    gen.add_argument("--max-retries", type=int, default=5, help="openai: retries per request")
    gen.add_argument("--tool-results-as-user", action="store_true",
                     help="openai, chat format: send API results as user turns (the hosted OpenAI API rejects "
                     "tool messages that answer no tool call)")
    out = parser.add_argument_group("scoring and leaderboard")
    out.add_argument("--protocols", nargs="+", choices=("paper", "corrected"), default=["paper", "corrected"])
    out.add_argument("--dataset-id", default=None, help="Hub dataset id the leaderboard files point at")
    out.add_argument("--leaderboard-protocol", choices=("paper", "corrected"), default="paper",
                     help="protocol of the .eval_results values and the report's per-API plot")
    out.add_argument("--push-to-hub", nargs="?", const=True, default=None, metavar="MODEL_REPO",
                     help="open a pull request with the results on the model repository (default: --model)")
    out.add_argument("--push-eval-yaml", default=None, metavar="DATASET_REPO",
                     help="with --push-to-hub: also open a pull request adding eval.yaml to this dataset repository")
    out.add_argument("--json", action="store_true", help="print results.json instead of the table")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")


def default_output(model: str, fmt: str) -> Path:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model.strip("/")).strip("_") or "model"
    return Path("apibank-results") / f"{slug}-{fmt}"


def backend_options(args: argparse.Namespace) -> dict:
    if args.model == "oracle":
        return {}
    if args.backend == "transformers":
        return {"revision": args.revision, "dtype": args.dtype, "device": args.device, "device_map": args.device_map,
                "trust_remote_code": args.trust_remote_code or None, "chat_template": args.chat_template}
    if args.backend == "vllm":
        return {"revision": args.revision, "dtype": args.dtype, "tensor_parallel_size": args.tensor_parallel_size,
                "trust_remote_code": args.trust_remote_code or None, "chat_template": args.chat_template}
    if not args.base_url:
        raise SystemExit("apibank evaluate: --backend openai needs --base-url")
    return {"base_url": args.base_url, "api_key_env": args.api_key_env, "concurrency": args.concurrency,
            "max_retries": args.max_retries, "tool_results_as_user": args.tool_results_as_user or None}


def run(args: argparse.Namespace) -> int:
    from apibank.pipeline import evaluate, results_table

    fmt = args.fmt or ("paper" if args.model == "oracle" else "chat")
    output = Path(args.output) if args.output else default_output(args.model, fmt)
    results = evaluate(
        args.model,
        levels=args.levels,
        fmt=fmt,
        backend=args.backend,
        limit=args.limit,
        output_dir=output,
        data_dir=args.data_dir,
        batch_size=args.batch_size,
        max_new_tokens=args.max_new_tokens,
        price_per_mtok=args.price_per_mtok,
        icl=args.icl,
        protocols=args.protocols,
        backend_options=backend_options(args),
        dataset_id=args.dataset_id,
        leaderboard_protocol=args.leaderboard_protocol,
        overwrite=args.overwrite,
        progress=not args.no_progress,
    )
    print(json.dumps(results, indent=2, default=str) if args.json else results_table(results))
    print(f"\nwritten to {output}/ (results.json, predictions.jsonl, details.jsonl, report.md, leaderboard/)")
    if args.push_to_hub:
        from apibank.hub.leaderboard import DEFAULT_DATASET_ID, push_to_hub

        repo = args.model if args.push_to_hub is True else args.push_to_hub
        if args.model == "oracle" and args.push_to_hub is True:
            raise SystemExit("apibank evaluate: --push-to-hub needs a repository name for --model oracle")
        urls = push_to_hub(output / "leaderboard", repo, dataset_repo=args.push_eval_yaml,
                           dataset_id=args.dataset_id or DEFAULT_DATASET_ID)
        for where, url in urls.items():
            print(f"pull request ({where}): {url}")
    return 0
