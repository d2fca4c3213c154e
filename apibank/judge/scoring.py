"""Scoring API-Bank predictions: API-call accuracy by executing the predicted calls, ROUGE-L for responses.

Entry point: :func:`score`. It takes the model outputs (raw generated text) and the dataset rows'
``reference`` field (JSON text or the parsed dict; CONTRACTS §2), for any mix of levels and of
API-call and response rows, and needs nothing else.

Two protocols, both reported by default:

``paper``
    The original evaluators bug for bug (spec protocol §2–§6): regex call extraction, all values
    text, the original coercion and rejection rules, fresh tool state per call, the tools' original
    checks with their in-place edits of gold records (duplicate samples share one gold record per
    (file, turn), judged in id order whatever the input order), the original error categories. Cases
    where the original aborts count as wrong under an ``ABORT_*`` category. One deliberate
    deviation: the level-3 evaluator shares one tool manager across the whole run, which makes
    verdicts depend on sample order; here every level-3 step gets fresh state too.
``corrected``
    ``ast`` literal parsing, coercion to the declared schema, the dialogue's earlier gold calls
    replayed first, checks without the in-place edits and KeyError bugs, ToolSearcher judged on the
    tool it retrieves, renamed parameters and data drift handled (see :mod:`apibank.judge.judging`).

Responses are scored the same way under both protocols: ``rouge`` 1.0.1's rouge-l F reimplemented
(:mod:`apibank.judge.rouge`); levels 1/2: empty prediction scores 0, otherwise rounded to 4 places;
level 3: ``User:`` and ``AI:`` removed, trimmed, empty scores 0, not rounded. A prediction made only
of periods (the original crashes) scores 0. rouge-score's ``rougeL`` F is reported beside it.

Output shape (levels appear only when present in the references)::

    {
      "paper": {
        "level-1": {
          "api": {"correct": int, "total": int, "accuracy": float | None},
          "response": {"rouge_l": float | None, "count": int, "rouge_l_rougescore": float | None},
          "errors": {category: int},            # API rows judged wrong, by category (spec §4.2)
          "errors_by_api": {gold api_name: int}, # API rows judged wrong, by gold tool (paper Table 2)
          "response_flags": {flag: int},         # ABORT_EMPTY_HYPOTHESIS, ROUGE_RECURSION
        },
        "level-2": {...same...},
        "level-3": {...same..., "dialogues": {"correct": int, "total": int, "accuracy": float | None},
                    "toolsearcher_errors": int},  # paper only: lv3_evaluator's "ToolSearcher Error Num"
        "overall": {"api": {...}, "response": {...}},
      },
      "corrected": {same shape; levels with ToolSearcher gold rows add
                    "toolsearcher": {"total": int, "gold_keywords_retrieve_recorded": int}},
      "revision": "<upstream commit of the references>",
      "protocols": {"paper": "<one line>", "corrected": "<one line>"},
      "details": [  # only with return_details=True: one record per (row, protocol), input order
        {"id", "protocol", "level", "kind",
         "extracted_call": str | None, "name": str | None, "arguments": dict | None,
         "result": dict | None,        # the executed call's result record
         "verdict": bool | None,       # API rows; None for response rows
         "score": float | None,        # response rows: ROUGE-L as above
         "score_rougescore": float | None,  # response rows: rouge-score rougeL F
         "category": str | None,       # API rows: why wrong; response rows: a flag or None
         "error": str | None,          # rejection, parse or abort message
         # corrected protocol, ToolSearcher gold rows only: tool names found by the prediction,
         # recorded by the annotation, and found by the gold keywords
         "retrieved", "recorded_tool", "gold_keywords_tool"},
      ],
    }

Level-3 dialogue accuracy counts a dialogue correct when every one of its API rows present in the
references is correct; the denominator is the number of dialogues present (50 for the full set,
matching the original's fixed denominator).
"""

from __future__ import annotations

import copy
import math
import os
from collections import Counter, defaultdict
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Sequence

from apibank_tools.environment import pristine_data
from apibank_tools.retrieval import found_tool

from apibank.data.upstream import upstream_source
from apibank_tools.base import Record

from apibank.judge.judging import MAX_PREDICTION_CHARS, SEARCHER, Judge, Verdict
from apibank.judge.worker import (
    DEFAULT_MEMORY_MB, Overrun, RunStats, Step, check_timeout, fresh_locks, fresh_module_locks, run_steps,
)
from apibank.judge.references import ReferenceError, parse_references
from apibank.judge.rouge import EmptyText, needs_deep_recursion, rouge_l, rouge_score_l

PROTOCOLS = {
    "paper": "the original API-Bank evaluators bug for bug (regex parsing, text values, original checks and "
    "categories, shared gold records for duplicates; aborts counted wrong; fresh state per level-3 step)",
    "corrected": "ast literal parsing, typed coercion, earlier gold calls replayed, checks without judging bugs, "
    "ToolSearcher judged on the retrieved tool, renamed parameters and data drift handled",
}
# Execution-side failures, which lv3_evaluator counts apart from incorrect judgements.
_EXECUTION_CATEGORIES = {
    "NO_API_CALL", "UNKNOWN_API", "INVALID_INPUT_PARAMETER", "MISS_INPUT_ARGUMENT", "TIMEOUT",
    "ABORT_INVALID_PARAMETER_TYPE", "ABORT_INVALID_VALUE", "ABORT_MISSING_KEYWORDS", "ABORT_EXECUTION_ERROR",
}
ABORT_EMPTY_HYPOTHESIS = "ABORT_EMPTY_HYPOTHESIS"
ROUGE_RECURSION = "ROUGE_RECURSION"
# A response longer than MAX_PREDICTION_CHARS is not scored: 0 under both scores, with this flag.
HYPOTHESIS_TOO_LONG = "HYPOTHESIS_TOO_LONG"


def _check_predictions(predictions: Sequence[Any], count: int) -> list[str]:
    if predictions is None:
        raise ValueError("predictions is None; pass one generated text per reference")
    if isinstance(predictions, str):
        raise ValueError("predictions must be a list of texts, not one text")
    predictions = list(predictions)
    if len(predictions) != count:
        raise ValueError(f"got {len(predictions)} predictions for {count} references; they must pair up one to one")
    for index, prediction in enumerate(predictions):
        if not isinstance(prediction, str):
            raise ValueError(
                f"predictions[{index}] is {type(prediction).__name__}; every prediction must be the generated text "
                "(use '' for an empty generation)"
            )
    return predictions


# ------------------------------------------------------------------------------------ responses
def response_scores(prediction: str, reference: Mapping[str, Any]) -> tuple[float, float, str | None]:
    """(ROUGE-L as the original computes it, rouge-score rougeL F, flag) for one response row."""
    gold = reference["gold_text"]
    if len(prediction) > MAX_PREDICTION_CHARS:
        # Bounds the pure-Python LCS work of a response row (worst case measured in
        # benchmarks/bench_hostile.py); documented in the metric card.
        return 0.0, 0.0, HYPOTHESIS_TOO_LONG
    if reference["level"] == 3:
        hypothesis = prediction.replace("User:", "").replace("AI:", "").strip()
    else:
        hypothesis = prediction
    if not hypothesis:
        return 0.0, 0.0, None
    flag = ROUGE_RECURSION if needs_deep_recursion(hypothesis) else None
    try:
        value = rouge_l(hypothesis, gold)
    except EmptyText:
        return 0.0, 0.0, ABORT_EMPTY_HYPOTHESIS
    if reference["level"] != 3:
        value = round(value, 4)
    return value, rouge_score_l(hypothesis, gold), flag


# ------------------------------------------------------------------------------------ judging
def _group_key(reference: Mapping[str, Any]) -> tuple[Any, ...]:
    """Samples that the original judges against one in-memory gold record."""
    if reference["level"] == 3:
        return (3, reference["file"], reference["sample_id"], reference["turn"])
    return (reference["level"], reference["file"], reference["turn"])


def _refuse_conflicting_duplicates(parsed: list[dict[str, Any]]) -> None:
    """Samples the paper protocol judges against one shared gold record must have the same gold call:
    two that share (level, file, turn) but differ are not duplicates of one sample."""
    first: dict[tuple[Any, ...], int] = {}
    for index, reference in enumerate(parsed):
        if reference["kind"] != "api":
            continue
        earlier = first.setdefault(_group_key(reference), index)
        if earlier != index and parsed[earlier]["gold"] != reference["gold"]:
            raise ReferenceError(
                f"references[{earlier}] and references[{index}] share level, file and turn "
                f"({', '.join(map(str, _group_key(reference)))}) but have different gold calls; pass each "
                "dataset row's own `reference` field unchanged"
            )


def _paper_steps(items: list[tuple[int, str, dict[str, Any]]]) -> list[Step]:
    groups: dict[tuple[Any, ...], list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
    for item in items:
        groups[_group_key(item[2])].append(item)
    steps = []
    for key, members in groups.items():
        # id order, as the original walks a dialogue; ties by text keep the result order-independent
        members.sort(key=lambda item: (item[2]["sample_id"], item[2]["api_id"], item[1]))
        steps += [Step(("paper", key), ("paper", index, prediction, reference)) for index, prediction, reference in members]
    return steps


def _corrected_steps(items: list[tuple[int, str, dict[str, Any]]]) -> list[Step]:
    return [Step(("corrected", index), ("corrected", index, prediction, reference)) for index, prediction, reference in items]


def _gold_steps(references: list[dict[str, Any]]) -> list[Step]:
    """ToolSearcher gold calls executed for the corrected protocol's retrieval figures (one per id)."""
    steps, seen = [], set()
    for index, reference in enumerate(references):
        if reference["kind"] != "api" or reference["gold"]["api_name"] != SEARCHER or reference["id"] in seen:
            continue
        seen.add(reference["id"])
        steps.append(Step(("gold", index), ("gold", index, None, reference)))
    return steps


def _handler(judge: Judge) -> Any:
    def judge_step(payload: tuple[str, int, Any, dict[str, Any]], state: Any) -> tuple[Any, Any]:
        kind, _, prediction, reference = payload
        if kind == "paper":
            shared_gold = state if state is not None else copy.deepcopy(reference["gold"]["result"])
            return judge.paper(prediction, reference, shared_gold), shared_gold
        if kind == "corrected":
            return judge.corrected(prediction, reference), None
        return judge.execute_gold(reference), None

    return judge_step


def _needs_retriever(items: list[tuple[int, str, dict[str, Any]]]) -> bool:
    # A call of ToolSearcher names it literally, so other samples never touch the model.
    return any(SEARCHER in prediction or reference["gold"]["api_name"] == SEARCHER for _, prediction, reference in items)


def _modules_with_locks() -> list[Any]:
    import sys

    names = ("apibank_tools.environment", "apibank_tools.retrieval", "apibank_tools.level12.dictionary",
             "apibank_tools.level12.translate", "apibank.judge.judging", "apibank.data.upstream")
    return [sys.modules[name] for name in names if name in sys.modules]


def _recorded_tools(items: list[tuple[int, str, dict[str, Any]]]) -> set[str]:
    """The tools answering from recordings that a prediction or gold call of ``items`` may reach."""
    found = set()
    for _, prediction, reference in items:
        calls = [reference["gold"], *reference["earlier_calls"]]
        for name in ("Dictionary", "Translate"):
            if name in prediction or any(call.get("api_name") == name for call in calls):
                found.add(name)
    return found


def _run_judge(
    judge: Judge,
    items: list[tuple[int, str, dict[str, Any]]],
    parsed: list[dict[str, Any]],
    protocols: tuple[str, ...],
    timeout: float | None,
    memory_mb: float | None,
    stats: RunStats | None,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[dict[str, dict[int, Verdict]], dict[str, Record | None]]:
    """Every protocol's verdicts, and the executed ToolSearcher gold calls, judged in one bounded worker."""
    steps: list[Step] = []
    if "paper" in protocols:
        steps += _paper_steps(items)
    if "corrected" in protocols:
        steps += _corrected_steps(items) + _gold_steps(parsed)
    retriever = judge.retriever

    def after_fork() -> None:
        # Another thread of the caller may have held any of these at the fork.
        fresh_locks(retriever, judge.data)
        fresh_module_locks(*_modules_with_locks())
        retriever.record_new()

    results = run_steps(
        steps, _handler(judge), timeout=timeout, memory_mb=memory_mb, after_fork=after_fork,
        finish=retriever.new_entries, merge=retriever.merge, measure=stats is not None, stats=stats,
        progress=progress,
    )
    verdicts: dict[str, dict[int, Verdict]] = {protocol: {} for protocol in protocols}
    gold: dict[str, Record | None] = {}
    for step, result in zip(steps, results):
        kind, index, _, reference = step.payload
        if kind == "gold":
            gold[reference["id"]] = None if isinstance(result, Overrun) else result
        elif isinstance(result, Overrun):
            verdicts[kind][index] = Verdict(False, result.kind, error=result.message)
        else:
            verdicts[kind][index] = result
    return verdicts, gold


# ------------------------------------------------------------------------------------ aggregation
def _ratio(correct: int, total: int) -> float | None:
    return correct / total if total else None


def _mean(values: list[float]) -> float | None:
    # fsum is exactly rounded, so the mean does not depend on the order of the rows
    return math.fsum(values) / len(values) if values else None


def _level_name(level: int) -> str:
    return f"level-{level}"


def _aggregate(
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
        if level == 3:
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
                    and verdicts[i].category not in _EXECUTION_CATEGORIES
                )
        if searcher_figures is not None and level in searcher_figures:
            block["toolsearcher"] = searcher_figures[level]
        out[_level_name(level)] = block
        all_api[0] += correct
        all_api[1] += len(api_rows)
        all_rouge += rouge_values
        all_rouge_score += rouge_score_values
    out["overall"] = {
        "api": {"correct": all_api[0], "total": all_api[1], "accuracy": _ratio(*all_api)},
        "response": {
            "rouge_l": _mean(all_rouge),
            "count": len(all_rouge),
            "rouge_l_rougescore": _mean(all_rouge_score),
        },
    }
    return out


def _searcher_figures(gold: dict[str, Record | None], references: list[dict[str, Any]]) -> dict[int, dict[str, int]]:
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


def _detail(protocol: str, reference: Mapping[str, Any], verdict: Verdict | None, response: tuple | None) -> dict[str, Any]:
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


# ------------------------------------------------------------------------------------ entry point
def score(
    predictions: Sequence[str],
    references: Sequence[str | Mapping[str, Any]],
    *,
    protocols: Iterable[str] = ("paper", "corrected"),
    return_details: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    retriever: Any = None,
    timeout: float | None = 2.0,
    memory_mb: float | None = DEFAULT_MEMORY_MB,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Score ``predictions`` (generated texts) against dataset ``references``; see the module docstring.

    ``data_dir`` locates the upstream tool databases (default: ``$APIBANK_DATA_DIR`` or the verified
    download cache; every file is checked against the pinned manifest); ``retriever`` replaces the
    ToolSearcher backend. API rows are judged in a worker process (:mod:`apibank.judge.worker`):
    ``timeout`` is each sample's deadline in seconds (None or ``inf``: none), enforced by killing the
    worker, and ``memory_mb`` caps the worker's memory above the caller's (None: no cap). A sample
    that overruns either is judged ``TIMEOUT`` or ``MEMORY_LIMIT``. The caller's signals and timers
    are not touched. ``progress`` is called with (judging steps done, steps in all) as they finish.
    """
    return _score(predictions, references, protocols=protocols, return_details=return_details, data_dir=data_dir,
                  retriever=retriever, timeout=timeout, memory_mb=memory_mb, progress=progress)


def _score(
    predictions: Sequence[str],
    references: Sequence[str | Mapping[str, Any]],
    *,
    protocols: Iterable[str],
    return_details: bool,
    data_dir: str | os.PathLike[str] | None,
    retriever: Any,
    timeout: float | None,
    memory_mb: float | None,
    stats: RunStats | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    # a set has no order: take the protocols in their usual order, so the details come out the same every run
    protocols = tuple(sorted(protocols, key=list(PROTOCOLS).index) if isinstance(protocols, AbstractSet)
                      and set(protocols) <= set(PROTOCOLS) else protocols)
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"unknown protocols {unknown}; choose from {sorted(PROTOCOLS)}")
    timeout = check_timeout(timeout)
    if memory_mb is not None and (isinstance(memory_mb, bool) or not isinstance(memory_mb, (int, float))
                                  or not 0 < memory_mb < float("inf")):
        raise ValueError(f"memory_mb must be a positive number of megabytes or None, got {memory_mb!r}")
    if predictions is None:
        raise ValueError("predictions is None; pass one generated text per reference")
    if isinstance(predictions, str):
        raise ValueError("predictions must be a list of texts, not one text")
    if references is None:
        raise ValueError("references is None; pass the `reference` field of the dataset rows")
    if isinstance(references, (str, Mapping)):
        raise ValueError("references must be a list of `reference` fields, not a single one")
    parsed = parse_references(list(references))
    texts = _check_predictions(predictions, len(parsed))
    _refuse_conflicting_duplicates(parsed)
    revisions = sorted({str(r.get("revision")) for r in parsed})
    if len(revisions) > 1:
        raise ReferenceError(f"references come from different dataset revisions: {revisions}")

    api_items = [(i, texts[i], r) for i, r in enumerate(parsed) if r["kind"] == "api"]
    responses = {i: response_scores(texts[i], r) for i, r in enumerate(parsed) if r["kind"] == "response"}
    per_protocol: dict[str, dict[int, Verdict]] = {protocol: {} for protocol in protocols}
    gold: dict[str, Record | None] = {}
    if api_items:
        # Loading every database (verified against the manifest) and the ToolSearcher model up front
        # turns missing or corrupt data into one clear error, and keeps loading off every sample's clock.
        judge = Judge(pristine_data(upstream_source(data_dir)).preload(), retriever)
        if _needs_retriever(api_items):
            judge.prepare(reference["toolset"] for _, _, reference in api_items)
        judge.prepare_recordings(_recorded_tools(api_items))
        per_protocol, gold = _run_judge(judge, api_items, parsed, protocols, timeout, memory_mb, stats, progress)

    output: dict[str, Any] = {}
    for protocol in protocols:
        figures = None if protocol == "paper" else _searcher_figures(gold, parsed)
        output[protocol] = _aggregate(protocol, parsed, per_protocol[protocol], responses, figures)
    output["revision"] = revisions[0] if revisions else None
    output["protocols"] = {p: PROTOCOLS[p] for p in protocols}
    if return_details:
        output["details"] = [
            _detail(protocol, reference, per_protocol[protocol].get(i), responses.get(i))
            for i, reference in enumerate(parsed)
            for protocol in protocols
        ]
    return output
