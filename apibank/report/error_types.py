"""The paper's error analysis: each wrong API-call verdict mapped to one of the API-Bank paper's error types.

The paper (Li et al., 2023) breaks the errors of its models into types such as *No API Call*, *API
Hallucination*, *Has Exception*, *Invalid Input Parameters*, *False API Call Format*, *Failed API
Retrieval* and *Miss Input Parameters*. The judge gives each wrong verdict a finer category; the
table below maps every category to a type. The type of a category can depend on the tool that was
called: a ToolSearcher call that runs but returns another tool than the gold one is a failed
retrieval, while the same mismatch on any other tool is a wrong value.

Categories with no paper counterpart get a type of their own, marked ``paper=False``:

* *Wrong Values*: the call ran without error but its input or output differs from the gold call
  (the paper reports accuracy for these but names no error type);
* *Judging Bug*: the original checker raised ``KeyError`` (duplicate re-checks, renamed
  parameters): these penalise even gold answers and say nothing about the model;
* *Evaluator Abort*: the original evaluator would stop the whole run here; counted wrong;
* *Resource Limit*: the sample ran past its time or memory limit, or the prediction was too long
  to read;
* *Data Error*: corrected protocol, the gold call itself fails in the replayed state.

Under the paper protocol an output whose call cannot be parsed by the original regular expression
is indistinguishable from no call: it counts as *No API Call*. *False API Call Format* appears only
under the corrected protocol, whose parser tells the two apart.
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any, Iterable, Mapping, Sequence

from apibank.benchmark import PROTOCOLS, SEARCHER

NO_API_CALL = "No API Call"
API_HALLUCINATION = "API Hallucination"
HAS_EXCEPTION = "Has Exception"
INVALID_INPUT_PARAMETERS = "Invalid Input Parameters"
MISS_INPUT_PARAMETERS = "Miss Input Parameters"
FALSE_API_CALL_FORMAT = "False API Call Format"
FAILED_API_RETRIEVAL = "Failed API Retrieval"
WRONG_VALUES = "Wrong Values"
JUDGING_BUG = "Judging Bug"
EVALUATOR_ABORT = "Evaluator Abort"
RESOURCE_LIMIT = "Resource Limit"
DATA_ERROR = "Data Error"

# Display order: the paper's types first, then ours.
TYPES: dict[str, bool] = {  # type -> named in the paper
    NO_API_CALL: True,
    API_HALLUCINATION: True,
    HAS_EXCEPTION: True,
    INVALID_INPUT_PARAMETERS: True,
    MISS_INPUT_PARAMETERS: True,
    FALSE_API_CALL_FORMAT: True,
    FAILED_API_RETRIEVAL: True,
    WRONG_VALUES: False,
    JUDGING_BUG: False,
    EVALUATOR_ABORT: False,
    RESOURCE_LIMIT: False,
    DATA_ERROR: False,
}

# verdict category -> (type, why); the mismatch categories are resolved by the tool (see paper_type).
MAPPING: dict[str, tuple[str, str]] = {
    "NO_API_CALL": (NO_API_CALL, "no `[Name(...)]` call in the output (paper: also a call the regex cannot read)"),
    "API_NAME_MISMATCH": (API_HALLUCINATION, "called a tool other than the gold one (or one not offered yet)"),
    "UNKNOWN_API": (API_HALLUCINATION, "level 3: called a tool that does not exist"),
    "HAS_EXCEPTION": (HAS_EXCEPTION, "the executed call reported an exception"),
    "EXECUTION_TYPE_ERROR": (HAS_EXCEPTION, "level 3: the tool raised TypeError on the given values"),
    "ABORT_INVALID_VALUE": (HAS_EXCEPTION, "a value passed the type test but broke the tool"),
    "INVALID_INPUT_PARAMETER": (INVALID_INPUT_PARAMETERS, "a parameter name the tool does not declare"),
    "INVALID_INPUT_TYPE": (INVALID_INPUT_PARAMETERS, "corrected: a value of the wrong type"),
    "INVALID_INPUT_VALUE": (INVALID_INPUT_PARAMETERS, "corrected: a value the tool cannot use"),
    "ABORT_INVALID_PARAMETER_TYPE": (INVALID_INPUT_PARAMETERS, "paper: a number parameter given a non-number"),
    "MISS_INPUT_ARGUMENT": (MISS_INPUT_PARAMETERS, "a required argument is missing"),
    "ABORT_MISSING_KEYWORDS": (MISS_INPUT_PARAMETERS, "level 3: ToolSearcher called without keywords"),
    "FAILED_PARSE_API_CALL": (FALSE_API_CALL_FORMAT, "corrected: a call whose arguments are not literals"),
    "INVALID_TOOL_ARGUMENTS": (FALSE_API_CALL_FORMAT, "a native tool call whose arguments are not a JSON object"),
    "OUTPUT_MISMATCH": (WRONG_VALUES, "ran, output differs from gold (ToolSearcher: Failed API Retrieval)"),
    "INPUT_MISMATCH": (WRONG_VALUES, "ran, input differs from gold (ToolSearcher: Failed API Retrieval)"),
    "UNCATEGORISED": (WRONG_VALUES, "the check failed with no visible difference (ToolSearcher: Failed API Retrieval)"),
    "KEY_ERROR": (JUDGING_BUG, "paper: the original checker raised KeyError"),
    "ABORT_CHECK_ERROR": (EVALUATOR_ABORT, "paper: the original checker raised an unexpected error"),
    "ABORT_EXECUTION_ERROR": (EVALUATOR_ABORT, "an unexpected error while executing the call"),
    "TIMEOUT": (RESOURCE_LIMIT, "the sample ran past its time limit"),
    "MEMORY_LIMIT": (RESOURCE_LIMIT, "the judging process hit its memory limit"),
    "PREDICTION_TOO_LONG": (RESOURCE_LIMIT, "the prediction is too long to be read"),
    "GOLD_CALL_FAILED": (DATA_ERROR, "corrected: the gold call fails in the replayed state"),
}
_RETRIEVAL_CATEGORIES = {"OUTPUT_MISMATCH", "INPUT_MISMATCH", "UNCATEGORISED"}


def paper_type(category: str | None, tool: str | None) -> str:
    """The paper error type of a wrong verdict with ``category``, whose call named ``tool``."""
    category = category or "UNCATEGORISED"
    if category in _RETRIEVAL_CATEGORIES and tool == SEARCHER:
        return FAILED_API_RETRIEVAL
    if category not in MAPPING:
        raise ValueError(f"verdict category {category!r} has no error type; add it to apibank.report.error_types.MAPPING")
    return MAPPING[category][0]


def _ordered(counts: Counter) -> dict[str, int]:
    return {name: counts[name] for name in TYPES if counts[name]}


def error_types(details: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, dict[str, int]]]:
    """Per protocol and level (and ``overall``), how many wrong API-call verdicts fall into each type."""
    counts: dict[str, dict[str, Counter]] = {}
    for entry in details:
        if entry.get("kind") != "api" or entry.get("verdict"):
            continue
        kind = paper_type(entry.get("category"), entry.get("name"))
        per_level = counts.setdefault(str(entry.get("protocol")), {})
        per_level.setdefault(f"level-{entry['level']}", Counter())[kind] += 1
        per_level.setdefault("overall", Counter())[kind] += 1
    return {protocol: {level: _ordered(c) for level, c in sorted(levels.items())} for protocol, levels in counts.items()}


def add_error_types(scores: Mapping[str, Any], details: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``scores`` with an ``error_types`` count table in every level block (and ``overall``) of every protocol."""
    out = copy.deepcopy(dict(scores))
    found = error_types(details)
    for protocol, blocks in out.items():
        if not isinstance(blocks, dict) or not any(str(key).startswith("level-") for key in blocks):
            continue
        for level, block in blocks.items():
            if isinstance(block, dict) and "api" in block:
                block["error_types"] = found.get(protocol, {}).get(level, {})
    return out


def error_rows(scores: Mapping[str, Any], levels: Sequence[str], protocols: Sequence[str]) -> list[tuple[str, str, str, int, float]]:
    """(protocol, level, type, errors, share of that level's wrong API calls) for each non-zero cell."""
    rows = []
    for protocol in protocols:
        for level in [*levels, "overall"]:
            table = ((scores.get(protocol) or {}).get(level) or {}).get("error_types") or {}
            total = sum(table.values())
            for name, count in table.items():
                rows.append((protocol, level, name, count, count / total if total else 0.0))
    return rows


def error_table(scores: Mapping[str, Any], levels: Sequence[str], protocols: Sequence[str]) -> str:
    """The error analysis as a text table (``apibank evaluate --errors``)."""
    rows = error_rows(scores, levels, protocols)
    if not rows:
        return "error analysis: no wrong API calls"
    body = [[p, lv, name + ("" if TYPES[name] else " *"), str(c), f"{100 * s:.1f}%"] for p, lv, name, c, s in rows]
    headers = ["protocol", "level", "error type", "errors", "share"]
    widths = [max(len(line[i]) for line in [headers, *body]) for i in range(len(headers))]
    lines = ["error analysis (the paper's error types; * = no counterpart in the paper)",
             "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip(), "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in body]
    return "\n".join(lines)


def markdown_section(scores: Mapping[str, Any], levels: Sequence[str], protocols: Sequence[str]) -> list[str]:
    """The report's error analysis section: counts per type and the mapping it uses."""
    lines = ["## Error analysis (the paper's error types)", "",
             "| protocol | level | error type | errors | share of wrong calls |", "|---|---|---|---|---|"]
    rows = error_rows(scores, levels, protocols)
    lines += [f"| {p} | {lv} | {name}{'' if TYPES[name] else ' *'} | {c} | {100 * s:.1f}% |" for p, lv, name, c, s in rows]
    if not rows:
        lines.append("| - | - | no wrong API calls | 0 | - |")
    lines += ["", "\\* no counterpart in the paper. How each verdict category maps to a type:", "",
              "| verdict category | error type | in the paper | when |", "|---|---|---|---|"]
    for category, (name, why) in MAPPING.items():
        lines.append(f"| {category} | {name} | {'yes' if TYPES[name] else 'no'} | {why} |")
    lines.append(f"| OUTPUT_MISMATCH, INPUT_MISMATCH, UNCATEGORISED on {SEARCHER} | {FAILED_API_RETRIEVAL} | yes | "
                 "the search returned another tool than the gold one |")
    return lines


def results_error_table(results: Mapping[str, Any]) -> str:
    """:func:`error_table` for a results.json dictionary (its levels and protocols)."""
    scores = results.get("scores") or {}
    protocols = [p for p in PROTOCOLS if p in scores] + [
        p for p in scores if p not in PROTOCOLS and isinstance(scores[p], dict)
    ]
    return error_table(scores, list(results.get("levels") or []), protocols)
