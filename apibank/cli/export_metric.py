"""``apibank export-metric``: write the metric's Hub layout (a Space, as evaluate metrics are).

    apibank export-metric --output OUT [--push-to-hub NAMESPACE/apibank] [--private]

writes ``OUT/apibank/`` (:mod:`apibank.hub.metric_space`). Then ``evaluate.load(OUT + "/apibank")``,
or ``evaluate.load("apibank")`` from ``OUT``; after ``--push-to-hub``, ``evaluate.load("NAMESPACE/apibank")``.
"""

from __future__ import annotations

import argparse

from apibank.cli.flags import add_flag, add_output


def configure(parser: argparse.ArgumentParser) -> None:
    add_output(parser, "folder to write apibank/ into (required)")
    add_flag(parser, "--push-to-hub", "--push-to", dest="push_to", metavar="REPO_ID",
             help="also upload apibank/ as this Hub Space")
    parser.add_argument("--private", action="store_true", help="create the Hub Space as private")


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_writable
    from apibank.hub.metric_space import export_metric, push_metric

    folder = export_metric(check_writable(args.output))
    print(f"wrote {folder}: evaluate.load({str(folder)!r})")
    if args.push_to:
        print(f"pushed: {push_metric(folder, args.push_to, private=args.private)}")
    return 0
