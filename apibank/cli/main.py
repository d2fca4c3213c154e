"""The ``apibank`` console script: a thin layer over importable functions (``apibank_cli.py`` is its face).

Each subcommand lives in its own module, which provides ``configure(parser)`` (adds the
subcommand's arguments) and ``run(args) -> int`` (does the work, returns the exit status). The
modules are imported only when their subcommand runs, so ``apibank ls`` never loads torch.

A mistake the user can fix ends in one line on stderr saying what is wrong and what to do, with exit
status 2 and no traceback; ``--debug`` shows the traceback.
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
    "compare": ("apibank.cli.compare", "paired comparison of runs: differences, intervals, exact p-values, flips"),
}
USAGE_ERROR = 2
INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="apibank", description="API-Bank tool-use benchmark")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show the traceback of an error")
        importlib.import_module(module_name).configure(sub)
    return parser


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that report a mistake in the user's input or setup, not a bug of the package."""
    from apibank.cli.checks import UsageError
    from apibank.generate.backends.openai import EndpointError
    from apibank.generate.predictions import ResumeMismatch
    from apibank.generate.templates import TemplateRefusal
    from apibank_tools.errors import UpstreamDataError

    return (UsageError, EndpointError, ResumeMismatch, TemplateRefusal, UpstreamDataError, PermissionError,
            FileNotFoundError, IsADirectoryError, NotADirectoryError)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    command = f"apibank {args.command}"
    try:
        return int(importlib.import_module(args._module).run(args) or 0)
    except KeyboardInterrupt:
        if args.debug:
            raise
        print(f"\n{command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except Exception as error:
        if args.debug:
            raise
        message = " ".join(str(error).split()) or type(error).__name__
        if isinstance(error, user_errors()):
            print(f"{command}: error: {message}", file=sys.stderr)
            return USAGE_ERROR
        print(f"{command}: error: {type(error).__name__}: {message} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
