"""The ``apibank`` console script: a thin layer over importable functions (``apibank_cli.py`` is its face).

Each subcommand lives in its own module, which provides ``configure(parser)`` (adds the
subcommand's arguments) and ``run(args) -> int`` (does the work, returns the exit status). The
modules are imported only when their subcommand runs, so ``apibank ls`` never loads torch.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

# subcommand -> (module providing configure/run, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("apibank.cli.evaluate", "generate predictions for a model and score them"),
    "score": ("apibank.cli.score", "score an existing predictions file"),
    "ls": ("apibank.cli.ls", "list the tools of both tool sets"),
    "replay": ("apibank.cli.replay", "execute every recorded gold call and compare"),
    "export-dataset": ("apibank.cli.export_dataset", "write a script-free dataset repository"),
    "export-metric": ("apibank.cli.export_metric", "write the metric's Hub layout"),
    "agent": ("apibank.cli.agent", "agentic episodes: the model drives the tool loop, judged on what it achieved"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apibank", description="API-Bank tool-use benchmark")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        importlib.import_module(module_name).configure(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(importlib.import_module(args._module).run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
