"""The metric's Hub layout: a Gradio Space, where ``evaluate`` looks for community metrics.

:func:`export_metric` writes ``OUT/apibank/`` with ``apibank.py`` (the metric module), ``README.md``
(the metric card), ``requirements.txt`` and ``app.py`` (evaluate's Gradio widget). Then
``evaluate.load(OUT + "/apibank")``; after :func:`push_metric`, ``evaluate.load("NAMESPACE/apibank")``.
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path
from typing import Any

from apibank.errors import UserError
from apibank.files import atomic_write_text
from apibank.hub.ids import check_repo_id

METRIC_NAME = "apibank"
METRIC_MODULE = "apibank_metric"
CARD = Path(__file__).resolve().parents[1] / "judge" / "metric_card.md"

APP = '''import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "apibank.py"))
launch_gradio_widget(module)
'''


def _package_requirement() -> str:
    try:
        return f"apibank>={metadata.version('apibank')}"
    except metadata.PackageNotFoundError:
        return "apibank"


def export_metric(out: str | Path) -> Path:
    """Write ``out/apibank/`` and return that folder."""
    from apibank.data.upstream import manifest

    spec = importlib.util.find_spec(METRIC_MODULE)
    if spec is None or spec.origin is None:
        raise UserError(f"the module {METRIC_MODULE} is not installed; install the apibank package")
    folder = Path(out) / METRIC_NAME
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / f"{METRIC_NAME}.py", Path(spec.origin).read_text("utf-8"))
    atomic_write_text(folder / "README.md", CARD.read_text("utf-8").replace("{revision}", manifest().commit))
    requirements = [_package_requirement(), "evaluate>=0.4.3", "datasets>=4.0"]
    atomic_write_text(folder / "requirements.txt", "\n".join(requirements) + "\n")
    atomic_write_text(folder / "app.py", APP)
    return folder


def push_metric(folder: str | Path, repo_id: str, *, private: bool = False, api: Any = None) -> str:
    """Upload the exported folder as a Gradio Space (where evaluate looks for community metrics)."""
    check_repo_id(repo_id, "the metric Space")
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="space", commit_message="Upload the apibank metric")
    return f"https://huggingface.co/spaces/{repo_id}"
