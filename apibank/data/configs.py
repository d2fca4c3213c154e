"""The dataset configs and the upstream files each one reads, with one clear error for missing ones.

The test configs are the benchmark's levels (``level-1``, ``level-2``, ``level-3``); ``training``
holds the upstream training files of the levels asked for.
"""

from __future__ import annotations

import os
from typing import Iterable

from apibank.benchmark import LEVEL_NUMBERS, LEVEL_SPECS, LEVELS
from apibank.data.dialogues import DIALOGUE_FOLDERS, LEVEL_3_DIALOGUES
from apibank.data.upstream import manifest, resolve_data_dir

TEST_CONFIGS = LEVELS
TRAINING_CONFIG = "training"
TRAINING_LEVELS = LEVEL_NUMBERS

# The upstream test-data each level's rows are checked against, by kind of row.
LEVEL_3_STEP_FILES = {
    "api": "test-data/level-3-batch-inf.json",
    "icl": "test-data/level-3-batch-inf-icl.json",
    "response": "test-data/level-3-batch-inf-response.json",
}


def level12_test_file(config: str, kind: str) -> str:
    """The upstream test-data file of a level-1 or level-2 config for ``kind`` ("api" or "response")."""
    return f"test-data/{config}-{kind}.json"


def training_files(level: int) -> list[str]:
    """The training files of one level: API then response.

    ``lv<n>-train.json`` is not read: it is the API file followed by the response file (verified for
    level 3: 907 + 338 records), so reading it too would duplicate every record.
    """
    return [f"training-data/lv{level}-api-train.json", f"training-data/lv{level}-response-train.json"]


def required_files(config: str, levels: Iterable[int] | None = None) -> list[str]:
    """Every upstream path that building ``config`` reads."""
    if levels is not None and config != TRAINING_CONFIG:
        raise ValueError(f"levels apply to the {TRAINING_CONFIG!r} config only, not {config!r}")
    if config in LEVEL_SPECS:
        if LEVEL_SPECS[config].from_requirements:
            return [LEVEL_3_DIALOGUES, *LEVEL_3_STEP_FILES.values()]
        return manifest().under(DIALOGUE_FOLDERS[config], ".jsonl") + [
            level12_test_file(config, "api"), level12_test_file(config, "response"),
        ]
    if config == TRAINING_CONFIG:
        return [path for level in training_levels(levels) for path in training_files(level)]
    raise ValueError(f"unknown config {config!r}; expected one of {[*TEST_CONFIGS, TRAINING_CONFIG]}")


def missing_local_files(paths: Iterable[str], data_dir: str | os.PathLike[str] | None) -> list[str]:
    """The paths a local copy lacks (empty when there is no local copy to consult)."""
    local = resolve_data_dir(data_dir)
    if local is None:
        return []
    return [path for path in paths if not (local / path).is_file()]


def missing_files_message(missing: Iterable[str], where: str) -> str:
    """What is missing and what to do on the first line (all a console shows), then every file."""
    lines = [f"  {path} (source: {manifest().url(path)})" for path in missing]
    return (
        f"the API-Bank data at {where} lacks {len(lines)} files; download them into that folder, or ask only "
        "for the levels present (e.g. levels=(3,) for the training config):\n" + "\n".join(lines)
    )


def present_training_levels(data_dir: str | os.PathLike[str] | None) -> tuple[int, ...]:
    """The training levels whose files a local copy holds (all levels when reading from the cache)."""
    return tuple(
        level for level in TRAINING_LEVELS if not missing_local_files(training_files(level), data_dir)
    )


def training_levels(levels: Iterable[int] | None) -> tuple[int, ...]:
    """The training levels asked for, sorted (default: every level); anything else is a ValueError."""
    chosen = tuple(sorted(set(levels))) if levels is not None else TRAINING_LEVELS
    unknown = [level for level in chosen if level not in TRAINING_LEVELS]
    if unknown or not chosen:
        raise ValueError(f"training levels must be a non-empty subset of {TRAINING_LEVELS}, got {levels!r}")
    return chosen
