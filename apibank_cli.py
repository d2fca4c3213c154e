"""The ``apibank`` console script (the implementation is :mod:`apibank.cli.main`)."""

from __future__ import annotations

import sys

from apibank.cli.main import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
