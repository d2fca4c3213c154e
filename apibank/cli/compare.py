"""``apibank compare A B [C ...]``: paired comparison of runs on the same samples (B, C, ... each against A).

Prints a table per pair, writes ``compare.json`` and ``compare.md`` into ``--output``. Method:
:mod:`apibank.report.compare`.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from apibank.errors import UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="run folders (apibank evaluate/score or apibank agent); the first is the baseline A")
    parser.add_argument("--allow-mismatch", action="store_true",
                        help="compare runs of different data revisions, protocols, prompt formats or subsets on the "
                        "samples they share, saying what differs")
    parser.add_argument("--output", default=None,
                        help="folder for compare.json and compare.md (default: apibank-results/compare-A-vs-B)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of the table")
    parser.add_argument("--fail-if-worse", type=float, default=None, metavar="POINTS",
                        help="a regression gate for CI: exit 1, naming the metric, when a run is worse than A by more "
                        "than POINTS (accuracy points; ROUGE-L x 100) on any protocol, level and metric with the "
                        "paired test significant at --alpha")
    parser.add_argument("--alpha", type=float, default=None,
                        help="significance level of --fail-if-worse (default 0.05)")


def default_output(runs: list[Path]) -> Path:
    names = [re.sub(r"[^A-Za-z0-9._-]+", "_", path.resolve().name).strip("_") or "run" for path in runs]
    return Path("apibank-results") / f"compare-{names[0]}-vs-{'-'.join(names[1:])}"


def run(args: argparse.Namespace) -> int:
    from apibank.files import atomic_write_text, dumps_strict
    from apibank.report.compare import ALPHA, RunMismatch, compare_runs, markdown, text_table
    from apibank.report.runs import NotARun, load_run

    if len(args.runs) < 2:
        raise UsageError("give at least two run folders: the baseline A, then the runs to compare with it")
    if args.fail_if_worse is not None and not 0 <= args.fail_if_worse < float("inf"):
        raise UsageError(f"--fail-if-worse {args.fail_if_worse:g}: give the points a run may lose, 0 or more")
    if args.alpha is not None and (args.fail_if_worse is None or not 0 < args.alpha < 1):
        raise UsageError(f"--alpha {args.alpha:g}: give a level between 0 and 1, with --fail-if-worse")
    try:
        runs = [load_run(path) for path in args.runs]
        comparisons = [compare_runs(runs[0], other, allow_mismatch=args.allow_mismatch) for other in runs[1:]]
    except (NotARun, RunMismatch) as error:
        raise UsageError(str(error)) from None
    for comparison in comparisons:
        for item in comparison["unknown"]:
            print(f"apibank compare: note: {item} ({comparison['a']['path']} vs {comparison['b']['path']})",
                  file=sys.stderr)
    output = Path(args.output) if args.output else default_output([run.path for run in runs])
    output.mkdir(parents=True, exist_ok=True)
    atomic_write_text(output / "compare.json", dumps_strict({"comparisons": comparisons}, indent=2) + "\n")
    atomic_write_text(output / "compare.md", markdown(comparisons))
    if args.json:
        print(json.dumps({"comparisons": comparisons, "output": str(output)}, indent=2))
    else:
        print("\n\n".join(text_table(comparison) for comparison in comparisons))
        print(f"\nwritten to {output}/ (compare.json, compare.md)")
    if args.fail_if_worse is not None:
        return gate(comparisons, args.fail_if_worse, ALPHA if args.alpha is None else args.alpha)
    return 0


def gate(comparisons: list[dict], points: float, alpha: float) -> int:
    """1, with one line on stderr naming the worst regression, when a run fails ``--fail-if-worse``; else 0."""
    from apibank.report.compare import regressions

    for comparison in comparisons:
        worse = regressions(comparison, points, alpha)
        if worse:
            more = f"; {len(worse) - 1} more regressions in compare.json" if len(worse) > 1 else ""
            print(f"apibank compare: worse: {comparison['b']['path']} vs {comparison['a']['path']}: {worse[0]['line']}: "
                  f"more than {points:g} points worse with p < {alpha:g}{more}", file=sys.stderr)
            return 1
    return 0
