"""The lighteval tasks ``apibank_level1``, ``apibank_level2``, ``apibank_level3`` (:data:`TASKS_TABLE`), which
``--custom-tasks apibank.evals.lighteval`` reaches through the package.

Each test row is one document: the paper prompt as the query, generated until the transcript's next
turn (the package's paper stop strings) within :data:`~apibank.benchmark.UNSIZED_MAX_NEW_TOKENS` tokens
(lighteval sets one budget and one stop list per task, and the task is built before the model's tokenizer
is known), then cut by the package's stop rule (the answer's line when the prompt went to the model as
plain text) and judged alone by the package's judge: ``paper`` and ``corrected`` are 1/0 on API rows and
ROUGE-L F on response rows, the same values as the lm-eval and inspect-ai tasks and ``apibank score``.

lighteval reads a task's rows with ``datasets.load_dataset``; the rows (from ``$APIBANK_DATA_DIR``, else
the verified download, as everywhere in the package) are written once to a JSON-lines folder in the
package's cache, named by their content, which the tasks point at.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping

from apibank.evals.lighteval.installed import check_installed

check_installed()

import numpy as np  # noqa: E402
from lighteval.metrics.metrics_sample import SampleLevelComputation  # noqa: E402
from lighteval.metrics.utils.metric_utils import SampleLevelMetricGrouping  # noqa: E402
from lighteval.tasks.lighteval_task import LightevalTaskConfig  # noqa: E402
from lighteval.tasks.requests import Doc, SamplingMethod  # noqa: E402

from apibank.benchmark import LEVEL_NUMBERS, PROTOCOLS, UNSIZED_MAX_NEW_TOKENS  # noqa: E402
from apibank.evals.samples import (  # noqa: E402
    judge_sample,
    prediction_text,
    sample_value,
    sent_as_plain_text,
)
from apibank.evals.spec import DOC_FIELDS, FIELD_SPEC, LEVEL_TASK_NAMES  # noqa: E402
from apibank.generate.conversation import paper_text  # noqa: E402
from apibank.generate.stops import default_stops  # noqa: E402

TASK_NAMES = LEVEL_TASK_NAMES
# The Doc.specific keys a sample keeps (lighteval's details save them; `apibank import-harness` reads them).
SPECIFIC = ("id", "level", "kind", "reference")


def rows_folder(level: int, data_dir: str | None = None) -> Path:
    """A folder holding the level's test rows as ``test.jsonl``, in the package's cache (written once per
    content), for ``datasets.load_dataset``."""
    from apibank.data.rows import iter_rows
    from apibank.data.upstream import default_cache_dir
    from apibank.files import write_json_lines

    rows = [{key: row[key] for key in DOC_FIELDS} for row in iter_rows(f"level-{level}", data_dir)]
    digest = hashlib.sha256(json.dumps(rows, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    folder = default_cache_dir() / "lighteval" / f"level-{level}-{digest}"
    if not (folder / "test.jsonl").is_file():
        write_json_lines(folder / "test.jsonl", rows)
    return folder


def prompt(line: Mapping[str, Any], task_name: str = "") -> Doc:
    """A row as a lighteval document: the paper prompt as the query, the gold answer as the one choice."""
    return Doc(task_name=task_name, query=paper_text(line), choices=[line[FIELD_SPEC["target"]]], gold_index=0,
               specific={key: line[key] for key in SPECIFIC}, id=line["id"])


class Judged(SampleLevelComputation):
    """The package's judge on one generation, under both protocols."""

    def compute(self, doc: Doc, model_response: Any, **kwargs: Any) -> dict[str, float]:
        texts = model_response.text or [""]
        plain = sent_as_plain_text(model_response.input, doc.query)
        verdicts = judge_sample(prediction_text(texts[0], plain_text=plain), doc.specific["reference"], PROTOCOLS)
        return {protocol: sample_value(verdicts[protocol]) for protocol in PROTOCOLS}


JUDGED = SampleLevelMetricGrouping(
    metric_name=list(PROTOCOLS),
    higher_is_better=dict.fromkeys(PROTOCOLS, True),
    category=SamplingMethod.GENERATIVE,
    sample_level_fn=Judged(),
    corpus_level_fn=dict.fromkeys(PROTOCOLS, np.mean),
)


def task_config(level: int, data_dir: str | None = None) -> LightevalTaskConfig:
    return LightevalTaskConfig(
        name=TASK_NAMES[LEVEL_NUMBERS.index(level)],
        prompt_function=prompt,
        hf_repo=str(rows_folder(level, data_dir)),
        hf_subset="default",
        hf_avail_splits=["test"],
        evaluation_splits=["test"],
        few_shots_split=None,
        few_shots_select=None,
        metrics=[JUDGED],
        generation_size=UNSIZED_MAX_NEW_TOKENS,
        stop_sequence=list(default_stops("paper")),
        version=1,
    )


TASKS_TABLE = [task_config(level) for level in LEVEL_NUMBERS]
