"""Every shipped real chat template renders the benchmark's rows whole, with the adaptations and the
thinking that its family needs (the full 1,307-row table is ``benchmarks/template_conformance.py``; here
every fifth row, in both formats, through the ``--prompts-only`` renderer)."""

from __future__ import annotations

import json

import pytest

from apibank.generate.backends.hf import TokenizerRendering
from apibank.generate.conversation import build_conversation
from apibank.generate.templates import missing_pieces
from apibank.pipeline import load_rows
from support.paths import REAL_TEMPLATES_DIR
from support.tiny import train_tokenizer

MANIFEST = json.loads((REAL_TEMPLATES_DIR / "manifest.json").read_text(encoding="utf-8"))
SHIPPED = {entry["family"]: entry for entry in MANIFEST["templates"] if entry["shipped"]}

# The adaptations each family's tools-format rows may get (any other is a regression); unlisted: none.
TOOLS_ADAPTATIONS = {
    "granite-3.3": {"calls-as-text"},
    "phi-4-mini": {"tools-in-prompt", "calls-as-text"},
    "phi-4-mini-vllm": {"arguments-as-json-text"},
    "mistral-nemo": {"call-ids-alphanumeric", "system-in-first-user", "merge-consecutive", "tool-results-as-user",
                     "calls-as-text", "arguments-as-json-text"},
    "mistral-small-3.2": {"call-ids-alphanumeric", "merge-consecutive", "tool-results-as-user", "calls-as-text",
                          "arguments-as-json-text", "system-in-first-user"},
    "deepseek-r1-distill": {"tools-in-prompt", "calls-as-text"},
    "deepseek-v3.1": {"tools-in-prompt", "arguments-as-json-text"},
    "functionary-v3.2": {"arguments-as-json-text"},
    "smollm3": {"tools-in-prompt", "calls-as-text"},
    "kimi-k2-thinking": {"calls-as-text"},
    "ministral-3-reasoning": {"calls-as-text", "merge-consecutive", "tool-results-as-user"},
}
# Families that think before answering with their default options (the manifest's "thinking" field).
# The templates detected as thinking. MiMo-VL always thinks but its template shows no trace of it: not detected (docs).
THINKING = {"qwen3", "qwen3-8b", "qwq", "gpt-oss", "deepseek-r1-distill", "glm-4.6", "smollm3", "seed-oss", "glm-4.7",
            "step-3.5", "minimax-m2", "kimi-k2-thinking", "apriel-1.6", "ministral-3-reasoning"}


@pytest.fixture(scope="module")
def tokenizer():
    return train_tokenizer(["some text"], 280)


@pytest.fixture(scope="module")
def sample(data_dir):
    return load_rows(None, data_dir)[::5]


def renderer(tokenizer, family: str, kwargs: dict | None = None) -> TokenizerRendering:
    return TokenizerRendering.around(tokenizer, chat_template=str(REAL_TEMPLATES_DIR / SHIPPED[family]["file"]),
                                     chat_template_kwargs=kwargs)


def render_rows(rendering: TokenizerRendering, rows, fmt: str) -> list[tuple[list[str], str]]:
    out = []
    for row in rows:
        conversation = build_conversation(row, fmt)
        prompt = rendering.render(conversation)
        assert missing_pieces(conversation.messages, conversation.tools, prompt) == [], row["id"]
        out.append((rendering.last_adaptations, prompt))
    return out


@pytest.mark.parametrize("family", sorted(SHIPPED))
def test_every_shipped_template_renders_rows_whole_with_its_family_adaptations(tokenizer, sample, family):
    tools = renderer(tokenizer, family)
    render_rows(tools, sample, "tools")
    used = {a["name"] for a in tools.template_info()["template_adaptations"]}
    assert used <= TOOLS_ADAPTATIONS.get(family, set()), used
    render_rows(renderer(tokenizer, family), sample, "chat")
    assert (tools.thinking("tools") is not None) == (family in THINKING)


@pytest.mark.parametrize("family,marker", [("gpt-oss", "<|start|>functions."), ("gemma-4", "<|tool_response>")])
def test_gpt_oss_and_gemma_4_get_tool_results_in_their_own_role(tokenizer, sample, family, marker):
    rendered = render_rows(renderer(tokenizer, family), sample, "tools")
    with_results = [prompt for names, prompt in rendered if marker in prompt]
    assert len(with_results) > 50
    assert all("tool-results-as-user" not in names for names, _ in rendered)


def test_mistral_gets_native_calls_with_nine_character_ids(tokenizer, sample):
    rendered = render_rows(renderer(tokenizer, "mistral-small-3.2"), sample, "tools")
    native = [prompt for names, prompt in rendered if "calls-as-text" not in names and "[TOOL_CALLS]" in prompt]
    assert len(native) > len(rendered) // 2
    assert all('"call00000"' in prompt or "call00000" in prompt for prompt in native)


def test_mistral_nemo_shows_the_system_text_whatever_turn_is_last(tokenizer, sample):
    nemo = renderer(tokenizer, "mistral-nemo")
    rendered = render_rows(nemo, sample, "chat")  # the completeness check holds the system text in every prompt
    assert all("system-in-first-user" in names for names, _ in rendered)
    assert "silently" in next(a["reason"] for a in nemo.template_info()["template_adaptations"]
                              if a["name"] == "system-in-first-user")


@pytest.mark.parametrize("family", ["functionary-v3.2", "phi-4-mini-vllm"])
def test_templates_that_print_dicts_as_python_get_json_text_arguments(tokenizer, sample, family):
    rendered = render_rows(renderer(tokenizer, family), sample, "tools")
    assert any("arguments-as-json-text" in names for names, _ in rendered)
    for row, (_, prompt) in zip(sample, rendered):
        for message in build_conversation(row, "tools").messages:
            for call in message.get("tool_calls") or []:
                assert json.dumps(call["function"]["arguments"], ensure_ascii=False) in prompt


@pytest.mark.parametrize("family,kwargs,thinks", [
    ("qwen3", {"enable_thinking": False}, False),
    ("deepseek-v3.1", {"thinking": True}, True),
    ("gemma-4", {"enable_thinking": True}, True),
    ("smollm3", {"enable_thinking": False}, False),
    # always thinking, with no switch: the default system prompt shows the block, or earlier turns' reasoning is kept
    ("ministral-3-reasoning", {}, True), ("kimi-k2-thinking", {}, True), ("apriel-1.6", {}, True),
    # a thinking mode that is off unless switched on, and none at all
    ("granite-3.3", {}, False), ("deepseek-v3.1", {}, False), ("deepseek-v3.2", {}, False), ("gemma-4", {}, False),
    ("qwen2.5", {}, False), ("qwen3-coder", {}, False), ("apertus", {}, False),
])
def test_template_options_switch_thinking(tokenizer, family, kwargs, thinks):
    assert (renderer(tokenizer, family, kwargs).thinking("tools") is not None) is thinks


# ------------------------------------------------------------------------------ the committed matrix
def _conformance_script():
    import importlib.util

    from support.paths import REPO

    spec = importlib.util.spec_from_file_location("template_conformance",
                                                  REPO / "benchmarks" / "template_conformance.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, REPO / "benchmarks"


def test_the_committed_matrix_is_written_from_its_records_and_the_vllm_parity_record():
    """The published tables (docs/templates.md includes them) are the committed records' and the parity record's
    (``tests/generate/test_vllm_parity.py`` keeps that one true against vLLM, in vLLM's environment)."""
    script, folder = _conformance_script()
    records = json.loads((folder / "template-conformance.json").read_text(encoding="utf-8"))
    parity = json.loads((folder / "vllm-parity.json").read_text(encoding="utf-8"))
    assert (folder / "template-conformance.md").read_text(encoding="utf-8") == script.tables(records, parity)
    assert {record["family"] for record in records} == {entry["family"] for entry in MANIFEST["templates"]}
    # the families both read: each shipped template's parser that vLLM registers is in the parity record
    assert {"hermes", "mistral", "openai", "glm45", "qwen3_coder"} <= set(parity["families"])


@pytest.mark.parametrize("family", sorted(SHIPPED))
def test_each_shipped_templates_calls_read_and_reasoning_markers_are_the_committed_ones(family, data_dir):
    """The matrix's columns that the main suite can recompute, recomputed over all 779 API rows."""
    script, folder = _conformance_script()
    record = {record["family"]: record for record in
              json.loads((folder / "template-conformance.json").read_text(encoding="utf-8"))}[family]
    text = (REAL_TEMPLATES_DIR / SHIPPED[family]["file"]).read_text(encoding="utf-8")
    assert script.reasoning_markers(text) == record["reasoning_markers"]
    assert script.calls_read(text, SHIPPED[family], load_rows(None, data_dir)) == record["calls_read"]
