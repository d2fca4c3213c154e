"""``apibank inspect-model``: prepare Gemma 3 270M (the test extra's GGUF) for inspect-ai's ``hf/``
provider and print the ``inspect eval`` command that runs the benchmark's task on it offline (no Hub
request: ``HF_HUB_OFFLINE=1``; logs under ``OUTPUT/logs``)."""

from __future__ import annotations

import argparse

from apibank.benchmark import LEVEL_NUMBERS
from apibank.cli.flags import add_output


def configure(parser: argparse.ArgumentParser) -> None:
    add_output(parser, "folder for the converted tokenizer and, under logs/, the printed command's inspect logs "
                       "(required)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder for the task")
    parser.add_argument("--level", type=int, choices=LEVEL_NUMBERS, default=1, help="the task's level (default 1)")
    parser.add_argument("--limit", type=int, default=2, help="samples the printed command runs (default 2)")


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_data_dir, check_writable
    from apibank.errors import UsageError
    from apibank.evals.local_model import inspect_command, prepare_tokenizer, shell_command

    if args.limit < 1:
        raise UsageError(f"--limit {args.limit}: must be at least 1")
    check_data_dir(args.data_dir, [f"level-{args.level}"])  # the printed command would fail on it
    folder = prepare_tokenizer(check_writable(args.output)).resolve()
    print(shell_command(inspect_command(folder, level=args.level, limit=args.limit, data_dir=args.data_dir,
                                        log_dir=folder / "logs")))
    return 0
