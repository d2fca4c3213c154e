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

    def cut_back(self, end: int) -> None:
        """Keep positions ``[0, end)`` only (the next tokens overwrite the rest in place)."""
        self._end = end
        self._expose()


class BufferedSlidingLayer(DynamicSlidingWindowLayer):
    """A sliding-window layer: keeps the last ``sliding_window - 1`` positions, ``[start, end)`` of the
    buffers, and gives attention those with the new ones, as the library's layer does. With
    ``keeps_history`` the buffers keep every earlier position too (they grow rather than slide), so that the
    layer can be cut back to a prefix."""

    def __init__(self, sliding_window: int, keys, values, end: int, seen: int, *, keeps_history: bool = False) -> None:
        super().__init__(sliding_window=sliding_window)
        self.device, self.is_initialized = keys.device, True
        self._sliding_window_tensor = self._sliding_window_tensor.to(self.device)
        self.cumulative_length = seen  # tokens this layer has been given, what its masks are sized from
        self.keeps_history = keeps_history
        self._keys, self._values, self._start, self._end = keys, values, max(0, end - (sliding_window - 1)), end
        self._expose()

    def cut_back(self, end: int) -> None:
        """Keep the first ``end`` positions only (a layer that keeps its history)."""
        self.cumulative_length, self._start, self._end = end, max(0, end - (self.sliding_window - 1)), end
        self._expose()

    def _expose(self) -> None:
        self.keys = self._keys[:, :, self._start : self._end]
        self.values = self._values[:, :, self._start : self._end]

    def update(self, key_states, value_states, *args: Any, **kwargs: Any):
        new = key_states.shape[-2]
        self.cumulative_length += new
        if not self.keeps_history and self._end + new > self._keys.shape[-2] and self._start > 0:  # slide back
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


def _window(template, index: int) -> int | None:
    """The sliding window of ``template``'s layer ``index``; None for a full-attention layer."""
    layer = template.layers[index] if index < len(template.layers) else None
    return getattr(layer, "sliding_window", None) if isinstance(layer, DynamicSlidingWindowLayer) else None


class BatchCacheBuilder:
    """Stacks the rows' own caches (each a cache of full layers over that row's whole prompt),
    left-padded to ``width``, into a batch cache of the ``model_cache``'s layer kinds with ``room`` positions
    free for the tokens to come. Sliding-window layers take only the window they keep."""

    def __init__(self, template, rows: int, width: int, room: int) -> None:
        self.template, self.rows, self.width, self.room = template, rows, width, room
        self._buffers: list[tuple[Any, Any, int]] = []  # per layer: keys, values, positions kept of the prompt

    def place(self, row: int, row_cache) -> None:
        """Row ``row``: the whole of a cache of that row alone."""
        for index, layer in enumerate(row_cache.layers):
            self._place(row, index, [(layer.keys[0], layer.values[0])])

    def place_packed(self, row: int, cache, prefix: int, nodes) -> None:
        """Row ``row``: the first ``prefix`` positions of a :func:`prompt_cache` then its positions
        ``prefix + nodes`` (a tensor of indices: the row's tokens in a packed prefill)."""
        positions = nodes + prefix
        for index, layer in enumerate(cache.layers):
            keys, values = layer._keys[0], layer._values[0]
            self._place(row, index, [(keys[:, :prefix], values[:, :prefix]),
                                     (keys.index_select(1, positions), values.index_select(1, positions))])

    def _place(self, row: int, index: int, segments) -> None:
        """Layer ``index`` of row ``row``: the last positions of ``segments`` (keys, values of shape
        (heads, length, head dim), in order) that fall in what the layer keeps, left-padded."""
        keys = segments[-1][0]
        if row == 0 and index == len(self._buffers):
            window = _window(self.template, index)
            kept = self.width if window is None else min(self.width, window - 1)
            shape = (self.rows, keys.shape[0], kept + self.room, keys.shape[-1])
            self._buffers.append((keys.new_empty(shape), keys.new_empty(shape), kept))
        buffer_keys, buffer_values, kept = self._buffers[index]
        end = kept
        for keys, values in reversed(segments):  # from the last position back
            length = min(keys.shape[-2], end)
            if length:
                buffer_keys[row, :, end - length : end] = keys[:, keys.shape[-2] - length :]
                buffer_values[row, :, end - length : end] = values[:, values.shape[-2] - length :]
            end -= length
        # the left padding is masked, but must hold numbers: a masked NaN still poisons the weighted sum
        buffer_keys[row, :, :end] = 0
        buffer_values[row, :, :end] = 0

    def build(self):
        cache = self.template
        layers = []
        for index, (keys, values, kept) in enumerate(self._buffers):
            window = _window(self.template, index)
            layers.append(BufferedLayer(keys, values, kept) if window is None
                          else BufferedSlidingLayer(window, keys, values, kept, seen=self.width))
        cache.layers = layers
        return cache


def prompt_cache(template, cache):
    """One prompt's ``cache`` (full layers over its whole prompt, as a plain dynamic cache leaves it) as layers
    of ``template``'s kinds over the same tensors that keep every position: a later prompt sharing a prefix
    cuts it back (:func:`cut_back`) and writes its new tokens in place, and its sliding-window layers attend
    to their window only."""
    layers = []
    for index, layer in enumerate(cache.layers):
        window, end = _window(template, index), layer.keys.shape[-2]
        layers.append(BufferedLayer(layer.keys, layer.values, end) if window is None
                      else BufferedSlidingLayer(window, layer.keys, layer.values, end, seen=end, keeps_history=True))
    template.layers = layers
    return template


def cut_back(cache, end: int) -> None:
    """A :func:`prompt_cache` back to its first ``end`` positions."""
    for layer in cache.layers:
        layer.cut_back(end)
