"""``apibank export-metric``: write the metric's Hub layout (a Space, as evaluate metrics are).

    apibank export-metric --output OUT [--push-to-hub NAMESPACE/apibank] [--private]

writes ``OUT/apibank/`` with ``apibank.py`` (the metric module), ``README.md`` (the metric card),
``requirements.txt`` and ``app.py`` (evaluate's Gradio widget). Then ``evaluate.load(OUT + "/apibank")``,
or ``evaluate.load("apibank")`` from ``OUT``; after ``--push-to-hub``, ``evaluate.load("NAMESPACE/apibank")``.
"""

from __future__ import annotations

import argparse
import importlib.util
from importlib import metadata
from pathlib import Path
from typing import Any

from apibank.cli.flags import add_flag, add_output
from apibank.errors import UserError

METRIC_NAME = "apibank"
METRIC_MODULE = "apibank_metric"
CARD = Path(__file__).resolve().parents[1] / "judge" / "metric_card.md"

APP = '''import os

import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load(os.path.join(os.path.dirname(os.path.abspath(__file__)), "apibank.py"))
launch_gradio_widget(module)
'''


def configure(parser: argparse.ArgumentParser) -> None:
    add_output(parser, "folder to write apibank/ into (required)")
    add_flag(parser, "--push-to-hub", "--push-to", dest="push_to", metavar="REPO_ID",
             help="also upload apibank/ as this Hub Space")
    parser.add_argument("--private", action="store_true", help="create the Hub Space as private")


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
    (folder / f"{METRIC_NAME}.py").write_text(Path(spec.origin).read_text("utf-8"), "utf-8")
    card = CARD.read_text("utf-8").replace("{revision}", manifest().commit)
    (folder / "README.md").write_text(card, "utf-8")
    requirements = [_package_requirement(), "evaluate>=0.4.3", "datasets>=4.0"]
    (folder / "requirements.txt").write_text("\n".join(requirements) + "\n", "utf-8")
    (folder / "app.py").write_text(APP, "utf-8")
    return folder


def push_metric(folder: str | Path, repo_id: str, *, private: bool = False, api: Any = None) -> str:
    """Upload the exported folder as a Gradio Space (where evaluate looks for community metrics)."""
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=private, exist_ok=True)
    api.upload_folder(folder_path=str(folder), repo_id=repo_id, repo_type="space", commit_message="Upload the apibank metric")
    return f"https://huggingface.co/spaces/{repo_id}"


def run(args: argparse.Namespace) -> int:
    from apibank.cli.folders import check_writable

    folder = export_metric(check_writable(args.output))
    print(f"wrote {folder}: evaluate.load({str(folder)!r})")
    if args.push_to:
        print(f"pushed: {push_metric(folder, args.push_to, private=args.private)}")
    return 0
