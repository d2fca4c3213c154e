"""``apibank import-harness PATH --output RUN``: an lm-evaluation-harness run of the API-Bank tasks (its
``--output_path`` folder, written with ``--log_samples``), or a lighteval run (``--save-details``), as a run folder like ``apibank score`` writes
(``predictions.jsonl``, ``details.jsonl``, ``results.json``, the report), which ``apibank compare`` and
``apibank leaderboard`` take. Reading: :mod:`apibank.evals.outputs`; scoring: ``apibank score``'s pipeline.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from apibank.benchmark import PROTOCOLS
from apibank.cli.flags import add_output, add_overwrite, add_quiet, show_progress


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="lm-eval's --output_path folder of a run with --log_samples "
                        "of the apibank tasks (python -m apibank.evals.lm_eval), or lighteval's --output-dir of a "
                        "run with --save-details of the apibank.evals.lighteval tasks")
    parser.add_argument("--data-dir", default=None, help="local copy of the upstream API-Bank folder (default: "
                        "$APIBANK_DATA_DIR, else download)")
    add_output(parser, "the run folder to write (predictions.jsonl, details.jsonl, results.json, report)")
    add_overwrite(parser, "replace a run already in the output folder")
    parser.add_argument("--model", default=None, help="model id for the results (default: the run's model_name)")
    add_quiet(parser)


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_data_dir, check_writable, refuse_replacing
    from apibank.evals.outputs import harness_predictions
    from apibank.generate.predictions import write_predictions
    from apibank.pipeline.classic import score_file
    from apibank.pipeline.results import results_table
    from apibank.pipeline.rows import level_of
    from apibank.run_folder import hold

    output = check_writable(args.output)
    records, info = harness_predictions(args.path)
    with hold(output, "import-harness", getattr(args, "command_line", None)):
        refuse_replacing(output, args.overwrite)
        if (output / "predictions.jsonl").exists() and not args.overwrite:
            from apibank.errors import OutputError

            raise OutputError(f"{output}/predictions.jsonl exists; use another --output, or --overwrite to replace it")
        try:
            levels = sorted({level_of(record["id"]) for record in records})
        except ValueError as error:
            from apibank.errors import InputFileError

            raise InputFileError(f"{args.path}: {error}; the samples must be API-Bank rows (level-N/...)") from None
        check_data_dir(args.data_dir, levels)
        predictions = output / "predictions.jsonl"
        write_predictions(predictions, records)
        results = score_file(predictions, data_dir=args.data_dir, output_dir=output, protocols=PROTOCOLS,
                             model=args.model or info["model"], progress=show_progress(args))
    print(results_table(results))
    print(f"{len(records)} samples of {', '.join(info['tasks'])} ({info['harness']}) written to {output}/ "
          "(predictions.jsonl, results.json, details.jsonl, report.md, report.html)")
    return 0
