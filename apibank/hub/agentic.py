"""Leaderboard files of an agentic run (``apibank agent``), under the same policy as a classic run.

One ``.eval_results/api-bank-agentic-<setting>.yaml`` per tool-discovery setting, one entry per level,
under the task ids ``eval.yaml`` declares (``agentic-<level>-<setting>``): the episode success in
percent, pass^k when every episode ran k trials. Written only for every episode of each level it
reports and with a ``--dataset-id`` (:mod:`apibank.hub.result_files`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

from apibank.files import LEADERBOARD_DIR
from apibank.hub.ids import check_repo_id
from apibank.hub.result_files import (
    DATASET_DIR,
    EVAL_RESULTS_DIR,
    MODEL_DIR,
    VARIANT_PREFIX,
    ResultSource,
    check_complete,
    publishing_note,
    remove_result_files,
    result_entry,
    results_to_push,
    write_result_file,
)
from apibank.benchmark import EPISODE_COUNTS
from apibank.hub.tasks import AGENTIC_TASKS, agentic_task_id, write_eval_yaml

AGENTIC_PREFIX = f"{VARIANT_PREFIX}-agentic"


def agentic_variant_file(setting: str) -> str:
    return f"{EVAL_RESULTS_DIR}/{AGENTIC_PREFIX}-{setting}.yaml"


def agentic_subset_reason(results: Mapping[str, Any]) -> str | None:
    """Why an agentic run is not every episode of the levels it covers (None when it is)."""
    if results.get("limit"):
        return f"--limit {results['limit']} ran the first episodes of every level only"
    if not results.get("levels"):
        return "no level was run"
    for level, summary in results["levels"].items():
        full = EPISODE_COUNTS.get(level)
        if full is None:
            return f"unknown level {level!r}"
        if summary.get("episodes") != full:
            return f"{level} holds {summary.get('episodes')} episodes, the benchmark {full}"
        if summary.get("runs") != full * int(summary.get("trials") or 1):
            return f"{level} ran {summary.get('runs')} of its {full} x {summary.get('trials')} episode trials"
    return None


def agentic_value(summary: Mapping[str, Any]) -> float | None:
    """Success in percent: pass^k over the trials, else the success rate (2 decimals)."""
    value = summary.get("pass_k") if summary.get("pass_k") is not None else summary.get("success_rate")
    return None if value is None else round(100 * value, 2)


def agentic_entries(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
) -> list[Any]:
    """The ``.eval_results`` entries of an agentic run: one per level, under ``agentic-<level>-<setting>``."""
    check_complete(agentic_subset_reason(results))
    setting = results["setting"]
    entries = []
    for level, summary in results["levels"].items():
        value = agentic_value(summary)
        if value is None:
            continue
        entries.append(result_entry(
            results, dataset_id=dataset_id, task_id=AGENTIC_TASKS[agentic_task_id(level, setting)].id, value=value,
            dataset_revision=dataset_revision, source=source,
            notes=f"agentic episodes; pass^k with k={summary['trials']}; setting={setting}; "
            f"episodes={summary['episodes']}; backend={results['model'].get('backend')}",
        ))
    return entries


def write_agentic_leaderboard_files(
    results: Mapping[str, Any],
    output_dir: str | os.PathLike[str],
    *,
    dataset_id: str | None,
    dataset_revision: str | None = None,
) -> dict[str, Path]:
    """Write ``dataset/eval.yaml`` and, for every episode of each level with a dataset id,
    ``model/.eval_results/api-bank-agentic-<setting>.yaml``; stale result files are removed otherwise.

    Returned keys: ``eval_yaml``, and ``eval_results`` when the result file was written."""
    output_dir = Path(output_dir)
    paths = {"eval_yaml": write_eval_yaml(output_dir / DATASET_DIR)}
    model_dir = output_dir / MODEL_DIR
    remove_result_files(model_dir, f"{AGENTIC_PREFIX}*.yaml", card=False)  # agentic runs write no card
    if dataset_id is None or agentic_subset_reason(results):
        return paths
    check_repo_id(dataset_id, "the benchmark dataset id")
    entries = agentic_entries(results, dataset_id=dataset_id, dataset_revision=dataset_revision)
    if entries:
        paths["eval_results"] = write_result_file(model_dir / agentic_variant_file(results["setting"]), entries)
    return paths


def agentic_leaderboard_note(results: Mapping[str, Any], dataset_id: str | None) -> str | None:
    """Why no result file was written (None when it was)."""
    return publishing_note(agentic_subset_reason(results), dataset_id)


def publish_agentic(
    output_dir: str | os.PathLike[str],
    model_repo: str,
    *,
    dataset_id: str,
    dataset_revision: str | None = None,
    api: Any = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Rewrite an agentic run's result file with the benchmark dataset's current commit and open the
    pull request on ``model_repo``; returns ``{"dataset_revision": sha or None, "pull_requests": {...}}``."""
    from huggingface_hub import HfApi

    from apibank.hub.details import hub_dataset_revision
    from apibank.hub.push import push_to_hub

    output_dir = Path(output_dir)
    results = results_to_push(output_dir, model_repo, dataset_id, agentic_subset_reason)
    api = api or HfApi(token=token)
    revision = dataset_revision or hub_dataset_revision(api, dataset_id)
    write_agentic_leaderboard_files(results, output_dir / LEADERBOARD_DIR, dataset_id=dataset_id,
                                    dataset_revision=revision)
    urls = push_to_hub(output_dir / LEADERBOARD_DIR, model_repo, dataset_id=dataset_id, token=token, api=api)
    return {"dataset_revision": revision, "pull_requests": urls}
