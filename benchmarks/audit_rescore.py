"""What the audit changes: the oracle's and real third-party predictions' scores, full benchmark against
the verified subset, per level and protocol, with 95% dialogue-bootstrap intervals.

The third-party predictions are Qwen/Qwen3.6-35B-A3B-FP8's calls graded in upstream API-Bank pull request
#229 (AlibabaResearch/DAMO-ConvAI, closed, commit e68038b5ebb30ec113f5e51da8837c42198068ce, files
``api-bank/toolsearcher-free/data/results/l{1,2,3_full,3_batch}_text.json`` and, to place the per-step
level-3 run, ``data/processed/level-3-batch.jsonl``). They are not shipped here: pass the folder holding
those five files. The pull request prompted the model without ToolSearcher (every tool's
description in the system prompt) and replayed the gold calls between steps, so each predicted call answers
the same history as one API row here; ToolSearcher rows and response rows have no prediction. A prediction is
matched to the rows whose dialogue file and gold call (name and arguments) it names, in order, one
prediction per row; where a call has fewer predictions than rows, rows that repeat an earlier row's whole
content share its prediction.

    python benchmarks/audit_rescore.py --data-dir ../shared/apibank-upstream --pr229 DIR [--output table.md]
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from apibank.audit.build import load_rows
from apibank.audit.checks import AuditRow
from apibank.benchmark import AUDIT_VERIFIED, PROTOCOLS, SEARCHER
from apibank.data.audits import load_audit
from apibank.judge.intervals import score_intervals
from apibank.judge.scoring import score
from apibank.notation import call_text

PR229_FILES = {1: "l1_text.json", 2: "l2_text.json", 3: "l3_full_text.json"}
# The same model on level 3 prompted one step at a time (each datapoint names its requirement and step).
PR229_LEVEL3_BATCH = "l3_batch_text.json"
PR229_LEVEL3_STEPS = "level-3-batch.jsonl"


def _key(name: str, arguments: dict[str, Any]) -> str:
    return json.dumps([name, {key: str(value) for key, value in arguments.items()}], sort_keys=True)


def _prediction(pred: dict[str, Any] | None) -> str:
    return "" if not pred else call_text(pred["tool_name"], pred.get("arguments") or {})


def pr229_predictions(rows: Sequence[AuditRow], folder: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """Predictions by row id, and what was matched (per level: datapoints, matched, unmatched)."""
    predictions: dict[str, str] = {}
    report: dict[str, Any] = {}
    for level, name in PR229_FILES.items():
        records = json.loads((folder / name).read_text("utf-8"))["results"]
        api_rows = [r for r in rows if r.row["level"] == level and r.gold and r.gold["api_name"] != SEARCHER]
        steps: dict[tuple[str, str], list[str]] = defaultdict(list)
        if level == 3:
            by_sample: dict[int, list[AuditRow]] = defaultdict(list)
            for row in api_rows:
                by_sample[row.reference["sample_id"]].append(row)
            matched = unmatched = 0
            for record in records:
                ours = by_sample.get(record["id"], [])
                for step, verdict in enumerate(record["verdicts"]):
                    gold = verdict["gold"]
                    if step < len(ours) and _key(ours[step].gold["api_name"], ours[step].gold["arguments"]) == \
                            _key(gold["tool_name"], gold["arguments"]):
                        predictions[ours[step].id] = _prediction(verdict["pred"])
                        matched += 1
                    else:
                        unmatched += 1
            report[f"level-{level}"] = {"predictions": matched + unmatched, "matched": matched, "unmatched": unmatched,
                                        "rows_scored": sum(r.id in predictions for r in api_rows), "api_rows": len(api_rows)}
            continue
        for record in sorted(records, key=lambda r: r["id"]):
            for verdict in record["verdicts"]:
                gold = verdict["gold"]
                steps[(record["source_file"], _key(gold["tool_name"], gold["arguments"]))].append(_prediction(verdict["pred"]))
        contexts: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(dict)
        for row in api_rows:
            key = (row.reference["file"], _key(row.gold["api_name"], row.gold["arguments"]))
            contexts[key].setdefault(row.signature(), []).append(row.id)
        used = 0
        for key, by_signature in contexts.items():
            given = steps.get(key, [])
            ids = [row_id for same in by_signature.values() for row_id in same]
            # one prediction per row where the counts agree; else one per distinct history, shared by its copies
            groups = [[row_id] for row_id in ids] if len(given) == len(ids) else list(by_signature.values())
            for group, prediction in zip(groups, given):
                used += 1
                for row_id in group:
                    predictions[row_id] = prediction
        total = sum(len(v) for v in steps.values())
        report[f"level-{level}"] = {"predictions": total, "matched": used, "unmatched": total - used,
                                    "rows_scored": sum(r.id in predictions for r in api_rows), "api_rows": len(api_rows)}
    return predictions, report


def pr229_level3_batch(rows: Sequence[AuditRow], folder: Path) -> dict[str, str]:
    """The per-step level-3 run by row id. A datapoint's ``id`` is a running number; the pull request's
    converted file (``processed/level-3-batch.jsonl``) gives its requirement and step (``sample_id``,
    ``api_id``, as the rows here number them); the gold call is checked against the row's."""
    steps = {}
    for line in (folder / PR229_LEVEL3_STEPS).read_text("utf-8").splitlines():
        record = json.loads(line)
        steps[int(record["id"])] = f"level-3/{int(record['sample_id'])}#{int(record['api_id'])}"
    by_id = {row.id: row for row in rows}
    predictions = {}
    for record in json.loads((folder / PR229_LEVEL3_BATCH).read_text("utf-8"))["results"]:
        row = by_id.get(steps.get(record["id"], ""))
        for verdict in record["verdicts"]:
            gold = verdict["gold"]
            if row is not None and _key(row.gold["api_name"], row.gold["arguments"]) == _key(gold["tool_name"], gold["arguments"]):
                predictions[row.id] = _prediction(verdict["pred"])
    return predictions


def scored(predictions: dict[str, str], rows: Sequence[AuditRow], data_dir: str | None) -> dict[str, Any]:
    chosen = [row for row in rows if row.id in predictions]
    out = score([predictions[row.id] for row in chosen], [row.reference for row in chosen], return_details=True,
                data_dir=data_dir)
    return score_intervals({protocol: out[protocol] for protocol in PROTOCOLS}, out["details"])


def _cell(block: dict[str, Any] | None) -> str:
    if not block or block.get("accuracy") is None:
        return "-"
    low, high = block.get("ci95") or (None, None)
    interval = f" [{100 * low:.1f}, {100 * high:.1f}]" if low is not None else ""
    return f"{100 * block['accuracy']:.1f}%{interval} ({block['correct']}/{block['total']})"


def table(runs: dict[str, tuple[dict[str, Any], dict[str, Any]]]) -> str:
    lines = ["| run | level | protocol | full | verified | change (points) |", "| --- | --- | --- | --- | --- | --- |"]
    for run, (full, verified) in runs.items():
        for protocol in PROTOCOLS:
            for level in sorted(k for k in full[protocol] if k.startswith("level-")):
                a, b = full[protocol][level]["api"], (verified[protocol].get(level) or {}).get("api")
                change = f"{100 * (b['accuracy'] - a['accuracy']):+.1f}" if b and b.get("accuracy") is not None else "-"
                lines.append(f"| {run} | {level} | {protocol} | {_cell(a)} | {_cell(b)} | {change} |")
    return "\n".join(lines)


def paired(a: dict[str, str], b: dict[str, str], rows: Sequence[AuditRow], keep: set[str] | None,
           data_dir: str | None) -> dict[str, Any]:
    """Per protocol: run a's accuracy minus run b's on the rows both answer (within ``keep``), with a 95%
    interval resampling dialogues (the rows of a dialogue move together, as in the score intervals)."""
    import numpy as np

    from apibank.judge.intervals import (
        dialogue_of,
        group,
        percentile_interval,
        replicates,
        resample_weights,
    )

    common = [row for row in rows if row.id in a and row.id in b and (keep is None or row.id in keep)]
    verdicts = {}
    for name, predictions in (("a", a), ("b", b)):
        out = score([predictions[row.id] for row in common], [row.reference for row in common], return_details=True,
                    data_dir=data_dir)
        verdicts[name] = {(d["protocol"], d["id"]): bool(d["verdict"]) for d in out["details"]}
    result = {}
    clusters = sorted({dialogue_of(row.id) for row in common})
    weights = resample_weights(len(clusters), "paired")
    for protocol in PROTOCOLS:
        values = [(dialogue_of(row.id), float(verdicts["a"][(protocol, row.id)]) - float(verdicts["b"][(protocol, row.id)]))
                  for row in common]
        grouped = group(values, clusters)
        result[protocol] = {"difference": float(np.sum(grouped.sums) / grouped.n), "ci95": percentile_interval(
            replicates(weights, grouped)), "n": grouped.n}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pr229", type=Path, default=None,
                        help="folder with l1_text.json, l2_text.json, l3_full_text.json, l3_batch_text.json, level-3-batch.jsonl")
    parser.add_argument("--output", type=Path, default=None, help="also write the Markdown table here")
    args = parser.parse_args()
    rows = load_rows(args.data_dir)
    audit = load_audit(args.data_dir)
    verified_ids = {row_id for row_id, record in audit.rows.items() if record["status"] == AUDIT_VERIFIED}
    runs: dict[str, dict[str, str]] = {"oracle": {row.id: row.row["expected_output"] for row in rows}}
    if args.pr229:
        for name in (*PR229_FILES.values(), PR229_LEVEL3_BATCH, PR229_LEVEL3_STEPS):
            digest = hashlib.sha256((args.pr229 / name).read_bytes()).hexdigest()
            print(f"{name} sha256 {digest}")
        predictions, report = pr229_predictions(rows, args.pr229)
        print("matched:", json.dumps(report))
        runs["Qwen3.6-35B-A3B-FP8 (PR #229)"] = predictions
        batch = pr229_level3_batch(rows, args.pr229)
        print(f"level-3 per-step run: {len(batch)} rows placed")
        runs["Qwen3.6-35B-A3B-FP8 (PR #229), level 3 one step at a time"] = batch
    results = {}
    for run, predictions in runs.items():
        full = scored(predictions, rows, args.data_dir)
        verified = scored({k: v for k, v in predictions.items() if k in verified_ids}, rows, args.data_dir)
        results[run] = (full, verified)
    text = table(results)
    if args.pr229:
        lines = ["", "| paired difference (level 3, per-step run minus conversation run) | protocol | full | verified |",
                 "| --- | --- | --- | --- |"]
        both = {subset: paired(runs["Qwen3.6-35B-A3B-FP8 (PR #229), level 3 one step at a time"],
                               runs["Qwen3.6-35B-A3B-FP8 (PR #229)"], rows, keep, args.data_dir)
                for subset, keep in (("full", None), ("verified", verified_ids))}
        for protocol in PROTOCOLS:
            cells = []
            for subset in ("full", "verified"):
                entry = both[subset][protocol]
                low, high = entry["ci95"] or (float("nan"), float("nan"))
                cells.append(f"{100 * entry['difference']:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}] (n={entry['n']})")
            lines.append(f"| Qwen3.6-35B-A3B-FP8 (PR #229) | {protocol} | {cells[0]} | {cells[1]} |")
        text += "\n" + "\n".join(lines)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    main()
