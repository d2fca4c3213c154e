"""The predictions file: JSON lines, one object per row, written as generation goes (so a rerun resumes).

Each line: ``{"id", "prediction", "prompt", "raw_output", "format", "decoding", "model", "level",
"kind"}`` (plus ``tool_call`` when the answer came from a native tool call).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

# What must agree between the lines already on disk and a resumed run.
RUN_KEYS = ("format", "decoding", "model")


class ResumeMismatch(ValueError):
    pass


def read_predictions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a predictions file; a torn last line (an interrupted write) is ignored."""
    path = Path(path)
    if not path.exists():
        return []
    records = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line") from None
    return records


def repair(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Rewrite ``path`` without a torn last line; returns the records kept."""
    records = read_predictions(path)
    path = Path(path)
    if path.exists():
        text = path.read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) != len(records) or (text and not text.endswith("\n")):
            write_predictions(path, records)
    return records


def write_predictions(path: str | os.PathLike[str], records: Iterable[dict[str, Any]]) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    tmp.replace(path)


def check_resumable(records: list[dict[str, Any]], expected: dict[str, Any], path: Path) -> None:
    """Refuse to mix lines from a different model, prompt format or decoding into one file."""
    for record in records:
        for key in RUN_KEYS:
            if record.get(key) != expected[key]:
                raise ResumeMismatch(
                    f"{path} holds predictions with {key}={record.get(key)!r}, but this run has "
                    f"{key}={expected[key]!r}; use another --output or --overwrite"
                )


class PredictionWriter:
    """Appends records and flushes after each batch, so that an interrupted run loses at most a batch."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = self.path.open("a", encoding="utf-8")

    def write(self, records: Iterable[dict[str, Any]]) -> None:
        for record in records:
            self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        self._handle.close()

    def __enter__(self) -> "PredictionWriter":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
