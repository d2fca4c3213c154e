"""Leaderboard files of a classic run (``apibank evaluate``, ``apibank score``) for the Hugging Face Hub.

What goes where follows the Hub's documentation (hub-docs ``docs/hub/eval-results.md``,
``eval_results.yaml``, ``modelcard.md``):

* the benchmark's *dataset* repository gets ``eval.yaml`` (:mod:`apibank.hub.tasks`);
* a *model* repository gets one ``.eval_results/<variant>.yaml`` per variant of a run -- judging
  protocol x prompt format (:func:`variant_file`) -- so a corrected or ``--format tools`` run never
  overwrites the paper one; the default variant (paper protocol, paper prompts) carries no notes,
  every other variant says in ``notes`` what it is;
* and ``model-index`` metadata in its card (``README.md``): every level and metric, both protocols,
  the protocol and format in ``metrics[].args``.

Units: one per kind of metric, stated in every metric name: accuracies (API calls, dialogues) in
percent, response ROUGE-L as an F-measure between 0 and 1.

Only complete levels are written under the official task ids: a ``--limit`` or ``--subset`` subset (or any level
scored on fewer samples than the benchmark has) writes no model files at all
(:mod:`apibank.hub.result_files`). Pull requests: :mod:`apibank.hub.push`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

from apibank.files import atomic_write_text
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
    write_result_file,
)
from apibank.hub.tasks import BENCHMARK_NAME, FULL_COUNTS, METRIC_TYPES, TASKS, write_eval_yaml
from apibank.benchmark import DEFAULT_FORMAT, DEFAULT_PROTOCOL, LEVELS, PROTOCOLS, SAMPLE_KINDS


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
    if results.get("audit_subset"):
        return f"--subset {results['audit_subset']} scored only the row audit's {results['audit_subset']} rows"
    if results.get("limit"):
        return f"--limit {results['limit']} scored a subset of every level"
    kinds = results.get("kinds")
    if kinds and set(kinds) != set(SAMPLE_KINDS):
        return f"--kinds {' '.join(kinds)} scored only those rows of every level"
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


# ---------------------------------------------------------------------------------------- entries
def eval_result_entries(
    results: Mapping[str, Any],
    *,
    dataset_id: str,
    protocol: str = DEFAULT_PROTOCOL,
    dataset_revision: str | None = None,
    source: ResultSource | None = None,
):
    """The ``.eval_results`` entries of one variant (``protocol`` x the run's prompt format)."""
    check_complete(subset_reason(results))
    fmt = prompt_format(results)
    entries = []
    for task in TASKS.values():
        value = task_value(results["scores"], protocol, task.config, task.kind)
        if value is None:
            continue
        entries.append(result_entry(
            results, dataset_id=dataset_id, task_id=task.id, value=value,
            dataset_revision=dataset_revision, source=source,
            notes=variant_notes(protocol, fmt),
        ))
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

    check_complete(subset_reason(results))
    scores = results["scores"]
    fmt = prompt_format(results)
    out = []
    for protocol in [p for p in PROTOCOLS if p in scores]:
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
    output_dir = Path(output_dir)
    paths = {"eval_yaml": write_eval_yaml(output_dir / DATASET_DIR)}
    model_dir = output_dir / MODEL_DIR
    remove_result_files(model_dir)
    if dataset_id is None or subset_reason(results):
        return paths

    check_repo_id(dataset_id, "the benchmark dataset id")
    fmt = prompt_format(results)
    for protocol in [p for p in PROTOCOLS if p in results["scores"]]:
        entries = eval_result_entries(
            results, dataset_id=dataset_id, protocol=protocol, dataset_revision=dataset_revision, source=source
        )
        if entries:
            paths[f"eval_results:{protocol}"] = write_result_file(model_dir / variant_file(protocol, fmt), entries)
    index = model_index_results(results, dataset_id=dataset_id, dataset_revision=dataset_revision, source=source)
    paths["model_card"] = model_dir / "README.md"
    atomic_write_text(paths["model_card"], model_card_text(results, index))
    return paths


def leaderboard_note(results: Mapping[str, Any], dataset_id: str | None) -> str | None:
    """Why no model leaderboard files were written (None when they were)."""
    return publishing_note(subset_reason(results), dataset_id)
