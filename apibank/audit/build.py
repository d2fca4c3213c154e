"""Build the audit file: the machine checks' flags plus the hand-written decisions, one status per row.

Every flagged row must have a decision (``decisions.jsonl``: id, status, reason, evidence); a row no check
flags is ``verified``. A decision's evidence is quoted from the row: each part (parts separated by
:data:`EVIDENCE_SEPARATOR`) must occur in the row's dialogue, calls, results or gold answer, so a decision
cannot cite what the row does not say. The output is deterministic: the same data and decisions give
byte-identical files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from apibank.audit.checks import CHECKS, AuditRow, Environment, audit_rows
from apibank.audit.taxonomy import AUDIT_VERSION, PRECEDENCE, STATUSES, VERIFIED
from apibank.benchmark import LEVELS
from apibank.data.audits import AUDIT_DIR
from apibank.data.configs import required_files
from apibank.data.upstream import manifest
from apibank.errors import InputFileError

DECISIONS_FILE = "decisions.jsonl"
EVIDENCE_SEPARATOR = " … "
UNFLAGGED_REASON = ("No check flagged it: every gold argument is traced, the recorded result reproduces, and no "
                    "duplicate, wording dependence or training overlap was found.")


class AuditError(InputFileError):
    """The decisions do not cover the flagged rows, or one is malformed."""


def test_configs() -> list[str]:
    return list(LEVELS)


def load_rows(data_dir: str | os.PathLike[str] | None) -> list[AuditRow]:
    from apibank.data.rows import iter_rows

    return audit_rows(row for config in test_configs() for row in iter_rows(config, data_dir))


def environment(data_dir: str | os.PathLike[str] | None) -> Environment:
    from apibank_tools.environment import pristine_data

    from apibank.data.rows import iter_rows
    from apibank.data.upstream import upstream_source
    from apibank.judge.judging import Judge

    judge = Judge(pristine_data(upstream_source(data_dir)).preload())
    judge.prepare({"level-1-2", "level-3"})
    training = [row["input"] for row in iter_rows("training", data_dir, levels=[3])]
    return Environment(judge, data_dir, training)


def run_checks(rows: list[AuditRow], env: Environment) -> dict[str, list[dict[str, Any]]]:
    """Each row's flags, in the order of :data:`CHECKS`."""
    flags: dict[str, list[dict[str, Any]]] = {row.id: [] for row in rows}
    for check in CHECKS.values():
        for row_id, flag in check(rows, env).items():
            flags[row_id].append(flag)
    return flags


def read_decisions(path: str | os.PathLike[str]) -> dict[str, dict[str, str]]:
    decisions: dict[str, dict[str, str]] = {}
    for number, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        record = json.loads(line)
        missing = {"id", "status", "reason", "evidence"} - set(record)
        if missing:
            raise AuditError(f"{path}:{number}: the decision lacks {sorted(missing)}")
        if record["status"] not in STATUSES:
            raise AuditError(f"{path}:{number}: unknown status {record['status']!r}; use one of {sorted(STATUSES)}")
        if record["id"] in decisions:
            raise AuditError(f"{path}:{number}: a second decision for {record['id']}")
        decisions[record["id"]] = record
    return decisions


def row_text(row: Mapping[str, Any]) -> str:
    """All the text a decision may quote: the turns, the calls and results, the gold answer."""
    parts = [row["expected_output"], row["target"]["arguments"], row["target"]["result"], row["target"]["text"]]
    for turn in row["history"]:
        parts += [turn["text"], turn["arguments"], turn["result"]]
    return "\n".join(parts)


def records(rows: list[AuditRow], flags: Mapping[str, list[dict[str, Any]]],
            decisions: Mapping[str, Mapping[str, str]]) -> list[dict[str, Any]]:
    """One audit record per row, in row order; refuses undecided flagged rows and unquoted evidence."""
    known = {row.id for row in rows}
    strangers = sorted(set(decisions) - known)
    if strangers:
        raise AuditError(f"decisions for rows that do not exist: {strangers[:5]}")
    undecided = [row.id for row in rows if flags[row.id] and row.id not in decisions]
    if undecided:
        raise AuditError(f"{len(undecided)} flagged rows have no decision, e.g. {undecided[:5]}")
    output = []
    for row in rows:
        decision = decisions.get(row.id)
        if decision is None:
            output.append({"id": row.id, "status": VERIFIED, "checks": [], "reason": UNFLAGGED_REASON, "evidence": ""})
            continue
        if decision["status"] != VERIFIED and not decision["evidence"].strip():
            raise AuditError(f"{row.id}: a {decision['status']} decision needs quoted evidence")
        text = row_text(row.row)
        unquoted = [part for part in decision["evidence"].split(EVIDENCE_SEPARATOR) if part and part not in text]
        if unquoted:
            raise AuditError(f"{row.id}: the evidence {unquoted[0]!r} is not quoted from the row")
        output.append({"id": row.id, "status": decision["status"], "checks": flags[row.id],
                       "reason": decision["reason"], "evidence": decision["evidence"]})
    return output


def data_checksums() -> dict[str, str]:
    files = sorted({path for config in test_configs() for path in required_files(config)})
    return {path: manifest().entry(path).sha256 for path in files}


def summary(audit: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    counts: dict[str, dict[str, int]] = {config: {status: 0 for status in PRECEDENCE} for config in test_configs()}
    total = 0
    for record in audit:
        counts[record["id"].split("/", 1)[0]][record["status"]] += 1
        total += 1
    # Statuses in order of precedence (the first that applies is a row's); the checks, the training
    # data they compare against and how decisions were made: docs/verified.md.
    return {
        "version": AUDIT_VERSION,
        "statuses": {status: STATUSES[status] for status in PRECEDENCE},
        "data_sha256": data_checksums(),
        "counts": counts,
        "rows": total,
    }


def build(data_dir: str | os.PathLike[str] | None = None, decisions_path: str | os.PathLike[str] | None = None
          ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The audit records and the summary, from the checks and the decisions file."""
    rows = load_rows(data_dir)
    flags = run_checks(rows, environment(data_dir))
    decisions = read_decisions(decisions_path or AUDIT_DIR / DECISIONS_FILE)
    audit = records(rows, flags, decisions)
    return audit, summary(audit)


def render(audit: list[dict[str, Any]], summary_record: Mapping[str, Any]) -> tuple[str, str]:
    """The two files' exact text."""
    lines = "".join(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n" for record in audit)
    return lines, json.dumps(summary_record, ensure_ascii=False, indent=1) + "\n"
