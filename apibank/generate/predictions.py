"""The predictions file: JSON lines, one object per row, written as generation goes (so a rerun resumes).

Each line: ``{"id", "prediction", "prompt", "raw_output", "format", "decoding", "model", "engine",
"level", "kind"}`` and the row's usage (plus ``tool_call`` when the answer came from a native tool call);
``engine``: the backend, the model's revision and dtype, and the chat template's SHA-256.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

from apibank.errors import InputFileError, OutputError
from apibank.files import JsonLinesAppender, write_json_lines

class ResumeMismatch(OutputError, ValueError):
    """Predictions already in the output folder that another run (model, format, decoding) wrote."""


class PredictionsFileError(InputFileError):
    """A predictions file that cannot be read as one record per row (names the file and the lines)."""


def read_predictions(path: str | os.PathLike[str], *, allow_torn_tail: bool = False) -> list[dict[str, Any]]:
    """The records of a predictions file (an absent file has none).

    Every line must be a JSON object with a string ``id`` and a string ``prediction``; ids must be
    unique. Anything else is a :class:`PredictionsFileError` giving the line numbers. A torn last
    line (a write interrupted by a crash) is an error too, unless ``allow_torn_tail`` (resuming a
    run, see :func:`repair`), where it is left out.
    """
    path = Path(path)
    if not path.exists():
        return []
    try:
        # utf-8-sig: a byte order mark that an editor put in front of the first line is not part of it
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise PredictionsFileError(f"{path}: not UTF-8 text ({error})") from None
    records: list[dict[str, Any]] = []
    first_line: dict[str, int] = {}
    # "\n" only: str.splitlines() would also cut at U+2028, U+0085 and the like, which JSON strings hold raw
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            torn = number == len(lines)  # the last line, with no newline after it: its write was cut short
            if torn and allow_torn_tail:
                break
            where = "a torn last line (an interrupted write)" if torn else "not a JSON line"
            raise PredictionsFileError(f"{path}:{number}: {where}") from None
        if not isinstance(record, dict):
            raise PredictionsFileError(f"{path}:{number}: a {type(record).__name__}, not a JSON object")
        if not isinstance(record.get("id"), str):
            raise PredictionsFileError(f"{path}:{number}: no string `id`")
        if not isinstance(record.get("prediction"), str):
            raise PredictionsFileError(f"{path}:{number}: `prediction` of {record['id']!r} is not a string")
        if record["id"] in first_line:
            raise PredictionsFileError(
                f"{path}:{number}: duplicate id {record['id']!r} (first at line {first_line[record['id']]})"
            )
        first_line[record["id"]] = number
        records.append(record)
    return records


def repair(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rewrite ``path`` without a torn last line (a run interrupted mid-write); returns the records kept."""
    records = read_predictions(path, allow_torn_tail=True)
    path = Path(path)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        lines = [line for line in text.split("\n") if line.strip()]
        if len(lines) != len(records) or (text and not text.endswith("\n")):
            write_predictions(path, records)
    return records


def write_predictions(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> None:
    """Write every record at once, atomically (the file holds the old or the new records, never part)."""
    write_json_lines(path, records)


def check_resumable(records: list[dict[str, Any]], expected: dict[str, Any], path: Path) -> None:
    """Refuse to mix lines of another run into one file: another model, prompt format, backend, model
    revision, dtype or chat template (``engine``, where the line records it), or decoding settings that
    differ for the line's own level and kind. A run may add levels and kinds to a file: each level's token
    budget is compared for that level only. Raises :class:`ResumeMismatch` naming the first difference."""
    for record in records:
        difference = _difference(record, expected)
        if difference is not None:
            key, theirs, ours = difference
            raise ResumeMismatch(f"this run has {key}={ours!r}, the predictions in {path} have {theirs!r}; "
                                 "use another --output, or --overwrite to discard them")


def _difference(record: dict[str, Any], expected: dict[str, Any]) -> tuple[str, Any, Any] | None:
    """``(what, the record's, this run's)`` for the first setting that differs, None if none does."""
    for key in ("model", "format"):
        if record.get(key) != expected[key]:
            return key, record.get(key), expected[key]
    engine = record.get("engine")
    if isinstance(engine, dict):  # lines written before it was recorded have none
        for key, ours in expected["engine"].items():
            if key in engine and engine[key] != ours:
                return key, engine[key], ours
    return _decoding_difference(record, expected["decoding"])


def _decoding_difference(record: dict[str, Any], expected: dict[str, Any]) -> tuple[str, Any, Any] | None:
    from apibank.generate.backends.base import DecodingSettings

    theirs = record.get("decoding")
    try:
        recorded, ours = DecodingSettings.from_dict(theirs), DecodingSettings.from_dict(expected)  # type: ignore[arg-type]
        level, kind = record["level"], record["kind"]
    except (AttributeError, KeyError, TypeError, ValueError):  # not what this package writes: compared whole
        return None if theirs == expected else ("decoding", theirs, expected)
    for key, mine, other in (("do_sample", ours.sampling, recorded.sampling),
                             ("temperature", ours.temperature, recorded.temperature),
                             ("seed", ours.seed if ours.sampling else None,
                              recorded.seed if recorded.sampling else None),
                             ("stop", list(ours.stop), list(recorded.stop))):
        if mine != other:
            return key, other, mine
    budget = DecodingSettings.budget_key(level, kind)
    if ours.budgets and budget not in dict(ours.budgets):
        return None  # a level or kind this run does not decode
    if ours.max_tokens_for(level, kind) != recorded.max_tokens_for(level, kind):
        return f"max_new_tokens for {budget}", recorded.max_tokens_for(level, kind), ours.max_tokens_for(level, kind)
    return None


# Appends each record as its row is done, so that an interrupted run loses only the rows in flight.
PredictionWriter = JsonLinesAppender
