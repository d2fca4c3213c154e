"""The decoders against the hand loop, token for token in float32: the CPU decoder at several batch sizes,
rows of one dialogue (prefix reuse) and of several; transformers' continuous batching (the decoder off the
CPU, run here on the CPU) with the package's stops, budgets, EOS ids and usage; the incremental stop rule
against the whole-text rule; the static-cache decoder of the compiled path (run eagerly: its shapes and
masks, sliding-window layers included)."""

from __future__ import annotations

import pytest

from apibank.generate import build_conversation
from apibank.generate.decoders.compiled import CompiledDecoder
from apibank.generate.decoders.continuous import ContinuousDecoder
from apibank.generate.decoders.decoding import GreedyDecoder, hand_loop
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


def _random_prompts():
    import torch

    generator = torch.Generator().manual_seed(1)
    prompts = [torch.randint(3, 300, (length,), generator=generator).tolist() for length in (40, 25, 33, 12, 50)]
    prompts[1] = prompts[0][:20] + prompts[1][:10]  # a shared prefix
    return prompts


@pytest.mark.parametrize("decoder_class", [GreedyDecoder, ContinuousDecoder])
@pytest.mark.parametrize("batch_size", [1, 4, 11])
def test_decoders_equal_the_hand_loop(tiny, prompts, decoder_class, batch_size):
    """The CPU decoder and transformers' continuous batching (the decoder off the CPU, run here on the CPU)."""
    decoder = decoder_class(tiny.model, eos_ids=[])
    got, expected = [], []
    for first in range(0, len(prompts), batch_size):
        chunk = prompts[first : first + batch_size]
        got += [row.ids for row in decoder.generate(chunk, [7] * len(chunk))]
        expected += hand_loop(tiny.model, chunk, 7, tiny.tokenizer.pad_token_id)
    assert got == expected


def test_prefix_reuse_only_where_rows_share_a_prefix(tiny, prompts):
    reused = GreedyDecoder(tiny.model, eos_ids=[]).generate(prompts, [2] * len(prompts))
    alone = GreedyDecoder(tiny.model, eos_ids=[], reuse_prefix=False).generate(prompts, [2] * len(prompts))
    assert sum(row.reused_prompt_tokens for row in reused) > 300  # rows of one dialogue
    assert all(row.reused_prompt_tokens == 0 for row in alone)
    assert [row.ids for row in reused] == [row.ids for row in alone]


@pytest.mark.parametrize("decoder_class", [GreedyDecoder, ContinuousDecoder])
def test_sliding_window_layers_equal_the_hand_loop(sliding_gemma, decoder_class):
    prompts = _random_prompts()
    expected = hand_loop(sliding_gemma, prompts, 12, 0)
    assert [row.ids for row in decoder_class(sliding_gemma, eos_ids=[]).generate(prompts, [12] * 5)] == expected


def test_one_host_copy_per_step_and_finished_rows_dropped(tiny, prompts, monkeypatch):
    """Rows stopping at different steps: each decode step copies all its tokens at once (one ``tolist``);
    the rows that go on give the hand loop's tokens after the batch shrinks."""
    import torch

    transfers = []
    original = torch.Tensor.tolist

    def counting_tolist(self):
        transfers.append(tuple(self.shape))
        return original(self)

    decoder = GreedyDecoder(tiny.model, eos_ids=[])
    budgets = [2, 9, 3, 9, 1, 9]
    monkeypatch.setattr(torch.Tensor, "tolist", counting_tolist)
    out = decoder.generate(prompts[:6], budgets)
    monkeypatch.undo()
    assert [len(row.ids) for row in out] == budgets
    decode_steps = [shape for shape in transfers if len(shape) == 1]
    assert len(decode_steps) == max(budgets) - 1  # one per step after the prefill's first tokens
    assert min(shape[0] for shape in decode_steps) < 6  # the finished rows left the batch
    expected = hand_loop(tiny.model, prompts[:6], 9, tiny.tokenizer.pad_token_id)
    assert [row.ids for row in out] == [ids[:budget] for ids, budget in zip(expected, budgets)]


def _expected_row(ids: list[int], budget: int, eos: set[int], stop_at: int | None):
    """A row as every decoder must end it, from the hand loop's greedy ids: at EOS (not kept), at the
    stop, or at its budget."""
    out: list[int] = []
    for token in ids:
        if token in eos:
            return out, "eos"
        out.append(token)
        if len(out) == stop_at:
            return out, "stop"
        if len(out) >= budget:
            break
    return out, "length"


def test_continuous_batching_ends_rows_as_the_cpu_decoder_does(tiny, prompts):
    """Per-row budgets, an EOS id, and a stop that the package's rule gives on the streamed tokens (the row
    is cancelled and asked no more): the rows, reasons and prompt counts of the CPU decoder, each row told
    to ``on_row`` once as it ends; each row's seconds are its share of the call."""
    import time

    budgets = [3, 9, 9, 9, 1, 9]
    reference = hand_loop(tiny.model, prompts[:6], 9, tiny.tokenizer.pad_token_id)
    eos = {reference[2][4]}  # row 2 ends at its fifth token, and any other row that reaches this token
    asked: list[tuple[int, int]] = []

    def stop_row_three_at_two(row, ids):
        asked.append((row, len(ids)))
        return row == 3 and len(ids) == 2

    told: list[tuple[int, str, list[int]]] = []
    started = time.perf_counter()
    got = ContinuousDecoder(tiny.model, eos_ids=eos).generate(
        prompts[:6], budgets, stop_row_three_at_two,
        on_row=lambda row, out: told.append((row, out.finish_reason, list(out.ids))))
    wall = time.perf_counter() - started
    cpu = GreedyDecoder(tiny.model, eos_ids=eos).generate(prompts[:6], budgets, lambda row, ids: row == 3 and len(ids) == 2)
    expected = [_expected_row(ids, budget, eos, 2 if row == 3 else None)
                for row, (ids, budget) in enumerate(zip(reference, budgets))]
    assert [(row.ids, row.finish_reason) for row in got] == expected == [(row.ids, row.finish_reason) for row in cpu]
    assert [got[0].finish_reason, got[2].finish_reason, got[3].finish_reason] == ["length", "eos", "stop"]
    assert len(got[4].ids) == 1
    assert [row.prompt_tokens for row in got] == [len(p) for p in prompts[:6]]
    assert (3, 3) not in asked  # the stopped row was asked nothing more
    assert sorted(told) == sorted((row, out.finish_reason, out.ids) for row, out in enumerate(got))  # each once, as it ended
    assert all(row.seconds > 0 for row in got) and sum(row.seconds for row in got) <= wall


def test_continuous_batching_samples_with_its_seed(tiny, prompts):
    """A temperature samples through the library: one generator for the batch, seeded; the same rows with
    the same seed give the same tokens."""
    decoder = ContinuousDecoder(tiny.model, eos_ids=[])
    sampled = [row.ids for row in decoder.generate(prompts[:4], [8] * 4, temperature=1.0, seed=7)]
    assert [row.ids for row in decoder.generate(prompts[:4], [8] * 4, temperature=1.0, seed=7)] == sampled
    assert sampled != hand_loop(tiny.model, prompts[:4], 8, tiny.tokenizer.pad_token_id)


def test_the_backend_decodes_with_the_cpu_decoder_on_a_cpu(tiny, level_rows):
    """On a CPU: the CPU decoder, torch's thread count set before each batch, both in the model info."""
    from apibank.generate.backends.base import DecodingSettings

    before = sum(tiny.info()["torch_threads_by_batch"].values())
    conversation = build_conversation(level_rows[0], "paper")
    tiny.generate([conversation], [conversation.plain_text], DecodingSettings(max_new_tokens=2))
    info = tiny.info()
    assert isinstance(tiny.decoder, GreedyDecoder) and info["decoder"] == "GreedyDecoder"
    assert sum(info["torch_threads_by_batch"].values()) == before + 1
    assert info["torch_threads_from"] == "cores left free by other processes" and info["torch_threads"] >= 1


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
