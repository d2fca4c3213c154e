"""What ``apibank evaluate`` checks before it loads a model about its own files: the output folder and the
predictions a resume keeps (the model and the backend's options are the backends' to check). Each failed check is a :class:`UsageError` whose text says what is wrong and what to do;
the console script prints it as one line and exits with status 2."""

from __future__ import annotations

import json
import os
from pathlib import Path

from apibank.errors import OutputError, UsageError


# ---------------------------------------------------------------------------- output folder
def check_output(output: Path) -> None:
    """The output folder can be written (without creating it)."""
    if output.exists() and not output.is_dir():
        raise OutputError(f"--output {output}: a file, not a folder; give a folder")
    existing = output
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise OutputError(f"--output {output}: {existing} is a file, so the folder cannot be created")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"--output {output}: {existing} is not writable; give another --output")


def check_resume(output: Path, *, fmt: str, model: str) -> int:
    """How many predictions a rerun would keep; a file from another model or format is refused now
    (the decoding settings are compared by the run itself)."""
    path = output / "predictions.jsonl"
    if not path.is_file():
        return 0
    try:
        with path.open(encoding="utf-8") as handle:
            first = handle.readline()
        record = json.loads(first) if first.strip() else None
    except (OSError, ValueError):
        return 0  # the run itself reports a damaged file precisely
    if not isinstance(record, dict):
        return 0
    for key, value in (("format", fmt), ("model", model)):
        if record.get(key) not in (None, value):
            raise UsageError(
                f"{path} holds predictions with {key}={record.get(key)!r}, but this run has {key}={value!r}; "
                "give another --output, or --overwrite to discard them"
            )
    from apibank.generate.predictions import PredictionsFileError, read_predictions

    try:
        return len(read_predictions(path, allow_torn_tail=True))  # what the run keeps: a torn last line is not
    except PredictionsFileError:
        return 0  # the run itself reports a damaged file precisely
