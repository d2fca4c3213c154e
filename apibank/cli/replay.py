"""``apibank replay``: execute every recorded gold call and compare with the recorded result."""

from __future__ import annotations

import argparse
import json


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", help="local copy of the upstream API-Bank folder (default: download)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_data_dir
    from apibank.judge.replay import format_table, run_replay
    from apibank.report.table import LEVELS

    check_data_dir(args.data_dir, LEVELS)

    results = run_replay(args.data_dir)
    print(json.dumps(results, indent=1) if args.json else format_table(results))
    return 0
