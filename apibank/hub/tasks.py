"""The tasks the benchmark's Hub dataset declares, and ``eval.yaml``, the file that declares them.

``eval.yaml`` registers API-Bank as a Hub benchmark with the fields the Hub documents for it
(https://huggingface.co/docs/hub/eval-results): ``name``, ``description`` and ``tasks``, each task an
``id``, a dataset ``config`` and a ``split``. Every task id a result file (``.eval_results/*.yaml``) can name is declared:

* classic tasks (:data:`TASKS`), one per level and metric;
* agentic tasks (:data:`AGENTIC_TASKS`), ``agentic-<level>-<setting>``: whole episodes in which the
  model drives the tool loop, scored by success in percent.

The file declares no ``evaluation_framework`` and no inspect-ai ``field_spec``/``solvers``/``scorers``:
inspect-ai's loader for Hub benchmarks (``inspect eval hf/NS/NAME``) accepts only its built-in
solvers and text-matching scorers, and API-Bank's scores come from executing the predicted calls, so
no such file could run the benchmark truthfully. The benchmark runs with this package
(``apibank evaluate``, or ``inspect eval apibank/api_bank`` with the ``inspect`` extra), as the
description says.

:func:`write_eval_yaml` is the one writer of the file: the dataset export and every run's
``leaderboard/dataset/`` use it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import yaml

from apibank.benchmark import BENCHMARK_NAME, EPISODE_COUNTS, FULL_COUNTS, LEVEL_SPECS, SETTINGS, LevelSpec
from apibank.files import atomic_write_text

EVAL_YAML_FILE = "eval.yaml"
# The keys of eval.yaml and of each of its tasks that the Hub documents (and nothing else).
EVAL_YAML_KEYS = ("name", "description", "tasks")
TASK_KEYS = ("id", "config", "split")

BENCHMARK_DESCRIPTION = (
    "API-Bank (Li et al., EMNLP 2023) evaluates tool-augmented LLMs with executable APIs. Level 1 (399 "
    "API-call and 375 response samples) asks for the next API call given the tool descriptions; level 2 "
    "(135 + 103) requires finding the tool with a ToolSearcher first; level 3 (245 calls in 50 dialogues, "
    "50 responses) chains several calls to meet a one-sentence requirement. Predicted calls are executed "
    "against re-implemented tools (53 level-1/2 tools, 22 level-3 tools) and judged as the original "
    "evaluators do (paper protocol) or with their judging bugs fixed (corrected protocol); responses are "
    "scored with ROUGE-L. Units: API call and dialogue accuracy in percent (0-100), response ROUGE-L "
    "F-measure between 0 and 1. Results of the corrected protocol and of other prompt formats say so in "
    "their notes; results without notes are the paper protocol with the paper prompts."
)
HOW_TO_RUN = (
    " How to run it: pip install 'apibank[inspect]', then `inspect eval apibank/api_bank -T level=1` (or "
    "`apibank evaluate --model MODEL --dataset-id <this repo>`, which also writes the result files). "
    "inspect-ai's `hf/` loader cannot run this benchmark from this file: its eval.yaml accepts only "
    "built-in text-matching scorers, and API-Bank scores a call by executing it."
)
AGENTIC_DESCRIPTION = (
    " Agentic tasks (agentic-<level>-<setting>) run whole dialogues in which the model drives the tool loop, "
    "finding tools with ToolSearcher (searcher) or offered every tool (all-tools); an episode succeeds when "
    "the final databases equal the gold replay's and every result the gold calls read was obtained. Unit: "
    "episode success in percent (pass^k over k trials, k in the notes)."
)

UNITS = {"api": "%", "dialogues": "%", "response": "0-1", "episodes": "%"}
METRIC_TYPES = {"api": "accuracy", "dialogues": "accuracy", "response": "rouge", "episodes": "accuracy"}


@dataclass(frozen=True)
class Task:
    id: str
    config: str
    kind: str  # "api", "dialogues", "response" (a level's score block) or "episodes" (agentic)
    label: str  # what is measured, without the unit
    setting: str | None = None  # agentic tasks: the tool-discovery setting

    @property
    def metric_name(self) -> str:
        return f"{self.label} ({UNITS[self.kind]})"


def _level_tasks(spec: LevelSpec) -> Iterator[Task]:
    """A level's API accuracy, its dialogue accuracy where the level has one, its response ROUGE-L."""
    level, label = spec.name, spec.name.capitalize()
    yield Task(f"{level}-api", level, "api", f"{label} API call accuracy")
    if spec.dialogue_accuracy:
        yield Task(f"{level}-dialogue", level, "dialogues", f"{label} dialogue accuracy")
    yield Task(f"{level}-response", level, "response", f"{label} response ROUGE-L")


TASKS: dict[str, Task] = {task.id: task for spec in LEVEL_SPECS.values() for task in _level_tasks(spec)}


def agentic_task_id(level: str, setting: str) -> str:
    return f"agentic-{level}-{setting}"


AGENTIC_TASKS: dict[str, Task] = {
    agentic_task_id(level, setting): Task(
        agentic_task_id(level, setting), level, "episodes",
        f"{level.capitalize()} agentic episode success ({setting})", setting,
    )
    for level in EPISODE_COUNTS
    for setting in SETTINGS
}


def declared_task_ids() -> list[str]:
    """Every task id ``eval.yaml`` declares, in its order."""
    return [*TASKS, *AGENTIC_TASKS]


def eval_yaml(name: str = BENCHMARK_NAME, description: str | None = None) -> dict[str, Any]:
    """The dataset repository's ``eval.yaml``: per task its id, config and split."""
    return {
        "name": name,
        "description": BENCHMARK_DESCRIPTION + AGENTIC_DESCRIPTION + HOW_TO_RUN if description is None else description,
        "tasks": [{"id": task.id, "config": task.config, "split": "test"}
                  for task in [*TASKS.values(), *AGENTIC_TASKS.values()]],
    }


class _NoAliasDumper(yaml.SafeDumper):
    """Plain YAML: the Hub's validators and readers get no anchors or aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True)


def write_eval_yaml(folder: str | os.PathLike[str]) -> Path:
    """Write ``folder/eval.yaml``; returns its path."""
    path = Path(folder) / EVAL_YAML_FILE
    atomic_write_text(path, dump_yaml(eval_yaml()))
    return path
