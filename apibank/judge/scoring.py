"""Scoring API-Bank predictions: API-call accuracy by executing the predicted calls, ROUGE-L for responses.

Entry point: ``score``. It takes the model outputs (raw generated text) and the dataset rows'
``reference`` field (JSON text or the parsed dict), for any mix of levels and of API-call and
response rows, and needs nothing else. Every argument is checked before any work starts.

Two protocols, both reported by default:

* ``paper``: the original evaluators bug for bug: regex call extraction, all values text, the original
  coercion and rejection rules, fresh tool state per call, the tools' original checks with their
  in-place edits of gold records (duplicate samples share one gold record per (file, turn), judged in id
  order whatever the input order), the original error categories. Cases where the original aborts count
  as wrong under an ``ABORT_*`` category. One deliberate deviation: the level-3 evaluator shares one
  tool manager across the whole run, which makes verdicts depend on sample order; here every level-3
  step gets fresh state too.
* ``corrected``: ``ast`` literal parsing, coercion to the declared schema, the dialogue's earlier gold
  calls replayed first, checks without the in-place edits and KeyError bugs, ToolSearcher judged on the
  tool it retrieves, renamed parameters and data drift handled (see ``apibank.judge.judging``).

Responses are scored the same way under both protocols: ``rouge`` 1.0.1's rouge-l F reimplemented
(``apibank.judge.rouge``); levels 1/2: empty prediction scores 0, otherwise rounded to 4 places;
level 3: ``User:`` and ``AI:`` removed, trimmed, empty scores 0, not rounded. A prediction made only
of periods (the original crashes) scores 0. rouge-score's ``rougeL`` F is reported beside it.

Output shape (levels appear only when present in the references):

    {
      "paper": {
        "level-1": {
          "api": {"correct": int, "total": int, "accuracy": float | None},
          "response": {"rouge_l": float | None, "count": int, "rouge_l_rougescore": float | None},
          "errors": {category: int},            # API rows judged wrong, by category
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
import os
import sys
from collections import defaultdict
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Sequence

from apibank_tools.base import Record
from apibank_tools.environment import pristine_data
from apibank_tools.registry import toolset

from apibank.benchmark import JUDGE_MEMORY_MB, JUDGE_TIMEOUT_S, PROTOCOL_DESCRIPTIONS, PROTOCOLS, SEARCHER, level_spec
from apibank.data.upstream import upstream_source
from apibank.judge.aggregate import aggregate, detail, searcher_figures
from apibank.judge.categories import ABORT_EMPTY_HYPOTHESIS, HYPOTHESIS_TOO_LONG, MAX_PREDICTION_CHARS, ROUGE_RECURSION
from apibank.judge.judging import Judge, Verdict
from apibank.judge.process import fresh_locks, fresh_module_locks
from apibank.judge.references import ReferenceError, parse_references
from apibank.judge.rouge import EmptyText, needs_deep_recursion, rouge_l, rouge_score_l
from apibank.judge.worker import Overrun, RunStats, Step, run_steps



def _validated(
    predictions: Any, references: Any, protocols: Iterable[str], timeout: Any, memory_mb: Any
) -> tuple[tuple[str, ...], list[str], list[dict[str, Any]], float | None, str | None]:
    """Every argument of ``score`` checked once, before any work: (protocols, predictions,
    parsed references, deadline, revision), or one clear error naming what is wrong."""
    # a set has no order: take the protocols in their usual order, so the details come out the same every run
    protocols = tuple(sorted(protocols, key=list(PROTOCOLS).index) if isinstance(protocols, AbstractSet)
                      and set(protocols) <= set(PROTOCOLS) else protocols)
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"unknown protocols {unknown}; choose from {sorted(PROTOCOLS)}")
    timeout = _deadline(timeout)
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
    _refuse_conflicting_duplicates(parsed)
    texts = list(predictions)
    if len(texts) != len(parsed):
        raise ValueError(f"got {len(texts)} predictions for {len(parsed)} references; they must pair up one to one")
    for index, prediction in enumerate(texts):
        if not isinstance(prediction, str):
            raise ValueError(
                f"predictions[{index}] is {type(prediction).__name__}; every prediction must be the generated text "
                "(use '' for an empty generation)"
            )
    revisions = sorted({str(r.get("revision")) for r in parsed})
    if len(revisions) > 1:
        raise ReferenceError(f"references come from different dataset revisions: {revisions}")
    return protocols, texts, parsed, timeout, revisions[0] if revisions else None


def _deadline(timeout: Any) -> float | None:
    """A per-sample deadline in seconds: a positive number, or None/inf for none; else a clear error."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds or None, not {type(timeout).__name__}")
    value = float(timeout)
    if value != value or value <= 0:
        raise ValueError(f"timeout must be a positive number of seconds (or None for no limit), got {timeout!r}")
    return None if value == float("inf") else value


# ------------------------------------------------------------------------------------ responses
def response_scores(prediction: str, reference: Mapping[str, Any]) -> tuple[float, float, str | None]:
    """(ROUGE-L as the original computes it, rouge-score rougeL F, flag) for one response row."""
    gold = reference["gold_text"]
    if len(prediction) > MAX_PREDICTION_CHARS:
        # Bounds the pure-Python LCS work of a response row (worst case measured in
        # benchmarks/bench_hostile.py); documented in the metric card.
        return 0.0, 0.0, HYPOTHESIS_TOO_LONG
    level = level_spec(reference["level"])
    if level.response_labels_stripped:
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
    if level.rouge_rounded:
        value = round(value, 4)
    return value, rouge_score_l(hypothesis, gold), flag


# ------------------------------------------------------------------------------------ judging
def _group_key(reference: Mapping[str, Any]) -> tuple[Any, ...]:
    """Samples that the original judges against one in-memory gold record: those of one dialogue's
    turn (a file of recorded dialogues is one dialogue; in a requirements file, a sample id is)."""
    if level_spec(reference["level"]).from_requirements:
        return (reference["level"], reference["file"], reference["sample_id"], reference["turn"])
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
    """The loaded modules that may hold process-wide locks: the tool environment's and the judge's."""
    prefixes = ("apibank_tools.", "apibank.judge.", "apibank.data.")
    return [module for name, module in list(sys.modules.items()) if name.startswith(prefixes) and module is not None]


def _preloads(items: list[tuple[int, str, dict[str, Any]]]) -> set[tuple[str, str]]:
    """(tool set, tool) for each tool with a preload that a prediction or gold call of ``items`` may reach."""
    preloading: dict[str, list[str]] = {}
    found = set()
    for _, prediction, reference in items:
        set_name = reference["toolset"]
        if set_name not in preloading:
            preloading[set_name] = toolset(set_name).preloading()
        calls = [reference["gold"], *reference["earlier_calls"]]
        for name in preloading[set_name]:
            if name in prediction or any(call.get("api_name") == name for call in calls):
                found.add((set_name, name))
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


# ------------------------------------------------------------------------------------ entry point
def score(
    predictions: Sequence[str],
    references: Sequence[str | Mapping[str, Any]],
    *,
    protocols: Iterable[str] = PROTOCOLS,
    return_details: bool = False,
    data_dir: str | os.PathLike[str] | None = None,
    retriever: Any = None,
    timeout: float | None = JUDGE_TIMEOUT_S,
    memory_mb: float | None = JUDGE_MEMORY_MB,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Score ``predictions`` (generated texts) against dataset ``references``; see the module docstring.

    ``data_dir`` locates the upstream tool databases (default: ``$APIBANK_DATA_DIR`` or the verified
    download cache; every file is checked against the pinned manifest); ``retriever`` replaces the
    ToolSearcher backend. API rows are judged in a worker process (``apibank.judge.worker``):
    ``timeout`` is each sample's limit in seconds of the worker's CPU time (None or ``inf``: none; a
    sample that uses no CPU is stopped after 30 times it in wall time), enforced by killing the
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
    protocols, texts, parsed, timeout, revision = _validated(predictions, references, protocols, timeout, memory_mb)

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
        judge.preload(_preloads(api_items))
        per_protocol, gold = _run_judge(judge, api_items, parsed, protocols, timeout, memory_mb, stats, progress)

    output: dict[str, Any] = {}
    for protocol in protocols:
        figures = None if protocol == "paper" else searcher_figures(gold, parsed)
        output[protocol] = aggregate(protocol, parsed, per_protocol[protocol], responses, figures)
    output["revision"] = revision
    output["protocols"] = {p: PROTOCOL_DESCRIPTIONS[p] for p in protocols}
    if return_details:
        output["details"] = [
            detail(protocol, reference, per_protocol[protocol].get(i), responses.get(i))
            for i, reference in enumerate(parsed)
            for protocol in protocols
        ]
    return output
