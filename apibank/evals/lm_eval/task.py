"""The hooks of the lm-evaluation-harness tasks (named by the YAMLs in ``tasks/``).

Each test row of a level is one document: the paper prompt (``instruction`` + newline + ``input``, the
level-3 in-context-example instruction with ``--metadata '{"icl": true}'``) as lm-eval's context,
``generate_until`` with the package's stop strings (the answer's line for a plain-text prompt, the
transcript's next turn with ``--apply_chat_template``) and the row's token budget, sized as ``apibank
evaluate`` sizes it: the longest gold answer of the level and kind in the model's tokenizer (from
``--model_args pretrained=``/``tokenizer=``) plus a margin. lm-eval's YAML takes one ``generation_kwargs``
for the whole task, so :class:`ApiBankTask` sets them per request; lm-eval's models batch requests by
them.

Each completion is cut by the package's stop rule and judged alone by the package's judge
(:mod:`apibank.evals.samples`): ``paper`` and ``corrected`` are 1/0 on API rows and ROUGE-L F on response
rows; ``*_api`` (API rows only) and ``*_rouge_l`` (response rows only) average one kind each. The
run's headline scores (level-3 dialogue accuracy, intervals) come from ``apibank import-harness``.

The rows come from ``--metadata '{"data_dir": DIR}'``, else ``$APIBANK_DATA_DIR``, else the verified
download, as everywhere in the package.
"""

from __future__ import annotations

import functools
import logging
from typing import Any, Mapping, Sequence

from apibank.evals.lm_eval import check_installed

check_installed()

from lm_eval.api.instance import Instance  # noqa: E402
from lm_eval.api.task import ConfigurableTask  # noqa: E402

from apibank.benchmark import PROTOCOLS  # noqa: E402
from apibank.evals.samples import judge_sample, prediction_text, sample_value  # noqa: E402
from apibank.evals.spec import DOC_FIELDS  # noqa: E402

logger = logging.getLogger(__name__)


def dataset(level: int, data_dir: str | None = None, **_: Any):
    """A level's test rows as a ``DatasetDict`` with one ``test`` split (lm-eval's ``custom_dataset``,
    called with the task's metadata, which holds ``--metadata`` and ``--model_args``)."""
    from datasets import Dataset, DatasetDict

    from apibank.data.rows import iter_rows

    rows = [{key: row[key] for key in DOC_FIELDS} for row in iter_rows(f"level-{int(level)}", data_dir)]
    return DatasetDict({"test": Dataset.from_list(rows)})


def doc_to_text(doc: Mapping[str, Any], icl: bool = False) -> str:
    from apibank.generate.conversation import paper_text

    return paper_text(doc, icl)


def process_results(doc: Mapping[str, Any], results: Sequence[str], data_dir: str | None = None) -> dict[str, float]:
    """One document's metrics: the completion cut by the package's stop rule, judged alone."""
    verdicts = judge_sample(prediction_text(results[0]), doc["reference"], PROTOCOLS, data_dir)
    metrics = {protocol: sample_value(verdicts[protocol]) for protocol in PROTOCOLS}
    suffix = "api" if doc["kind"] == "api" else "rouge_l"
    metrics.update({f"{protocol}_{suffix}": metrics[protocol] for protocol in PROTOCOLS})
    return metrics


class _Tokenizer:
    """What :func:`apibank.generate.runner.token_budgets` asks of a backend, from the tokenizer of the
    model lm-eval runs; without one it can load, the package's generous estimate."""

    def __init__(self, metadata: Mapping[str, Any]) -> None:
        from apibank.generate.backends.base import estimated_token_counts, tokenizer_token_counts

        name = metadata.get("tokenizer") or metadata.get("pretrained")
        self.tokenizer = None
        if isinstance(name, str) and name:
            from transformers import AutoTokenizer

            try:
                self.tokenizer = AutoTokenizer.from_pretrained(
                    name, revision=metadata.get("revision") or None,
                    trust_remote_code=bool(metadata.get("trust_remote_code")))
            except (OSError, ValueError) as error:
                logger.warning("API-Bank: no tokenizer from %r (%s); budgets estimated at 2 characters a token",
                               name, error)
        self._counts = (functools.partial(tokenizer_token_counts, self.tokenizer) if self.tokenizer is not None
                        else estimated_token_counts)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return self._counts(texts)


class ApiBankTask(ConfigurableTask):
    """A level's task: the YAML's config, with each request's stop strings and token budget set per row."""

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        from apibank.generate.runner import sized_settings

        config = {key: value for key, value in (config or {}).items() if key != "class"}
        super().__init__(config=config, **kwargs)
        metadata = dict(self.config.metadata or {})
        self.config.doc_to_text = functools.partial(doc_to_text, icl=bool(metadata.get("icl")))
        self.config.process_results = functools.partial(process_results, data_dir=metadata.get("data_dir"))
        # every row of the level, not a --limit subset, so that a subset decodes as the full run
        rows = list(self.test_docs())
        self.settings = sized_settings(_Tokenizer(metadata), rows, "paper", stop=())

    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> Instance:
        from apibank.generate.stops import default_stops

        plain_text = not kwargs.get("apply_chat_template", False)
        instance = super().construct_requests(doc, ctx, **kwargs)
        context, generation = instance.arguments[0], dict(instance.arguments[1])
        generation["until"] = list(default_stops("paper", plain_text=plain_text))
        generation["max_gen_toks"] = self.settings.max_tokens_for(doc["level"], doc["kind"])
        instance.arguments = (context, generation, *instance.arguments[2:])
        return instance
