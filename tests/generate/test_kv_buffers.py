"""The CPU decoder's buffered cache layers give attention exactly what transformers' own dynamic layers
give, step after step, past the room they were sized with (the buffers then slide back or grow)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer  # noqa: E402

from apibank.generate.decoders.kv_buffers import BufferedLayer, BufferedSlidingLayer  # noqa: E402


def _states(generator, batch, length):
    return (torch.randn(batch, 2, length, 4, generator=generator), torch.randn(batch, 2, length, 4, generator=generator))


@pytest.mark.parametrize("prompt", [3, 7, 20])
@pytest.mark.parametrize("sliding", [False, True])
def test_buffered_layers_match_the_librarys_dynamic_layers(prompt, sliding):
    generator = torch.Generator().manual_seed(prompt)
    window = 8
    reference = DynamicSlidingWindowLayer(sliding_window=window) if sliding else DynamicLayer()
    keys, values = _states(generator, 3, prompt)
    reference.update(keys, values)
    kept = min(prompt, window - 1) if sliding else prompt
    room = 2  # fewer than the steps below: the buffers must slide back or grow
    buffers = [torch.zeros(3, 2, kept + room, 4), torch.zeros(3, 2, kept + room, 4)]
    buffers[0][:, :, :kept], buffers[1][:, :, :kept] = keys[:, :, -kept:], values[:, :, -kept:]
    layer = (BufferedSlidingLayer(window, *buffers, kept, seen=prompt) if sliding
             else BufferedLayer(*buffers, kept))
    batch = 3
    for step, new in enumerate([1, 1, 3, 1, 1, 1, 5, 1]):
        keys, values = _states(generator, batch, new)
        expected = reference.update(keys, values)
        got = layer.update(keys, values)
        assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1]), step
        assert torch.equal(layer.keys, reference.keys) and layer.get_seq_length() == reference.get_seq_length()
        assert layer.get_mask_sizes(1) == reference.get_mask_sizes(1)
        if step == 4:  # rows leave the batch
            keep = torch.tensor([0, 2])
            layer.batch_select_indices(keep)
            reference.batch_select_indices(keep)
            batch = 2
