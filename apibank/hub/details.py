"""Per-sample details of a run as a Hub dataset, and publishing a run's results with them.

``apibank evaluate --push-to-hub`` uploads, before it opens the result pull requests:

* a dataset repository (default ``<model repo>-apibank-details``) with one config per protocol,
  ``<protocol>/test-00000-of-00001.parquet``: every sample's prompt, raw output and prediction
  beside the metric's verdict, category, error, executed call and result (``Json()`` values), plus
  ``results.json`` and a card;
* then rewrites the leaderboard files with a ``source`` block pointing at that repository and the
  benchmark dataset's current commit as ``dataset.revision``, and opens the pull requests
  (:func:`apibank.hub.push.push_to_hub`).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any, Mapping

from apibank.files import (
    DETAILS_FILE,
    LEADERBOARD_DIR,
    PREDICTIONS_FILE,
    RESULTS_FILE,
    atomic_copy,
    atomic_path,
    atomic_write_text,
    read_json_lines,
)
from apibank.hub.ids import check_repo_id

DETAILS_DIR = "details-dataset"
PARQUET_NAME = "test-00000-of-00001.parquet"
DETAILS_SUFFIX = "-apibank-details"


def default_details_repo(model_repo: str) -> str:
    """``<namespace>/<model name>-apibank-details`` (the name shortened to stay a valid Hub name)."""
    namespace, name = check_repo_id(model_repo, "the model repository").split("/")
    keep = 96 - len(DETAILS_SUFFIX)
    return f"{namespace}/{name[:keep].rstrip('.-_')}{DETAILS_SUFFIX}"


def _features():
    import datasets

    string = datasets.Value("string")
    return datasets.Features(
        {
            "id": string,
            "level": datasets.Value("int32"),
            "kind": string,
            "format": string,
            "model": string,
            "prompt": datasets.Json(),
            "raw_output": string,
            "prediction": string,
            "verdict": datasets.Value("bool"),
            "score": datasets.Value("float64"),
            "category": string,
            "error": string,
            "extracted_call": string,
            "api_name": string,
            "arguments": datasets.Json(),
            "result": datasets.Json(),
            "retrieved": datasets.Json(),
        }
    )


def json_value(value: Any) -> str | None:
    """A Python value for a ``Json()`` column as exact JSON text (``Json()`` itself would round floats)."""
    return None if value is None else json.dumps(value, ensure_ascii=False)


def details_rows(output_dir: str | os.PathLike[str]) -> dict[str, list[dict[str, Any]]]:
    """{protocol: rows} joining ``predictions.jsonl`` and ``details.jsonl`` of a run on the sample id."""
    output_dir = Path(output_dir)
    predictions = {record["id"]: record for record in read_json_lines(output_dir / PREDICTIONS_FILE)}
    out: dict[str, list[dict[str, Any]]] = {}
    for detail in read_json_lines(output_dir / DETAILS_FILE):
        record = predictions.get(detail["id"], {})
        retrieved = detail.get("retrieved")
        out.setdefault(detail["protocol"], []).append(
            {
                "id": detail["id"],
                "level": int(detail["level"]),
                "kind": detail["kind"],
                "format": record.get("format"),
                "model": None if record.get("model") is None else str(record.get("model")),
                "prompt": json_value(record.get("prompt")),
                "raw_output": record.get("raw_output"),
                "prediction": record.get("prediction", ""),
                "verdict": detail.get("verdict"),
                "score": detail.get("score"),
                "category": detail.get("category"),
                "error": detail.get("error"),
                "extracted_call": detail.get("extracted_call"),
                "api_name": detail.get("name"),
                "arguments": json_value(detail.get("arguments")),
                "result": json_value(detail.get("result")),
                "retrieved": json_value(retrieved),
            }
        )
    return out


def details_card(results: Mapping[str, Any], dataset_id: str, protocols: list[str]) -> str:
    model = results.get("model", {})
    lines = [
        f"# API-Bank per-sample details: {model.get('id')}",
        "",
        f"Every sample of an `apibank evaluate` run on the benchmark [{dataset_id}]"
        f"(https://huggingface.co/datasets/{dataset_id}): prompt, raw output and prediction beside the "
        "metric's verdict under each judging protocol (one config per protocol).",
        "",
        f"- model: `{model.get('id')}` (revision `{model.get('revision')}`, backend `{model.get('backend')}`, "
        f"dtype `{model.get('dtype')}`)",
        f"- prompt format: `{results.get('format')}`{' with the in-context example' if results.get('icl') else ''}",
        f"- decoding: `{json.dumps(results.get('decoding') or {}, sort_keys=True)}`",
        f"- apibank version: `{results.get('apibank_version')}`; date: {results.get('date')}",
        f"- protocols: {', '.join(f'`{p}`' for p in protocols)}; `results.json` holds the scores and counts.",
        "",
        "Columns: `verdict` (API rows: the executed call judged correct), `score` (response rows: ROUGE-L F), "
        "`category` and `error` (why a call is wrong), `extracted_call`, `api_name`, `arguments` and `result` "
        "(the call as parsed and executed, JSON values).",
        "",
    ]
    return "\n".join(lines)


def write_details_dataset(output_dir: str | os.PathLike[str], dataset_id: str) -> Path:
    """Write ``OUTPUT/details-dataset/`` (Parquet per protocol, README with ``configs:``, results.json)."""
    import datasets
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    output_dir = Path(output_dir)
    results = json.loads((output_dir / RESULTS_FILE).read_text("utf-8"))
    folder = output_dir / DETAILS_DIR
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    rows = details_rows(output_dir)
    if not rows:
        raise ValueError(f"{output_dir}: no per-sample details to upload")
    features = _features()
    configs = MetadataConfigs()
    for index, (protocol, protocol_rows) in enumerate(rows.items()):
        (folder / protocol).mkdir()
        with atomic_path(folder / protocol / PARQUET_NAME) as parquet:
            datasets.Dataset.from_list(protocol_rows, features=features).to_parquet(parquet)
        configs[protocol] = {
            "data_files": [{"split": "test", "path": f"{protocol}/test-*.parquet"}],
            **({"default": True} if index == 0 else {}),
        }
    data = DatasetCardData(license="apache-2.0", pretty_name=f"API-Bank details: {results.get('model', {}).get('id')}",
                           tags=["api-bank", "evaluation", "tool-use"])
    configs.to_dataset_card_data(data)
    card = DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{details_card(results, dataset_id, list(rows))}")
    atomic_write_text(folder / "README.md", str(card))
    atomic_copy(output_dir / RESULTS_FILE, folder / RESULTS_FILE)
    return folder


def push_details(folder: str | os.PathLike[str], repo_id: str, *, api: Any, private: bool = False) -> str:
    """Upload the details folder as the dataset ``repo_id``; returns the repository's URL."""
    check_repo_id(repo_id, "the details dataset repository")
    repo_url = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="dataset",
                      commit_message="Upload API-Bank per-sample details")
    return str(repo_url)


def hub_dataset_revision(api: Any, dataset_id: str) -> str | None:
    """The current commit of the benchmark's Hub dataset repository; None when it cannot be read."""
    from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError

    try:
        return api.dataset_info(dataset_id).sha
    except (RepositoryNotFoundError, HfHubHTTPError):
        return None


def publish(
    output_dir: str | os.PathLike[str],
    model_repo: str,
    *,
    dataset_id: str,
    details_repo: str | None = None,
    dataset_revision: str | None = None,
    eval_yaml_repo: str | None = None,
    private_details: bool = False,
    api: Any = None,
    token: str | None = None,
) -> dict[str, Any]:
    """Upload a run's details, rewrite its leaderboard files to link them, open the pull requests.

    Returns ``{"details": url, "dataset_revision": sha or None, "pull_requests": {...}}``.
    """
    from huggingface_hub import HfApi

    from apibank.hub.leaderboard import subset_reason, write_leaderboard_files
    from apibank.hub.push import push_to_hub
    from apibank.hub.result_files import ResultSource, results_to_push

    output_dir = Path(output_dir)
    results = results_to_push(output_dir, model_repo, dataset_id, subset_reason)
    api = api or HfApi(token=token)
    details_repo = details_repo or default_details_repo(model_repo)
    url = push_details(write_details_dataset(output_dir, dataset_id), details_repo, api=api, private=private_details)
    revision = dataset_revision or hub_dataset_revision(api, dataset_id)
    source = ResultSource(url=url, user=details_repo.split("/")[0])
    write_leaderboard_files(results, output_dir / LEADERBOARD_DIR, dataset_id=dataset_id, dataset_revision=revision,
                            source=source)
    urls = push_to_hub(output_dir / LEADERBOARD_DIR, model_repo, dataset_id=dataset_id, dataset_repo=eval_yaml_repo,
                       token=token, api=api)
    return {"details": url, "dataset_revision": revision, "pull_requests": urls}
