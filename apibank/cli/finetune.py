"""``apibank finetune``: supervised fine-tuning on API-Bank's training rows (the ``train`` extra).

Every argument, the model's chat template (``--format chat``) and the output folder are checked
before the model is loaded; rerunning the same command resumes from the latest checkpoint.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from apibank.benchmark import DEFAULT_TRAINING_FORMAT, TRAINING_FORMATS
from apibank.cli.flags import add_quiet, show_progress
from apibank.train.finetune import Recipe

TRAIN_EXTRA = ("trl", "peft", "accelerate")


def configure(parser: argparse.ArgumentParser) -> None:
    defaults = Recipe()
    parser.add_argument("--model", required=True, help="base model: a Hub id, a local folder or a .gguf file")
    parser.add_argument("--output", required=True, help="folder for the fine-tuned model (and its checkpoints)")
    parser.add_argument("--format", dest="fmt", choices=TRAINING_FORMATS, default=DEFAULT_TRAINING_FORMAT,
                        help="paper: the paper's prompt and answer text (judge with --format paper); chat: the "
                             "conversation with tools through the chat template (judge with --format tools)")
    parser.add_argument("--levels", nargs="+", default=None, metavar="LEVEL",
                        help="training levels, 1 2 3 or level-1 ... (default: those the data holds)")
    parser.add_argument("--data-dir", default=None,
                        help="local copy of the upstream API-Bank folder (default: download)")
    parser.add_argument("--max-samples", type=int, default=defaults.max_samples,
                        help=f"training samples, a seeded draw (default {defaults.max_samples}; 0: all)")
    parser.add_argument("--epochs", type=float, default=defaults.epochs, help=f"default {defaults.epochs:g}")
    parser.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None,
                        help="LoRA adapters (merged at the end) or every weight; default: LoRA, except on a GPU "
                             "that holds full fine-tuning of the model")
    parser.add_argument("--lora-rank", type=int, default=defaults.lora_rank, help=f"default {defaults.lora_rank}")
    parser.add_argument("--learning-rate", type=float, default=defaults.learning_rate,
                        help=f"default {defaults.learning_rate:g}")
    parser.add_argument("--max-length", type=int, default=defaults.max_length,
                        help=f"tokens per sample; longer samples are left out (default {defaults.max_length})")
    parser.add_argument("--batch-size", type=int, default=defaults.batch_size, help=f"default {defaults.batch_size}")
    parser.add_argument("--gradient-accumulation", type=int, default=defaults.gradient_accumulation,
                        help=f"batches per optimizer step (default {defaults.gradient_accumulation})")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    add_quiet(parser)


def check_train_extra() -> None:
    from apibank.errors import require_extra
    from apibank.generate.backends.choice import require_torchvision

    require_extra("train", TRAIN_EXTRA, "fine-tuning")
    require_torchvision("transformers")  # it imports torchvision to load any model


def check_levels(args: argparse.Namespace) -> tuple[int, ...]:
    from apibank.benchmark import LEVEL_NUMBERS
    from apibank.errors import UsageError
    from apibank.data.configs import (TRAINING_CONFIG, missing_files_message, missing_local_files,
                                      present_training_levels, required_files, resolve_data_dir)
    from apibank.train.finetune import parse_levels

    if args.levels is None:
        levels = present_training_levels(args.data_dir)
        if not levels:
            raise UsageError(f"--data-dir {args.data_dir}: no training files in it; give the upstream API-Bank folder")
        return levels
    levels = parse_levels(args.levels, LEVEL_NUMBERS)
    missing = missing_local_files(required_files(TRAINING_CONFIG, levels), args.data_dir)
    if missing:
        raise UsageError(missing_files_message(missing, str(resolve_data_dir(args.data_dir))))
    return levels


def check_numbers(args: argparse.Namespace) -> None:
    from apibank.errors import UsageError
    from apibank.train.finetune import MIN_SAMPLES

    if args.max_samples and args.max_samples < MIN_SAMPLES:
        raise UsageError(f"--max-samples {args.max_samples}: too few samples to train on; give at least "
                         f"{MIN_SAMPLES} (or 0 for all)")
    for flag, value in (("--epochs", args.epochs), ("--lora-rank", args.lora_rank), ("--batch-size", args.batch_size),
                        ("--learning-rate", args.learning_rate), ("--max-length", args.max_length),
                        ("--gradient-accumulation", args.gradient_accumulation)):
        if not value > 0:
            raise UsageError(f"{flag} {value:g}: must be positive")


def check_template(args: argparse.Namespace) -> None:
    """``--format chat`` renders the conversations through the model's chat template: it must have one."""
    from apibank.errors import UsageError
    from apibank.generate.backends.model_checks import has_chat_template, locate_model

    where = locate_model(args.model)
    if args.fmt == "chat" and has_chat_template(where, None) is False:
        raise UsageError(f"--model {args.model}: no chat template, which --format chat needs; use --format paper "
                         "(the paper's prompt as plain text)")


def run(args: argparse.Namespace) -> int:
    check_train_extra()
    check_numbers(args)
    levels = check_levels(args)
    check_template(args)
    from apibank.cli.checks import check_output
    from apibank.run_folder import hold

    check_output(Path(args.output))
    with hold(Path(args.output), "finetune", getattr(args, "command_line", None)):
        return _finetune(args, levels)


def _finetune(args: argparse.Namespace, levels: tuple[int, ...]) -> int:
    from apibank.train.finetune import Request, finetune, output_state

    recipe = Recipe(max_samples=args.max_samples or None, epochs=args.epochs, learning_rate=args.learning_rate,
                    lora=args.lora, lora_rank=args.lora_rank, max_length=args.max_length,
                    batch_size=args.batch_size, gradient_accumulation=args.gradient_accumulation, seed=args.seed)
    request = Request(model=args.model, output=args.output, format=args.fmt, levels=levels, data_dir=args.data_dir,
                      recipe=recipe, progress=show_progress(args))
    output_state(request)  # another run's folder is refused before the model loads
    summary = finetune(request)
    shown = ("samples", "steps", "train_loss", "seconds", "peak_rss_mib", "lora", "evaluate_with")
    print(json.dumps({key: summary.get(key) for key in shown if key in summary}))
    return 0
