"""The output files of an agentic run (``apibank agent``): ``results.json``, ``report.md`` and
``leaderboard/`` (``dataset/eval.yaml``; with a ``dataset_id`` and every episode of each level run,
``model/.eval_results/api-bank-agentic-<setting>.yaml``: :mod:`apibank.hub.agentic`).
``trajectories.jsonl`` is written as the run goes (:func:`apibank.agent.runner.run_level`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from apibank.agent.files import report_markdown
from apibank.files import LEADERBOARD_DIR, REPORT_FILE, RESULTS_FILE, atomic_write_text, write_json
from apibank.hub.agentic import write_agentic_leaderboard_files
from apibank.report.html import write_report_html


def write_agentic_outputs(
    results: Mapping[str, Any],
    output: Path,
    *,
    dataset_id: str | None = None,
    dataset_revision: str | None = None,
) -> dict[str, Path]:
    output.mkdir(parents=True, exist_ok=True)
    paths = {"results": output / RESULTS_FILE, "report": output / REPORT_FILE}
    write_json(paths["results"], results)
    atomic_write_text(paths["report"], report_markdown(results))
    leaderboard = write_agentic_leaderboard_files(
        results, output / LEADERBOARD_DIR, dataset_id=dataset_id, dataset_revision=dataset_revision
    )
    paths.update({key if key == "eval_yaml" else "eval_results": path for key, path in leaderboard.items()})
    paths["report_html"] = write_report_html(output)
    return paths
