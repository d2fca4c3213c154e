"""What an agentic run reports: the per-level summary table and ``report.md``'s text (the files
themselves are written by :mod:`apibank.pipeline.agentic`)."""

from __future__ import annotations

from typing import Any, Mapping

from apibank.judge.intervals import bracket


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _ci(summary: Mapping[str, Any], figure: str, percent: bool = False) -> str:
    """`` [low, high]``: the figure's 95% interval over episodes, `` [reason]`` where there is none (one episode)."""
    bounds = (summary.get("ci95") or {}).get(figure)
    reason = summary.get("ci95_reason") if summary.get(figure) is not None else None
    shown = bracket(bounds, reason, (lambda b: f"{100 * b:.2f}") if percent else (lambda b: f"{b:.4f}"))
    return f" {shown}" if shown else ""


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


def verified_section(verified: Mapping[str, Any] | None) -> list[str]:
    """The verified episodes' table, in a section of its own (nothing when the run has none)."""
    if not verified or not verified.get("levels"):
        return []
    levels = verified["levels"]
    left = ", ".join(f"{level}: {s['episodes_left_out']} left out, {s['episodes_without_rows']} without test rows"
                     for level, s in levels.items())
    return ["", f"## Verified subset (separate from the figures above; row audit {verified['audit']['version']})", "",
            "Only the episodes whose every test row the row audit marks verified; " + left + ".", "",
            summary_table(levels)]


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
    parts += verified_section(results.get("verified"))
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
