"""A leaderboard of finished runs: ``apibank leaderboard``.

Runs are first split into groups that share their samples: two runs join one group only when
:func:`apibank.report.compare.differences` finds nothing that differs (same run kind, data revision,
protocols, prompt format, subset and the very same scored samples; agentic runs: setting, trials and
limits). A run that fits no group starts its own, and the reasons it fits none are recorded; nothing
is mixed silently.

Each group gives one ranked table per protocol (agentic: setting) and level, protocols side by side,
never pooled: each run's score with the dialogue-clustered 95% interval ``results.json`` records
(:mod:`apibank.judge.intervals`), ranked by the headline figure (API-call accuracy; agentic: episode
success), equal figures sharing a rank. Beside it, a pairwise matrix of the paired differences over the
samples the runs share (:func:`apibank.report.compare.paired`: dialogue bootstrap interval, exact
sign test), with Holm-adjusted p-values over the table's pairs; and one resources table per group
(tokens, seconds, samples/s and cost from ``results.json``'s ``usage``; mean and p95 latency from the
per-sample ``seconds`` of ``predictions.jsonl`` or ``trajectories.jsonl``).

Reference rows (published figures, :mod:`apibank.report.published`; a Hub leaderboard's entries) are
shown in the tables of the same protocol and level when the group scored whole levels, marked with
their status and source, and never ranked; those no group matches get tables of their own.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence
from urllib.parse import quote

import numpy as np

from apibank.benchmark import AUDIT_VERIFIED as VERIFIED
from apibank.benchmark import PROTOCOLS
from apibank.files import read_json_lines
from apibank.judge.intervals import score_intervals
from apibank.report.compare import differences, format_p, holm, paired
from apibank.report.runs import Run

if TYPE_CHECKING:
    from apibank.data.audits import Audit

REPORT_HTML = "report.html"
# what a leaderboard ranks on: every scored row, or the row audit's verified subset
RANKED_ON = ("full", VERIFIED)
# per run kind: the figures of a table (key in the table, what it is, 0/1 metric of Run.samples or None)
CLASSIC_FIGURES = (("api", "API call accuracy", "api"), ("dialogue", "dialogue accuracy", "dialogue"),
                   ("response", "response ROUGE-L", "response"))
AGENTIC_FIGURES = (("success", "success", "success"), ("pass_k", "pass^k", None), ("pass_at_k", "pass@k", None),
                   ("response", "answer ROUGE-L", "response"))
RESOURCES = ("samples", "prompt_tokens", "generated_tokens", "seconds", "wall_seconds", "samples_per_second", "cost")


def group_runs(runs: Sequence[Run]) -> tuple[list[list[Run]], list[dict[str, Any]]]:
    """The runs split into groups that share their samples, and for each run that started a new group
    after the first, why it joined none of the groups before it."""
    groups: list[list[Run]] = []
    apart: list[dict[str, Any]] = []
    for run in runs:
        reasons = []
        for number, group in enumerate(groups, 1):
            lead = group[0]
            if lead.kind != run.kind:
                reasons.append(f"group {number}: {_article(run.kind)} {run.kind} run, the group's are {lead.kind} "
                               "(each kind has its own tables)")
                continue
            differs = differences(lead, run)
            if not differs:
                group.append(run)
                break
            reasons.append(f"group {number} ({lead.path}): " + "; ".join(differs))
        else:
            if groups:
                apart.append({"run": str(run.path), "group": len(groups) + 1, "reasons": reasons})
            groups.append([run])
    return groups, apart


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _cell(block: Mapping[str, Any] | None, value_key: str) -> dict[str, Any] | None:
    if not block or block.get(value_key) is None or not (block.get("total") or block.get("count")):
        return None
    cell = {"value": float(block[value_key]), "ci95": block.get("ci95"), "n": block.get("n")}
    for key in ("correct", "total", "count", "ci95_reason"):
        if block.get(key) is not None:
            cell[key] = block[key]
    return cell


def _classic_scores(run: Run) -> dict[str, Any]:
    """The run's scores with their intervals: as results.json records them, computed from details.jsonl
    by the same bootstrap for a results.json written before intervals were recorded."""
    scores = run.results.get("scores") or {}
    recorded = all("ci95" in (block or {}).get("api", {"ci95": None})
                   for protocol in PROTOCOLS for level, block in (scores.get(protocol) or {}).items()
                   if level.startswith("level-") and isinstance(block, dict))
    if recorded:
        return scores
    files = run.results.get("files") or {}
    return score_intervals(scores, read_json_lines(run.path / files.get("details", "details.jsonl")))


def _classic_cells(run: Run, protocol: str, level: str) -> dict[str, Any]:
    block = (_classic_scores(run).get(protocol) or {}).get(level) or {}
    cells = {"api": _cell(block.get("api"), "accuracy"), "dialogue": _cell(block.get("dialogues"), "accuracy"),
             "response": _cell(block.get("response"), "rouge_l")}
    return {key: cell for key, cell in cells.items() if cell is not None}


def _agentic_cells(run: Run, level: str) -> dict[str, Any]:
    summary = (run.results.get("levels") or {}).get(level) or {}
    intervals = summary.get("ci95") or {}
    cells = {}
    for key, figure in (("success", "success_rate"), ("pass_k", "pass_k"), ("pass_at_k", "pass_at_k"),
                        ("response", "response_rouge_l")):
        if summary.get(figure) is None:
            continue
        cells[key] = {"value": float(summary[figure]), "ci95": intervals.get(figure), "n": summary.get("runs")}
        if summary.get("ci95_reason"):
            cells[key]["ci95_reason"] = summary["ci95_reason"]
    if "success" in cells:
        cells["success"].update(correct=summary.get("succeeded"), total=summary.get("runs"))
    return cells


def run_name(run: Run, folder: str | None = None) -> str:
    """``folder (model)``, the folder's last part unless given; a model given as a local file or folder is
    shown by its last part."""
    folder = folder or run.path.name
    model = (run.results.get("model") or {}).get("id")
    if model and (model.startswith(("/", ".", "~")) or model.endswith(".gguf")):
        model = Path(model).name
    return f"{folder} ({model})" if model and model != folder else folder


def run_names(runs: Sequence[Run]) -> dict[Path, str]:
    """Each run's name: :func:`run_name`, with the whole path where two runs' folders end alike."""
    short = [run_name(run) for run in runs]
    return {run.path: run_name(run, str(run.path)) if short.count(name) > 1 else name for run, name in zip(runs, short)}


def _latency(run: Run) -> dict[str, float | None]:
    files = run.results.get("files") or {}
    name = files.get("predictions", "predictions.jsonl") if run.kind == "classic" else "trajectories.jsonl"
    path = run.path / name
    seconds = []
    if path.is_file():
        seconds = [float(record["seconds"]) for record in read_json_lines(path)
                   if isinstance(record.get("seconds"), (int, float))]
    if not seconds:
        return {"latency_mean": None, "latency_p95": None, "latency_samples": 0}
    return {"latency_mean": round(float(np.mean(seconds)), 4),
            "latency_p95": round(float(np.percentile(seconds, 95)), 4), "latency_samples": len(seconds)}


def _resources(run: Run, name: str) -> dict[str, Any]:
    usage = run.results.get("usage") or {}
    entry = {"run": name, **{key: usage.get(key) for key in RESOURCES}, **_latency(run), "wall_note": None}
    this_run = usage.get("this_run")
    if this_run and usage.get("wall_seconds") is not None:
        # a resumed run's wall time is its last invocation's only, unlike its generation seconds (every sample)
        entry["wall_note"] = f"last invocation: {this_run['samples']} of {usage.get('samples')} samples"
    return entry


def _link(run: Run, output: Path | None) -> str | None:
    """The run's report.html as a URL relative to the leaderboard's folder (None when the run has none)."""
    page = run.path / REPORT_HTML
    if not page.is_file():
        return None
    if output is None:
        return page.resolve().as_uri()
    return quote(Path(os.path.relpath(page.resolve(), output.resolve())).as_posix())


def _ranked(rows: list[dict[str, Any]], headline: str) -> list[dict[str, Any]]:
    """Rows best first by the headline figure (then the name); equal figures share a rank (1, 2, 2, 4)."""
    rows.sort(key=lambda row: (-(row["cells"].get(headline) or {}).get("value", -1.0), row["run"]))
    for position, row in enumerate(rows):
        value = (row["cells"].get(headline) or {}).get("value")
        before = rows[position - 1] if position else None
        same = before is not None and (before["cells"].get(headline) or {}).get("value") == value
        row["rank"] = before["rank"] if same else position + 1
    return rows


def _matrix(runs: Sequence[Run], key: tuple[str, str, str], names: Mapping[Path, str]) -> list[dict[str, Any]]:
    """Every pair (higher-ranked first) as a paired comparison, Holm-adjusted over the table's pairs."""
    pairs = []
    for i, better in enumerate(runs):
        for worse in runs[i + 1:]:
            entry = paired(key, worse, better)  # difference = better - worse
            if entry is None:
                continue
            pairs.append({"row": names[better.path], "column": names[worse.path], "n": entry["n"],
                          "clusters": entry["clusters"], "difference": entry["difference"], "ci95": entry["ci95"],
                          "ci95_reason": entry.get("ci95_reason"), "p": entry["p"], "p_shown": format_p(entry["p"]),
                          "favour_row": entry["favour_b"], "favour_column": entry["favour_a"]})
    for pair, adjusted in zip(pairs, holm([pair["p"] for pair in pairs])):
        pair["p_holm"] = adjusted
        pair["p_holm_shown"] = format_p(adjusted)
    return pairs


def _tables(number: int, group: Sequence[Run], output: Path | None, names: Mapping[Path, str]) -> list[dict[str, Any]]:
    kind = group[0].kind
    keys = sorted({(protocol, level) for run in group for protocol, level, _ in run.samples},
                  key=lambda key: (PROTOCOLS.index(key[0]) if key[0] in PROTOCOLS else len(PROTOCOLS), key))
    figures = CLASSIC_FIGURES if kind == "classic" else AGENTIC_FIGURES
    headline = figures[0][0]
    tables = []
    for protocol, level in keys:
        rows = []
        for run in group:
            cells = _classic_cells(run, protocol, level) if kind == "classic" else _agentic_cells(run, level)
            rows.append({"run": names[run.path], "path": str(run.path), "report": _link(run, output), "cells": cells})
        rows = _ranked(rows, headline)
        by_name = {names[run.path]: run for run in group}
        ordered = [by_name[row["run"]] for row in rows]
        present = [(key, label) for key, label, _ in figures if any(key in row["cells"] for row in rows)]
        tables.append({
            "group": number, "kind": kind, "protocol": protocol, "level": level,
            "figures": [{"key": key, "label": label} for key, label in present], "headline": headline,
            "subset": any(bool(run.results.get("subset")) for run in group),
            "subset_label": next((f"{run.results['audit_subset']} subset" for run in group
                                  if run.results.get("audit_subset")), None),
            "rows": rows, "references": [],
            "matrix": {"metric": figures[0][2], "pairs": _matrix(ordered, (protocol, level, figures[0][2]), names)},
        })
    return tables


def build(runs: Sequence[Run], references: Iterable[Mapping[str, Any]] = (), output: Path | None = None, *,
          on: str = "full", audit: Audit | None = None) -> dict[str, Any]:
    """The whole leaderboard (what leaderboard.json holds): groups, their tables and resources, the runs
    kept apart and why, and the reference rows (each where its protocol and level are shown). ``on``
    ``"verified"`` ranks every run on its rows of the verified subset of ``audit`` (default: the shipped
    one; :func:`apibank.report.verified.verified_view`); reference rows, figures of the full benchmark,
    are then left out. ``ranked_on`` says which."""
    if on not in RANKED_ON:
        raise ValueError(f"unknown ranking {on!r}; expected one of {', '.join(RANKED_ON)}")
    ranked_on: dict[str, Any] = {"rows": on, "audit": None}
    if on == VERIFIED:
        from apibank.data.audits import load_audit
        from apibank.report.verified import verified_view

        audit = audit or load_audit()
        runs = [verified_view(run, audit) for run in runs]
        references = ()
        ranked_on["audit"] = audit.summary()
    paths = [run.path.resolve() for run in runs]
    twice = sorted({str(path) for path in paths if paths.count(path) > 1})
    if twice:
        raise ValueError(f"{twice[0]} is given more than once: give each run folder once")
    groups, apart = group_runs(runs)
    names = run_names(runs)
    tables = [table for number, group in enumerate(groups, 1) for table in _tables(number, group, output, names)]
    unplaced = []
    for reference in references:
        places = [t for t in tables if t["kind"] == reference.get("kind", "classic") and not t["subset"]
                  and (t["protocol"], t["level"]) == (reference["protocol"], reference["level"])]
        for table in places:
            table["references"].append(dict(reference))
        if not places:
            unplaced.append(dict(reference))
    by_place: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for reference in unplaced:
        by_place.setdefault((reference.get("kind", "classic"), reference["protocol"], reference["level"]), []).append(reference)
    for (kind, protocol, level), found in sorted(by_place.items()):
        figures = CLASSIC_FIGURES if kind == "classic" else AGENTIC_FIGURES
        tables.append({"group": None, "kind": kind, "protocol": protocol, "level": level,
                       "figures": [{"key": key, "label": label} for key, label, _ in figures
                                   if any(key in r["cells"] for r in found)],
                       "headline": figures[0][0], "subset": False, "rows": [], "references": found,
                       "matrix": {"metric": figures[0][2], "pairs": []}})
    return {
        "ranked_on": ranked_on,
        "groups": [{"number": number, "kind": group[0].kind, "runs": [names[run.path] for run in group],
                    "paths": [str(run.path) for run in group],
                    "samples": {"/".join(key): len(values) for key, values in sorted(group[0].samples.items())},
                    "resources": [_resources(run, names[run.path]) for run in group]}
                   for number, group in enumerate(groups, 1)],
        "kept_apart": apart,
        "tables": tables,
        "method": {
            "groups": "runs share a group only when apibank compare finds nothing that differs: same kind, data "
                      "revision, protocols, prompt format, subset and scored samples",
            "ci95": "95% percentile bootstrap over dialogues (episodes), as results.json records it",
            "rank": "by API-call accuracy (agentic: episode success); equal figures share a rank; reference rows "
                    "are never ranked",
            "rows": "full: every scored row; verified: only the rows the row audit marks verified (agentic: the "
                    "episodes whose every row is), scored from the same verdicts, without reference rows",
            "matrix": "row - column on the samples both scored; interval: paired dialogue bootstrap; p: exact sign "
                      "test (McNemar); p_holm: Holm's adjustment over the table's pairs",
            "latency": "mean and 95th percentile of the per-sample seconds in predictions.jsonl (trajectories.jsonl)",
        },
    }


def dumps(board: Mapping[str, Any]) -> str:
    from apibank.files import dumps_strict

    return dumps_strict(board, indent=2) + "\n"
