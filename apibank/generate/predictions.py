"""The predictions file: JSON lines, one object per row, written as generation goes (so a rerun resumes).

Each line: ``{"id", "prediction", "prompt", "raw_output", "format", "decoding", "model", "engine",
"level", "kind"}`` and the row's usage (plus ``tool_call`` when the answer came from a native tool call);
``engine``: the backend, the model's revision and dtype, and the chat template's SHA-256.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterable

from apibank.errors import OutputError
from apibank.files import JsonLinesAppender, JsonLinesError, read_json_lines, resume_json_lines, write_json_lines


class ResumeMismatch(OutputError, ValueError):
    """Predictions already in the output folder that another run (model, format, decoding) wrote."""


class PredictionsFileError(JsonLinesError):
    """A predictions file that cannot be read as one record per row (names the file and the lines)."""


DUPLICATE_WAY_OUT = "keep one line per id (delete the later ones)"


def _problem(record: dict[str, Any]) -> str | None:
    if not isinstance(record.get("id"), str):
        return "no string `id`"
    if "prediction" not in record:
        return f"`prediction` of {record['id']!r} is missing; every line needs the generated text as its `prediction`"
    if not isinstance(record["prediction"], str):
        return f"`prediction` of {record['id']!r} is not a string"
    return None


_READING: dict[str, Any] = dict(key=lambda record: record["id"], check=_problem, duplicate_way_out=DUPLICATE_WAY_OUT,
                                error=PredictionsFileError)


def read_predictions(path: str | os.PathLike[str], *, allow_torn_tail: bool = False) -> list[dict[str, Any]]:
    """The records of a predictions file (an absent file has none), read by
    :func:`apibank.files.read_json_lines`.

    Every line must be a JSON object with a string ``id`` and a string ``prediction``; ids must be
    unique. Anything else is a :class:`PredictionsFileError` giving the line numbers. A torn last
    line (a write interrupted by a crash) is an error too, unless ``allow_torn_tail`` (resuming a
    run, see :func:`repair`), where it is left out.
    """
    if not Path(path).exists():
        return []
    return read_json_lines(path, allow_torn_tail=allow_torn_tail, **_READING)


def repair(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records a resumed run keeps, with a torn last line (a run interrupted mid-write) cut off the file."""
    return resume_json_lines(path, **_READING)


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
