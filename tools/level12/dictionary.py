"""Dictionary: word definitions served from the recorded lookups."""

from __future__ import annotations

import copy
import json
import threading
from typing import Any

from ..base import Record, Tool, ToolError
from ..data import DataSource
from ..registry import LEVEL_1_2

_DIALOGUE_FOLDERS = ("lv1-lv2-samples/level-1-given-desc", "lv1-lv2-samples/level-2-toolsearcher")


def normalise_keyword(keyword: str) -> str:
    """Upstream's keyword clean-up before the web request: ``_`` to space, trimmed, lower-cased."""
    return keyword.replace("_", " ").strip().lower()


_entries: dict[str, dict[str, Any]] = {}
_entries_lock = threading.Lock()


def _load_entries(source: DataSource) -> dict[str, Any]:
    entries: dict[str, Any] = {}
    for folder in _DIALOGUE_FOLDERS:
        # Dialogue files are named after the tools they exercise; only these hold Dictionary turns.
        for path in source.paths(folder, ".jsonl"):
            if "Dictionary" not in path.rsplit("/", 1)[-1]:
                continue
            for line in source.read_text(path).splitlines():
                turn = json.loads(line) if line.strip() else {}
                result = turn.get("result") if turn.get("api_name") == "Dictionary" else None
                if result and result.get("exception") is None and result.get("output") is not None:
                    entries.setdefault(normalise_keyword(result["input"]["keyword"]), result["output"])
    return entries


def recorded_entries(source: DataSource) -> dict[str, Any]:
    """Normalised keyword -> recorded ``meanings`` list, read once per data source. Do not modify."""
    with _entries_lock:
        if source.key not in _entries:
            _entries[source.key] = _load_entries(source)
        return _entries[source.key]


@LEVEL_1_2.register
class Dictionary(Tool):
    """Answers from local data: upstream queried the live dictionaryapi.dev service.

    Reproducible: every recorded lookup. The answer for a keyword is the ``output`` recorded for it
    in the level-1/2 dialogues ("perplexed", "plethora", "resilience"), so those gold calls
    reproduce exactly, keyword normalisation (``_`` to space, trim, lower-case) included.
    Not reproducible: any other word (the live service knew far more, and its answers may have
    changed since 2023), and upstream's transport-error texts. An unknown word fails with a text
    that starts with upstream's own failure text, ``Failed.``.
    """

    name = "Dictionary"
    description = "This API searches the dictionary for a given keyword."
    input_parameters = {
        "keyword": {"type": "str", "description": "The keyword to search."},
    }
    output_parameters = {
        "results": {"type": "list", "description": "The list of results. Format be like [{\"partOfSpeech\": \"xxx\", \"definitions\": [{\"definition\": \"xxx\", \"example\": \"xxx\", \"synonyms\": [\"xxx\", \"xxx\"]}, ...]"},
    }

    @classmethod
    def preload(cls, source: DataSource) -> None:
        recorded_entries(source)

    def run(self, keyword: Any) -> Any:
        word = normalise_keyword(keyword)
        entries = recorded_entries(self.session.data.source)
        if word not in entries:
            raise ToolError(
                f"Failed. {word!r} is not in the offline dictionary, which only holds the recorded lookups."
            )
        return copy.deepcopy(entries[word])

    @classmethod
    def check(cls, response: Record, gold: Record) -> bool:
        """The input is not compared."""
        return (
            response["api_name"] == "Dictionary"
            and response["output"] == gold["output"]
            and response["exception"] == gold["exception"]
        )
