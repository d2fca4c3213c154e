"""The decoders against the hand loop, token for token in float32: both prefills of the eager decoder, at
several batch sizes, rows of one dialogue (prefix reuse) and of several; one device-to-host transfer per
decode step; the incremental stop rule against the whole-text rule; the static-cache decoder of the
compiled path (run eagerly: its shapes and masks, sliding-window layers included)."""

from __future__ import annotations

import pytest

from apibank.generate import build_conversation
from apibank.generate.backends.compiled import CompiledDecoder
from apibank.generate.backends.decoding import GreedyDecoder, hand_loop
from apibank.generate.runner import generation_order
from apibank.generate.stops import LINE_STOPS, PAPER_STOPS, StopWatch, first_stop
from support.tiny import build_tiny_model
from apibank.pipeline import load_rows


@pytest.fixture(scope="module")
def level_rows(data_dir):
    return load_rows(["level-1"], data_dir)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, level_rows):
    from apibank.generate import TransformersBackend

    corpus = [row["instruction"] + row["input"] + row["expected_output"] for row in level_rows[:8]]
    path = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", corpus)
    return TransformersBackend(str(path), dtype="float32", device="cpu", chat_template="off")


@pytest.fixture(scope="module")
def prompts(tiny, level_rows):
    """Eleven level-1 prompts in generation order: two dialogues' rows (shared prefixes) and others."""
    rows = level_rows[:11]
    conversations = [build_conversation(r, "paper") for r in rows]
    texts = [c.plain_text for c in conversations]
    return [tiny.tokenizer(texts[i])["input_ids"] for i in generation_order(conversations, texts)]


@pytest.fixture(scope="module")
def sliding_gemma():
    """A tiny random Gemma 3 whose sliding window (16) is shorter than every prompt."""
    import torch
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    torch.manual_seed(0)
    config = Gemma3TextConfig(vocab_size=300, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=16, sliding_window=16,
                              layer_types=["sliding_attention", "full_attention"], max_position_embeddings=512)
    return Gemma3ForCausalLM(config).eval()


def _random_prompts():
    import torch

    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 300, (length,), generator=generator).tolist() for length in (40, 25, 33, 12, 50)]
    prompts[1] = prompts[0][:20] + prompts[1][:10]  # a shared prefix
    return prompts


@pytest.mark.parametrize("prefill", ["rows", "batch"])
@pytest.mark.parametrize("batch_size", [1, 4, 11])
def test_eager_decoder_equals_the_hand_loop(tiny, prompts, prefill, batch_size):
    decoder = GreedyDecoder(tiny.model, eos_ids=[], prefill=prefill, pad_id=tiny.tokenizer.pad_token_id)
    got, expected = [], []
    for first in range(0, len(prompts), batch_size):
        chunk = prompts[first : first + batch_size]
        got += [row.ids for row in decoder.generate(chunk, [7] * len(chunk))]
        expected += hand_loop(tiny.model, chunk, 7, tiny.tokenizer.pad_token_id)
    assert got == expected


def test_prefix_reuse_only_where_rows_share_a_prefix(tiny, prompts):
    rows = GreedyDecoder(tiny.model, eos_ids=[], prefill="rows").generate(prompts, [2] * len(prompts))
    batch = GreedyDecoder(tiny.model, eos_ids=[], prefill="batch").generate(prompts, [2] * len(prompts))
    assert sum(row.reused_prompt_tokens for row in rows) > 300  # rows of one dialogue
    assert all(row.reused_prompt_tokens == 0 for row in batch)
    assert GreedyDecoder(tiny.model, eos_ids=[]).prefill == "rows"  # auto on a CPU
    with pytest.raises(ValueError, match="prefill must be one of"):
        GreedyDecoder(tiny.model, eos_ids=[], prefill="packed")


def test_sliding_window_layers_equal_the_hand_loop(sliding_gemma):
    prompts = _random_prompts()
    expected = hand_loop(sliding_gemma, prompts, 12, 0)
    for prefill in ("rows", "batch"):
        decoder = GreedyDecoder(sliding_gemma, eos_ids=[], prefill=prefill)
        assert [row.ids for row in decoder.generate(prompts, [12] * 5)] == expected


def test_one_device_to_host_transfer_per_step_and_finished_rows_dropped(tiny, prompts, monkeypatch):
    """Rows stopping at different steps: each decode step copies all its tokens at once (one ``tolist``), no
    per-row ``int(tensor)``; the rows that go on give the hand loop's tokens after the batch shrinks."""
    import torch

    transfers = []
    original = torch.Tensor.tolist

    def counting_tolist(self):
        transfers.append(tuple(self.shape))
        return original(self)

    def no_item(self):
        raise AssertionError("a per-row device-to-host copy")

    decoder = GreedyDecoder(tiny.model, eos_ids=[], prefill="batch")
    budgets = [2, 9, 3, 9, 1, 9]
    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    monkeypatch.setattr(torch.Tensor, "__int__", no_item)
    out = decoder.generate(prompts[:6], budgets)
    monkeypatch.undo()
    assert [len(row.ids) for row in out] == budgets
    decode_steps = [shape for shape in transfers if len(shape) == 1]
    assert len(decode_steps) == max(budgets)  # the prefill's first tokens, then one per step
    assert min(shape[0] for shape in decode_steps) < 6  # the finished rows left the batch
    expected = hand_loop(tiny.model, prompts[:6], 9, tiny.tokenizer.pad_token_id)
    assert [row.ids for row in out] == [ids[:budget] for ids, budget in zip(expected, budgets)]


@pytest.mark.parametrize("stops", [LINE_STOPS, PAPER_STOPS])
def test_stop_watch_stops_where_the_whole_text_rule_does(tiny, level_rows, stops):
    """For answers that open with whitespace and turn labels, run long, and hold stops late: the first token
    after which the incremental rule says stop is the one after which the whole-text rule first finds one."""
    tokenizer = tiny.tokenizer
    golds = [row["expected_output"] for row in level_rows[:40]]
    texts = [" AI: " + " ".join(golds[i : i + 4]) + "\nAPI: more" for i in range(0, 40, 4)]
    texts += ["\n\n  " + " ".join(golds[:6]) + " -> [x]\nUser: bye", "API:" + " ".join(golds[6:12])]
    checked = 0
    for text in texts:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        decode = lambda part: tokenizer.decode(part, skip_special_tokens=True)  # noqa: E731
        watch = StopWatch(stops, decode)
        incremental = next((k for k in range(1, len(ids) + 1) if watch(ids[:k])), None)
        whole = next((k for k in range(1, len(ids) + 1) if first_stop(decode(ids[:k]), stops) is not None), None)
        assert incremental == whole, text
        checked += watch._tail_only
    assert checked >= 3  # the tail-only reading was exercised


def test_static_cache_decoder_equals_the_hand_loop(tiny, prompts, sliding_gemma):
    """The compiled path's decoder, run eagerly: padded batch, static cache, full-length mask."""
    decoder = CompiledDecoder(tiny.model, eos_ids=[], pad_id=tiny.tokenizer.pad_token_id, compile=False)
    got = decoder.generate(prompts[:5], [3, 7, 7, 2, 7])
    expected = hand_loop(tiny.model, prompts[:5], 7, tiny.tokenizer.pad_token_id)
    assert [row.ids for row in got] == [ids[: len(row.ids)] for ids, row in zip(expected, got)]
    assert [len(row.ids) for row in got] == [3, 7, 7, 2, 7]
    assert decoder.compile_seconds > 0  # the first steps of a new shape are counted apart
    sliding = CompiledDecoder(sliding_gemma, eos_ids=[], compile=False)
    prompts = _random_prompts()
    assert [row.ids for row in sliding.generate(prompts, [12] * 5)] == hand_loop(sliding_gemma, prompts, 12, 0)
    again = sliding.generate(prompts[:3], [12] * 3)  # the same shape: its cache is reset and reused
    assert [row.ids for row in again] == hand_loop(sliding_gemma, prompts[:3], 12, 0)
