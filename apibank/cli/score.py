"""``apibank score``: score an existing predictions file (JSON lines with ``id`` and ``prediction``)."""

from __future__ import annotations

import argparse
import json
import sys

from apibank.benchmark import DEFAULT_PROTOCOL, PROTOCOLS
from apibank.cli.evaluate import hub_id


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", help="predictions file (JSON lines: id, prediction, ...)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: download)")
    parser.add_argument("--output", default=None, help="where results, report and leaderboard files go "
                        "(default: the predictions file's folder)")
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS))
    parser.add_argument("--model", default=None, help="model id for the results and leaderboard files "
                        "(default: the file's `model` field)")
    parser.add_argument("--dataset-id", type=hub_id("--dataset-id"), default=None, metavar="NAMESPACE/NAME",
                        help="Hub dataset id the leaderboard files point at (without it, or for a partial "
                        "predictions file, no model leaderboard files are written)")
    parser.add_argument("--leaderboard-protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL)
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")


def run(args: argparse.Namespace) -> int:
    from apibank_tools.errors import EnvironmentUnavailable

    from apibank.hub.leaderboard import leaderboard_note
    from apibank.pipeline.classic import score_file
    from apibank.pipeline.results import results_table

    try:
        results = score_file(
            args.predictions,
            data_dir=args.data_dir,
            output_dir=args.output,
            protocols=args.protocols,
            model=args.model,
            dataset_id=args.dataset_id,
            leaderboard_protocol=args.leaderboard_protocol,
        )
    except (ValueError, EnvironmentUnavailable) as error:  # bad file, folder, references or data: say which
        print(f"apibank score: error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(results, indent=2, default=str) if args.json else results_table(results))
    note = leaderboard_note(results, args.dataset_id)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return 0
