"""``apibank score``: score an existing predictions file (JSON lines with ``id`` and ``prediction``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from apibank.benchmark import DEFAULT_PROTOCOL, PROTOCOLS
from apibank.cli.evaluate import hub_id
from apibank.cli.flags import add_output, add_overwrite, add_quiet, add_subset, check_audit, show_progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("predictions", help="predictions file (JSON lines: id, prediction, ...)")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: download)")
    add_output(parser, "where results, report and leaderboard files go (default: the predictions file's folder)")
    add_overwrite(parser, "replace the results, details, report and plots already in the output folder")
    parser.add_argument("--protocols", nargs="+", choices=PROTOCOLS, default=list(PROTOCOLS))
    parser.add_argument("--model", default=None, help="model id for the results and leaderboard files "
                        "(default: the file's `model` field)")
    parser.add_argument("--dataset-id", type=hub_id("--dataset-id"), default=None, metavar="NAMESPACE/NAME",
                        help="Hub dataset id the leaderboard files point at (without it, or for a partial "
                        "predictions file, no model leaderboard files are written)")
    parser.add_argument("--leaderboard-protocol", choices=PROTOCOLS, default=DEFAULT_PROTOCOL)
    add_subset(parser)
    parser.add_argument("--json", action="store_true", help="print results.json instead of the table")
    add_quiet(parser)
    parser.add_argument("--errors", action="store_true", help="also print the error analysis (the paper's error types)")


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_writable
    from apibank.errors import InputFileError
    from apibank.run_folder import hold

    predictions = Path(args.predictions)
    if not predictions.is_file():
        raise InputFileError(f"{predictions}: no such file; give the predictions.jsonl to score")
    output = check_writable(args.output if args.output is not None else predictions.parent)
    with hold(output, "score", getattr(args, "command_line", None)):
        return _score(args, predictions, output)


def _score(args: argparse.Namespace, predictions: Path, output: Path) -> int:
    from apibank.cli.folders import check_data_dir, refuse_replacing
    from apibank.errors import InputFileError
    from apibank.generate.predictions import read_predictions
    from apibank.hub.leaderboard import leaderboard_note
    from apibank.pipeline.classic import score_file
    from apibank.pipeline.results import results_table
    from apibank.pipeline.rows import level_of

    refuse_replacing(output, args.overwrite)
    records = read_predictions(predictions)
    try:
        levels = sorted({level_of(record["id"]) for record in records})
    except ValueError as error:
        raise InputFileError(f"{predictions}: {error}; every id must name an API-Bank row (level-N/...)") from None
    check_data_dir(args.data_dir, levels)
    check_audit(args)
    results = score_file(
        predictions,
        data_dir=args.data_dir,
        output_dir=output,
        protocols=args.protocols,
        model=args.model,
        dataset_id=args.dataset_id,
        leaderboard_protocol=args.leaderboard_protocol,
        progress=show_progress(args),
        subset=args.subset,
    )
    print(json.dumps(results, indent=2, default=str) if args.json else results_table(results))
    if args.errors:
        from apibank.report.error_types import results_error_table

        print("\n" + results_error_table(results))
    note = leaderboard_note(results, args.dataset_id)
    if note:
        print(f"note: {note}", file=sys.stderr)
    print(f"written to {output}/ (results.json, details.jsonl, report.md, report.html, leaderboard/)",
          file=sys.stderr if args.json else sys.stdout)
    return 0
