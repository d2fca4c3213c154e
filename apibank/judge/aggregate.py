"""From verdicts to figures: per-level accuracy, ROUGE-L means, error counts and detail records.

The shape of the result is documented in :mod:`apibank.judge.scoring`. Means use ``math.fsum``
(exactly rounded), so no figure depends on the order of the rows.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping

from apibank_tools.base import Record
from apibank_tools.retrieval import found_tool

from apibank.judge.categories import EXECUTION_CATEGORIES
from apibank.judge.intervals import dialogue_of
from apibank.benchmark import SEARCHER, level_spec
from apibank.judge.judging import Verdict

def _overall(api: list[int], rouge: list[float], rouge_score: list[float]) -> dict[str, Any]:
    """The figures pooled over every level: API calls correct of all, and the mean ROUGE-L of all responses."""
    return {"api": {"correct": api[0], "total": api[1], "accuracy": _ratio(*api)},
            "response": {"rouge_l": _mean(rouge), "count": len(rouge), "rouge_l_rougescore": _mean(rouge_score)}}


def _ratio(correct: int, total: int) -> float | None:
    return correct / total if total else None


def _mean(values: list[float]) -> float | None:
    # fsum is exactly rounded, so the mean does not depend on the order of the rows
    return math.fsum(values) / len(values) if values else None


def _level_name(level: int) -> str:
    return f"level-{level}"


def aggregate(
    protocol: str,
    references: list[dict[str, Any]],
    verdicts: dict[int, Verdict],
    responses: dict[int, tuple[float, float, str | None]],
    searcher_figures: dict[int, dict[str, int]] | None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    levels = sorted({reference["level"] for reference in references})
    all_api = [0, 0]
    all_rouge: list[float] = []
    all_rouge_score: list[float] = []
    for level in levels:
        rows = [(i, r) for i, r in enumerate(references) if r["level"] == level]
        api_rows = [(i, r) for i, r in rows if r["kind"] == "api"]
        response_rows = [i for i, r in rows if r["kind"] == "response"]
        correct = sum(verdicts[i].correct for i, _ in api_rows)
        errors = Counter(verdicts[i].category or "UNCATEGORISED" for i, _ in api_rows if not verdicts[i].correct)
        by_api = Counter(r["gold"]["api_name"] for i, r in api_rows if not verdicts[i].correct)
        rouge_values = [responses[i][0] for i in response_rows]
        rouge_score_values = [responses[i][1] for i in response_rows]
        flags = Counter(responses[i][2] for i in response_rows if responses[i][2])
        block: dict[str, Any] = {
            "api": {"correct": correct, "total": len(api_rows), "accuracy": _ratio(correct, len(api_rows))},
            "response": {
                "rouge_l": _mean(rouge_values),
                "count": len(response_rows),
                "rouge_l_rougescore": _mean(rouge_score_values),
            },
            "errors": dict(sorted(errors.items())),
            "errors_by_api": dict(sorted(by_api.items(), key=lambda kv: (-kv[1], kv[0]))),
            "response_flags": dict(sorted(flags.items())),
        }
        if level_spec(level).dialogue_accuracy:
            dialogues: dict[int, bool] = {}
            for i, r in api_rows:
                dialogues[r["sample_id"]] = dialogues.get(r["sample_id"], True) and verdicts[i].correct
            good = sum(dialogues.values())
            block["dialogues"] = {"correct": good, "total": len(dialogues), "accuracy": _ratio(good, len(dialogues))}
            if protocol == "paper":
                block["toolsearcher_errors"] = sum(
                    1
                    for i, r in api_rows
                    if r["gold"]["api_name"] == SEARCHER
                    and not verdicts[i].correct
                    and verdicts[i].category not in EXECUTION_CATEGORIES
                )
        if searcher_figures is not None and level in searcher_figures:
            block["toolsearcher"] = searcher_figures[level]
        out[_level_name(level)] = block
        all_api[0] += correct
        all_api[1] += len(api_rows)
        all_rouge += rouge_values
        all_rouge_score += rouge_score_values
    out["overall"] = _overall(all_api, all_rouge, all_rouge_score)
    return out


def searcher_figures(gold: dict[str, Record | None], references: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
    """How often the gold keywords themselves retrieve the tool the annotation recorded."""
    figures: dict[int, dict[str, int]] = {}
    seen: set[str] = set()
    for reference in references:
        if reference["kind"] != "api" or reference["gold"]["api_name"] != SEARCHER or reference["id"] in seen:
            continue
        seen.add(reference["id"])
        executed = gold.get(reference["id"])
        recorded = found_tool(reference["gold"]["result"].get("output"))
        block = figures.setdefault(reference["level"], {"total": 0, "gold_keywords_retrieve_recorded": 0})
        block["total"] += 1
        block["gold_keywords_retrieve_recorded"] += int(
            executed is not None and found_tool(executed.get("output")) == recorded
        )
    return figures


def detail(protocol: str, reference: Mapping[str, Any], verdict: Verdict | None, response: tuple | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": reference["id"],
        "protocol": protocol,
        "level": reference["level"],
        "kind": reference["kind"],
        "extracted_call": None,
        "name": None,
        "arguments": None,
        "result": None,
        "verdict": None,
        "score": None,
        "score_rougescore": None,
        "category": None,
        "error": None,
    }
    if verdict is not None:
        record.update(
            extracted_call=verdict.call,
            name=verdict.name,
            arguments=verdict.arguments,
            result=verdict.result,
            verdict=verdict.correct,
            category=verdict.category,
            error=verdict.error,
        )
        record.update(verdict.extra)
    if response is not None:
        record.update(score=response[0], score_rougescore=response[1], category=response[2])
    return record


def aggregate_details(details: list[Mapping[str, Any]]) -> dict[str, Any]:
    """The figures of :func:`aggregate` (API-call and level-3 dialogue accuracy, ROUGE-L means, errors by
    category) recomputed from per-sample detail records, per protocol: the scores of any subset of a run's
    rows, from the very verdicts its full scores count. A level-3 dialogue counts as right when all its
    API rows among ``details`` are."""
    out: dict[str, Any] = {}
    for protocol in dict.fromkeys(str(entry["protocol"]) for entry in details):
        entries = [entry for entry in details if entry["protocol"] == protocol]
        blocks: dict[str, Any] = {}
        pooled_api, pooled_rouge, pooled_rouge_score = [0, 0], [], []
        for level in sorted({int(entry["level"]) for entry in entries}):
            api = [entry for entry in entries if int(entry["level"]) == level and entry["kind"] == "api"]
            responses = [entry for entry in entries if int(entry["level"]) == level and entry["kind"] == "response"]
            correct = sum(bool(entry.get("verdict")) for entry in api)
            rouge = [float(entry.get("score") or 0.0) for entry in responses]
            rouge_score = [float(entry.get("score_rougescore") or 0.0) for entry in responses]
            errors = Counter(entry.get("category") or "UNCATEGORISED" for entry in api if not entry.get("verdict"))
            block: dict[str, Any] = {
                "api": {"correct": correct, "total": len(api), "accuracy": _ratio(correct, len(api))},
                "response": {"rouge_l": _mean(rouge), "count": len(responses),
                             "rouge_l_rougescore": _mean(rouge_score)},
                "errors": dict(sorted(errors.items())),
            }
            if level_spec(level).dialogue_accuracy:
                dialogues: dict[str, bool] = {}
                for entry in api:
                    name = dialogue_of(entry["id"])
                    dialogues[name] = dialogues.get(name, True) and bool(entry.get("verdict"))
                good = sum(dialogues.values())
                block["dialogues"] = {"correct": good, "total": len(dialogues),
                                      "accuracy": _ratio(good, len(dialogues))}
            blocks[_level_name(level)] = block
            pooled_api[0] += correct
            pooled_api[1] += len(api)
            pooled_rouge += rouge
            pooled_rouge_score += rouge_score
        blocks["overall"] = _overall(pooled_api, pooled_rouge, pooled_rouge_score)
        out[protocol] = blocks
    return out
