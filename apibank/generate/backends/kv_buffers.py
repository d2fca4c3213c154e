"""A batch's KV cache in buffers sized for the whole generation, for the CPU decoder.

transformers' dynamic cache layers concatenate at every decode step: each step copies every layer's
whole cache (a batch of 12 agent prompts of 2,150 tokens: about 350 MB a step for Gemma 3 270M). These
layers are the library's own dynamic layers (same masks, same sliding-window bookkeeping, so the model
attends to exactly the same keys) whose keys and values are views into buffers allocated once, with room
for the tokens still to come: a step writes one position in place.
"""

from __future__ import annotations

from typing import Any

from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer


def _grown(buffer, end: int, needed: int):
    """``buffer`` with room for ``needed`` more positions after ``end`` (a copy only when out of room)."""
    import torch

    if end + needed <= buffer.shape[-2]:
        return buffer
    shape = list(buffer.shape)
    shape[-2] = max(2 * shape[-2], end + needed)
    grown = torch.empty(shape, dtype=buffer.dtype, device=buffer.device)
    grown[:, :, :end] = buffer[:, :, :end]
    return grown


class BufferedLayer(DynamicLayer):
    """A full-attention layer: positions ``[0, end)`` of the buffers are the cache."""

    def __init__(self, keys, values, end: int) -> None:
        super().__init__()
        self.device, self.is_initialized = keys.device, True
        self._keys, self._values, self._end = keys, values, end
        self._expose()

    def _expose(self) -> None:
        self.keys, self.values = self._keys[:, :, : self._end], self._values[:, :, : self._end]

    def update(self, key_states, value_states, *args: Any, **kwargs: Any):
        new = key_states.shape[-2]
        self._keys, self._values = _grown(self._keys, self._end, new), _grown(self._values, self._end, new)
        self._keys[:, :, self._end : self._end + new] = key_states
        self._values[:, :, self._end : self._end + new] = value_states
        self._end += new
        self._expose()
        return self.keys, self.values

    def batch_select_indices(self, indices) -> None:
        self._keys, self._values = self._keys[indices], self._values[indices]
        self._expose()


class BufferedSlidingLayer(DynamicSlidingWindowLayer):
    """A sliding-window layer: keeps the last ``sliding_window - 1`` positions, ``[start, end)`` of the
    buffers, and gives attention those with the new ones, as the library's layer does."""

    def __init__(self, sliding_window: int, keys, values, end: int, seen: int) -> None:
        super().__init__(sliding_window=sliding_window)
        self.device, self.is_initialized = keys.device, True
        self._sliding_window_tensor = self._sliding_window_tensor.to(self.device)
        self.cumulative_length = seen  # tokens this layer has been given, what its masks are sized from
        self._keys, self._values, self._start, self._end = keys, values, max(0, end - (sliding_window - 1)), end
        self._expose()

    def _expose(self) -> None:
        self.keys = self._keys[:, :, self._start : self._end]
        self.values = self._values[:, :, self._start : self._end]

    def update(self, key_states, value_states, *args: Any, **kwargs: Any):
        new = key_states.shape[-2]
        self.cumulative_length += new
        if self._end + new > self._keys.shape[-2] and self._start > 0:  # slide the window back to the start
            kept = self._end - self._start
            self._keys[:, :, :kept] = self._keys[:, :, self._start : self._end].clone()
            self._values[:, :, :kept] = self._values[:, :, self._start : self._end].clone()
            self._start, self._end = 0, kept
        self._keys, self._values = _grown(self._keys, self._end, new), _grown(self._values, self._end, new)
        begin = self._start
        self._keys[:, :, self._end : self._end + new] = key_states
        self._values[:, :, self._end : self._end + new] = value_states
        self._end += new
        self._start = max(begin, self._end - (self.sliding_window - 1))
        self._expose()
        return self._keys[:, :, begin : self._end], self._values[:, :, begin : self._end]

    def batch_select_indices(self, indices) -> None:
        self._keys, self._values = self._keys[indices], self._values[indices]
        self._expose()


class BatchCacheBuilder:
    """Stacks the rows' own caches (each a cache of full layers over that row's whole prompt),
    left-padded to ``width``, into a batch cache of the ``model_cache``'s layer kinds with ``room`` positions
    free for the tokens to come. Sliding-window layers take only the window they keep."""

    def __init__(self, template, rows: int, width: int, room: int) -> None:
        self.template, self.rows, self.width, self.room = template, rows, width, room
        self._buffers: list[tuple[Any, Any, int]] = []  # per layer: keys, values, positions kept of the prompt

    def _window(self, index: int) -> int | None:
        layer = self.template.layers[index] if index < len(self.template.layers) else None
        return getattr(layer, "sliding_window", None) if isinstance(layer, DynamicSlidingWindowLayer) else None

    def place(self, row: int, row_cache) -> None:
        for index, layer in enumerate(row_cache.layers):
            keys, values = layer.keys[0], layer.values[0]  # (heads, prompt length, head dim)
            if row == 0:
                window = self._window(index)
                kept = self.width if window is None else min(self.width, window - 1)
                shape = (self.rows, keys.shape[0], kept + self.room, keys.shape[-1])
                self._buffers.append((keys.new_zeros(shape), values.new_zeros(shape), kept))
            buffer_keys, buffer_values, kept = self._buffers[index]
            length = min(keys.shape[-2], kept)  # the row's last positions that fall in what is kept
            buffer_keys[row, :, kept - length : kept] = keys[:, -length:]
            buffer_values[row, :, kept - length : kept] = values[:, -length:]

    def build(self):
        cache = self.template
        layers = []
        for index, (keys, values, kept) in enumerate(self._buffers):
            window = self._window(index)
            layers.append(BufferedLayer(keys, values, kept) if window is None
                          else BufferedSlidingLayer(window, keys, values, kept, seen=self.width))
        cache.layers = layers
        return cache
