"""The benchmark rows a run scores: levels by name or number, a ``--limit`` or ``--kinds`` subset, the level of a
row id."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any, Iterable, Mapping

from apibank.benchmark import LEVELS, SAMPLE_KINDS, normalise_levels


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


def limit_rows(rows: Iterable[Mapping[str, Any]], limit: int | None,
               kinds: Iterable[str] | None = None) -> list[Any]:
    """The rows of ``kinds`` (all with None), at most ``limit`` of each kind per level (all with None)."""
    wanted = set(SAMPLE_KINDS if kinds is None else kinds)
    unknown = wanted - set(SAMPLE_KINDS)
    if unknown:
        raise ValueError(f"unknown sample kind {sorted(unknown)[0]!r}; expected some of {', '.join(SAMPLE_KINDS)}")
    taken: Counter = Counter()
    kept = []
    for row in rows:
        key = (row["level"], row["kind"])
        if row["kind"] not in wanted or (limit is not None and taken[key] >= limit):
            continue
        taken[key] += 1
        kept.append(row)
    return kept


def level_of(row_id: str) -> str:
    match = re.match(r"(level-[123])/", row_id)
    if not match:
        raise ValueError(f"not an API-Bank row id: {row_id!r}")
    return match.group(1)
