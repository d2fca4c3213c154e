"""Judging one predicted API call against its gold call, under the paper or the corrected protocol.

The *paper* protocol is the original evaluators' procedure, bug for bug (spec protocol §2.3, §3,
§4.1, §4.2, §4.5): regex parsing, text-only coercion, fresh tool state per call, the tools' original
checks (which may edit the gold record in place: the caller passes the shared gold record of a
duplicate group), and the original's error categories. Where the original would abort the whole run,
the sample is counted wrong under an ``ABORT_*`` category.

The *corrected* protocol parses literals with ``ast``, coerces them to the declared schema, replays
the dialogue's earlier gold calls first (adopting recorded random ids), and judges with the tools'
``check_corrected``. A prediction is correct when it agrees with the recorded gold result or with the
result the gold call itself produces in the same replayed state; the second reference absorbs data
that changed after annotation (QueryScene device capitalisation, descriptions in ToolSearcher
outputs, the renamed TimedSwitch parameter whose recorded device no longer exists).

Isolation and bounds: every judged call runs in its own :class:`Session` over the read-only pristine
databases (private copies on write). The judge itself sets no timer: :mod:`apibank.judge.scoring`
runs it in a worker process with a per-sample deadline and a memory cap (:mod:`apibank.judge.worker`),
and a prediction longer than :data:`MAX_PREDICTION_CHARS` is judged ``PREDICTION_TOO_LONG`` before any
parsing. Nothing from a prediction is evaluated: parsing is regular expressions or ``ast`` literals.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from apibank_tools.base import CallRejected, CallTimeout, Record
from apibank_tools.environment import PristineData, Session
from apibank_tools.level3.get_weather import UNKNOWN_COORDINATES
from apibank_tools.registry import toolset
from apibank_tools.retrieval import BACKEND_ENV, catalogue, default_retriever, found_tool
from apibank_tools.text import space_before_capitals

from apibank.benchmark import SEARCHER
from apibank.data.renames import renamed, renamed_record
from apibank.judge.parsing import ParseError, parse_paper, parse_typed
from apibank.judge.worker import MEMORY_LIMIT, TIMEOUT

# The original evaluator's categories (spec protocol §4.2).
NO_API_CALL = "NO_API_CALL"
API_NAME_MISMATCH = "API_NAME_MISMATCH"
INVALID_INPUT_PARAMETER = "INVALID_INPUT_PARAMETER"
MISS_INPUT_ARGUMENT = "MISS_INPUT_ARGUMENT"
KEY_ERROR = "KEY_ERROR"
HAS_EXCEPTION = "HAS_EXCEPTION"
OUTPUT_MISMATCH = "OUTPUT_MISMATCH"
INPUT_MISMATCH = "INPUT_MISMATCH"
FAILED_PARSE_API_CALL = "FAILED_PARSE_API_CALL"
# Ours: a false check with none of the above differences (the original leaves it uncategorised).
UNCATEGORISED = "UNCATEGORISED"
# Level 3 only: the predicted tool does not exist (the original counts it as an execution error).
UNKNOWN_API = "UNKNOWN_API"
# Corrected protocol only: values that cannot be converted to the declared type.
INVALID_INPUT_TYPE = "INVALID_INPUT_TYPE"
INVALID_INPUT_VALUE = "INVALID_INPUT_VALUE"
# Cases where the original run aborts instead of giving a verdict; counted wrong here.
ABORT_INVALID_PARAMETER_TYPE = "ABORT_INVALID_PARAMETER_TYPE"
ABORT_INVALID_VALUE = "ABORT_INVALID_VALUE"
ABORT_MISSING_KEYWORDS = "ABORT_MISSING_KEYWORDS"
ABORT_CHECK_ERROR = "ABORT_CHECK_ERROR"
ABORT_EXECUTION_ERROR = "ABORT_EXECUTION_ERROR"
# Level 3 paper: the tool raised TypeError, which lv3_evaluator catches and counts as a failed line.
EXECUTION_TYPE_ERROR = "EXECUTION_TYPE_ERROR"
# The prediction is longer than any answer the judge reads (MAX_PREDICTION_CHARS); judged wrong unread.
PREDICTION_TOO_LONG = "PREDICTION_TOO_LONG"
# Corrected: the prediction differs from the recorded gold and the gold call itself fails in the
# replayed state, so there is no trustworthy second reference: a data error, counted wrong.
GOLD_CALL_FAILED = "GOLD_CALL_FAILED"

# 24 times the longest gold answer (1,335 characters); caps parsing and execution work per sample.
MAX_PREDICTION_CHARS = 32_768

CATEGORY_DESCRIPTIONS = {
    NO_API_CALL: "no `[Name(...)]` call found in the output",
    API_NAME_MISMATCH: "the predicted tool differs from the gold tool (or a check's name assertion failed)",
    INVALID_INPUT_PARAMETER: "a parameter name the tool does not declare (level 3 paper: or a badly typed value)",
    MISS_INPUT_ARGUMENT: "a required argument is missing",
    KEY_ERROR: "the check raised KeyError (paper: duplicate re-checks, DeleteMeeting successes, renamed parameters)",
    HAS_EXCEPTION: "the check failed and the executed call reported an exception",
    OUTPUT_MISMATCH: "the check failed and the output differs from the gold output",
    INPUT_MISMATCH: "the check failed and the input differs from the gold input",
    FAILED_PARSE_API_CALL: "corrected: a call was found but its arguments are not keyword literals",
    UNCATEGORISED: "the check failed with no output, input or exception difference",
    UNKNOWN_API: "level 3 paper: the predicted tool does not exist",
    INVALID_INPUT_TYPE: "corrected: a value cannot be converted to the declared type",
    INVALID_INPUT_VALUE: "corrected: a value the tool cannot use at all (e.g. unknown coordinates)",
    ABORT_INVALID_PARAMETER_TYPE: "paper: the original aborts on an int/float value that is not digit-like",
    ABORT_INVALID_VALUE: "paper: the original aborts on a value that passes the type test but breaks the tool",
    ABORT_MISSING_KEYWORDS: "paper, level 3: the original aborts on a ToolSearcher call without `keywords`",
    ABORT_CHECK_ERROR: "paper: the original aborts because the check raised an unexpected error",
    ABORT_EXECUTION_ERROR: "an unexpected error while executing the call (the original aborts)",
    TIMEOUT: "the sample exceeded its time limit (the judging process is killed at the deadline)",
    MEMORY_LIMIT: "the sample exceeded the judging process's memory limit (or the process died)",
    EXECUTION_TYPE_ERROR: "level 3 paper: the tool raised TypeError (e.g. unknown coordinates), which lv3_evaluator "
    "counts as a failed (execution error) line",
    PREDICTION_TOO_LONG: f"the prediction is longer than {MAX_PREDICTION_CHARS} characters and is not read",
    GOLD_CALL_FAILED: "corrected: the prediction differs from the recorded gold and the gold call itself fails in the "
    "replayed state (a data error, reported; never counted correct)",
}

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


class CachedRetriever:
    """A retriever whose selections are cached per (keywords, catalogue); the model loads on first use.

    In a judging worker process, :meth:`record_new` starts noting the selections it adds, and
    :meth:`new_entries` / :meth:`merge` carry them back to the parent's cache.
    """

    def __init__(self, retriever: Any = None) -> None:
        self._retriever = retriever
        self._best: dict[tuple[str, tuple[str, ...]], int | None] = {}
        self._catalogues: dict[tuple[str, ...], tuple[str, ...]] = {}
        self._new: list[tuple[str, tuple[str, ...]]] | None = None
        self._lock = threading.Lock()

    def record_new(self) -> None:
        self._new = []

    def new_entries(self) -> list[tuple[str, tuple[str, ...], int | None]]:
        return [(keywords, documents, self._best[(keywords, documents)]) for keywords, documents in self._new or ()]

    def merge(self, entries: Sequence[tuple[str, tuple[str, ...], int | None]] | None) -> None:
        for keywords, documents, chosen in entries or ():
            documents = self._catalogues.setdefault(documents, documents)
            self._best[(keywords, documents)] = chosen

    def prepare(self, documents: Sequence[str]) -> None:
        """Load the model and embed ``documents`` now (before any sample's clock starts)."""
        inner = self.inner
        if hasattr(inner, "document_embeddings"):
            inner.document_embeddings(list(documents))

    @property
    def inner(self) -> Any:
        if self._retriever is None:
            with self._lock:
                if self._retriever is None:
                    self._retriever = default_retriever()
        return self._retriever

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    def best(self, keywords: str, documents: Sequence[str]) -> int | None:
        catalogue = tuple(documents)
        catalogue = self._catalogues.setdefault(catalogue, catalogue)  # one object per catalogue
        key = (keywords, catalogue)
        try:
            return self._best[key]
        except KeyError:
            pass
        chosen = self.inner.best(keywords, documents)
        self._best[key] = chosen
        if self._new is not None:
            self._new.append(key)
        return chosen

    def scores(self, keywords: str, documents: Sequence[str]) -> list[float]:
        return self.inner.scores(keywords, documents)


_SHARED_RETRIEVERS: dict[str, CachedRetriever] = {}
_SHARED_LOCK = threading.Lock()


def shared_retriever() -> CachedRetriever:
    """The process-wide cached retriever of the default backend (``$APIBANK_RETRIEVER``, else ONNX).

    Keyword selections are cached per process, so repeated scoring runs embed each keyword once.
    """
    spec = os.environ.get(BACKEND_ENV) or "onnx"
    with _SHARED_LOCK:
        if spec not in _SHARED_RETRIEVERS:
            _SHARED_RETRIEVERS[spec] = CachedRetriever()
        return _SHARED_RETRIEVERS[spec]


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

    def prepare_recordings(self, tool_names: Iterable[str]) -> None:
        """Read the recorded results Dictionary and Translate answer from, once per process.

        Judging runs in a worker process (apibank.judge.worker): what a tool loads lazily there is
        lost with the worker, so these per-process tables are filled in the caller before it forks.
        """
        from apibank_tools.level12.dictionary import recorded_entries
        from apibank_tools.level12.translate import recorded_translations

        loaders = {"Dictionary": recorded_entries, "Translate": recorded_translations}
        for name in sorted(set(tool_names) & set(loaders)):
            loaders[name](self.data.source)

    @staticmethod
    def _too_long(prediction: str) -> Verdict | None:
        if len(prediction) > MAX_PREDICTION_CHARS:
            return Verdict(
                False, PREDICTION_TOO_LONG,
                error=f"the prediction has {len(prediction)} characters; at most {MAX_PREDICTION_CHARS} are judged",
            )
        return None

    # ---------------------------------------------------------------------------------- paper
    def paper(self, prediction: str, reference: dict[str, Any], gold: Record) -> Verdict:
        """The original's verdict; ``gold`` is the (possibly shared, mutable) recorded gold record."""
        return self._too_long(prediction) or self._paper(prediction, reference, gold)

    def _paper(self, prediction: str, reference: dict[str, Any], gold: Record) -> Verdict:
        parsed = parse_paper(prediction)
        if parsed is None:
            return Verdict(False, NO_API_CALL)
        verdict = Verdict(False, None, call=parsed.text, name=parsed.name, arguments=dict(parsed.arguments))
        gold_name = reference["gold"]["api_name"]
        if reference["level"] == 3:
            return self._paper_level3(verdict, reference, gold_name, gold)
        if parsed.name != gold_name:
            verdict.category = API_NAME_MISMATCH
            return verdict
        tools = toolset(reference["toolset"])
        try:
            result = self.session(reference["toolset"]).call(parsed.name, verdict.arguments, coercion="paper")
        except CallRejected as rejection:
            verdict.error = str(rejection)
            verdict.category = {
                "unknown_tool": API_NAME_MISMATCH,
                "invalid_parameter_name": INVALID_INPUT_PARAMETER,
                "missing_argument": MISS_INPUT_ARGUMENT,
                "invalid_parameter_type": ABORT_INVALID_PARAMETER_TYPE,
            }.get(rejection.kind, ABORT_INVALID_VALUE)
            return verdict
        except CallTimeout as error:
            return self._failed(verdict, TIMEOUT, error)
        except Exception as error:  # the original aborts on anything else escaping execution
            return self._failed(verdict, ABORT_EXECUTION_ERROR, error)
        verdict.result = result
        try:
            verdict.correct = bool(tools.get(parsed.name).check(result, gold))
        except KeyError as error:  # caught inside the original's checker call
            return self._failed(verdict, KEY_ERROR, error)
        except AssertionError as error:
            text = str(error)
            if "The API name is not correct." in text:
                return self._failed(verdict, API_NAME_MISMATCH, error)
            if "invalid parameter name" in text:
                return self._failed(verdict, INVALID_INPUT_PARAMETER, error)
            return self._failed(verdict, ABORT_CHECK_ERROR, error)
        except Exception as error:
            text = str(error)
            if "missing" in text and "required positional argument" in text:
                return self._failed(verdict, MISS_INPUT_ARGUMENT, error)
            return self._failed(verdict, ABORT_CHECK_ERROR, error)
        if not verdict.correct:
            verdict.category = _outcome_category(result, gold)
        return verdict

    def _paper_level3(self, verdict: Verdict, reference: dict[str, Any], gold_name: str, gold: Record) -> Verdict:
        """lv3_evaluator: no name comparison; the gold tool's check judges whatever was called."""
        arguments = verdict.arguments
        if verdict.name == SEARCHER:
            if "keywords" not in arguments:
                verdict.category = ABORT_MISSING_KEYWORDS
                return verdict
            arguments["keywords"] = space_before_capitals(arguments["keywords"])
        tools = toolset(reference["toolset"])
        try:
            result = self.session(reference["toolset"]).call(verdict.name, arguments, coercion="paper")
        except CallRejected as rejection:
            verdict.error = str(rejection)
            if rejection.kind == "invalid_value" and _is_type_error(rejection):
                verdict.category = EXECUTION_TYPE_ERROR
                return verdict
            verdict.category = {
                "unknown_tool": UNKNOWN_API,
                "invalid_parameter_name": INVALID_INPUT_PARAMETER,
                "invalid_parameter_type": INVALID_INPUT_PARAMETER,
                "missing_argument": MISS_INPUT_ARGUMENT,
            }.get(rejection.kind, ABORT_INVALID_VALUE)
            return verdict
        except CallTimeout as error:
            return self._failed(verdict, TIMEOUT, error)
        except Exception as error:
            return self._failed(verdict, ABORT_EXECUTION_ERROR, error)
        verdict.result = result
        try:
            verdict.correct = bool(tools.get(gold_name).check(result, gold))
        except AssertionError as error:
            return self._failed(verdict, API_NAME_MISMATCH, error)
        except KeyError as error:
            return self._failed(verdict, KEY_ERROR, error)
        except Exception as error:
            return self._failed(verdict, ABORT_CHECK_ERROR, error)
        if not verdict.correct:
            verdict.category = API_NAME_MISMATCH if verdict.name != gold_name else _outcome_category(result, gold)
        return verdict

    @staticmethod
    def _failed(verdict: Verdict, category: str, error: BaseException) -> Verdict:
        verdict.correct = False
        verdict.category = category
        verdict.error = _message(error)
        return verdict

    # ------------------------------------------------------------------------------ corrected
    def corrected(self, prediction: str, reference: dict[str, Any]) -> Verdict:
        """The corrected protocol's verdict (never edits ``reference``)."""
        return self._too_long(prediction) or self._corrected(prediction, reference)

    def _corrected(self, prediction: str, reference: dict[str, Any]) -> Verdict:
        try:
            parsed = parse_typed(prediction)
        except ParseError as error:
            return Verdict(False, FAILED_PARSE_API_CALL, error=_message(error))
        if parsed is None:
            return Verdict(False, NO_API_CALL)
        gold_call = reference["gold"]
        gold_name = gold_call["api_name"]
        arguments = renamed(parsed.name, parsed.arguments)
        verdict = Verdict(False, None, call=parsed.text, name=parsed.name, arguments=arguments)
        if parsed.name != gold_name:
            verdict.category = API_NAME_MISMATCH
            return verdict
        level3_search = reference["level"] == 3 and parsed.name == SEARCHER
        if level3_search and isinstance(arguments.get("keywords"), str):
            arguments = {**arguments, "keywords": space_before_capitals(arguments["keywords"])}
        try:
            result = self._replayed(reference).call(parsed.name, arguments, coercion="typed")
        except CallRejected as rejection:
            verdict.error = str(rejection)
            verdict.category = {
                "unknown_tool": API_NAME_MISMATCH,
                "invalid_parameter_name": INVALID_INPUT_PARAMETER,
                "invalid_parameter_type": INVALID_INPUT_TYPE,
                "missing_argument": MISS_INPUT_ARGUMENT,
            }.get(rejection.kind, INVALID_INPUT_VALUE)
            return verdict
        except CallTimeout as error:
            return self._failed(verdict, TIMEOUT, error)
        except Exception as error:
            return self._failed(verdict, ABORT_EXECUTION_ERROR, error)
        verdict.result = result
        recorded = renamed_record(gold_name, gold_call["result"])
        tool = toolset(reference["toolset"]).get(gold_name)
        executed: Record | None = None
        try:
            correct = bool(tool.check_corrected(result, recorded))
            # The gold call's own result in this state is only needed when the recorded one disagrees.
            if not correct or gold_name == SEARCHER:
                executed = self._gold_result(reference)
            gold_failed = _gold_failed(executed, recorded)
            if not correct and not gold_failed:
                correct = bool(tool.check_corrected(result, executed))
            elif not correct and executed is not None:
                # A failing gold call is no reference, except for the very same call: a prediction
                # whose executed input is the gold call's own (e.g. CancelTimedSwitch on the renamed
                # device, spec tools-m-z) makes the call the annotation asks for.
                correct = result.get("api_name") == executed.get("api_name") and result.get("input") == executed.get("input")
        except Exception as error:  # a check_corrected must not raise; count it and keep going
            return self._failed(verdict, ABORT_CHECK_ERROR, error)
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
        arguments = renamed(name, gold_call["arguments"])
        if reference["level"] == 3 and name == SEARCHER and isinstance(arguments.get("keywords"), str):
            arguments = {**arguments, "keywords": space_before_capitals(arguments["keywords"])}
        try:
            return self._replayed(reference).call(name, arguments, coercion="typed")
        except CallRejected:
            return None
        except Exception:  # a tool bug must not decide a prediction's verdict; judge against the record
            return None

    def _replayed(self, reference: dict[str, Any]) -> Session:
        session = self.session(reference["toolset"])
        session.replay(_replay_calls(reference["earlier_calls"]))
        return session


def _gold_failed(executed: Record | None, recorded: Record) -> bool:
    """Whether the gold call failed in the replayed state although its recorded result did not."""
    if recorded.get("exception"):
        return executed is None  # the annotation records a failure: only a crash is unusable
    return executed is None or bool(executed.get("exception"))


def _is_type_error(rejection: CallRejected) -> bool:
    """A rejection standing for a TypeError the original tool raised (lv3_evaluator catches those)."""
    return isinstance(rejection.__cause__, TypeError) or str(rejection) == UNKNOWN_COORDINATES


def _replay_calls(earlier: Iterable[dict[str, Any]]) -> Iterable[tuple[str, dict[str, Any], Record]]:
    """Earlier gold calls as (name, structured input, recorded result); ToolSearcher is stateless."""
    for call in earlier:
        name = call["api_name"]
        if name == SEARCHER:
            continue
        recorded = call.get("result") or {}
        structured = recorded.get("input") if isinstance(recorded.get("input"), dict) else call.get("arguments")
        yield name, renamed(name, structured or {}), recorded
