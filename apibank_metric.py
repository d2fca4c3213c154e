"""API-Bank: API-call accuracy by executing the predicted calls, and ROUGE-L for responses."""

import datasets
import evaluate

import apibank
from apibank.benchmark import CITATION, HOMEPAGE, JUDGE_TIMEOUT_S, PROTOCOLS

_DESCRIPTION = """\
API-Bank evaluates tool-augmented language models. For an API-call sample the model must write a
call such as `API-Request: [GetUserToken(username='JohnDoe', password='pass123')]`; the metric
extracts the call, EXECUTES it against a re-implementation of the benchmark's 75 tools (in memory,
offline, each call under a time limit) and judges the result with the tool's own check. For a
response sample it computes ROUGE-L against the gold answer.

Two protocols are always reported side by side:

* `paper`: the original evaluators bug for bug (regex parsing where every value is text, fresh tool
  state per call, the original checks and error categories). Numbers are comparable with the paper;
  even the gold answers score only 347/399 (level 1), 94/135 (level 2) and 230/245 steps, 40/50
  dialogues (level 3). Where the original run would crash, the sample counts as wrong.
* `corrected`: typed parsing of Python literals with `ast`, coercion to the declared types, the
  dialogue's earlier gold calls replayed first, checks without the original's judging bugs,
  ToolSearcher judged on the tool it retrieves. The gold answers score 100% at every level.

References are the `reference` column of the `apibank` dataset rows (levels 1, 2 and 3, API-call and
response rows in any mix); nothing else is needed.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `str`): the model's generated text for each row (e.g. the whole output
        `API-Request: [ToolName(key='value')]`, or the AI answer for response rows).
    references (`list` of `str`): the `reference` field of the same dataset rows (JSON text).
    return_details (`bool`, default False): add `details`, one record per (row, protocol) with the
        extracted call, the executed result record, the verdict and the error category.
    protocols (`list` of `str`, default both): "paper" and/or "corrected".
    timeout (`float`, default 2.0): time limit in seconds for judging one sample's calls.
    data_dir (`str`, optional): a local copy of the upstream API-Bank files (default: the
        `APIBANK_DATA_DIR` variable, else a verified download into the Hugging Face cache).

Returns:
    `paper` and `corrected`: per level ("level-1", "level-2", "level-3", only those present) and
        "overall": `api` {correct, total, accuracy}, `response` {rouge_l, count, rouge_l_rougescore},
        `errors` (wrong API rows by category), `errors_by_api` (by gold tool); level 3 also
        `dialogues` {correct, total, accuracy}.
    `revision`: the upstream commit the references come from; `protocols`: what each protocol does.
    Flat aliases: `paper_api_accuracy`, `corrected_api_accuracy`, `rouge_l` (overall values).

Examples:
    >>> import json
    >>> apibank = evaluate.load("apibank")
    >>> reference = json.dumps({"v": 1, "id": "level-1/GetUserToken-example#0", "level": 1, "kind": "api",
    ...     "toolset": "level-1-2", "file": "GetUserToken-example.jsonl", "sample_id": 0, "api_id": -1, "turn": 2,
    ...     "gold": {"api_name": "GetUserToken", "arguments": {"username": "JohnDoe", "password": "pass123"},
    ...              "result": {"api_name": "GetUserToken", "input": {"username": "JohnDoe", "password": "pass123"},
    ...                         "output": {"token": "a9s8d7f6g5h4j3k2l1"}, "exception": None}},
    ...     "gold_text": None, "earlier_calls": [], "revision": "5d5a2d40b2e6b6998a06961cc43ad0a8c069b153"})
    >>> results = apibank.compute(
    ...     predictions=["API-Request: [GetUserToken(username='JohnDoe', password='pass123')]"],
    ...     references=[reference])
    >>> results["paper"]["level-1"]["api"]
    {'correct': 1, 'total': 1, 'accuracy': 1.0}
    >>> results["corrected_api_accuracy"]
    1.0
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class Apibank(evaluate.Metric):
    """API-Bank API-call accuracy (executed calls) and response ROUGE-L, paper and corrected protocols."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features(
                {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
            ),
            homepage=HOMEPAGE,
            codebase_urls=[HOMEPAGE],
            reference_urls=["https://aclanthology.org/2023.emnlp-main.187", "https://arxiv.org/abs/2304.08244"],
        )

    def _compute(
        self,
        predictions,
        references,
        return_details=False,
        protocols=PROTOCOLS,
        timeout=JUDGE_TIMEOUT_S,
        data_dir=None,
    ):
        results = apibank.score(
            predictions,
            references,
            protocols=protocols,
            return_details=return_details,
            timeout=timeout,
            data_dir=data_dir,
        )
        scored = list(results["protocols"])  # in order, whatever collection `protocols` was
        for protocol in scored:
            results[f"{protocol}_api_accuracy"] = results[protocol]["overall"]["api"]["accuracy"]
        results["rouge_l"] = results[scored[0]]["overall"]["response"]["rouge_l"]
        return results
