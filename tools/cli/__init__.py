"""Subcommands of the ``apibank`` console script (see ``apibank_cli.SUBCOMMANDS``).

Each module provides ``configure(parser)`` and ``run(args) -> int``. ``configure`` must stay cheap:
heavy imports belong inside ``run``.
"""
