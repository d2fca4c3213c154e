"""The facts of the API-Bank benchmark, declared once for every room of the package.

Levels (what sets each apart: :class:`LevelSpec`), judging protocols, prompt formats (for evaluate,
the agent and fine-tuning), agentic settings, the full sample counts, the judging limits' and
generation budgets' defaults, the citation and the environment variables the package reads. The report, the Hub writers, the CLI, the inspect-ai tasks and the faces import them from
here instead of keeping copies. This module imports nothing heavier than the tool environment's
data module, so argument parsers can use it at start-up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from apibank_tools.data import DATA_DIR_ENV

BENCHMARK_NAME = "API-Bank"
HOMEPAGE = "https://github.com/AlibabaResearch/DAMO-ConvAI/tree/main/api-bank"


@dataclass(frozen=True)
class LevelSpec:
    """What sets one level apart. Every room reads these properties instead of testing a level's number."""

    name: str  # the test config and results key
    number: int  # as rows and references hold it
    toolset: str  # the ``apibank_tools`` registry set its calls run against
    # The model finds its tools with ToolSearcher: API rows, and episodes in the ``searcher`` setting,
    # offer ToolSearcher alone (level 1 gives the dialogue's own tools).
    searches_tools: bool
    # Its dialogues are one upstream file of requirements, each a user's sentence and the calls planned
    # for it (rows and episodes are built from that file, a dialogue is a sample id in it), not
    # recorded multi-turn dialogues, one file each.
    from_requirements: bool = False
    # Prompts show an earlier call's whole result record, not only its ``output``.
    full_results: bool = False
    # The year its dialogues happen in, which the chat prompts state (level 3's requirements name no date).
    year: int | None = 2023
    # A dialogue counts as right when all its API rows are: reported beside API accuracy.
    dialogue_accuracy: bool = False
    # The original evaluator the paper protocol reproduces (its error categories are
    # apibank.judge.categories'), and what it does unlike the other:
    evaluator: str = "evaluator_by_json"
    names_compared: bool = True  # a call naming another tool is wrong before the gold tool's check runs
    searcher_keywords_split: bool = False  # ToolSearcher keywords are spaced before capitals first
    response_labels_stripped: bool = False  # "User:" and "AI:" are removed from a response before ROUGE-L
    rouge_rounded: bool = True  # a response's ROUGE-L is rounded to 4 places


# The levels, in the paper's column order.
LEVEL_SPECS = {
    "level-1": LevelSpec("level-1", 1, "level-1-2", searches_tools=False),
    "level-2": LevelSpec("level-2", 2, "level-1-2", searches_tools=True),
    "level-3": LevelSpec("level-3", 3, "level-3", searches_tools=True, from_requirements=True, full_results=True,
                         year=None, dialogue_accuracy=True, evaluator="lv3_evaluator", names_compared=False,
                         searcher_keywords_split=True, response_labels_stripped=True, rouge_rounded=False),
}
# The test configs; a level may also be given by its number.
LEVELS = tuple(LEVEL_SPECS)
LEVEL_NUMBERS = tuple(spec.number for spec in LEVEL_SPECS.values())
# The tool set (a registry name of ``apibank_tools``) each level's calls run against.
TOOLSETS = {name: spec.toolset for name, spec in LEVEL_SPECS.items()}
# The retrieval tool: offered alone for level-2 API rows, heading every level-3 prompt.
SEARCHER = "ToolSearcher"


def level_spec(level: int | str) -> LevelSpec:
    """The spec of a level given as ``3``, ``"3"`` or ``"level-3"``; ValueError names an unknown one."""
    name = f"level-{level}" if str(level).isdigit() else str(level)
    if name not in LEVEL_SPECS:
        raise ValueError(f"unknown level {level!r}; expected one of {LEVELS} (or {', '.join(map(str, LEVEL_NUMBERS))})")
    return LEVEL_SPECS[name]

# Judging protocols, in report order, with what each one does (results.json repeats these lines).
PROTOCOL_DESCRIPTIONS = {
    "paper": "the original API-Bank evaluators bug for bug (regex parsing, text values, original checks and "
    "categories, shared gold records for duplicates; aborts counted wrong; fresh state per level-3 step)",
    "corrected": "ast literal parsing, typed coercion, earlier gold calls replayed, checks without judging bugs, "
    "ToolSearcher judged on the retrieved tool, renamed parameters and data drift handled",
}
PROTOCOLS = tuple(PROTOCOL_DESCRIPTIONS)
DEFAULT_PROTOCOL = "paper"
# Prompt formats: the paper's text prompts, chat messages, chat messages with native tool schemas.
FORMATS = ("paper", "chat", "tools")
DEFAULT_FORMAT = "paper"  # the paper's own prompts: the format of scripted (gold) runs and of the Hub's results
MODEL_FORMAT = "chat"  # what a model run uses unless told: instruct models are served chat messages
# How a model's chat template is used: probe it, always, never (or a template file's path).
TEMPLATE_MODES = ("auto", "on", "off")
# Agentic settings: the tools are found with ToolSearcher, or all of the level's tools are offered.
SETTINGS = ("searcher", "all-tools")
DEFAULT_SETTING = "searcher"
# How an agent shows the tools to a model: the chat template's (or endpoint's) native tool calling, a
# plain transcript with JSON calls in text, or native where the template takes tools.
AGENT_TOOL_FORMATS = ("auto", "native", "text")
DEFAULT_AGENT_TOOL_FORMAT = "auto"
# What ``apibank finetune`` trains on: the conversation with tools through the chat template (judged
# with the ``tools`` prompt format), or the paper's prompt and answer text (judged with ``paper``).
TRAINING_FORMATS = ("chat", "paper")
DEFAULT_TRAINING_FORMAT = "paper"

# The two kinds of test row: an API call to predict, or a response to the user to write.
SAMPLE_KINDS = ("api", "response")

# The row audit's statuses (apibank.data.audits): a test row is verified, or the first of the others, in
# this order, that applies to it. The subsets a run may be restricted to (--subset) are the rows of one status.
AUDIT_VERIFIED = "verified"
AUDIT_STATUSES = (AUDIT_VERIFIED, "wrong-gold", "underdetermined", "not-reproducible", "wording", "in-training",
                  "duplicate")
AUDIT_SUBSETS = (AUDIT_VERIFIED,)

# Samples per level of the test split: API-call rows and response rows.
FULL_COUNTS = {
    "level-1": {"api": 399, "response": 375},
    "level-2": {"api": 135, "response": 103},
    "level-3": {"api": 245, "response": 50},
}
# Agentic episodes per level: one per dialogue file (one level-1 file is empty upstream) or
# level-3 requirement.
EPISODE_COUNTS = {"level-1": 213, "level-2": 50, "level-3": 50}

# Judging limits per sample: seconds before the judging worker is killed, megabytes above the caller's.
JUDGE_TIMEOUT_S = 2.0
JUDGE_MEMORY_MB = 768

# Generation budgets. A row's answer may take the longest gold answer of its level and kind, in the
# model's tokens, plus this margin (a turn label, whitespace, and the stop string itself, which must be
# generated before it can be seen): apibank.generate.runner.sized_settings, for evaluate and
# apibank_generate alike.
BUDGET_MARGIN = 16
# The cap where no budget can be sized from gold answers: each step of an agentic episode (a step has
# no gold answer of its own), the inspect-ai task (inspect's model, whose tokenizer the package does not
# see), and a generation given no rows.
UNSIZED_MAX_NEW_TOKENS = 256
# The reasoning budget added to every answer's budget when the chat template makes the model think
# before answering (Qwen3 and QwQ, DeepSeek-R1 and V3.1 thinking, GPT-OSS's analysis channel, SmolLM3's
# /think, Gemma 4 with enable_thinking): the answer budgets above leave a thinking model one sentence of
# reasoning and no call. 4,096 tokens holds the reasoning that such models publish for short tool-use
# tasks several times over; rows that still reach it end with finish_reason "length" in the predictions.
# apibank evaluate and agent --thinking-budget N override it (0: none).
THINKING_BUDGET = 4096

# Environment variables the package reads (the tool environment's retrieval settings,
# APIBANK_RETRIEVER and APIBANK_VOCAB, live with the retriever in ``apibank_tools.retrieval``).
UPSTREAM_URL_ENV = "APIBANK_UPSTREAM_URL"  # overrides the upstream host (mirrors, local test servers)
CACHE_ENV = "APIBANK_CACHE"  # the verified download cache
GGUF_CACHE_ENV = "APIBANK_GGUF_CACHE"  # the converted-GGUF cache folder, or "off"
VLLM_CPU_RAY_ENV = "APIBANK_VLLM_CPU_RAY"  # "1": the vLLM platform plugin gives Ray to vLLM's CPU build

CITATION = """\
@inproceedings{li-etal-2023-api,
    title = "{API}-Bank: A Comprehensive Benchmark for Tool-Augmented {LLM}s",
    author = "Li, Minghao and Zhao, Yingxiu and Yu, Bowen and Song, Feifan and Li, Hangyu and Yu, Haiyang and Li, Zhoujun and Huang, Fei and Li, Yongbin",
    booktitle = "Proceedings of the 2023 Conference on Empirical Methods in Natural Language Processing",
    year = "2023",
    address = "Singapore",
    publisher = "Association for Computational Linguistics",
    url = "https://aclanthology.org/2023.emnlp-main.187",
    pages = "3102--3116",
}
"""

def normalise_levels(levels: Iterable[str | int] | None) -> list[str]:
    """Levels given as ``1`` or ``level-1`` (duplicates dropped, order kept) as ``level-N`` names;
    all levels when none are given. ValueError names an unknown level."""
    if not levels:
        return list(LEVELS)
    names: list[str] = []
    for level in levels:
        name = level_spec(level).name
        if name not in names:
            names.append(name)
    return names


__all__ = [
    "AGENT_TOOL_FORMATS", "AUDIT_STATUSES", "AUDIT_SUBSETS", "AUDIT_VERIFIED",
    "BENCHMARK_NAME", "BUDGET_MARGIN", "CACHE_ENV", "CITATION", "DATA_DIR_ENV",
    "DEFAULT_AGENT_TOOL_FORMAT", "DEFAULT_FORMAT", "DEFAULT_PROTOCOL", "DEFAULT_SETTING",
    "DEFAULT_TRAINING_FORMAT", "EPISODE_COUNTS", "FORMATS", "FULL_COUNTS", "GGUF_CACHE_ENV", "HOMEPAGE",
    "JUDGE_MEMORY_MB", "JUDGE_TIMEOUT_S", "THINKING_BUDGET", "LEVEL_NUMBERS", "level_spec", "LEVEL_SPECS", "LEVELS", "LevelSpec",
    "MODEL_FORMAT", "normalise_levels", "PROTOCOL_DESCRIPTIONS", "PROTOCOLS", "SAMPLE_KINDS", "SEARCHER",
    "SETTINGS", "TEMPLATE_MODES", "TOOLSETS", "TRAINING_FORMATS", "UNSIZED_MAX_NEW_TOKENS",
    "UPSTREAM_URL_ENV",
]
