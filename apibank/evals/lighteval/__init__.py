"""API-Bank as lighteval custom tasks (the ``lighteval`` extra): ``apibank_level1``, ``apibank_level2``,
``apibank_level3``, defined in :mod:`apibank.evals.lighteval.tasks`.

    lighteval accelerate "model_name=MODEL_FOLDER" "apibank_level1|0" --custom-tasks apibank.evals.lighteval \
        --max-samples 8 --save-details --output-dir out/lighteval

``python -m apibank.evals.lighteval`` is the same command line for a machine without the network (see
:mod:`apibank.evals.lighteval.__main__`). Importing this package needs no lighteval: lighteval's registry
reads :data:`TASKS_TABLE`, which imports the tasks;
:func:`apibank.evals.lighteval.installed.check_installed` says, in one line, when the installed lighteval
cannot run them.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # lighteval's registry reads TASKS_TABLE from the module named by --custom-tasks
    if name == "TASKS_TABLE":
        from apibank.evals.lighteval.tasks import TASKS_TABLE

        return TASKS_TABLE
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
