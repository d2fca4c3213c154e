"""The publishing policy of result files (``.eval_results/*.yaml``), the same for classic and agentic runs.

A result file is written only when

* the run covers the whole benchmark for what it reports: never for a subset (``--limit``, a partial
  predictions file, a level scored on fewer samples or episodes than the benchmark has);
* the user named the benchmark's Hub dataset (``--dataset-id``): there is no default id, so no result
  is ever filed under a placeholder;
* every entry names a task the dataset's ``eval.yaml`` declares (:mod:`apibank.hub.tasks`).

:func:`write_result_file` is the one writer and checks the last two on every entry; the first is
each run kind's ``subset_reason``. When no file may be written, stale ones of an earlier run are
removed, and :func:`publishing_note` says why none was written.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from apibank.errors import UserError
from apibank.files import RESULTS_FILE, atomic_write_text
from apibank.hub.ids import check_repo_id
from apibank.hub.tasks import declared_task_ids, dump_yaml

EVAL_RESULTS_DIR = ".eval_results"
VARIANT_PREFIX = "api-bank"
MODEL_DIR = "model"
DATASET_DIR = "dataset"


class SubsetRun(UserError, ValueError):
    """Results of a subset of the benchmark, which must never appear under the official task ids."""


@dataclass(frozen=True)
class ResultSource:
    """The ``source`` block of a result: where its per-sample details are."""

    url: str
    name: str = "API-Bank per-sample details"
    user: str | None = None


def result_date(results: Mapping[str, Any]) -> str:
    return results.get("date") or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def result_entry(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    task_id: str,
    value: float,
    notes: str | None,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
) -> Any:
    """One ``huggingface_hub.EvalResultEntry`` of a run: its date, and the details' source when given."""
    from huggingface_hub import EvalResultEntry

    return EvalResultEntry(
        dataset_id=dataset_id,
        task_id=task_id,
        value=value,
        dataset_revision=dataset_revision,
        date=result_date(results),
        source_url=source.url if source else None,
        source_name=source.name if source else None,
        source_user=source.user if source else None,
        notes=notes,
    )


def results_to_push(output_dir: Path, model_repo: str, dataset_id: str,
                    subset_reason: Callable[[Mapping[str, Any]], str | None]) -> dict[str, Any]:
    """A run folder's results.json, once the ids are valid and the run is no subset (which is never pushed)."""
    check_repo_id(model_repo, "the model repository")
    check_repo_id(dataset_id, "the benchmark dataset id (--dataset-id)")
    results = json.loads((output_dir / RESULTS_FILE).read_text("utf-8"))
    reason = subset_reason(results)
    if reason:
        raise SubsetRun(f"a subset run is never pushed to the Hub: {reason}")
    return results


def check_complete(reason: str | None) -> None:
    """Refuse results that are a subset (``reason`` says why they are)."""
    if reason:
        raise SubsetRun(f"not written under the official API-Bank task ids: {reason}")


def publishing_note(subset: str | None, dataset_id: str | None) -> str | None:
    """Why no model leaderboard files were written (None when they were)."""
    if subset:
        return f"no model leaderboard files: a subset run ({subset}) is never written under the official task ids"
    if dataset_id is None:
        return "no model leaderboard files: pass --dataset-id NAMESPACE/NAME (the Hub dataset holding eval.yaml)"
    return None


def remove_result_files(model_dir: Path, pattern: str = f"{VARIANT_PREFIX}*.yaml", *, card: bool = True) -> None:
    """Remove the result files matching ``pattern`` that an earlier run left in ``model_dir`` (and,
    with ``card``, its model card)."""
    for stale in list((model_dir / EVAL_RESULTS_DIR).glob(pattern)) + ([model_dir / "README.md"] if card else []):
        stale.unlink(missing_ok=True)


def write_result_file(path: str | os.PathLike[str], entries: Sequence[Any]) -> Path:
    """Write ``entries`` (``huggingface_hub.EvalResultEntry``) as one ``.eval_results`` file, after
    checking that each names a valid Hub dataset id and a task ``eval.yaml`` declares."""
    from huggingface_hub import eval_result_entries_to_yaml

    if not entries:
        raise ValueError(f"{path}: no result to write")
    declared = set(declared_task_ids())
    for entry in entries:
        check_repo_id(entry.dataset_id, "the benchmark dataset id")
        if entry.task_id not in declared:
            raise ValueError(f"task id {entry.task_id!r} is not declared in eval.yaml; declared: {sorted(declared)}")
    path = Path(path)
    atomic_write_text(path, dump_yaml(eval_result_entries_to_yaml(list(entries))))
    return path


def result_files(leaderboard_dir: str | os.PathLike[str]) -> list[Path]:
    """The ``.eval_results`` files written for the model repository, sorted."""
    return sorted((Path(leaderboard_dir) / MODEL_DIR / EVAL_RESULTS_DIR).glob(f"{VARIANT_PREFIX}*.yaml"))
