"""What the report layer adds to the metric's scores in results.json: intervals and the paper's error types."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from apibank.report.error_types import add_error_types
from apibank.judge.intervals import score_intervals


def annotate_scores(scores: Mapping[str, Any], details: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A copy of ``scores`` where each accuracy and ROUGE-L mean carries ``ci95``, ``n`` and ``clusters``
    (:mod:`apibank.judge.intervals`) and each level block an ``error_types`` table
    (:mod:`apibank.report.error_types`). Existing values are left as they are."""
    return add_error_types(score_intervals(scores, details), details)
