"""The verified subset of a run, reported beside its full scores and never mixed with them.

The shipped row audit (:mod:`apibank.data.audits`) marks each test row ``verified`` or says why not.
A classic run's ``results.json`` carries, under ``verified``, the scores of its verified rows, computed
from the very verdicts its full scores count (:func:`apibank.judge.aggregate.aggregate_details`), with
the same dialogue-clustered intervals, ``n`` and error types as the full scores
(:func:`apibank.report.annotate.annotate_scores`), the rows each level kept and left out (by status),
and the audit's version. An agentic run carries the summaries of the episodes whose every row is verified.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

from apibank.benchmark import LEVELS
from apibank.data.audits import VERIFIED, Audit
from apibank.files import read_json_lines
from apibank.judge.aggregate import aggregate_details
from apibank.judge.intervals import dialogue_of
from apibank.report.annotate import annotate_scores
from apibank.report.runs import Run, classic_samples
from apibank.report.table import markdown_table

# the status of a row the audit has no entry for (details of other data): counted, never taken as verified
NOT_AUDITED = "not audited"
VERIFIED_NOTE = (
    "The verified subset: the rows the row audit (version {version}) marks verified, judged exactly as in the full "
    "scores; the rows left out are counted by status. A separate figure, never a replacement for the full benchmark."
)


def _status(audit: Audit, row_id: str) -> str:
    record = audit.rows.get(row_id)
    return record["status"] if record else NOT_AUDITED


def verified_block(details: Sequence[Mapping[str, Any]], audit: Audit) -> dict[str, Any]:
    """What ``results.json`` records under ``verified`` for a classic run's per-sample ``details``."""
    kept = [entry for entry in details if _status(audit, str(entry["id"])) == VERIFIED]
    counts: dict[str, dict[str, int]] = {}
    excluded: dict[str, Counter] = {}
    for row_id, (level, kind) in {str(e["id"]): (f"level-{e['level']}", e["kind"]) for e in details}.items():
        status = _status(audit, row_id)
        cell = counts.setdefault(level, {"api": 0, "response": 0})
        excluded.setdefault(level, Counter())
        if status == VERIFIED:
            cell[kind] += 1
        else:
            excluded[level][status] += 1
    return {
        "audit": audit.summary(),
        "status": VERIFIED,
        "counts": dict(sorted(counts.items())),
        "excluded": {level: dict(sorted(found.items())) for level, found in sorted(excluded.items())},
        "scores": annotate_scores(aggregate_details(kept), kept),
    }


def markdown_section(verified: Mapping[str, Any] | None, levels: Sequence[str]) -> list[str]:
    """The report's section of the verified subset (nothing when the run has none)."""
    if not verified:
        return []
    audit = verified.get("audit") or {}
    lines = ["## Verified subset (separate from the scores above)", "",
             VERIFIED_NOTE.format(version=audit.get("version")), "",
             markdown_table(verified.get("scores") or {}, levels, intervals=True), "",
             "| level | verified API rows | verified response rows | left out (by status) |", "|---|---|---|---|"]
    for level in levels:
        cell = (verified.get("counts") or {}).get(level) or {}
        left = (verified.get("excluded") or {}).get(level) or {}
        shown = ", ".join(f"{status} {n}" for status, n in left.items()) or "none"
        lines.append(f"| {level} | {cell.get('api', 0)} | {cell.get('response', 0)} | {shown} |")
    return [*lines, ""]


def summary_table(verified: Mapping[str, Any] | None, levels: Sequence[str]) -> str:
    """The one-screen table of the verified subset, titled as such (empty when the run has none)."""
    if not verified:
        return ""
    from apibank.report.table import format_table

    version = (verified.get("audit") or {}).get("version")
    title = f"verified subset (row audit {version}; separate from the full scores):"
    return format_table(verified.get("scores") or {}, [level for level in LEVELS if level in levels], title=title)


def episode_statuses(audit: Audit) -> dict[str, bool]:
    """Per agentic episode (a dialogue: ``level-1/<file>``, ``level-3/<index>``), whether every test row of
    it is verified: an episode is judged on all its calls and its answer."""
    out: dict[str, bool] = {}
    for row_id, record in audit.rows.items():
        episode = dialogue_of(row_id)
        out[episode] = out.get(episode, True) and record["status"] == VERIFIED
    return out


def verified_view(run: Run, audit: Audit) -> Run:
    """The run restricted to the verified subset, for ranking on it: a classic run's verified rows, scored
    afresh from its details with this audit (so every run of a leaderboard uses one audit); an agentic
    run's verified episodes, with the summaries its results.json records under ``verified``
    (:class:`ValueError` for a run that records none)."""
    results = {**run.results, "subset": True, "audit_subset": VERIFIED}
    if run.kind == "classic":
        files = run.results.get("files") or {}
        details = read_json_lines(run.path / files.get("details", "details.jsonl"))
        block = verified_block(details, audit)
        results.update(scores=block["scores"], verified=block, audit=audit.summary())
        view = Run(run.path, run.kind, results)
        classic_samples(view, [entry for entry in details if _status(audit, str(entry["id"])) == VERIFIED])
        return view
    recorded = run.results.get("verified") or {}
    if not recorded.get("levels"):
        raise ValueError(f"{run.path}: the agentic run records no verified figures (run before the row audit); "
                         "run apibank agent again to rank it on the verified subset")
    results.update(levels=recorded["levels"], audit=recorded.get("audit"))
    verified = episode_statuses(audit)
    samples = {key: {name: sample for name, sample in values.items() if verified.get(sample.cluster)}
               for key, values in run.samples.items()}
    return Run(run.path, run.kind, results, samples)
