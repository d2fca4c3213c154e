"""What an agentic run writes: results.json, trajectories.jsonl (written as it runs), report.md and
leaderboard variant files (``.eval_results/api-bank-agentic.yaml``, one entry per level)."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import Any, Mapping

from apibank.files import atomic_write_text, dumps_strict

AGENTIC_EVAL_RESULTS_FILE = ".eval_results/api-bank-agentic.yaml"
DEFAULT_DATASET_ID = "apibank/API-Bank"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _ci(summary: Mapping[str, Any], figure: str, percent: bool = False) -> str:
    """`` [low, high]``: the figure's 95% interval over episodes, when the summary has one."""
    bounds = (summary.get("ci95") or {}).get(figure)
    if not bounds:
        return ""
    return f" [{100 * bounds[0]:.2f}, {100 * bounds[1]:.2f}]" if percent else f" [{bounds[0]:.4f}, {bounds[1]:.4f}]"


def summary_table(levels: Mapping[str, Mapping[str, Any]]) -> str:
    rows = [
        ("episodes", lambda s: str(s["episodes"])),
        ("success", lambda s: f"{_pct(s['success_rate'])}{_ci(s, 'success_rate', True)} ({s['succeeded']}/{s['runs']})"),
        ("pass^k", lambda s: f"{_num(s['pass_k'])}{_ci(s, 'pass_k')} (k={s['trials']})"),
        ("pass@k", lambda s: f"{_num(s['pass_at_k'])}{_ci(s, 'pass_at_k')} (k={s['trials']})"),
        ("state equal", lambda s: f"{s['state_ok']}/{s['runs']}"),
        ("information obtained", lambda s: f"{s['information_ok']}/{s['runs']}"),
        ("call precision", lambda s: _num(s["call_precision"])),
        ("call recall", lambda s: _num(s["call_recall"])),
        ("answer ROUGE-L", lambda s: _num(s["response_rouge_l"]) + _ci(s, "response_rouge_l")),
        ("episodes needing no call", lambda s: str(s["needs_no_call"])),
    ]
    names = list(levels)
    lines = ["| metric | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
    for label, cell in rows:
        lines.append(f"| {label} | " + " | ".join(cell(levels[n]) for n in names) + " |")
    return "\n".join(lines)


def report_markdown(results: Mapping[str, Any]) -> str:
    levels = results["levels"]
    parts = [
        f"# API-Bank agentic episodes: {results['model']['id']}",
        "",
        f"setting `{results['setting']}`, {results['trials']} trial(s) per episode, step limit "
        f"{results['limits']['max_steps']}, time limit {results['limits']['time_limit']} s.",
        "",
        summary_table(levels),
        "",
        "An episode succeeds when the final databases equal the gold replay's, table by table, and every "
        "result the gold calls read was obtained by some call of the model. ROUGE-L is reported beside it.",
        "Brackets: 95% interval by a percentile bootstrap over episodes (each resampled with all its trials).",
    ]
    for level, summary in levels.items():
        if summary["gold_calls_excluded"] or summary["skipped_files"] or summary["gold_reads_drifted"]:
            parts.append("")
            parts.append(
                f"- {level}: {summary['gold_calls_excluded']} gold call(s) not required (refused or failing on replay), "
                f"{summary['gold_reads_drifted']} gold read(s) required with today's result; "
                f"{len(summary['skipped_files'])} upstream file(s) give no episode "
                f"({', '.join(s['file'] for s in summary['skipped_files']) or 'none'})."
            )
    return "\n".join(parts) + "\n"


def leaderboard_entries(results: Mapping[str, Any], dataset_id: str = DEFAULT_DATASET_ID) -> list[Any]:
    from huggingface_hub import EvalResultEntry

    date = results.get("date") or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    entries = []
    for level, summary in results["levels"].items():
        if summary["success_rate"] is None:
            continue
        entries.append(
            EvalResultEntry(
                dataset_id=dataset_id,
                task_id=f"agentic-{level}-{results['setting']}",
                value=round(100 * summary["pass_k"], 2) if summary["pass_k"] is not None else round(100 * summary["success_rate"], 2),
                date=date,
                notes=f"agentic episodes; pass^k with k={summary['trials']}; setting={results['setting']}; "
                      f"episodes={summary['episodes']}; backend={results['model'].get('backend')}",
            )
        )
    return entries


def write_outputs(results: Mapping[str, Any], output: Path) -> dict[str, Path]:
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    output.mkdir(parents=True, exist_ok=True)
    paths = {
        "results": output / "results.json",
        "report": output / "report.md",
        "eval_results": output / "leaderboard" / "model" / AGENTIC_EVAL_RESULTS_FILE,
    }
    atomic_write_text(paths["results"], dumps_strict(results, indent=2, ensure_ascii=False) + "\n")
    atomic_write_text(paths["report"], report_markdown(results))
    paths["eval_results"].parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        paths["eval_results"],
        yaml.safe_dump(eval_result_entries_to_yaml(leaderboard_entries(results)), sort_keys=False, allow_unicode=True),
    )
    return paths
