"""From a model to scores, files and a report: the functions behind ``apibank evaluate``, ``apibank score``
and ``apibank agent``.

* :mod:`.rows` -- the rows of the levels a run covers, a ``--limit`` subset;
* :mod:`.results` -- what ``results.json`` records beside the scores (counts, usage, versions, prices);
* :mod:`.classic` -- ``evaluate`` and ``score_file``: generation, scoring and every output file;
* :mod:`.agentic` -- ``run_agentic``: an agentic run (episodes, resume, summaries, usage) and every output file.

The names below are the ones other rooms and the tests import from ``apibank.pipeline``.
"""

from __future__ import annotations

from apibank.files import DETAILS_FILE, LEADERBOARD_DIR, PREDICTIONS_FILE, REPORT_FILE, RESULTS_FILE
from apibank.pipeline.classic import evaluate, score_file, score_records, write_outputs
from apibank.pipeline.results import (
    PROTOCOLS,
    build_results,
    library_versions,
    package_version,
    parse_price,
    results_table,
    usage_line,
    usage_totals,
)
from apibank.pipeline.rows import level_of, limit_rows, load_rows, normalise_levels

__all__ = [
    "DETAILS_FILE", "LEADERBOARD_DIR", "PREDICTIONS_FILE", "REPORT_FILE", "RESULTS_FILE", "PROTOCOLS",
    "build_results", "evaluate", "level_of", "library_versions", "limit_rows", "load_rows", "normalise_levels",
    "package_version", "parse_price", "results_table", "score_file", "score_records", "usage_line", "usage_totals",
    "write_outputs",
]
