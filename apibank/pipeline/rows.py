"""The benchmark rows a run scores: levels by name or number, a ``--limit`` subset, the level of a row id."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any, Iterable, Mapping

from apibank.benchmark import LEVELS, normalise_levels


def load_rows(
    levels: Iterable[str | int] | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The test rows of ``levels``; with ``limit``, the first ``limit`` API-call rows and the first
    ``limit`` response rows of each level."""
    from apibank.data.rows import iter_rows

    rows: list[dict[str, Any]] = []
    for level in normalise_levels(levels):
        rows += iter_rows(level, data_dir)
    return limit_rows(rows, limit)


def limit_rows(rows: Iterable[Mapping[str, Any]], limit: int | None) -> list[Any]:
    """The first ``limit`` API-call rows and the first ``limit`` response rows of each level (all with None)."""
    taken: Counter = Counter()
    kept = []
    for row in rows:
        key = (row["level"], row["kind"])
        if limit is not None and taken[key] >= limit:
            continue
        taken[key] += 1
        kept.append(row)
    return kept


def level_of(row_id: str) -> str:
    match = re.match(r"(level-[123])/", row_id)
    if not match:
        raise ValueError(f"not an API-Bank row id: {row_id!r}")
    return match.group(1)
