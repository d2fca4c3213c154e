"""One sample of a harness run judged by the package's judge: what every harness adapter (inspect-ai,
lm-evaluation-harness, lighteval) reports per sample. Needs none of the harnesses.

A harness hands over the model's raw completion; the prediction is that completion cut by the package's
stop rule (:mod:`apibank.generate.stops`), as ``apibank evaluate`` cuts it, and judged alone under
each protocol by :func:`apibank.judge.scoring.score`. A sample's value is 1/0 for an API row (the
predicted call executed and checked) and ROUGE-L F for a response row.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from apibank.benchmark import PROTOCOLS


def prediction_text(completion: str | None, plain_text: bool = False) -> str:
    """The answer part of a paper-format completion: up to where the transcript's next turn (or, for a
    prompt sent as plain text, the answer's line) ends."""
    from apibank.generate.stops import answer_text, default_stops

    return answer_text(completion, default_stops("paper", plain_text=plain_text))


def sent_as_plain_text(recorded_prompt: Any, query: str) -> bool:
    """Whether a lighteval sample's prompt reached the model as plain text, judged from the prompt its backend
    recorded (``ModelResponse.input``): lighteval's plain-text prompt ends with the query (after any system
    prompt or instruction), a chat template's with the template's generation prompt, and an endpoint's is a
    list of messages. lighteval's transformers backend records none: its prompt is taken as plain text, which
    it is for a tokenizer without a chat template (or with ``override_chat_template=False``)."""
    return recorded_prompt is None or (isinstance(recorded_prompt, str) and recorded_prompt.endswith(query))


def sample_value(detail: Mapping[str, Any]) -> float:
    """1/0 for an API row's verdict, ROUGE-L F for a response row."""
    if detail["kind"] == "api":
        return 1.0 if detail.get("verdict") else 0.0
    return float(detail.get("score") or 0.0)


def run_metric(predictions: Sequence[str], references: Sequence[Any], protocols: Sequence[str] = PROTOCOLS,
               data_dir: str | None = None, details: bool = False) -> dict[str, Any]:
    from apibank.judge.scoring import score

    return score(list(predictions), list(references), protocols=tuple(protocols), return_details=details,
                 data_dir=data_dir)


def judge_sample(prediction: str, reference: Any, protocols: Sequence[str] = PROTOCOLS,
                 data_dir: str | None = None) -> dict[str, dict[str, Any]]:
    """``{protocol: detail}`` for one prediction judged alone (the detail records of
    :func:`apibank.judge.scoring.score`)."""
    result = run_metric([prediction], [reference], protocols, data_dir, True)
    return {detail["protocol"]: detail for detail in result["details"]}
