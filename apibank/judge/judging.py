"""Judging one predicted API call against its gold call, under the paper or the corrected protocol.

The *paper* protocol is the original evaluators' procedure, bug for bug: regex parsing, text-only
coercion, fresh tool state per call, the tools' original checks (which may edit the gold record in
place: the caller passes the shared gold record of a duplicate group), and the original's error
categories. Where the original would abort the whole run, the sample is counted wrong under an
``ABORT_*`` category.

The *corrected* protocol parses literals with ``ast``, coerces them to the declared schema, replays
the dialogue's earlier gold calls first (adopting recorded random ids), and judges with the tools'
``check_corrected``. A prediction is correct when it agrees with the recorded gold result or with the
result the gold call itself produces in the same replayed state; the second reference absorbs data
that changed after annotation (device names capitalised since, retrieved descriptions edited since,
a renamed parameter whose recorded device no longer exists).

Both protocols walk one exception ladder (:meth:`Judge._execute`, :meth:`Judge._checked`); what each
rung is called differs by protocol and lives in :mod:`apibank.judge.categories`. No tool is named
here: what the judge needs to know about a tool, the tool declares (``apibank_tools.base``).

Isolation and bounds: every judged call runs in its own :class:`Session` over the read-only pristine
databases (private copies on write). The judge itself sets no timer: :mod:`apibank.judge.scoring`
runs it in a worker process with a per-sample deadline and a memory cap (:mod:`apibank.judge.worker`),
and a prediction longer than :data:`MAX_PREDICTION_CHARS` is judged ``PREDICTION_TOO_LONG`` before any
parsing, and a native tool call whose arguments are not a JSON object (kept as written,
:func:`apibank.notation.unreadable_call_text`) is judged ``INVALID_TOOL_ARGUMENTS`` under both
protocols. Nothing from a prediction is evaluated: parsing is regular expressions or ``ast`` literals.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, TypeVar

from apibank_tools.base import CallRejected, CallTimeout, Record, Tool
from apibank_tools.environment import PristineData, Session
from apibank_tools.registry import ToolSet, toolset
from apibank_tools.retrieval import catalogue, found_tool
from apibank_tools.text import space_before_capitals

from apibank.benchmark import SEARCHER, level_spec
from apibank.data.renames import renamed, renamed_record
from apibank.judge.categories import (
    ABORT_EXECUTION_ERROR, ABORT_MISSING_KEYWORDS, API_NAME_MISMATCH, CORRECTED_CATEGORIES,
    FAILED_PARSE_API_CALL, GOLD_CALL_FAILED, HAS_EXCEPTION, INPUT_MISMATCH, INVALID_TOOL_ARGUMENTS,
    MAX_PREDICTION_CHARS, NO_API_CALL,
    OUTPUT_MISMATCH, PAPER_CATEGORY_MAPS, PREDICTION_TOO_LONG, TIMEOUT, UNCATEGORISED,
    CategoryMap,
)
from apibank.judge.parsing import parse_paper
from apibank.judge.retriever import CachedRetriever, shared_retriever
from apibank.notation import ParseError, parse_call, unreadable_call


T = TypeVar("T")


@dataclass
class Verdict:
    """The judgement of one predicted call."""

    correct: bool
    category: str | None = None
    call: str | None = None  # the extracted call text
    name: str | None = None
    arguments: dict[str, Any] | None = None
    result: Record | None = None
    error: str | None = None  # the rejection, abort or parse message, if any
    extra: dict[str, Any] = field(default_factory=dict)


def _outcome_category(result: Record, gold: Record) -> str:
    """The original's precedence for a false check: exception, then output, then input."""
    if result.get("exception"):
        return HAS_EXCEPTION
    if result.get("output") != gold.get("output"):
        return OUTPUT_MISMATCH
    if result.get("input") != gold.get("input"):
        return INPUT_MISMATCH
    return UNCATEGORISED


def _message(error: BaseException) -> str:
    text = str(error)
    return text if len(text) <= 300 else text[:297] + "..."


class Judge:
    """Judges predicted calls; holds only read-only shared things (pristine data, retriever cache)."""

    def __init__(self, data: PristineData, retriever: Any = None) -> None:
        self.data = data
        if retriever is None:
            self.retriever = shared_retriever()
        elif isinstance(retriever, CachedRetriever):
            self.retriever = retriever
        else:
            self.retriever = CachedRetriever(retriever)
        self._gold_results: dict[int, tuple[dict[str, Any], Record | None]] = {}

    def session(self, toolset_name: str) -> Session:
        # No timer here: the bound is the worker process's deadline (apibank.judge.worker).
        return Session(toolset_name, self.data, retriever=self.retriever, timeout=None)

    def prepare(self, toolset_names: Iterable[str]) -> None:
        """Load the ToolSearcher model and embed the catalogues of ``toolset_names`` before judging."""
        for name in sorted(set(toolset_names)):
            tools = toolset(name)
            if SEARCHER in tools.names():
                self.retriever.prepare([text for _, text in catalogue(tools)])

    def preload(self, tools: Iterable[tuple[str, str]]) -> None:
        """Run :meth:`Tool.preload` of each (tool set, tool name) in this process, once per tool class.

        Judging runs in a worker process (apibank.judge.worker): what a tool reads lazily there is
        lost with the worker, so the caller reads it before it forks.
        """
        done: set[type[Tool]] = set()
        for set_name, name in sorted(set(tools)):
            cls = toolset(set_name).get(name)
            if cls not in done:
                done.add(cls)
                cls.preload(self.data.source)

    @staticmethod
    def _too_long(prediction: str) -> Verdict | None:
        if len(prediction) > MAX_PREDICTION_CHARS:
            return Verdict(
                False, PREDICTION_TOO_LONG,
                error=f"the prediction has {len(prediction)} characters; at most {MAX_PREDICTION_CHARS} are judged",
            )
        return None

    @staticmethod
    def _unreadable(prediction: str) -> Verdict | None:
        """A native tool call whose arguments are not a JSON object: wrong, under its own category."""
        call = unreadable_call(prediction)
        if call is None:
            return None
        return Verdict(False, INVALID_TOOL_ARGUMENTS, call=prediction, name=call[0],
                       error=f"the arguments are not a JSON object: {call[1][:200]!r}")

    # ------------------------------------------------------------------------ the exception ladder
    def _execute(self, verdict: Verdict, categories: CategoryMap, open_session: Callable[[], Session],
                 arguments: dict[str, Any], coercion: str) -> Record | None:
        """Run the predicted call; on failure fill in ``verdict`` and return None."""
        try:
            return open_session().call(verdict.name, arguments, coercion=coercion)
        except CallRejected as rejection:
            verdict.error = str(rejection)
            verdict.category = categories.rejected(rejection)
        except CallTimeout as error:
            self._failed(verdict, TIMEOUT, error)
        except Exception as error:  # the original aborts on anything else escaping execution
            self._failed(verdict, ABORT_EXECUTION_ERROR, error)
        return None

    def _checked(self, verdict: Verdict, categories: CategoryMap, check: Callable[[], T]) -> T | None:
        """``check()``; when it raises, fill in ``verdict`` by the protocol's rules and return None."""
        try:
            return check()
        except Exception as error:
            self._failed(verdict, categories.check_failed(error), error)
            return None

    @staticmethod
    def _failed(verdict: Verdict, category: str, error: BaseException) -> Verdict:
        verdict.correct = False
        verdict.category = category
        verdict.error = _message(error)
        return verdict

    # ---------------------------------------------------------------------------------- paper
    def paper(self, prediction: str, reference: dict[str, Any], gold: Record) -> Verdict:
        """The original's verdict; ``gold`` is the (possibly shared, mutable) recorded gold record."""
        return self._too_long(prediction) or self._unreadable(prediction) or self._paper(prediction, reference, gold)

    def _paper(self, prediction: str, reference: dict[str, Any], gold: Record) -> Verdict:
        parsed = parse_paper(prediction)
        if parsed is None:
            return Verdict(False, NO_API_CALL)
        verdict = Verdict(False, None, call=parsed.text, name=parsed.name, arguments=dict(parsed.arguments))
        gold_name = reference["gold"]["api_name"]
        level = level_spec(reference["level"])
        # lv3_evaluator compares no names: the gold tool's check judges whatever was called.
        if level.names_compared and parsed.name != gold_name:
            verdict.category = API_NAME_MISMATCH
            return verdict
        if level.searcher_keywords_split and parsed.name == SEARCHER:
            if "keywords" not in verdict.arguments:
                verdict.category = ABORT_MISSING_KEYWORDS
                return verdict
            verdict.arguments["keywords"] = space_before_capitals(verdict.arguments["keywords"])
        categories = PAPER_CATEGORY_MAPS[level.evaluator]
        tools = toolset(reference["toolset"])
        result = self._execute(
            verdict, categories, lambda: self.session(reference["toolset"]), verdict.arguments, "paper"
        )
        if result is None:
            return verdict
        verdict.result = result
        correct = self._checked(verdict, categories, lambda: bool(tools.get(gold_name).check(result, gold)))
        if correct is None:
            return verdict
        verdict.correct = correct
        if not correct:
            other_tool = not level.names_compared and verdict.name != gold_name
            verdict.category = API_NAME_MISMATCH if other_tool else _outcome_category(result, gold)
        return verdict

    # ------------------------------------------------------------------------------ corrected
    def corrected(self, prediction: str, reference: dict[str, Any]) -> Verdict:
        """The corrected protocol's verdict (never edits ``reference``)."""
        return self._too_long(prediction) or self._unreadable(prediction) or self._corrected(prediction, reference)

    def _corrected(self, prediction: str, reference: dict[str, Any]) -> Verdict:
        try:
            parsed = parse_call(prediction)
        except ParseError as error:
            return Verdict(False, FAILED_PARSE_API_CALL, error=_message(error))
        if parsed is None:
            return Verdict(False, NO_API_CALL)
        tools = toolset(reference["toolset"])
        gold_call = reference["gold"]
        gold_name = gold_call["api_name"]
        arguments = renamed(parsed.name, parsed.arguments, tools)
        verdict = Verdict(False, None, call=parsed.text, name=parsed.name, arguments=arguments)
        if parsed.name != gold_name:
            verdict.category = API_NAME_MISMATCH
            return verdict
        result = self._execute(
            verdict, CORRECTED_CATEGORIES, lambda: self._replayed(reference), _searched(reference, parsed.name, arguments), "typed"
        )
        if result is None:
            return verdict
        verdict.result = result
        tool = tools.get(gold_name)
        recorded = renamed_record(tool, gold_call["result"])
        outcome = self._checked(verdict, CORRECTED_CATEGORIES, lambda: self._agrees(tool, result, recorded, reference))
        if outcome is None:
            return verdict
        correct, executed, gold_failed = outcome
        verdict.correct = correct
        if not correct and gold_failed:
            verdict.category = GOLD_CALL_FAILED
            verdict.error = "the gold call fails in the replayed state: " + (
                str(executed.get("exception")) if executed is not None else "rejected or raised before the tool ran"
            )[:300]
        if gold_name == SEARCHER:
            verdict.extra["retrieved"] = found_tool(result.get("output"))
            verdict.extra["recorded_tool"] = found_tool(recorded.get("output"))
            verdict.extra["gold_keywords_tool"] = found_tool(executed.get("output")) if executed else None
        if not correct and verdict.category is None:
            verdict.category = _outcome_category(result, executed if executed is not None else recorded)
        return verdict

    def _agrees(self, tool: type[Tool], result: Record, recorded: Record,
                reference: dict[str, Any]) -> tuple[bool, Record | None, bool]:
        """Whether ``result`` agrees with the recorded gold or with the gold call's own result here.

        Returns (correct, the gold call's executed result if it was needed, whether it failed).
        """
        correct = bool(tool.check_corrected(result, recorded))
        executed: Record | None = None
        # The gold call's own result in this state is only needed when the recorded one disagrees.
        if not correct or tool.name == SEARCHER:
            executed = self._gold_result(reference)
        gold_failed = _gold_failed(executed, recorded)
        if not correct and not gold_failed:
            correct = bool(tool.check_corrected(result, executed))
        elif not correct and executed is not None:
            # A failing gold call is no reference, except for the very same call: a prediction whose
            # executed input is the gold call's own (a call on a renamed device, say) makes the call
            # the annotation asks for.
            correct = result.get("api_name") == executed.get("api_name") and result.get("input") == executed.get("input")
        return correct, executed, gold_failed

    def execute_gold(self, reference: dict[str, Any]) -> Record | None:
        """The gold call executed like a prediction in the same replayed state (None if rejected)."""
        return self._gold_result(reference)

    def _gold_result(self, reference: dict[str, Any]) -> Record | None:
        # Memoised per reference object: a judge lives for one scoring run and executions are
        # deterministic (sessions are seeded), so this only saves repeated work.
        key = id(reference)
        if key in self._gold_results and self._gold_results[key][0] is reference:
            return self._gold_results[key][1]
        executed = self._execute_gold(reference)
        self._gold_results[key] = (reference, executed)
        return executed

    def _execute_gold(self, reference: dict[str, Any]) -> Record | None:
        gold_call = reference["gold"]
        name = gold_call["api_name"]
        arguments = _searched(reference, name, renamed(name, gold_call["arguments"], toolset(reference["toolset"])))
        try:
            return self._replayed(reference).call(name, arguments, coercion="typed")
        except Exception:  # rejected, or a tool bug: neither may decide a verdict; judge against the record
            return None

    def _replayed(self, reference: dict[str, Any]) -> Session:
        session = self.session(reference["toolset"])
        session.replay(_replay_calls(session.toolset, reference["earlier_calls"]))
        return session


def _searched(reference: dict[str, Any], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """ToolSearcher keywords split before capitals where the level's evaluator splits them (a copy if so)."""
    split = level_spec(reference["level"]).searcher_keywords_split
    if split and name == SEARCHER and isinstance(arguments.get("keywords"), str):
        return {**arguments, "keywords": space_before_capitals(arguments["keywords"])}
    return arguments


def _gold_failed(executed: Record | None, recorded: Record) -> bool:
    """Whether the gold call failed in the replayed state although its recorded result did not."""
    if recorded.get("exception"):
        return executed is None  # the annotation records a failure: only a crash is unusable
    return executed is None or bool(executed.get("exception"))


def _replay_calls(tools: ToolSet, earlier: Iterable[dict[str, Any]]) -> Iterable[tuple[str, dict[str, Any], Record]]:
    """Earlier gold calls as (name, structured input, recorded result); ToolSearcher is stateless."""
    for call in earlier:
        name = call["api_name"]
        if name == SEARCHER:
            continue
        recorded = call.get("result") or {}
        structured = recorded.get("input") if isinstance(recorded.get("input"), dict) else call.get("arguments")
        yield name, renamed(name, structured or {}, tools), recorded
