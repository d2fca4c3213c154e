"""Opening a run's leaderboard files as pull requests on the Hub: the results on the model repository
(its card's ``model-index`` merged with the card already there), ``eval.yaml`` on the dataset repository."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from apibank.hub.ids import check_repo_id
from apibank.benchmark import DEFAULT_FORMAT
from apibank.hub.result_files import DATASET_DIR, EVAL_RESULTS_DIR, MODEL_DIR, result_files
from apibank.hub.tasks import EVAL_YAML_FILE


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

    Returns the pull-request URLs. A classic run's model card (``model-index``) is merged with the card
    already on the Hub; an agentic run has result files only.
    """
    from huggingface_hub import CommitOperationAdd, HfApi

    check_repo_id(model_repo, "the model repository")
    check_repo_id(dataset_id, "the benchmark dataset id")
    api = api or HfApi(token=token)
    leaderboard_dir = Path(leaderboard_dir)
    model_dir = leaderboard_dir / MODEL_DIR
    files = result_files(leaderboard_dir)
    if not files:
        raise FileNotFoundError(f"{model_dir} holds no result files to push (a subset run, or no --dataset-id)")
    operations = []
    card = model_dir / "README.md"
    if card.is_file():
        card_text = _merged_card(api, model_repo, card, dataset_id)
        operations.append(CommitOperationAdd(path_in_repo="README.md", path_or_fileobj=card_text.encode("utf-8")))
    operations += [
        CommitOperationAdd(path_in_repo=f"{EVAL_RESULTS_DIR}/{path.name}", path_or_fileobj=str(path)) for path in files
    ]
    listed = ", ".join(f"`{EVAL_RESULTS_DIR}/{p.name}`" for p in files)
    description = (
        "API-Bank evaluation results written by `apibank evaluate`: `model-index` metadata in the model "
        f"card and {listed} (https://huggingface.co/docs/hub/eval-results), one file per judging protocol "
        "and prompt format."
        if card.is_file() else
        f"API-Bank agentic results written by `apibank agent`: {listed} "
        "(https://huggingface.co/docs/hub/eval-results), one file per tool-discovery setting."
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
                CommitOperationAdd(path_in_repo=EVAL_YAML_FILE, path_or_fileobj=str(leaderboard_dir / DATASET_DIR / EVAL_YAML_FILE))
            ],
            commit_message="Register API-Bank as a Hub benchmark (eval.yaml)",
            create_pr=True,
        )
        urls["dataset"] = getattr(dataset_commit, "pr_url", None)
    return urls
