"""Leaderboard files for the Hugging Face Hub, and opening them as pull requests.

Two evaluation-result formats go to the *model* repository:

* ``model-index`` metadata in the model card (``README.md``), built with ``huggingface_hub``'s
  ``ModelCardData`` / ``EvalResult``: one result per level and metric, both protocols;
* the newer ``.eval_results/<name>.yaml`` list (https://huggingface.co/docs/hub/eval-results), built
  with ``EvalResultEntry``: one entry per task of the benchmark's ``eval.yaml``, for one protocol.

The *dataset* repository gets ``eval.yaml``, which registers API-Bank as a Hub benchmark and
defines those task ids.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from apibank.report.table import LEVELS, PROTOCOL_ORDER

# The Hub dataset repository the results point at (where the benchmark's leaderboard lives).
DEFAULT_DATASET_ID = "apibank/API-Bank"
EVAL_RESULTS_FILE = ".eval_results/api-bank.yaml"
EVALUATION_FRAMEWORK = "apibank"

BENCHMARK_DESCRIPTION = (
    "API-Bank (Li et al., EMNLP 2023) evaluates tool-augmented LLMs with executable APIs. Level 1 (399 "
    "API-call and 375 response samples) asks for the next API call given the tool descriptions; level 2 "
    "(135 + 103) requires finding the tool with a ToolSearcher first; level 3 (245 calls in 50 dialogues, "
    "50 responses) chains several calls to meet a one-sentence requirement. Predicted calls are executed "
    "against re-implemented tools (53 level-1/2 tools, 22 level-3 tools) and judged as the original "
    "evaluators do (paper protocol) or with their judging bugs fixed (corrected protocol); responses are "
    "scored with ROUGE-L."
)

# task id -> (config, kind of score, label)
TASKS: dict[str, tuple[str, str, str]] = {
    "level-1-api": ("level-1", "api", "Level-1 API call accuracy (%)"),
    "level-1-response": ("level-1", "response", "Level-1 response ROUGE-L"),
    "level-2-api": ("level-2", "api", "Level-2 API call accuracy (%)"),
    "level-2-response": ("level-2", "response", "Level-2 response ROUGE-L"),
    "level-3-api": ("level-3", "api", "Level-3 API call accuracy (%)"),
    "level-3-dialogue": ("level-3", "dialogues", "Level-3 dialogue accuracy (%)"),
    "level-3-response": ("level-3", "response", "Level-3 response ROUGE-L"),
}


def task_value(scores: Mapping[str, Any], protocol: str, config: str, kind: str) -> float | None:
    """The headline number of a task: accuracy in percent (2 decimals) or ROUGE-L (4 decimals)."""
    cell = (scores.get(protocol, {}).get(config) or {}).get(kind)
    if not cell:
        return None
    if kind == "response":
        return round(float(cell["rouge_l"]), 4) if cell.get("count") else None
    return round(100 * float(cell["accuracy"]), 2) if cell.get("total") else None


def eval_yaml(name: str = "API-Bank", description: str = BENCHMARK_DESCRIPTION) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [
            {"id": task_id, "config": config, "split": "test"} for task_id, (config, _, _) in TASKS.items()
        ],
    }


def _notes(results: Mapping[str, Any], protocol: str) -> str:
    model = results.get("model", {})
    parts = [
        f"protocol={protocol}",
        f"format={results.get('format')}",
        f"backend={model.get('backend')}",
        f"dtype={model.get('dtype')}",
        "greedy",
    ]
    if results.get("limit"):
        parts.append(f"limit={results['limit']} (subset, not comparable)")
    return "; ".join(parts)


def eval_result_entries(
    results: Mapping[str, Any],
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    dataset_revision: str | None = None,
    protocol: str = "paper",
    source_url: str | None = None,
    source_name: str | None = None,
):
    from huggingface_hub import EvalResultEntry

    date = results.get("date") or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    entries = []
    for task_id, (config, kind, _) in TASKS.items():
        value = task_value(results["scores"], protocol, config, kind)
        if value is None:
            continue
        entries.append(
            EvalResultEntry(
                dataset_id=dataset_id,
                task_id=task_id,
                value=value,
                dataset_revision=dataset_revision,
                date=date,
                source_url=source_url,
                source_name=source_name if source_url else None,
                notes=_notes(results, protocol),
            )
        )
    return entries


def model_index_results(
    results: Mapping[str, Any],
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    dataset_revision: str | None = None,
    source_url: str | None = None,
):
    """``EvalResult``s for the model card: every level and metric, both protocols."""
    from huggingface_hub import EvalResult

    scores = results["scores"]
    out = []
    for protocol in [p for p in PROTOCOL_ORDER if p in scores]:
        for task_id, (config, kind, label) in TASKS.items():
            value = task_value(scores, protocol, config, kind)
            if value is None:
                continue
            out.append(
                EvalResult(
                    task_type="text-generation",
                    task_name="Tool use",
                    dataset_type=dataset_id,
                    dataset_name="API-Bank",
                    dataset_config=config,
                    dataset_split="test",
                    dataset_revision=dataset_revision,
                    metric_type="rouge" if kind == "response" else "accuracy",
                    metric_value=value,
                    metric_name=f"{label}, {protocol} protocol",
                    metric_config=protocol,
                    source_name="apibank" if source_url else None,
                    source_url=source_url,
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


def write_leaderboard_files(
    results: Mapping[str, Any],
    output_dir: str | os.PathLike[str],
    *,
    dataset_id: str = DEFAULT_DATASET_ID,
    dataset_revision: str | None = None,
    protocol: str = "paper",
    source_url: str | None = None,
) -> dict[str, Path]:
    """Write ``model/README.md``, ``model/.eval_results/api-bank.yaml`` and ``dataset/eval.yaml``."""
    from huggingface_hub import eval_result_entries_to_yaml

    output_dir = Path(output_dir)
    model_dir = output_dir / "model"
    (model_dir / ".eval_results").mkdir(parents=True, exist_ok=True)
    (output_dir / "dataset").mkdir(parents=True, exist_ok=True)
    entries = eval_result_entries(
        results, dataset_id=dataset_id, dataset_revision=dataset_revision, protocol=protocol, source_url=source_url
    )
    paths = {
        "model_card": model_dir / "README.md",
        "eval_results": model_dir / EVAL_RESULTS_FILE,
        "eval_yaml": output_dir / "dataset" / "eval.yaml",
    }
    index = model_index_results(results, dataset_id=dataset_id, dataset_revision=dataset_revision, source_url=source_url)
    paths["model_card"].write_text(model_card_text(results, index), encoding="utf-8")
    paths["eval_results"].write_text(
        yaml.safe_dump(eval_result_entries_to_yaml(entries), sort_keys=False, allow_unicode=True), encoding="utf-8"
    )
    paths["eval_yaml"].write_text(yaml.safe_dump(eval_yaml(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    return paths


def _merged_card(repo_id: str, local_card: Path, dataset_id: str, token: str | None) -> str:
    """The model's current card with our ``model-index`` results merged in (ours replace older API-Bank ones)."""
    from huggingface_hub import ModelCard
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    ours = ModelCard.load(local_card)
    try:
        card = ModelCard.load(repo_id, token=token)
    except (EntryNotFoundError, RepositoryNotFoundError):
        return str(ours)
    kept = [r for r in (card.data.eval_results or []) if r.dataset_type != dataset_id]
    card.data.eval_results = kept + list(ours.data.eval_results or [])
    if not card.data.model_name:
        card.data.model_name = ours.data.model_name
    return str(card)


def push_to_hub(
    leaderboard_dir: str | os.PathLike[str],
    model_repo: str,
    *,
    dataset_repo: str | None = None,
    dataset_id: str = DEFAULT_DATASET_ID,
    token: str | None = None,
    api: Any = None,
) -> dict[str, str | None]:
    """Open pull requests: the results on ``model_repo``; ``eval.yaml`` on ``dataset_repo`` if given.

    Returns the pull-request URLs. The model card is merged with the card already on the Hub.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    api = api or HfApi(token=token)
    leaderboard_dir = Path(leaderboard_dir)
    model_dir = leaderboard_dir / "model"
    card_text = _merged_card(model_repo, model_dir / "README.md", dataset_id, token)
    operations = [
        CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_text.encode("utf-8")),
        CommitOperationAdd(path_in_repo=EVAL_RESULTS_FILE, path_or_fileobj=str(model_dir / EVAL_RESULTS_FILE)),
    ]
    description = (
        "API-Bank evaluation results written by `apibank evaluate`: `model-index` metadata in the model "
        f"card and `{EVAL_RESULTS_FILE}` (https://huggingface.co/docs/hub/eval-results)."
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
