"""The inspect-ai side of API-Bank as the Hub's ``eval.yaml`` names it: field spec, solvers, scorers.

One table, read by both the dataset's ``eval.yaml`` (:func:`apibank.hub.tasks.eval_yaml`) and the
inspect-ai tasks (:mod:`apibank.evals.classic`), so the two cannot drift apart. Importing this module
needs no inspect-ai.
"""

from __future__ import annotations

from typing import Any

from apibank.benchmark import PROTOCOLS

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


def solvers_spec() -> list[dict[str, Any]]:
    """The paper prompt as one user turn, then the model's completion."""
    return [{"name": qualified(SOLVER_NAME), "args": {"icl": False}}, {"name": "generate"}]


def scorers_spec() -> list[dict[str, Any]]:
    """One scorer, both judging protocols (paper and corrected) reported side by side."""
    return [{"name": qualified(SCORER_NAME), "args": {"protocols": list(PROTOCOLS)}}]


# The agentic tasks (:mod:`apibank.evals.agentic`, whose solver and scorer register under these names):
# the episode solver runs the tool loop of a whole dialogue in one tool-discovery setting; the scorer
# judges what the episode achieved.
AGENTIC_SOLVER_NAME = "episode_solver"
AGENTIC_SCORER_NAME = "achieved"


def agentic_solvers_spec(setting: str) -> list[dict[str, Any]]:
    return [{"name": qualified(AGENTIC_SOLVER_NAME), "args": {"setting": setting}}]


def agentic_scorers_spec() -> list[dict[str, Any]]:
    """Success (final state and information obtained) per episode; pass^k over epochs."""
    return [{"name": qualified(AGENTIC_SCORER_NAME)}]
