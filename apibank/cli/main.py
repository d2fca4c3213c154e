"""The ``apibank`` console script: a thin layer over importable functions (``apibank_cli.py`` is its face).

Each subcommand lives in its own module, which provides ``configure(parser)`` (adds the
subcommand's arguments) and ``run(args) -> int`` (does the work, returns the exit status). The
modules are imported only when their subcommand runs, so ``apibank ls`` never loads torch.

A mistake the user can fix (an :class:`apibank.errors.UserError`, missing data, a file that cannot be
written, an argument argparse refuses) ends in one line of at most :data:`MAX_LINE` characters on stderr saying what is wrong and what
to do, with exit status 2 and no traceback; a longer text (a list of missing files) goes to a file the
line names. ``--debug`` shows the traceback and the whole text.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from typing import NoReturn, Sequence

# subcommand -> (module providing configure/run, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("apibank.cli.evaluate", "generate predictions for a model and score them"),
    "score": ("apibank.cli.score", "score an existing predictions file"),
    "import-harness": ("apibank.cli.import_harness", "turn an lm-eval (--log_samples) or lighteval "
                       "(--save-details) run of the apibank tasks into a scored run folder"),
    "ls": ("apibank.cli.ls", "list the tools of both tool sets"),
    "replay": ("apibank.cli.replay", "execute every recorded gold call and compare"),
    "export-dataset": ("apibank.cli.export_dataset", "write a script-free dataset repository"),
    "export-metric": ("apibank.cli.export_metric", "write the metric's Hub layout"),
    "finetune": ("apibank.cli.finetune", "fine-tune a model on API-Bank's training rows (the train extra)"),
    "agent": ("apibank.cli.agent", "agentic episodes: the model drives the tool loop, judged on what it achieved"),
    "convert": ("apibank.cli.convert", "convert a .gguf file to a transformers folder (cached) and print the folder"),
    "inspect-model": ("apibank.cli.inspect_model", "prepare the test extra's Gemma 3 270M for inspect-ai's hf/ provider"),
    "compare": ("apibank.cli.compare", "paired comparison of runs: differences, intervals, exact p-values, flips"),
    "leaderboard": ("apibank.cli.leaderboard", "ranked tables of runs with intervals, paired tests and published figures"),
}
USAGE_ERROR = 2
MAX_LINE = 300


class Parser(argparse.ArgumentParser):
    """argparse with the package's convention for mistakes: one line naming what is wrong (an unknown
    choice, a missing argument) and where the usage is, instead of the whole usage before it.
    Subcommand parsers are of this class too (``add_subparsers`` makes its parsers of the parent's)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.subcommands: dict[str, Parser] = {}

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE_ERROR, f"{self.prog}: error: {' '.join(message.split())}; see {self.prog} --help\n")

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        # An unknown flag is the subcommand's mistake: its line points at the subcommand's --help.
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.subcommands.get(getattr(parsed, "command", None), self).error(
                f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="apibank", description="API-Bank tool-use benchmark")
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        sub = parser.subcommands[name] = commands.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show the traceback of an error")
        importlib.import_module(module_name).configure(sub)
    return parser


class _Version(argparse.Action):
    """``--version``, looked up only when asked for (so other commands import nothing for it)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from apibank.pipeline import package_version

        print(f"{parser.prog} {package_version()}")
        parser.exit()


def user_errors() -> tuple[type[BaseException], ...]:
    """Exceptions that report a mistake in the user's input or setup, not a bug of the package."""
    from apibank_tools.errors import EnvironmentUnavailable

    from apibank.errors import UserError
    from apibank.generate.backends.openai import EndpointError
    from apibank.generate.templates import TemplateRefusal

    # Missing or corrupt data, a ToolSearcher model that cannot load, a file that cannot be written: the
    # user's setup, which the line names.
    return (UserError, EndpointError, TemplateRefusal, EnvironmentUnavailable, OSError)


def one_line(command: str, error: BaseException) -> str:
    """The line printed for a user error: its first line, at most MAX_LINE characters; the whole text
    (and the error's ``details``) is written to a file the line names."""
    text = str(error)
    lines = text.strip().splitlines()
    head = " ".join(lines[0].split()) if lines else type(error).__name__
    if isinstance(error, OSError) and error.filename is not None and error.strerror:
        head = f"{error.filename}: {error.strerror}; check the path and its permissions"
    details = list(getattr(error, "details", ()) or ()) or [line.strip() for line in lines[1:] if line.strip()]
    prefix = f"{command}: error: "
    if not details and len(prefix) + len(head) <= MAX_LINE:
        return prefix + head
    where = _write_details(command, text, details)
    tail = f" (all {len(details)} listed in {where})" if details else f" (the whole message: {where})"
    room = MAX_LINE - len(prefix) - len(tail)
    if len(head) > room:
        head = head[: max(0, room - 3)].rstrip() + "..."
    return prefix + head + tail


def _write_details(command: str, text: str, details: Sequence[str]) -> str:
    body = text.rstrip("\n") + "\n"
    if details and not all(line in text for line in details):
        body += "".join(f"{line}\n" for line in details)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", prefix=command.replace(" ", "-") + "-error-",
                                         suffix=".txt", delete=False)
    with handle:
        handle.write(body)
    return handle.name


def main(argv: Sequence[str] | None = None) -> int:
    from apibank.cli.flags import quiet_library_output
    from apibank.generate.interrupts import exit_status, sigterm_as_interrupt, what_happened
    from apibank.run_folder import command_line

    args = build_parser().parse_args(argv)
    args.command_line = command_line(argv)
    command = f"apibank {args.command}"
    quiet_library_output()
    try:
        with sigterm_as_interrupt():  # SIGTERM as Ctrl-C: the same work saved, the same message, exit 143
            return int(importlib.import_module(args._module).run(args) or 0)
    except KeyboardInterrupt as interrupt:
        if args.debug:
            raise
        print(f"\n{command}: {what_happened(interrupt)}", file=sys.stderr)
        return exit_status(interrupt)
    except Exception as error:
        if args.debug:
            for line in getattr(error, "details", ()) or ():
                print(line, file=sys.stderr)
            raise
        if isinstance(error, user_errors()):
            print(one_line(command, error), file=sys.stderr)
            return USAGE_ERROR
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"{command}: error: {type(error).__name__}: {message} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
