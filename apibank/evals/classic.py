"""API-Bank's classic per-step evaluation (levels 1-3, the paper's prompts) as an inspect-ai task.

    inspect eval apibank/api_bank --model mockllm/model -T level=1 -T data_dir=../shared/apibank-upstream \
        --log-dir out/inspect-logs

Every test row of a level is one sample: the paper prompt (``instruction`` + newline + ``input``) as
one user turn, the model's completion cut where the transcript's next turn would begin, judged by
this package's metric (the predicted call executed against the tools) under both protocols.

Scores: each sample's value is ``{"paper": v, "corrected": v}`` (1/0 for an API call, ROUGE-L F for
a response), judged alone. The reported metrics (:func:`api_bank_metrics`) score all samples of the
run together with the metric, exactly as ``apibank evaluate`` does: the paper protocol's verdicts
depend on the other samples (in-place edits of shared gold records, as upstream), and level 3's
dialogue accuracy needs all steps of a dialogue.

The dataset comes from the local upstream copy (``data_dir``, ``$APIBANK_DATA_DIR`` or the verified
download), or, with ``dataset=NAMESPACE/NAME``, from the exported Hub dataset through inspect-ai's
``hf_dataset`` and the same field spec the dataset's ``eval.yaml`` declares.
"""

from __future__ import annotations

import sys
from typing import Any, Iterable, Mapping, Sequence

from apibank.errors import require_extra

require_extra("inspect", ("inspect_ai",), "API-Bank's inspect-ai tasks")

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import Dataset, FieldSpec, MemoryDataset, Sample, hf_dataset
from inspect_ai.model import ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Score, SampleScore, Target, metric, scorer
from inspect_ai.solver import Generate, TaskState, generate, solver

from apibank.benchmark import LEVEL_NUMBERS, PROTOCOLS, UNSIZED_MAX_NEW_TOKENS
from apibank.evals import _offline
from apibank.evals.samples import judge_sample, prediction_text, run_metric, sample_value
from apibank.evals.spec import FIELD_SPEC, METRIC_NAME, SCORER_NAME, SOLVER_NAME, registration_name

_offline.install()  # mockllm's usage estimate must not need tiktoken's download
_THIS = sys.modules[__name__]
TASK_NAME = "api_bank"


# ---------------------------------------------------------------------------------------- dataset
def sample_from_row(row: Mapping[str, Any]) -> Sample:
    """A dataset row as an inspect-ai Sample, mapped by :data:`FIELD_SPEC` (as ``hf_dataset`` maps it)."""
    return Sample(
        id=row[FIELD_SPEC["id"]],
        input=row[FIELD_SPEC["input"]],
        target=row[FIELD_SPEC["target"]],
        metadata={name: row[name] for name in FIELD_SPEC["metadata"]},
    )


def level_dataset(level: int, data_dir: str | None = None, dataset: str | None = None,
                  revision: str | None = None) -> Dataset:
    if level not in LEVEL_NUMBERS:
        raise ValueError(f"level must be one of {LEVEL_NUMBERS}, got {level!r}")
    config = f"level-{level}"
    if dataset:
        return hf_dataset(dataset, split="test", name=config, revision=revision,
                          sample_fields=FieldSpec(**FIELD_SPEC))
    from apibank.data.rows import iter_rows

    return MemoryDataset([sample_from_row(row) for row in iter_rows(config, data_dir)], name=f"api-bank-{config}")


# ---------------------------------------------------------------------------------------- solver
@solver(name=registration_name(_THIS, SOLVER_NAME))
def paper_prompt(icl: bool = False):
    """The paper's prompt as one user turn: the row's instruction (level 3 with ``icl``: the one with
    the worked example), a newline, and its input."""
    from apibank.generate.conversation import paper_text

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        row = {"instruction": state.metadata["instruction"], "input": state.input_text,
               "instruction_icl": state.metadata.get("instruction_icl") or ""}
        state.messages = [ChatMessageUser(content=paper_text(row, icl))]
        return state

    return solve


# ---------------------------------------------------------------------------------------- scoring
def headline_metrics(scores: Mapping[str, Any], protocols: Iterable[str]) -> dict[str, float]:
    """Flat ``{name: value}`` of the metric's result: per protocol (and level, when several) API call
    accuracy in percent with its counts, level-3 dialogue accuracy, response ROUGE-L F (0-1) and count."""
    out: dict[str, float] = {}
    for protocol in protocols:
        levels = [key for key in sorted(scores.get(protocol, {})) if key.startswith("level-")]
        for level in levels:
            block = scores[protocol][level]
            prefix = protocol if len(levels) == 1 else f"{protocol}_{level.replace('-', '')}"
            for kind, label in (("api", "api"), ("dialogues", "dialogue")):
                cell = block.get(kind)
                if cell and cell.get("total"):
                    out[f"{prefix}_{label}_accuracy_pct"] = round(100 * float(cell["accuracy"]), 2)
                    out[f"{prefix}_{label}_correct"] = float(cell["correct"])
                    out[f"{prefix}_{label}_total"] = float(cell["total"])
            cell = block.get("response")
            if cell and cell.get("count"):
                out[f"{prefix}_response_rouge_l"] = round(float(cell["rouge_l"]), 4)
                out[f"{prefix}_response_count"] = float(cell["count"])
    return out


@metric(name=registration_name(_THIS, METRIC_NAME))
def api_bank_metrics():
    """Both protocols' API-Bank scores over all samples of the run, scored together by the metric."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        if not scores:
            return {}
        meta = scores[0].score.metadata or {}
        protocols = meta.get("protocols") or list(PROTOCOLS)
        predictions = [s.score.answer or "" for s in scores]
        references = [(s.sample_metadata or {})["reference"] for s in scores]
        return headline_metrics(run_metric(predictions, references, protocols, meta.get("data_dir"), False),
                                protocols)

    return compute


@scorer(metrics=[api_bank_metrics()], name=registration_name(_THIS, SCORER_NAME))
def api_bank_scorer(protocols: Sequence[str] = PROTOCOLS, data_dir: str | None = None):
    """Judge one sample under each protocol: the completion's first API call executed and checked
    against the gold call (API rows), or ROUGE-L against the gold response (response rows)."""
    protocols = [str(p) for p in protocols]
    unknown = [p for p in protocols if p not in PROTOCOLS]
    if unknown or not protocols:
        raise ValueError(f"protocols must be among {PROTOCOLS}, got {protocols!r}")

    async def score_sample(state: TaskState, target: Target) -> Score:
        prediction = prediction_text(state.output.completion)
        by_protocol = judge_sample(prediction, state.metadata["reference"], protocols, data_dir)
        verdicts = {
            p: {key: by_protocol[p].get(key) for key in ("verdict", "score", "category", "error", "extracted_call")}
            for p in protocols
        }
        explanation = "; ".join(
            f"{p}: {'correct' if v['verdict'] else (v['category'] or 'wrong')}" if by_protocol[p]["kind"] == "api"
            else f"{p}: ROUGE-L {float(v['score'] or 0):.4f}"
            for p, v in verdicts.items()
        )
        return Score(
            value={p: sample_value(by_protocol[p]) for p in protocols},
            answer=prediction,
            explanation=explanation,
            metadata={"protocols": protocols, "data_dir": data_dir, "verdicts": verdicts},
        )

    return score_sample


# ---------------------------------------------------------------------------------------- task
@task(name=registration_name(_THIS, TASK_NAME))
def api_bank(
    level: int = 1,
    data_dir: str | None = None,
    icl: bool = False,
    dataset: str | None = None,
    revision: str | None = None,
    max_tokens: int = UNSIZED_MAX_NEW_TOKENS,
) -> Task:
    """API-Bank level ``level`` (1, 2 or 3), classic per-step evaluation with the paper prompts.

    Args:
      level: 1 (Call), 2 (Retrieve+Call) or 3 (Plan+Retrieve+Call).
      data_dir: local copy of upstream ``api-bank/`` (rows and tool databases); default
        ``$APIBANK_DATA_DIR``, else the verified download.
      icl: level 3: the instruction with the worked example.
      dataset: read the rows from this exported Hub dataset instead (``NAMESPACE/NAME``).
      revision: with ``dataset``: the dataset revision.
      max_tokens: generation budget per sample.
    """
    from apibank.generate.stops import default_stops

    level = int(level)
    return Task(
        dataset=level_dataset(level, data_dir, dataset, revision),
        solver=[paper_prompt(icl=bool(icl)), generate()],
        scorer=api_bank_scorer(protocols=PROTOCOLS, data_dir=data_dir),
        config=GenerateConfig(max_tokens=int(max_tokens), stop_seqs=list(default_stops("paper"))),
        name=f"api_bank_level_{level}",
    )
