"""``apibank leaderboard RUN [RUN ...] [--from-hub DATASET_ID] [--output DIR]``: ranked tables of runs.

Prints the tables and writes ``leaderboard.json``, ``leaderboard.md`` and ``leaderboard.html`` into
``--output``. Method: :mod:`apibank.report.leaderboard`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from apibank.errors import UsageError

DEFAULT_OUTPUT = Path("apibank-results") / "leaderboard"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="run folders (apibank evaluate/score or apibank agent); runs that share their samples "
                        "are ranked together, the others kept apart with the reason")
    parser.add_argument("--from-hub", default=None, metavar="DATASET_ID",
                        help="also show the Hub leaderboard of this benchmark dataset (network)")
    parser.add_argument("--no-published", action="store_true",
                        help="leave out the paper's published figures (shown as 'reported, not run here')")
    parser.add_argument("--output", default=None,
                        help=f"folder for leaderboard.json, .md and .html (default: {DEFAULT_OUTPUT})")
    parser.add_argument("--on", choices=("full", "verified"), default="full",
                        help="rank on every scored row (full, default) or only on the rows the shipped row audit "
                        "marks verified (docs/verified.md); the output says which")
    parser.add_argument("--json", action="store_true", help="print leaderboard.json instead of the tables")


def run(args: argparse.Namespace) -> int:
    from apibank.report.leaderboard import build, dumps
    from apibank.report.leaderboard_render import LEADERBOARD_FILES, text, write
    from apibank.report.published import PUBLISHED
    from apibank.report.runs import NotARun, load_run

    if not args.runs and not args.from_hub:
        raise UsageError("no runs: give the folders of apibank evaluate, score or agent runs, or --from-hub DATASET_ID")
    if args.from_hub:
        from apibank.hub.ids import check_repo_id

        check_repo_id(args.from_hub, "--from-hub")
    audit = None
    if args.on != "full":
        from apibank.data.audits import load_audit

        audit = load_audit()
    try:
        runs = [load_run(path) for path in args.runs]
    except NotARun as error:
        raise UsageError(str(error)) from None
    output = Path(args.output) if args.output else DEFAULT_OUTPUT
    references = [] if args.no_published else list(PUBLISHED)
    if args.from_hub:
        from apibank.hub.remote_leaderboard import hub_references

        references += hub_references(args.from_hub)
    try:
        board = build(runs, references, output, on=args.on, audit=audit)
    except ValueError as error:
        raise UsageError(str(error)) from None
    write(board, output)
    if args.json:
        print(dumps(board), end="")
    else:
        print(text(board))
        print(f"\nwritten to {output}/ ({', '.join(LEADERBOARD_FILES)})")
    return 0
