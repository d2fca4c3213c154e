"""Prompts sharing a prefix, prefilled together: the prefix tree runs each shared token once, the masks let a
token see exactly what it sees in its prompt alone (sliding windows included), and the CPU decoder gives the
hand loop's tokens with it, for both attention implementations it makes masks for; a model that does not take
the masks is found by the probe and prefilled one prompt at a time."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from apibank.generate.decoders import packed_prefill  # noqa: E402
from apibank.generate.decoders.decoding import GreedyDecoder, hand_loop  # noqa: E402
from apibank.generate.decoders.packed_prefill import attention_masks, common_prefix, pack  # noqa: E402


def test_the_tree_runs_each_shared_token_once():
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 4, 6, 7], [1, 2, 3, 8], [1, 2, 3, 4, 6, 9]]
    prefix = common_prefix(prompts)
    assert prefix == 3
    (rows, tree), = pack(prompts, prefix)
    assert rows == [0, 1, 2, 3]
    assert tree.tokens == [4, 5, 6, 7, 8, 9]  # 4 and 6 once, though three and two prompts have them
    assert tree.positions == [3, 4, 4, 5, 3, 5]
    assert tree.parents == [-1, 0, 0, 2, -1, 2]
    assert tree.paths == [[0, 1], [0, 2, 3], [4], [0, 2, 5]]
    assert [tree.tokens[n] for n in tree.paths[3]] == prompts[3][prefix:]


def test_groups_stay_within_the_limit():
    prompts = [[7] * 3 + [row] * 5 for row in range(5)]
    groups = pack(prompts, 3, limit=11)
    assert [rows for rows, _ in groups] == [[0, 1], [2, 3], [4]]
    assert all(len(tree.tokens) <= 11 for _, tree in groups)
    assert pack([[1] * 30, [1] * 20 + [2] * 10], 20, limit=5)[0][0] == [0]  # a prompt over the limit: alone


def test_common_prefix_leaves_every_prompt_a_token():
    assert common_prefix([[1, 2, 3], [1, 2, 3, 4]]) == 2
    assert common_prefix([[1, 2], [3, 4]]) == 0


@pytest.mark.parametrize("window", [None, 3])
def test_masks_show_a_token_its_prompt_only(window):
    prompts = [[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7], [1, 2, 3, 8, 9, 10]]
    prefix = 3
    (_, tree), = pack(prompts, prefix)
    kind = "sliding_attention" if window else "full_attention"
    mask = attention_masks(tree, {kind: window}, "sdpa", torch.float32, "cpu")[kind][0, 0]
    start = 0 if window is None else prefix - (window - 1)
    keys = [("prefix", p) for p in range(start, prefix)] + [("node", n) for n in range(len(tree.tokens))]
    for node in range(len(tree.tokens)):
        row = next(r for r, path in enumerate(tree.paths) if node in path)
        prompt_positions = set(range(prefix)) | {tree.positions[n] for n in tree.paths[row][: tree.paths[row].index(node) + 1]}
        for column, (kind_of_key, key) in enumerate(keys):
            position = key if kind_of_key == "prefix" else tree.positions[key]
            in_prompt = position in prompt_positions and (kind_of_key == "prefix" or key in tree.paths[row])
            visible = in_prompt and position <= tree.positions[node] and (
                window is None or tree.positions[node] - position < window)
            assert bool(mask[node, column]) == visible, (node, column)
    additive = attention_masks(tree, {kind: window}, "eager", torch.float32, "cpu")[kind]
    assert torch.equal(additive == 0, mask[None, None])


def _prompts_sharing_a_long_prefix():
    """A prefix longer than the tiny Gemma's window (16), tails of several lengths, two sharing more."""
    generator = torch.Generator().manual_seed(3)
    prefix = torch.randint(3, 300, (40,), generator=generator).tolist()
    tails = [torch.randint(3, 300, (n,), generator=generator).tolist() for n in (9, 3, 25, 1)]
    prompts = [prefix + tail for tail in tails]
    prompts.append(prompts[2][:52] + [5, 6])  # shares 12 more tokens with the third
    return prompts


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
@pytest.mark.parametrize("limit", [None, 20])
def test_the_decoder_prefills_together_and_gives_the_hand_loops_tokens(sliding_gemma, implementation, limit,
                                                                      monkeypatch):
    model = sliding_gemma
    model.config._attn_implementation = implementation
    try:
        if limit:
            monkeypatch.setattr(packed_prefill, "PACKED_TOKEN_LIMIT", limit)
        prompts = _prompts_sharing_a_long_prefix()
        decoder = GreedyDecoder(model, eos_ids=[])
        assert decoder._packing == {"full_attention": None, "sliding_attention": 16}
        out = decoder.generate(prompts, [10] * len(prompts))
        assert [row.ids for row in out] == hand_loop(model, prompts, 10, 0)
        assert [row.reused_prompt_tokens for row in out] == [40] * len(prompts)
        # then one prompt alone reuses what the batch left
        again = decoder.generate([prompts[3]], [4])[0]
        assert again.reused_prompt_tokens == 40 and again.ids == hand_loop(model, [prompts[3]], 4, 0)[0]
    finally:
        model.config._attn_implementation = "sdpa"


def test_a_model_that_ignores_the_masks_is_prefilled_one_prompt_at_a_time(sliding_gemma, monkeypatch):
    monkeypatch.setattr(packed_prefill, "mask_argument", lambda masks: None)  # the model makes its own causal mask
    decoder = GreedyDecoder(sliding_gemma, eos_ids=[])
    assert decoder._packing is None
    prompts = _prompts_sharing_a_long_prefix()
    out = decoder.generate(prompts, [6] * len(prompts))
    assert [row.ids for row in out] == hand_loop(sliding_gemma, prompts, 6, 0)
    assert [row.reused_prompt_tokens for row in out] == [0, 40, 40, 40, 40]  # each from the one before


def test_no_packing_for_attention_it_makes_no_masks_for(sliding_gemma):
    sliding_gemma.config._attn_implementation = "flex_attention"
    try:
        assert packed_prefill.layer_kinds(sliding_gemma) is None
    finally:
        sliding_gemma.config._attn_implementation = "sdpa"


def test_the_tiny_llama_packs(tiny_backend):
    assert tiny_backend.decoder._packing == {"full_attention": None}
