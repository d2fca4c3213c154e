"""Greedy decoding over a causal LM's forward pass, close to the hardware floor.

* Each prompt is prefilled on its own (no padding work) and only the last position's logits are
  computed (``logits_to_keep=1``); when consecutive prompts share a token prefix (rows of one
  dialogue), the KV cache of that prefix is kept and only the new tokens are run.
* The batch then decodes together: the rows' caches are stacked, left-padded, into the model's own
  cache type (sliding-window layers keep only their window).
* Each row stops on its own (EOS, a stop condition on its generated text, or its token budget);
  finished rows are dropped from the batch once half of it has finished.
* Greedy by default; with a ``temperature``, each row samples with its own seeded generator, so that
  its tokens do not depend on the rows batched with it.

This needs transformers 5's cache layers (``Cache.layers``); it touches nothing else of the model.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class RowOutput:
    ids: list[int]  # generated token ids (an EOS token that ended the row excluded)
    finish_reason: str  # "eos", "stop" or "length"
    prompt_tokens: int
    reused_prompt_tokens: int  # prompt tokens whose KV came from the previous prompt's cache
    seconds: float  # prefill time plus this row's share of each decode step it took part in


def _cache_argument(model) -> str:
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


class GreedyDecoder:
    """Greedy decoding of token-id prompts with ``model``; keeps the last prompt's cache for reuse."""

    def __init__(self, model, *, eos_ids: Sequence[int], reuse_prefix: bool = True) -> None:
        self.model = model
        self.eos_ids = set(eos_ids)
        self.reuse_prefix = reuse_prefix
        self._cache_arg = _cache_argument(model)
        self._kept: tuple[Any, list[int]] | None = None  # (DynamicCache of a prompt, its ids)

    # ---------------------------------------------------------------------------- prefill
    def _prefill(self, ids: list[int]):
        """(cache after the prompt, next token, reused prompt tokens) for one prompt."""
        import torch
        from transformers import DynamicCache

        reused = 0
        cache = None
        if self.reuse_prefix and self._kept is not None:
            kept_cache, kept_ids = self._kept
            limit = min(len(kept_ids), len(ids) - 1)
            while reused < limit and kept_ids[reused] == ids[reused]:
                reused += 1
            if reused:
                cache = kept_cache
                for layer in cache.layers:
                    layer.keys = layer.keys[..., :reused, :]
                    layer.values = layer.values[..., :reused, :]
        if cache is None:
            reused = 0
            cache = DynamicCache()  # full layers, so that a prefix can be cut back (sliding masks still apply)
        device = self.model.device
        new = torch.tensor([ids[reused:]], device=device)
        positions = torch.arange(reused, len(ids), device=device).unsqueeze(0)
        output = self.model(input_ids=new, position_ids=positions, use_cache=True, logits_to_keep=1,
                            **{self._cache_arg: cache})
        self._kept = (cache, list(ids)) if self.reuse_prefix else None
        return cache, output.logits[0, -1], reused

    # ----------------------------------------------------------------------------- decode
    def generate(
        self,
        prompts: Sequence[list[int]],
        budgets: Sequence[int],
        should_stop: Callable[[int, list[int]], bool] | None = None,
        *,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> list[RowOutput]:
        """One :class:`RowOutput` per prompt. ``should_stop(row, ids)`` is asked after each new token.
        With ``temperature`` > 0, tokens are sampled, each row's generator seeded with ``seed``."""
        import torch

        n = len(prompts)
        if n == 0:
            return []
        device = self.model.device
        generators = [_generator(device, seed) for _ in prompts] if temperature > 0 else None

        def pick(logits, row: int) -> int:
            if generators is None:
                return int(logits.argmax())
            probabilities = torch.softmax(logits.float() / temperature, dim=-1)
            return int(torch.multinomial(probabilities, 1, generator=generators[row]))
        outputs = [RowOutput([], "length", len(p), 0, 0.0) for p in prompts]
        width = max(len(p) for p in prompts)
        steps = max(budgets)
        layers: list[tuple[Any, Any]] = []  # per layer, the batch's keys and values, left-padded
        first = []
        with torch.inference_mode():
            for row, ids in enumerate(prompts):
                started = time.perf_counter()
                cache, logits, reused = self._prefill(list(ids))
                first.append(pick(logits, row))
                outputs[row].reused_prompt_tokens = reused
                pad = width - len(ids)
                for index, layer in enumerate(cache.layers):
                    keys, values = layer.keys, layer.values
                    if row == 0:
                        layers.append((keys.new_zeros((n, keys.shape[1], width, keys.shape[3])),
                                       values.new_zeros((n, values.shape[1], width, values.shape[3]))))
                    layers[index][0][row, :, pad:width] = keys[0]
                    layers[index][1][row, :, pad:width] = values[0]
                outputs[row].seconds += time.perf_counter() - started

            from transformers import DynamicCache

            # The model's own cache type for the batch (sliding-window layers keep only their window).
            try:
                batch_cache = DynamicCache(config=self.model.config)
            except Exception:  # a config the cache cannot read: plain full layers
                batch_cache = DynamicCache()
            for index, (keys, values) in enumerate(layers):
                batch_cache.update(keys, values, index)
            del layers
            mask = torch.zeros((n, width + steps), dtype=torch.long, device=device)
            for row, ids in enumerate(prompts):
                mask[row, width - len(ids) : width] = 1
            positions = torch.tensor([len(p) for p in prompts], device=device)
            tokens = torch.tensor(first, device=device)
            members = list(range(n))  # batch position -> row
            live = [True] * n
            length = width
            while True:
                for position, row in enumerate(members):
                    if not live[position]:
                        continue
                    token = int(tokens[position])
                    out = outputs[row]
                    if token in self.eos_ids:
                        out.finish_reason, live[position] = "eos", False
                        continue
                    out.ids.append(token)
                    if should_stop is not None and should_stop(row, out.ids):
                        out.finish_reason, live[position] = "stop", False
                    elif len(out.ids) >= budgets[row]:
                        live[position] = False
                alive = sum(live)
                if alive == 0:
                    break
                if alive <= len(members) // 2:
                    keep = torch.tensor([p for p, flag in enumerate(live) if flag], device=device)
                    batch_cache.batch_select_indices(keep)
                    mask, positions, tokens = mask.index_select(0, keep), positions.index_select(0, keep), tokens[keep]
                    members = [members[p] for p in keep.tolist()]
                    live = [True] * len(members)
                started = time.perf_counter()
                mask[:, length] = 1
                output = self.model(input_ids=tokens.unsqueeze(1), position_ids=positions.unsqueeze(1),
                                    attention_mask=mask[:, : length + 1], use_cache=True,
                                    **{self._cache_arg: batch_cache})
                if generators is None:
                    tokens = output.logits[:, -1].argmax(-1)
                else:
                    picked = [pick(output.logits[position, -1], row) for position, row in enumerate(members)]
                    tokens = torch.tensor(picked, device=device)
                positions = positions + 1
                length += 1
                share = (time.perf_counter() - started) / alive
                for position, row in enumerate(members):
                    if live[position]:
                        outputs[row].seconds += share
        return outputs


def _generator(device, seed: int | None):
    import torch

    generator = torch.Generator(device=device)
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(seed)
    return generator


def hand_loop(model, prompts: Sequence[list[int]], steps: int, pad_id: int) -> list[list[int]]:
    """The floor: left-padded batched prefill, then ``steps`` greedy steps with the model's own KV cache,
    nothing else (no stop checks, no early exit, no reuse). Returns the generated ids per prompt."""
    import torch

    device = model.device
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, device=device)
        mask[row, width - len(prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    generated = []
    cache_arg = _cache_argument(model)
    with torch.inference_mode():
        output = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True, logits_to_keep=1)
        cache = getattr(output, "cache", None) or output.past_key_values
        token = output.logits[:, -1].argmax(-1)
        position = positions[:, -1]
        for _ in range(steps - 1):
            generated.append(token)
            mask = torch.cat([mask, mask.new_ones((len(prompts), 1))], dim=1)
            position = position + 1
            output = model(input_ids=token.unsqueeze(1), attention_mask=mask, position_ids=position.unsqueeze(1),
                           use_cache=True, **{cache_arg: cache})
            token = output.logits[:, -1].argmax(-1)
        generated.append(token)
    return torch.stack(generated, dim=1).tolist()
