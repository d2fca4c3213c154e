"""`apibank evaluate`: not implemented yet."""

from __future__ import annotations

import argparse


def configure(parser: argparse.ArgumentParser) -> None:
    pass


def run(args: argparse.Namespace) -> int:
    raise SystemExit("apibank evaluate: not implemented yet")
