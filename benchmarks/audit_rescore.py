"""What the audit changes: the oracle's and real third-party predictions' scores, full benchmark against
the verified subset, per level and protocol, with 95% dialogue-bootstrap intervals.

The third-party predictions are Qwen/Qwen3.6-35B-A3B-FP8's calls graded in upstream API-Bank pull request
#229 (AlibabaResearch/DAMO-ConvAI, closed, commit e68038b5ebb30ec113f5e51da8837c42198068ce, files
``api-bank/toolsearcher-free/data/results/l{1,2,3_full}_text.json``). They are not shipped here: pass the
folder holding those three files. The pull request prompted the model without ToolSearcher (every tool's
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

from apibank.audit.build import AUDIT_DIR, AUDIT_FILE, load_rows
from apibank.audit.checks import AuditRow
from apibank.benchmark import PROTOCOLS, SEARCHER
from apibank.judge.intervals import score_intervals
from apibank.judge.scoring import score
from apibank.notation import call_text

PR229_FILES = {1: "l1_text.json", 2: "l2_text.json", 3: "l3_full_text.json"}
VERIFIED = "verified"


def statuses() -> dict[str, str]:
    return {json.loads(line)["id"]: json.loads(line)["status"]
            for line in (AUDIT_DIR / AUDIT_FILE).read_text("utf-8").splitlines()}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--pr229", type=Path, default=None, help="folder with l1_text.json, l2_text.json, l3_full_text.json")
    parser.add_argument("--output", type=Path, default=None, help="also write the Markdown table here")
    args = parser.parse_args()
    rows = load_rows(args.data_dir)
    status = statuses()
    verified_ids = {row_id for row_id, s in status.items() if s == VERIFIED}
    runs: dict[str, dict[str, str]] = {"oracle": {row.id: row.row["expected_output"] for row in rows}}
    if args.pr229:
        for name in PR229_FILES.values():
            digest = hashlib.sha256((args.pr229 / name).read_bytes()).hexdigest()
            print(f"{name} sha256 {digest}")
        predictions, report = pr229_predictions(rows, args.pr229)
        print("matched:", json.dumps(report))
        runs["Qwen3.6-35B-A3B-FP8 (PR #229)"] = predictions
    results = {}
    for run, predictions in runs.items():
        full = scored(predictions, rows, args.data_dir)
        verified = scored({k: v for k, v in predictions.items() if k in verified_ids}, rows, args.data_dir)
        results[run] = (full, verified)
    text = table(results)
    print(text)
    if args.output:
        args.output.write_text(text + "\n", "utf-8")


if __name__ == "__main__":
    main()
