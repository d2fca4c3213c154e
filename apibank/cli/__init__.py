"""Subcommands of the ``apibank`` console script (see ``apibank.cli.main.SUBCOMMANDS``).

Each module provides ``configure(parser)`` and ``run(args) -> int``. ``configure`` must stay cheap:
heavy imports belong inside ``run``.
"""
