"""From verdicts to figures: per-level accuracy, ROUGE-L means, error counts and detail records.

The shape of the result is documented in :mod:`apibank.judge.scoring`. Means use ``math.fsum``
(exactly rounded), so no figure depends on the order of the rows.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Callable, Mapping

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


ApiRow = tuple[bool, "str | None", str, Any]  # an API row's verdict, error category, gold API name and dialogue
Response = tuple[float, float, "str | None"]  # a response's ROUGE-L, rouge-score's ROUGE-L and flag
Extra = Callable[[int, list[ApiRow], list[Response]], dict[str, Any]]


def _by_level(rows: dict[int, tuple[list[ApiRow], list[Response]]], extra: Extra | None = None) -> dict[str, Any]:
    """Each level's figures (API-call accuracy, the mean ROUGE-L of its responses, errors by category, and
    dialogue accuracy where the level counts it) and the figures pooled over them (``overall``); ``extra``
    adds a level's own figures after its errors."""
    out: dict[str, Any] = {}
    pooled_api, pooled_rouge, pooled_rouge_score = [0, 0], [], []
    for level, (api, responses) in sorted(rows.items()):
        correct = sum(ok for ok, *_ in api)
        rouge, rouge_score = [response[0] for response in responses], [response[1] for response in responses]
        errors = Counter(category or "UNCATEGORISED" for ok, category, *_ in api if not ok)
        block: dict[str, Any] = {
            "api": {"correct": correct, "total": len(api), "accuracy": _ratio(correct, len(api))},
            "response": {"rouge_l": _mean(rouge), "count": len(responses), "rouge_l_rougescore": _mean(rouge_score)},
            "errors": dict(sorted(errors.items())),
            **(extra(level, api, responses) if extra else {}),
        }
        if level_spec(level).dialogue_accuracy:
            dialogues: dict[Any, bool] = {}
            for ok, _, _, dialogue in api:
                dialogues[dialogue] = dialogues.get(dialogue, True) and ok
            good = sum(dialogues.values())
            block["dialogues"] = {"correct": good, "total": len(dialogues), "accuracy": _ratio(good, len(dialogues))}
        out[_level_name(level)] = block
        pooled_api[0] += correct
        pooled_api[1] += len(api)
        pooled_rouge += rouge
        pooled_rouge_score += rouge_score
    out["overall"] = _overall(pooled_api, pooled_rouge, pooled_rouge_score)
    return out


def aggregate(
    protocol: str,
    references: list[dict[str, Any]],
    verdicts: dict[int, Verdict],
    responses: dict[int, tuple[float, float, str | None]],
    searcher_figures: dict[int, dict[str, int]] | None,
) -> dict[str, Any]:
    rows: dict[int, tuple[list[ApiRow], list[Response]]] = {}
    for i, reference in enumerate(references):
        api, answers = rows.setdefault(reference["level"], ([], []))
        if reference["kind"] == "api":
            verdict = verdicts[i]
            api.append((verdict.correct, verdict.category, reference["gold"]["api_name"], reference["sample_id"]))
        elif reference["kind"] == "response":
            answers.append(responses[i])

    def failures(level: int, api: list[ApiRow], answers: list[Response]) -> dict[str, Any]:
        by_api = Counter(name for ok, _, name, _ in api if not ok)
        flags = Counter(flag for _, _, flag in answers if flag)
        return {"errors_by_api": dict(sorted(by_api.items(), key=lambda kv: (-kv[1], kv[0]))),
                "response_flags": dict(sorted(flags.items()))}

    out = _by_level(rows, failures)
    for level, (api, _) in rows.items():
        block = out[_level_name(level)]
        if level_spec(level).dialogue_accuracy and protocol == "paper":
            block["toolsearcher_errors"] = sum(1 for ok, category, name, _ in api if name == SEARCHER and not ok
                                               and category not in EXECUTION_CATEGORIES)
        if searcher_figures is not None and level in searcher_figures:
            block["toolsearcher"] = searcher_figures[level]
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
        rows: dict[int, tuple[list[ApiRow], list[Response]]] = {}
        for entry in details:
            if entry["protocol"] != protocol:
                continue
            api, responses = rows.setdefault(int(entry["level"]), ([], []))
            if entry["kind"] == "api":
                api.append((bool(entry.get("verdict")), entry.get("category"), "", dialogue_of(entry["id"])))
            elif entry["kind"] == "response":
                responses.append((float(entry.get("score") or 0.0), float(entry.get("score_rougescore") or 0.0), None))
        out[protocol] = _by_level(rows)
    return out
