"""``apibank export-metric``: write the metric's Hub layout (a Space, as evaluate metrics are).

    apibank export-metric --out OUT [--push-to NAMESPACE/apibank] [--private]

writes ``OUT/apibank/`` (:mod:`apibank.hub.metric_space`). Then ``evaluate.load(OUT + "/apibank")``,
or ``evaluate.load("apibank")`` from ``OUT``; after ``--push-to``, ``evaluate.load("NAMESPACE/apibank")``.
"""

from __future__ import annotations

import argparse
import sys


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", required=True, help="folder to write apibank/ into")
    parser.add_argument("--push-to", metavar="REPO_ID", help="also upload apibank/ as this Hub Space")
    parser.add_argument("--private", action="store_true", help="create the Hub Space as private")


def run(args: argparse.Namespace) -> int:
    from apibank.hub.metric_space import export_metric, push_metric

    try:
        folder = export_metric(args.out)
    except FileNotFoundError as error:
        print(f"apibank export-metric: {error}", file=sys.stderr)
        return 1
    print(f"wrote {folder}: evaluate.load({str(folder)!r})")
    if args.push_to:
        print(f"pushed: {push_metric(folder, args.push_to, private=args.private)}")
    return 0
