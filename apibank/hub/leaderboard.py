"""Leaderboard files for the Hugging Face Hub, and opening them as pull requests.

What goes where follows the Hub's documentation (hub-docs ``docs/hub/eval-results.md``,
``eval_results.yaml``, ``modelcard.md``; huggingface.js ``packages/tasks/src/eval.ts``):

* the benchmark's *dataset* repository gets ``eval.yaml`` (:func:`eval_yaml`): it registers API-Bank
  as a Hub benchmark with ``evaluation_framework: inspect-ai`` and defines the task ids, each with
  the ``field_spec``, ``solvers`` and ``scorers`` of the inspect-ai task in :mod:`apibank.evals`;
* a *model* repository gets one ``.eval_results/<variant>.yaml`` per variant of a run -- judging
  protocol x prompt format (:func:`variant_file`) -- so a corrected or ``--format tools`` run never
  overwrites the paper one; the default variant (paper protocol, paper prompts) carries no notes,
  every other variant says in ``notes`` what it is;
* and ``model-index`` metadata in its card (``README.md``): every level and metric, both protocols,
  the protocol and format in ``metrics[].args``.

Units: one per kind of metric, stated in every metric name: accuracies (API calls, dialogues) in
percent, response ROUGE-L as an F-measure between 0 and 1.

Only complete levels are written under the official task ids: a ``--limit`` subset (or any level
scored on fewer samples than the benchmark has) writes no model files at all.
"""

from __future__ import annotations

import copy
import datetime as _dt
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from apibank.errors import UserError
from apibank.files import atomic_write_text
from apibank.report.table import LEVELS, PROTOCOL_ORDER

EVAL_RESULTS_DIR = ".eval_results"
VARIANT_PREFIX = "api-bank"
DEFAULT_PROTOCOL = "paper"
DEFAULT_FORMAT = "paper"
EVALUATION_FRAMEWORK = "inspect-ai"  # one of huggingface.js EVALUATION_FRAMEWORKS (eval.ts)
BENCHMARK_NAME = "API-Bank"

# Samples per level of the benchmark (test split): API-call rows, response rows.
FULL_COUNTS = {
    "level-1": {"api": 399, "response": 375},
    "level-2": {"api": 135, "response": 103},
    "level-3": {"api": 245, "response": 50},
}

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

UNITS = {"api": "%", "dialogues": "%", "response": "0-1"}
METRIC_TYPES = {"api": "accuracy", "dialogues": "accuracy", "response": "rouge"}


@dataclass(frozen=True)
class Task:
    id: str
    config: str
    kind: str  # "api", "dialogues" or "response": the key of the level's score block
    label: str  # what is measured, without the unit

    @property
    def metric_name(self) -> str:
        return f"{self.label} ({UNITS[self.kind]})"


TASKS: dict[str, Task] = {
    task.id: task
    for task in (
        Task("level-1-api", "level-1", "api", "Level-1 API call accuracy"),
        Task("level-1-response", "level-1", "response", "Level-1 response ROUGE-L"),
        Task("level-2-api", "level-2", "api", "Level-2 API call accuracy"),
        Task("level-2-response", "level-2", "response", "Level-2 response ROUGE-L"),
        Task("level-3-api", "level-3", "api", "Level-3 API call accuracy"),
        Task("level-3-dialogue", "level-3", "dialogues", "Level-3 dialogue accuracy"),
        Task("level-3-response", "level-3", "response", "Level-3 response ROUGE-L"),
    )
}


@dataclass(frozen=True)
class ResultSource:
    """The ``source`` block of a result: where its per-sample details are."""

    url: str
    name: str = "API-Bank per-sample details"
    user: str | None = None


class SubsetRun(UserError, ValueError):
    """Results of a subset of the benchmark, which must never appear under the official task ids."""


# ---------------------------------------------------------------------------------------- values
def task_value(scores: Mapping[str, Any], protocol: str, config: str, kind: str) -> float | None:
    """The headline number of a task: accuracy in percent (2 decimals) or ROUGE-L F in 0-1 (4 decimals)."""
    cell = (scores.get(protocol, {}).get(config) or {}).get(kind)
    if not cell:
        return None
    if kind == "response":
        return round(float(cell["rouge_l"]), 4) if cell.get("count") else None
    return round(100 * float(cell["accuracy"]), 2) if cell.get("total") else None


def subset_reason(results: Mapping[str, Any]) -> str | None:
    """Why ``results`` are not the whole benchmark for the levels they cover (None when they are)."""
    if results.get("limit"):
        return f"--limit {results['limit']} scored a subset of every level"
    for level, cell in (results.get("counts") or {}).items():
        full = FULL_COUNTS.get(level)
        if full is None:
            return f"unknown level {level!r}"
        if {kind: int(cell.get(kind, 0)) for kind in full} != full:
            return f"{level} holds {cell} samples, the benchmark {full}"
    return None


def prompt_format(results: Mapping[str, Any]) -> str:
    fmt = str(results.get("format") or DEFAULT_FORMAT)
    return f"{fmt}-icl" if results.get("icl") else fmt


def is_default_variant(protocol: str, fmt: str) -> bool:
    return protocol == DEFAULT_PROTOCOL and fmt == DEFAULT_FORMAT


def variant_name(protocol: str, fmt: str) -> str:
    """``api-bank`` for the default variant; ``api-bank-corrected``, ``api-bank-tools``,
    ``api-bank-corrected-chat`` ... for the others."""
    parts = [VARIANT_PREFIX]
    if protocol != DEFAULT_PROTOCOL:
        parts.append(protocol)
    if fmt != DEFAULT_FORMAT:
        parts.append(fmt)
    return "-".join(parts)


def variant_file(protocol: str, fmt: str) -> str:
    return f"{EVAL_RESULTS_DIR}/{variant_name(protocol, fmt)}.yaml"


def variant_notes(protocol: str, fmt: str) -> str | None:
    """The ``notes`` of a variant: none for the default one, else what differs from it."""
    if is_default_variant(protocol, fmt):
        return None
    parts = []
    if protocol != DEFAULT_PROTOCOL:
        parts.append(f"{protocol} protocol (the original evaluators' judging bugs fixed)")
    else:
        parts.append("paper protocol")
    parts.append(f"{fmt} prompt format" if fmt != DEFAULT_FORMAT else "paper prompt format")
    return "; ".join(parts)


# ---------------------------------------------------------------------------------------- eval.yaml
def eval_yaml(name: str = BENCHMARK_NAME, description: str = BENCHMARK_DESCRIPTION) -> dict[str, Any]:
    """The dataset repository's ``eval.yaml``: framework, and per task its config, split and inspect-ai spec."""
    from apibank.evals.spec import FIELD_SPEC, scorers_spec, solvers_spec

    return {
        "name": name,
        "description": description,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [
            {
                "id": task.id,
                "config": task.config,
                "split": "test",
                "field_spec": copy.deepcopy(FIELD_SPEC),
                "solvers": solvers_spec(),
                "scorers": scorers_spec(),
            }
            for task in TASKS.values()
        ],
    }


# ---------------------------------------------------------------------------------------- entries
def _date(results: Mapping[str, Any]) -> str:
    return results.get("date") or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _check_complete(results: Mapping[str, Any]) -> None:
    reason = subset_reason(results)
    if reason:
        raise SubsetRun(f"not written under the official API-Bank task ids: {reason}")


def eval_result_entries(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    protocol: str = DEFAULT_PROTOCOL,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
):
    """The ``.eval_results`` entries of one variant (``protocol`` x the run's prompt format)."""
    from huggingface_hub import EvalResultEntry

    _check_complete(results)
    fmt = prompt_format(results)
    entries = []
    for task in TASKS.values():
        value = task_value(results["scores"], protocol, task.config, task.kind)
        if value is None:
            continue
        entries.append(
            EvalResultEntry(
                dataset_id=dataset_id,
                task_id=task.id,
                value=value,
                dataset_revision=dataset_revision,
                date=_date(results),
                source_url=source.url if source else None,
                source_name=source.name if source else None,
                source_user=source.user if source else None,
                notes=variant_notes(protocol, fmt),
            )
        )
    return entries


def model_index_results(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
):
    """``EvalResult``s for the model card: every level and metric, both protocols; protocol and
    prompt format in ``metrics[].args``."""
    from huggingface_hub import EvalResult

    _check_complete(results)
    scores = results["scores"]
    fmt = prompt_format(results)
    out = []
    for protocol in [p for p in PROTOCOL_ORDER if p in scores]:
        for task in TASKS.values():
            value = task_value(scores, protocol, task.config, task.kind)
            if value is None:
                continue
            out.append(
                EvalResult(
                    task_type="text-generation",
                    task_name="Tool use",
                    dataset_type=dataset_id,
                    dataset_name=BENCHMARK_NAME,
                    dataset_config=task.config,
                    dataset_split="test",
                    dataset_revision=dataset_revision,
                    metric_type=METRIC_TYPES[task.kind],
                    metric_value=value,
                    metric_name=f"{task.metric_name}, {protocol} protocol, {fmt} prompts",
                    metric_args={"protocol": protocol, "format": fmt},
                    source_name=source.name if source else None,
                    source_url=source.url if source else None,
                )
            )
    return out


def model_card_text(results: Mapping[str, Any], eval_results: Sequence[Any], body: str | None = None) -> str:
    from huggingface_hub import ModelCardData

    from apibank.report.table import markdown_table

    model_id = results.get("model", {}).get("id") or "model"
    data = ModelCardData(model_name=model_id, eval_results=list(eval_results))
    body = body or (
        f"# {model_id}\n\n## API-Bank evaluation\n\n"
        f"{markdown_table(results['scores'], [l for l in LEVELS if l in results['scores'].get('paper', {})])}\n"
    )
    return f"---\n{data.to_yaml()}\n---\n\n{body}"


class _NoAliasDumper(yaml.SafeDumper):
    """Plain YAML: the Hub's validators and readers get no anchors or aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def dump_yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True)


def write_eval_yaml(output_dir: str | os.PathLike[str]) -> Path:
    path = Path(output_dir) / "dataset" / "eval.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, dump_yaml(eval_yaml()))
    return path


def write_leaderboard_files(
    results: Mapping[str, Any],
    output_dir: str | os.PathLike[str],
    *,
    dataset_id: str | None,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
) -> dict[str, Path]:
    """Write ``dataset/eval.yaml`` and, for complete results with a dataset id, ``model/README.md``
    and ``model/.eval_results/<variant>.yaml`` (one per protocol scored).

    Returned keys: ``eval_yaml``; ``model_card`` and ``eval_results:<protocol>`` when model files were
    written. Subset results or a missing ``dataset_id`` write no model files (and remove stale ones).
    """
    from huggingface_hub import eval_result_entries_to_yaml

    output_dir = Path(output_dir)
    paths = {"eval_yaml": write_eval_yaml(output_dir)}
    model_dir = output_dir / "model"
    results_dir = model_dir / EVAL_RESULTS_DIR
    for stale in list(results_dir.glob(f"{VARIANT_PREFIX}*.yaml")) + [model_dir / "README.md"]:
        stale.unlink(missing_ok=True)
    if dataset_id is None or subset_reason(results):
        return paths

    from apibank.hub.ids import check_repo_id

    check_repo_id(dataset_id, "the benchmark dataset id")
    results_dir.mkdir(parents=True, exist_ok=True)
    fmt = prompt_format(results)
    for protocol in [p for p in PROTOCOL_ORDER if p in results["scores"]]:
        entries = eval_result_entries(
            results, dataset_id=dataset_id, protocol=protocol, dataset_revision=dataset_revision, source=source
        )
        path = model_dir / variant_file(protocol, fmt)
        atomic_write_text(path, dump_yaml(eval_result_entries_to_yaml(entries)))
        paths[f"eval_results:{protocol}"] = path
    index = model_index_results(results, dataset_id=dataset_id, dataset_revision=dataset_revision, source=source)
    paths["model_card"] = model_dir / "README.md"
    atomic_write_text(paths["model_card"], model_card_text(results, index))
    return paths


def leaderboard_note(results: Mapping[str, Any], dataset_id: str | None) -> str | None:
    """Why no model leaderboard files were written (None when they were)."""
    reason = subset_reason(results)
    if reason:
        return f"no model leaderboard files: a subset run ({reason}) is never written under the official task ids"
    if dataset_id is None:
        return "no model leaderboard files: pass --dataset-id NAMESPACE/NAME (the Hub dataset holding eval.yaml)"
    return None


# ---------------------------------------------------------------------------------------- push
def _same_variant(result: Any, dataset_id: str, fmt: str) -> bool:
    if result.dataset_type != dataset_id:
        return False
    args = result.metric_args if isinstance(result.metric_args, dict) else {}
    # Entries from before metrics[].args (or written by hand) count as this benchmark's default variant.
    return args.get("format", DEFAULT_FORMAT) == fmt


def _merged_card(api: Any, repo_id: str, local_card: Path, dataset_id: str) -> str:
    """The model's current card with our ``model-index`` results merged in: ours replace the results
    of the same benchmark and prompt format; everything else in the card stays."""
    from huggingface_hub import ModelCard
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    ours = ModelCard.load(local_card)
    try:
        card = ModelCard.load(api.hf_hub_download(repo_id=repo_id, filename="README.md", repo_type="model"))
    except (EntryNotFoundError, RepositoryNotFoundError):
        return str(ours)
    formats = {r.metric_args.get("format") for r in ours.data.eval_results or [] if isinstance(r.metric_args, dict)}
    kept = [r for r in (card.data.eval_results or []) if not any(_same_variant(r, dataset_id, f) for f in formats)]
    card.data.eval_results = kept + list(ours.data.eval_results or [])
    if not card.data.model_name:
        card.data.model_name = ours.data.model_name
    return str(card)


def result_files(leaderboard_dir: str | os.PathLike[str]) -> list[Path]:
    """The ``.eval_results`` files written for the model repository, sorted."""
    return sorted((Path(leaderboard_dir) / "model" / EVAL_RESULTS_DIR).glob(f"{VARIANT_PREFIX}*.yaml"))


def push_to_hub(
    leaderboard_dir: str | os.PathLike[str],
    model_repo: str,
    *,
    dataset_id: str,
    dataset_repo: str | None = None,
    token: str | None = None,
    api: Any = None,
) -> dict[str, str | None]:
    """Open pull requests: the results on ``model_repo``; ``eval.yaml`` on ``dataset_repo`` if given.

    Returns the pull-request URLs. The model card is merged with the card already on the Hub.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    from apibank.hub.ids import check_repo_id

    check_repo_id(model_repo, "the model repository")
    check_repo_id(dataset_id, "the benchmark dataset id")
    api = api or HfApi(token=token)
    leaderboard_dir = Path(leaderboard_dir)
    model_dir = leaderboard_dir / "model"
    files = result_files(leaderboard_dir)
    if not files or not (model_dir / "README.md").is_file():
        raise FileNotFoundError(f"{model_dir} holds no result files to push (a subset run, or no --dataset-id)")
    card_text = _merged_card(api, model_repo, model_dir / "README.md", dataset_id)
    operations = [CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_text.encode("utf-8"))]
    operations += [
        CommitOperationAdd(path_in_repo=f"{EVAL_RESULTS_DIR}/{path.name}", path_or_fileobj=str(path)) for path in files
    ]
    description = (
        "API-Bank evaluation results written by `apibank evaluate`: `model-index` metadata in the model "
        f"card and {', '.join(f'`{EVAL_RESULTS_DIR}/{p.name}`' for p in files)} "
        "(https://huggingface.co/docs/hub/eval-results), one file per judging protocol and prompt format."
    )
    model_commit = api.create_commit(
        repo_id=model_repo,
        repo_type="model",
        operations=operations,
        commit_message="Add API-Bank evaluation results",
        commit_description=description,
        create_pr=True,
    )
    urls: dict[str, str | None] = {"model": getattr(model_commit, "pr_url", None)}
    if dataset_repo:
        check_repo_id(dataset_repo, "the dataset repository for eval.yaml")
        dataset_commit = api.create_commit(
            repo_id=dataset_repo,
            repo_type="dataset",
            operations=[
                CommitOperationAdd(path_in_repo="eval.yaml", path_or_fileobj=str(leaderboard_dir / "dataset" / "eval.yaml"))
            ],
            commit_message="Register API-Bank as a Hub benchmark (eval.yaml)",
            create_pr=True,
        )
        urls["dataset"] = getattr(dataset_commit, "pr_url", None)
    return urls
