"""``apibank export-dataset``: write a script-free dataset repository (Parquet + README).

    apibank export-dataset --data-dir DIR --output OUT [--training-levels 3] [--push-to-hub NAMESPACE/API-Bank]

Writes Parquet per config, ``README.md`` (the card with ``configs:``), ``eval.yaml`` (the Hub
benchmark registration) and ``LICENSE``. Then ``datasets.load_dataset(OUT, "level-1", split="test")``;
after ``--push-to-hub``, ``datasets.load_dataset("NAMESPACE/API-Bank", "level-1")``, and that id is the
``--dataset-id`` of ``apibank evaluate``. Without ``--training-levels`` the training config holds every
level whose files the copy has, and says on stderr which it left out.
"""

from __future__ import annotations

import argparse
import sys

from apibank.benchmark import LEVEL_NUMBERS
from apibank.cli.flags import add_flag, add_output


def _levels(text: str) -> tuple[int, ...]:
    parts = [part.strip().removeprefix("level-") for part in text.split(",") if part.strip()]
    try:
        levels = tuple(int(part) for part in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected levels like 1,2,3 or level-1,level-2, got {text!r}") from None
    if not levels or any(level not in LEVEL_NUMBERS for level in levels):
        raise argparse.ArgumentTypeError(f"levels must be among 1, 2, 3, got {text!r}")
    return levels


def _repo_id(text: str) -> str:
    from apibank.hub.ids import HubIdError, check_repo_id

    try:
        return check_repo_id(text, "--push-to-hub")
    except HubIdError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local copy of upstream api-bank/ (default: $APIBANK_DATA_DIR, "
                        "else verified downloads from the pinned commit)")
    add_output(parser, "folder to write the repository into (required)")
    parser.add_argument("--training-levels", type=_levels, default=None, metavar="1,2,3",
                        help="training levels to include; missing files are then an error "
                        "(default: the levels available)")
    parser.add_argument("--cache-dir", help="datasets cache for the intermediate Arrow builds")
    parser.add_argument("--card", help="dataset card to turn into README.md (default: dataset_card.md)")
    add_flag(parser, "--push-to-hub", "--push-to", dest="push_to", type=_repo_id, metavar="NAMESPACE/NAME",
             help="also upload the folder as this Hub dataset (it then hosts the leaderboard)")
    parser.add_argument("--private", action="store_true", help="create the Hub repository as private")


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_data_dir, check_writable
    from apibank.hub.dataset_repo import (
        export_repository,
        print_report,
        push_repository,
    )
    from apibank.report.table import LEVELS

    output = check_writable(args.output)
    check_data_dir(args.data_dir, LEVELS, databases=False)
    report = export_repository(
        output,
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        training_levels=args.training_levels,
        card_path=args.card,
    )
    for note in report.notes:
        print(f"note: {note}", file=sys.stderr)
    print_report(report)
    if args.push_to:
        print(f"pushed: {push_repository(output, args.push_to, private=args.private)}")
    return 0
