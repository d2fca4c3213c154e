"""API-Bank as lm-evaluation-harness tasks: ``apibank_level1``, ``apibank_level2``, ``apibank_level3`` and
the group ``apibank`` (the ``lm-eval`` extra).

The task YAMLs live in :data:`TASK_FOLDER`, which ``python -m apibank.evals.lm_eval`` prints for
lm-eval's ``--include_path``; their hooks are :mod:`apibank.evals.lm_eval.task`. Importing this module
needs no lm-eval; :func:`check_installed` says, in one line, when the installed one cannot run the tasks.
"""

from __future__ import annotations

from pathlib import Path

from apibank.errors import MissingExtra, require_extra
from apibank.evals.spec import LEVEL_TASK_NAMES

TASK_FOLDER = Path(__file__).resolve().parent / "tasks"
TASK_NAMES = LEVEL_TASK_NAMES
GROUP_NAME = "apibank"
# The releases whose task loader the YAMLs are written for: `class: !function` on a dotted module path
# (a package module, not a file beside the YAML), `custom_dataset` called with the run's metadata (which
# holds --model_args), and the request's `gen_kwargs` grouped per request by the hf and vllm models.
SUPPORTED = (">=0.4.13", "<0.5")


def check_installed() -> str:
    """The installed lm-eval's version; :class:`MissingExtra` when it is absent or outside :data:`SUPPORTED`."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.specifiers import SpecifierSet

    require_extra("lm-eval", ("lm_eval",), "API-Bank's lm-evaluation-harness tasks")
    try:
        installed = version("lm_eval")
    except PackageNotFoundError:
        installed = "unknown"
    if installed == "unknown" or installed not in SpecifierSet(",".join(SUPPORTED), prereleases=True):
        raise MissingExtra(f"API-Bank's lm-evaluation-harness tasks need lm-eval {','.join(SUPPORTED)}, "
                           f"found {installed}: pip install 'apibank[lm-eval]'")
    return installed
