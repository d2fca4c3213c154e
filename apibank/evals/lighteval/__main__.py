"""``python -m apibank.evals.lighteval``: lighteval's own command line (its commands, options and outputs,
as ``lighteval``) over the custom tasks alone, so that it runs without the network.

lighteval 0.13 builds its task registry by importing every built-in task module before it reads
``--custom-tasks`` (``Registry.load_all_task_configs`` in ``lighteval/tasks/registry.py``), with no option
to skip them, and three of those modules need the network when imported: ``tasks/tiny_benchmarks.py``
downloads ``tinyBenchmarks.pkl`` from raw.githubusercontent.com unless it lies beside the module, and
``tasks/mt_bench/main.py`` and ``tasks/mix_eval/main.py`` build LLM-judge metrics that look their judge up
on the Hub (``HfApi().list_models(model_name=...)``, a keyword huggingface_hub 1.0 removed, so these two
fail with any network once transformers needs huggingface_hub 1). ``lighteval accelerate`` therefore stops
before it reads any task. Here the registry reads the ``--custom-tasks`` module only (this package when none
is given); everything else is lighteval's.

lighteval keeps each model's samples under ``cache_dir / model_name`` (``SampleCache`` in
``lighteval/utils/cache_management.py``); a model named by an absolute path, as a local folder is, replaces
that join with the path itself, so the cache would land inside the model folder. Here an absolute name is
taken relative to its root under ``cache_dir`` (``~/.cache/huggingface/lighteval`` unless the model
arguments say ``cache_dir=``): the model folder is left as it was.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from apibank.errors import UserError
from apibank.evals.lighteval.installed import check_installed

if TYPE_CHECKING:
    from types import ModuleType

    from lighteval.tasks.lighteval_task import LightevalTaskConfig

PROG = "python -m apibank.evals.lighteval"
OWN_TASKS = "apibank.evals.lighteval"


def custom_task_configs(custom_tasks: str | Path | ModuleType | None = None,
                        load_multilingual: bool = False) -> dict[str, LightevalTaskConfig]:
    """What lighteval's ``Registry.load_all_task_configs`` returns, read from the ``--custom-tasks`` module
    alone (``load_multilingual`` names built-in tasks, which are not read)."""
    from lighteval.tasks.registry import Registry

    module = Registry.create_custom_tasks_module(custom_tasks or OWN_TASKS)
    return {config.name: config for config in getattr(module, "TASKS_TABLE", ())}


def cache_outside_the_model(original):
    """``SampleCache.__init__`` that keeps an absolute ``model_name`` under ``cache_dir`` (see above)."""

    def init(cache, model_config, *args, **kwargs):
        name = Path(model_config.model_name)
        if name.is_absolute():
            model_config = model_config.model_copy(update={"model_name": str(name.relative_to(name.anchor))})
        original(cache, model_config, *args, **kwargs)

    return init


def main(argv: Sequence[str] | None = None) -> int:
    try:
        check_installed()
    except UserError as error:
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return 2
    from lighteval.__main__ import app
    from lighteval.tasks.registry import Registry
    from lighteval.utils.cache_management import SampleCache

    loader, cache_init = Registry.__dict__["load_all_task_configs"], SampleCache.__init__
    Registry.load_all_task_configs = staticmethod(custom_task_configs)
    SampleCache.__init__ = cache_outside_the_model(cache_init)
    try:  # lighteval's command line ends the process with its own exit status
        app(args=None if argv is None else list(argv), prog_name=PROG)
    finally:
        Registry.load_all_task_configs = loader
        SampleCache.__init__ = cache_init
    return 0


if __name__ == "__main__":
    sys.exit(main())
