"""Greedy decoding with a static KV cache and a compiled decode step (CUDA graphs): the GPU's pace.

A decode step of the eager decoder costs tens of milliseconds of Python and kernel launches on a GPU,
more than reading the weights. Here every tensor a step touches has a fixed shape: the batch is
padded to a power of two (copies of its first prompt, whose tokens are thrown away), the cache is a
``StaticCache`` (sliding-window layers included) as long as the prompts plus the longest budget,
rounded up to :data:`CACHE_STEP`, and the attention mask always covers the whole cache. The decode
step is compiled once per (batch, cache length) with ``torch.compile(mode="reduce-overhead")``,
which replays it as a CUDA graph. Finished rows stay in the batch (a step reads the weights whatever
the batch holds); their tokens are ignored.

Compile time is measured apart: the first two steps of every new shape (compilation, then graph
capture) count towards :attr:`CompiledDecoder.compile_seconds`, not towards any row's seconds.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from apibank.errors import UsageError
from apibank.generate.decoders.decoding import OnRow, RowOutput, _cache_argument, left_padded, take_tokens

CACHE_STEP = 256  # cache lengths are rounded up to a multiple of this (fewer shapes, fewer compilations)


def check_compile_device(device: str) -> None:
    """One line before any work where ``--compile`` cannot apply: it needs a CUDA GPU."""
    import torch

    if not str(device).startswith("cuda") or not torch.cuda.is_available():
        raise UsageError(f"--compile needs a CUDA GPU (CUDA graphs); the model would run on {device!r}"
                         f"{'' if torch.cuda.is_available() else ' and torch sees no CUDA device'}: "
                         "run without --compile")


def _bucket(n: int) -> int:
    size = 1
    while size < n:
        size *= 2
    return size


class CompiledDecoder:
    """Greedy decoding of token-id prompts with a static cache; ``compile=False`` runs the same static
    shapes eagerly (what a CPU test can check)."""

    def __init__(self, model, *, eos_ids: Sequence[int], pad_id: int = 0, compile: bool = True) -> None:
        self.model = model
        self.eos_ids = set(eos_ids)
        self.pad_id = pad_id
        self.compile_seconds = 0.0
        self._cache_arg = _cache_argument(model)
        self._caches: dict[tuple[int, int], Any] = {}  # (batch, cache length) -> its StaticCache, reused
        self._warm: set[tuple[int, int]] = set()
        self._step: Callable = self._forward
        if compile:
            import torch

            self._step = torch.compile(self._forward, mode="reduce-overhead", fullgraph=True)

    def _forward(self, tokens, positions, mask, cache):
        output = self.model(input_ids=tokens, position_ids=positions, attention_mask=mask, use_cache=True,
                            **{self._cache_arg: cache})
        return output.logits[:, -1].argmax(-1)

    def _cache(self, batch: int, length: int):
        from transformers import StaticCache

        key = (batch, length)
        cache = self._caches.get(key)
        if cache is None:
            cache = self._caches[key] = StaticCache(config=self.model.config, max_cache_len=length)
        else:
            cache.reset()
        return cache

    def generate(
        self,
        prompts: Sequence[list[int]],
        budgets: Sequence[int],
        should_stop: Callable[[int, list[int]], bool] | None = None,
        *,
        temperature: float = 0.0,
        seed: int | None = None,
        on_row: OnRow | None = None,
    ) -> list[RowOutput]:
        """As :meth:`GreedyDecoder.generate <apibank.generate.decoders.decoding.GreedyDecoder.generate>`,
        greedy only."""
        import torch

        if temperature > 0:
            raise UsageError("--compile decodes greedily; run sampling (a temperature) without --compile")
        n = len(prompts)
        if n == 0:
            return []
        device = self.model.device
        batch = _bucket(n)
        padded = list(prompts) + [prompts[0]] * (batch - n)
        width = max(len(p) for p in prompts)
        length = -(-(width + max(budgets)) // CACHE_STEP) * CACHE_STEP
        outputs = [RowOutput([], "length", len(p), 0, 0.0) for p in prompts]
        with torch.inference_mode():
            started = time.perf_counter()
            cache = self._cache(batch, length)
            ids, prompt_mask, positions = left_padded(padded, self.pad_id, device)
            mask = torch.zeros((batch, length), dtype=torch.long, device=device)
            mask[:, :width] = prompt_mask
            output = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                                logits_to_keep=1, **{self._cache_arg: cache})
            tokens = output.logits[:, -1].argmax(-1)
            host = tokens.tolist()
            share = (time.perf_counter() - started) / n
            for out in outputs:
                out.seconds += share
            positions = torch.tensor([len(p) for p in padded], device=device).unsqueeze(1)
            live = [True] * n
            step = 0
            while True:
                alive = take_tokens(host, range(n), live, outputs, self.eos_ids, should_stop, budgets, on_row)
                if alive == 0:
                    break
                started = time.perf_counter()
                mask[:, width + step] = 1
                tokens = self._step(tokens.unsqueeze(1), positions, mask, cache).clone()
                host = tokens.tolist()  # the step's one device-to-host transfer
                positions = positions + 1
                step += 1
                seconds = time.perf_counter() - started
                shape = (batch, length)
                if shape not in self._warm:  # compilation, then CUDA graph capture
                    self.compile_seconds += seconds
                    if step >= 2:
                        self._warm.add(shape)
                    continue
                for row in range(n):
                    if live[row]:
                        outputs[row].seconds += seconds / alive
        return outputs
