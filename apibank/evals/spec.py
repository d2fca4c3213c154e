"""The names of API-Bank's inspect-ai objects and how dataset rows map to samples.

Read by the inspect-ai tasks (:mod:`apibank.evals.classic`, :mod:`apibank.evals.agentic`) and by the
tests that check the registry. Importing this module needs no inspect-ai.
"""

from __future__ import annotations

from typing import Any

from apibank.benchmark import LEVEL_NUMBERS


# Registry namespace of this package's inspect-ai objects (inspect prefixes the installed package name).
NAMESPACE = "apibank"

# Dataset columns -> inspect-ai Sample fields (inspect_ai.dataset.FieldSpec). The paper prompt is
# ``instruction`` + newline + ``input``; the solver joins them from the metadata, and the scorer
# judges the completion against ``reference`` (the metric's JSON reference).
FIELD_SPEC: dict[str, Any] = {
    "input": "input",
    "target": "expected_output",
    "id": "id",
    "metadata": ["level", "kind", "instruction", "instruction_icl", "reference"],
}

# The row columns a harness document carries (those an inspect-ai sample carries).
DOC_FIELDS = (FIELD_SPEC["id"], FIELD_SPEC["input"], FIELD_SPEC["target"], *FIELD_SPEC["metadata"])
# The task of each level in lm-evaluation-harness and lighteval.
LEVEL_TASK_NAMES = tuple(f"apibank_level{level}" for level in LEVEL_NUMBERS)

SOLVER_NAME = "paper_prompt"
SCORER_NAME = "api_bank_scorer"
METRIC_NAME = "api_bank_metrics"


def qualified(name: str) -> str:
    return f"{NAMESPACE}/{name}"


def registration_name(module: Any, name: str) -> str:
    """The name to give an inspect-ai decorator (task, solver, scorer, metric) in ``module`` so that
    the object is registered as ``apibank/<name>`` however the package is installed.

    inspect-ai prefixes the package name itself when it sees the module as installed; it does not
    when an ``apibank.egg-info`` in the working directory (left by ``pip install -e .``) shadows the
    editable install's metadata -- then ``inspect eval apibank/api_bank`` run from the checkout would
    find nothing. So the prefix is added here exactly when inspect-ai would not add it.
    """
    from inspect_ai._util.package import get_installed_package_name

    return name if get_installed_package_name(module) == NAMESPACE else qualified(name)


# The agentic tasks (:mod:`apibank.evals.agentic`, whose solver and scorer register under these names):
# the episode solver runs the tool loop of a whole dialogue in one tool-discovery setting; the scorer
# judges what the episode achieved.
AGENTIC_SOLVER_NAME = "episode_solver"
AGENTIC_SCORER_NAME = "achieved"
