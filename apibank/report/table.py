"""The score table in the paper's layout: levels as columns, API-call accuracy and ROUGE-L rows, per protocol."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from apibank.benchmark import LEVELS, PROTOCOLS, SAMPLE_KINDS
from apibank.judge.intervals import bracket


def shown_setting(value: Any) -> str:
    """A run's setting as text: ``unknown`` where the run did not record it (None)."""
    return "unknown" if value is None else str(value)


def subset_flags(results: Mapping[str, Any]) -> str:
    """The flags that made a run a subset (``--limit 5 --kinds api``); empty when none did."""
    flags = []
    if results.get("audit_subset"):
        flags.append(f"--subset {results['audit_subset']}")
    if results.get("limit"):
        flags.append(f"--limit {results['limit']}")
    kinds = results.get("kinds") or list(SAMPLE_KINDS)
    if set(kinds) != set(SAMPLE_KINDS):
        flags.append("--kinds " + " ".join(kinds))
    return " ".join(flags)


def subset_label(results: Mapping[str, Any]) -> str:
    """`` (subset: --subset verified --limit 5)`` for a subset run, `` (subset)`` where no flag made it one (a
    partial predictions file); empty for the whole benchmark."""
    if not results.get("subset"):
        return ""
    flags = subset_flags(results)
    return f" (subset: {flags})" if flags else " (subset)"


def _interval(cell: Mapping[str, Any], scale: float, digits: int, intervals: bool) -> str:
    """`` [low, high]`` from the cell's ``ci95`` (:mod:`apibank.judge.intervals`), `` [reason]`` where it
    has none (one dialogue); empty when not shown."""
    if not intervals:
        return ""
    shown = bracket(cell.get("ci95"), cell.get("ci95_reason"), lambda bound: f"{scale * bound:.{digits}f}")
    return f" {shown}" if shown else ""


def _accuracy(cell: Mapping[str, Any] | None, intervals: bool = False) -> str:
    if not cell or not cell.get("total"):
        return "-"
    return f"{100 * cell['accuracy']:.2f}%{_interval(cell, 100, 2, intervals)} ({cell['correct']}/{cell['total']})"


def _rouge(cell: Mapping[str, Any] | None, intervals: bool = False) -> str:
    if not cell or not cell.get("count"):
        return "-"
    return f"{cell['rouge_l']:.4f}{_interval(cell, 1, 4, intervals)} (n={cell['count']})"


def score_rows(
    scores: Mapping[str, Any], levels: Sequence[str], intervals: bool = False
) -> list[tuple[str, str, list[str]]]:
    """(protocol, metric, one cell per level) for every protocol present in ``scores``; with ``intervals``
    each score is followed by its 95% interval when the scores carry one."""
    rows = []
    for protocol in [p for p in PROTOCOLS if p in scores] + [
        p for p in scores.get("protocols", {}) if p not in PROTOCOLS and p in scores
    ]:
        block = scores[protocol]
        rows.append((protocol, "API call accuracy", [_accuracy(block.get(level, {}).get("api"), intervals) for level in levels]))
        if any(block.get(level, {}).get("dialogues") for level in levels):
            rows.append(
                (protocol, "Dialogue accuracy", [_accuracy(block.get(level, {}).get("dialogues"), intervals) for level in levels])
            )
        rows.append((protocol, "Response ROUGE-L", [_rouge(block.get(level, {}).get("response"), intervals) for level in levels]))
    return rows


def format_table(
    scores: Mapping[str, Any], levels: Sequence[str] | None = None, title: str | None = None, intervals: bool = True
) -> str:
    levels = [level for level in (levels or LEVELS) if any(level in scores.get(p, {}) for p in PROTOCOLS)]
    rows = score_rows(scores, levels, intervals)
    headers = ["protocol", "metric", *levels]
    body = [[protocol, metric, *cells] for protocol, metric, cells in rows]
    widths = [max(len(str(line[i])) for line in [headers, *body]) for i in range(len(headers))]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    previous = None
    for line in body:
        shown = ["" if line[0] == previous else line[0], *line[1:]]
        previous = line[0]
        lines.append("  ".join(str(c).ljust(w) for c, w in zip(shown, widths)).rstrip())
    return "\n".join(lines)


def markdown_table(scores: Mapping[str, Any], levels: Sequence[str] | None = None, intervals: bool = False) -> str:
    """The table in Markdown; intervals only when asked (the model card keeps the plain values the Hub shows)."""
    levels = [level for level in (levels or LEVELS) if any(level in scores.get(p, {}) for p in PROTOCOLS)]
    lines = ["| protocol | metric | " + " | ".join(levels) + " |", "|---|---|" + "---|" * len(levels)]
    for protocol, metric, cells in score_rows(scores, levels, intervals):
        lines.append(f"| {protocol} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
