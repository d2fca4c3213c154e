"""Flags that mean the same in every subcommand, declared once: one name each, old spellings still
accepted with a note on stderr, and the progress bar they switch."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from apibank.benchmark import AUDIT_SUBSETS, THINKING_BUDGET, normalise_levels
from apibank.errors import UsageError


class DeprecatedFlag(argparse.Action):
    """An old spelling of a flag: sets the same value as the new one and says on stderr to use that."""

    def __init__(self, option_strings: list[str], dest: str, *, canonical: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        super().__init__(option_strings, dest, **kwargs)
        self.canonical = canonical

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"{parser.prog}: note: {option_string} is deprecated; use {self.canonical}", file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def add_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str, *old: str, **kwargs: Any) -> None:
    """``name`` as ``parser.add_argument`` would add it, plus each ``old`` spelling, deprecated."""
    parser.add_argument(name, **kwargs)
    if not old:
        return
    dest = kwargs.get("dest") or name.lstrip("-").replace("-", "_")
    extra = {key: kwargs[key] for key in ("type", "metavar", "choices") if key in kwargs}
    if kwargs.get("action") == "store_true":
        extra.update(nargs=0, const=True)
    elif "nargs" in kwargs:
        extra.update(nargs=kwargs["nargs"], const=kwargs.get("const"))
    parser.add_argument(*old, dest=dest, action=DeprecatedFlag, canonical=name, default=argparse.SUPPRESS, **extra)


def add_output(parser: argparse.ArgumentParser, help: str) -> None:
    add_flag(parser, "--output", "--out", default=None, metavar="DIR", help=help)


def add_overwrite(parser: argparse.ArgumentParser, help: str) -> None:
    add_flag(parser, "--overwrite", "--fresh", action="store_true", help=help)


def add_quiet(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    add_flag(parser, "--quiet", "--no-progress", action="store_true",
             help="no progress bar (there is none either when stderr is not a terminal)")


def add_thinking_budget(group: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    group.add_argument("--thinking-budget", type=int, default=None, metavar="N",
                       help="tokens of reasoning added to every answer's budget when the chat template makes the "
                       f"model think first (default: {THINKING_BUDGET} when it does, 0 otherwise; recorded under "
                       "'thinking' in results.json)")


def check_thinking_budget(args: argparse.Namespace) -> None:
    budget = getattr(args, "thinking_budget", None)
    if budget is not None and budget < 0:
        raise UsageError(f"--thinking-budget {budget}: must be at least 0 (0: no reasoning budget)")


def add_subset(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument("--subset", choices=AUDIT_SUBSETS, default=None,
                        help="only the rows the shipped row audit marks so (docs/verified.md): a subset, labelled as "
                        "one in every output and never written or pushed under the official task ids; without it "
                        "the verified rows' scores are reported beside the full ones")


def check_audit(args: argparse.Namespace) -> None:
    """The shipped row audit matches the data (before any work: a mismatch is one line, exit 2)."""
    from apibank.data.audits import load_audit

    load_audit(getattr(args, "data_dir", None))


def add_levels(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--levels", nargs="+", default=None, metavar="LEVEL", help=help + " (1 2 3 or level-1 ...)")


def checked_levels(levels: list[str] | None) -> list[str]:
    """The levels given as ``1`` or ``level-1``, as ``level-1`` (all levels when none are given)."""
    try:
        return normalise_levels(levels)
    except ValueError as error:
        raise UsageError(f"--levels: {error}") from None


def show_progress(args: argparse.Namespace) -> bool:
    """Progress bars go to stderr (so --json output stays clean), only to a terminal, and not with --quiet."""
    return not getattr(args, "quiet", False) and sys.stderr.isatty()


def progress_bar(total: int, desc: str, *, enabled: bool, initial: int = 0, unit: str = "sample"):
    """A tqdm bar on stderr (a disabled one when ``enabled`` is false)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc=desc, unit=unit, disable=not enabled, file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5, leave=False)


# the switches of the libraries' own progress bars (model loading and saving, downloads, dataset building)
LIBRARY_PROGRESS_SWITCHES = ("HF_HUB_DISABLE_PROGRESS_BARS", "HF_DATASETS_DISABLE_PROGRESS_BARS")
# transformers' own log level (its advice and deprecation notes go to stderr through it)
LIBRARY_LOG_SWITCH = ("TRANSFORMERS_VERBOSITY", "error")


def quiet_library_output() -> None:
    """When stderr is not a terminal (a log file, CI), the libraries' progress bars stay off, as ours do (each
    redraw would be a line of the log), and so do their warnings: Python's (deprecations and advice from
    transformers, trl, torch) and transformers' own log below errors. A switch the user set is kept, and so
    are warning filters given with ``-W`` or ``PYTHONWARNINGS``; a terminal shows everything."""
    import os

    if sys.stderr.isatty():
        return
    for switch in LIBRARY_PROGRESS_SWITCHES:
        os.environ.setdefault(switch, "1")
    name, level = LIBRARY_LOG_SWITCH
    os.environ.setdefault(name, level)
    if not sys.warnoptions:
        import warnings

        warnings.filterwarnings("ignore")
        warnings.filterwarnings("default", module=r"apibank")  # ours (none today) still show
    # libraries imported already read their switch at import: tell them directly
    if "huggingface_hub" in sys.modules and os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as transformers_logging

        if os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] == "1":
            transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity(transformers_logging.log_levels.get(os.environ[name], 40))
    if "datasets" in sys.modules and os.environ["HF_DATASETS_DISABLE_PROGRESS_BARS"] == "1":
        from datasets.utils import disable_progress_bars as disable_datasets_bars

        disable_datasets_bars()
