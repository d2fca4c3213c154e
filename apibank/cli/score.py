"""``apibank score``: score an existing predictions file (JSON lines with ``id`` and ``prediction``)."""

from __future__ import annotations

import argparse
import json
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", help="predictions file (JSON lines: id, prediction, ...)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: download)")
    parser.add_argument("--output", default=None, help="where results, report and leaderboard files go "
                        "(default: the predictions file's folder)")
    parser.add_argument("--protocols", nargs="+", choices=("paper", "corrected"), default=["paper", "corrected"])
    parser.add_argument("--model", default=None, help="model id for the results and leaderboard files "
                        "(default: the file's `model` field)")
    parser.add_argument("--dataset-id", default=None, help="Hub dataset id the leaderboard files point at")
    parser.add_argument("--leaderboard-protocol", choices=("paper", "corrected"), default="paper")
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")
    parser.add_argument("--errors", action="store_true", help="also print the error analysis (the paper's error types)")


def run(args: argparse.Namespace) -> int:
    from apibank_tools.errors import EnvironmentUnavailable

    from apibank.pipeline import results_table, score_file

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
    if args.errors:
        from apibank.report.errors import results_error_table

        print("\n" + results_error_table(results))
    return 0
