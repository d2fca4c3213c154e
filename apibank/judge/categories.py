"""Why a prediction was judged wrong: the error categories, and how each protocol assigns them.

A judged call can go wrong in three places: the call is rejected before the tool runs (the
rejection's ``kind``), something escapes the execution, or the tool's check raises instead of
answering. The original evaluators map these differently, so each protocol has its own
:class:`CategoryMap`; :mod:`apibank.judge.judging` walks one exception ladder with it.
"""

from __future__ import annotations

from dataclasses import dataclass

from apibank_tools.base import CallRejected

# The original evaluator's categories.
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
# The call ran past its time limit (the original has none: a hanging Calculator formula hangs it).
TIMEOUT = "TIMEOUT"
# The judging process hit its memory limit (or died) on this sample.
MEMORY_LIMIT = "MEMORY_LIMIT"
# Level 3 paper: the tool raised TypeError, which lv3_evaluator catches and counts as a failed line.
EXECUTION_TYPE_ERROR = "EXECUTION_TYPE_ERROR"
# The prediction is longer than any answer the judge reads (MAX_PREDICTION_CHARS); judged wrong unread.
PREDICTION_TOO_LONG = "PREDICTION_TOO_LONG"
# A native tool call whose arguments are not a JSON object (kept as written: apibank.notation.unreadable_call).
INVALID_TOOL_ARGUMENTS = "INVALID_TOOL_ARGUMENTS"
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
    TIMEOUT: "the sample exceeded its CPU time limit (the judging process is killed at the limit)",
    MEMORY_LIMIT: "the sample exceeded the judging process's memory limit (or the process died)",
    EXECUTION_TYPE_ERROR: "level 3 paper: the tool raised TypeError (e.g. unknown coordinates), which lv3_evaluator "
    "counts as a failed (execution error) line",
    PREDICTION_TOO_LONG: f"the prediction is longer than {MAX_PREDICTION_CHARS} characters and is not read",
    INVALID_TOOL_ARGUMENTS: "a native tool call whose arguments are not a JSON object (kept as the model wrote them)",
    GOLD_CALL_FAILED: "corrected: the prediction differs from the recorded gold and the gold call itself fails in the "
    "replayed state (a data error, reported; never counted correct)",
}

# Execution-side failures, which lv3_evaluator counts apart from incorrect judgements.
EXECUTION_CATEGORIES = frozenset({
    NO_API_CALL, UNKNOWN_API, INVALID_INPUT_PARAMETER, MISS_INPUT_ARGUMENT, TIMEOUT,
    ABORT_INVALID_PARAMETER_TYPE, ABORT_INVALID_VALUE, ABORT_MISSING_KEYWORDS, ABORT_EXECUTION_ERROR,
})

# Flags of response rows (ROUGE-L), reported beside the score.
ABORT_EMPTY_HYPOTHESIS = "ABORT_EMPTY_HYPOTHESIS"
ROUGE_RECURSION = "ROUGE_RECURSION"
# A response longer than MAX_PREDICTION_CHARS is not scored: 0 under both scores, with this flag.
HYPOTHESIS_TOO_LONG = "HYPOTHESIS_TOO_LONG"


@dataclass(frozen=True)
class CheckError:
    """A check that raised: errors of class ``error`` whose text holds every one of ``text`` get ``category``."""

    error: type[BaseException]
    text: tuple[str, ...]
    category: str

    def matches(self, error: BaseException) -> bool:
        message = str(error)
        return isinstance(error, self.error) and all(part in message for part in self.text)


@dataclass(frozen=True)
class CategoryMap:
    """How one protocol names each way a judged call can fail before it has a verdict."""

    rejections: dict[str, str]  # CallRejected.kind -> category
    other_rejection: str  # any other kind (a value the original could not use)
    type_error_rejection: str | None  # a rejection for a TypeError upstream raised, when counted apart
    check_errors: tuple[CheckError, ...]  # the first that matches wins; the last catches everything

    def rejected(self, rejection: CallRejected) -> str:
        raised = rejection.raised
        if (self.type_error_rejection is not None and rejection.kind == "invalid_value"
                and raised is not None and issubclass(raised, TypeError)):
            return self.type_error_rejection
        return self.rejections.get(rejection.kind, self.other_rejection)

    def check_failed(self, error: Exception) -> str:
        return next(rule.category for rule in self.check_errors if rule.matches(error))


# evaluator_by_json (levels 1 and 2): a KeyError is caught inside the checker call; anything else
# reaches the top level and is classified by its message, the rest aborting the run.
PAPER_CATEGORIES = CategoryMap(
    rejections={
        "unknown_tool": API_NAME_MISMATCH,
        "invalid_parameter_name": INVALID_INPUT_PARAMETER,
        "missing_argument": MISS_INPUT_ARGUMENT,
        "invalid_parameter_type": ABORT_INVALID_PARAMETER_TYPE,
    },
    other_rejection=ABORT_INVALID_VALUE,
    type_error_rejection=None,
    check_errors=(
        CheckError(KeyError, (), KEY_ERROR),
        CheckError(AssertionError, ("The API name is not correct.",), API_NAME_MISMATCH),
        CheckError(AssertionError, ("invalid parameter name",), INVALID_INPUT_PARAMETER),
        CheckError(AssertionError, (), ABORT_CHECK_ERROR),
        CheckError(Exception, ("missing", "required positional argument"), MISS_INPUT_ARGUMENT),
        CheckError(Exception, (), ABORT_CHECK_ERROR),
    ),
)
# lv3_evaluator: bad names and badly typed values are assertion errors, a TypeError a failed line;
# a failed assertion in the gold tool's check means the call was another tool's.
PAPER_LEVEL_3_CATEGORIES = CategoryMap(
    rejections={
        "unknown_tool": UNKNOWN_API,
        "invalid_parameter_name": INVALID_INPUT_PARAMETER,
        "invalid_parameter_type": INVALID_INPUT_PARAMETER,
        "missing_argument": MISS_INPUT_ARGUMENT,
    },
    other_rejection=ABORT_INVALID_VALUE,
    type_error_rejection=EXECUTION_TYPE_ERROR,
    check_errors=(
        CheckError(AssertionError, (), API_NAME_MISMATCH),
        CheckError(KeyError, (), KEY_ERROR),
        CheckError(Exception, (), ABORT_CHECK_ERROR),
    ),
)
# The paper protocol's map for each original evaluator a level names (apibank.benchmark.LevelSpec.evaluator).
PAPER_CATEGORY_MAPS = {"evaluator_by_json": PAPER_CATEGORIES, "lv3_evaluator": PAPER_LEVEL_3_CATEGORIES}
# Corrected: typed coercion names bad values apart; a corrected check never raises, so one that
# does is counted, never trusted.
CORRECTED_CATEGORIES = CategoryMap(
    rejections={
        "unknown_tool": API_NAME_MISMATCH,
        "invalid_parameter_name": INVALID_INPUT_PARAMETER,
        "invalid_parameter_type": INVALID_INPUT_TYPE,
        "missing_argument": MISS_INPUT_ARGUMENT,
    },
    other_rejection=INVALID_INPUT_VALUE,
    type_error_rejection=None,
    check_errors=(CheckError(Exception, (), ABORT_CHECK_ERROR),),
)
