"""The transformers backend's decoder on a CPU: greedy decoding over the model's forward pass.

On a CPU every prompt token costs compute, so the prefill does as few as it can, with no padding work:
prompts of one call that share a prefix run their new tokens together in one pass over that prefix's
cache, each shared token once (:mod:`~apibank.generate.decoders.packed_prefill`); a prefix shared with
the previous call's prompt is reused from its cache, whose buffers keep every position so that a later
prompt cuts it back and writes in place. The output layer runs once over every row's last position. The
rows' caches are then stacked, left-padded, into buffers sized for the whole generation
(:mod:`~apibank.generate.decoders.kv_buffers`), where each decode step writes its token in place; the
linear layers run in the form measured faster for a few rows
(:mod:`~apibank.generate.decoders.linear_products`).

Off the CPU the backend decodes with transformers' continuous batching instead
(:mod:`~apibank.generate.decoders.continuous`), which on a CPU took 1.5 to 2.6 times this decoder's time
(benchmarks/README.md): for models with sliding-window layers it reuses no prompt prefix, and its
packed prefill and paged cache reads cost more per token here.

* Each decode step picks every row's token and copies them to the host at once.
* Each row stops on its own (EOS, ``should_stop`` on its generated ids, or its token budget), and is
  handed to ``on_row`` then, so that the caller can save it before the batch ends.
  Finished rows are dropped from the batch (every layer's cache compacted once) when half of it has
  finished: each row costs compute.
* Greedy by default; with a ``temperature``, each row samples with its own seeded generator, so that
  its tokens do not depend on the rows batched with it.

This needs transformers 5's cache layers (``Cache.layers``) and, to prefill prompts together, a model
that takes prepared attention masks (checked on a probe when the decoder is made).
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


# Told each row the moment it ends (its seconds complete), so that it can be saved before the batch ends.
OnRow = Callable[[int, RowOutput], None]


def _cache_argument(model) -> str:
    parameters = inspect.signature(model.forward).parameters
    return "cache" if "cache" in parameters else "past_key_values"


def model_cache(model):
    """An empty cache of the model's own type (sliding-window layers keep only their window)."""
    from transformers import DynamicCache

    try:
        return DynamicCache(config=model.config)
    except Exception:  # a config the cache cannot read: plain full layers
        return DynamicCache()


def left_padded(prompts: Sequence[list[int]], pad_id: int, device):
    """(ids, attention mask, position ids) of ``prompts`` left-padded to the longest."""
    import torch

    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
        mask[row, width - len(prompt) :] = 1
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


def add_token(token: int, out: RowOutput, row: int, eos_ids: set[int] | Sequence[int],
              should_stop: Callable[[int, list[int]], bool] | None) -> bool:
    """Row ``row``'s next token added to ``out``: an EOS ends the row and is not kept; ``should_stop`` is
    asked after every kept token. True when the row ends here (its ``finish_reason`` then set)."""
    if token in eos_ids:
        out.finish_reason = "eos"
        return True
    out.ids.append(token)
    if should_stop is not None and should_stop(row, out.ids):
        out.finish_reason = "stop"
        return True
    return False


def take_tokens(host: Sequence[int], members: Sequence[int], live: list[bool], outputs: Sequence[RowOutput],
                eos_ids: set[int] | Sequence[int], should_stop: Callable[[int, list[int]], bool] | None,
                budgets: Sequence[int], on_row: OnRow | None = None) -> int:
    """One decode step's tokens (``host[position]`` for row ``members[position]``) added to the live rows'
    outputs (:func:`add_token`); a row also ends at its budget. A row that ends is handed to ``on_row``.
    Returns how many rows stay live."""
    for position, row in enumerate(members):
        if not live[position]:
            continue
        out = outputs[row]
        if add_token(host[position], out, row, eos_ids, should_stop) or len(out.ids) >= budgets[row]:
            live[position] = False
            if on_row is not None:
                on_row(row, out)
    return sum(live)


class GreedyDecoder:
    """Greedy decoding of token-id prompts with ``model``; keeps the last prompt's cache for reuse."""

    compact_at = 0.5  # drop finished rows once this share of the batch is left

    def __init__(self, model, *, eos_ids: Sequence[int], reuse_prefix: bool = True) -> None:
        self.model = model
        self.eos_ids = set(eos_ids)
        self.reuse_prefix = reuse_prefix
        self._cache_arg = _cache_argument(model)
        self._kept: tuple[Any, list[int]] | None = None  # (prompt cache of a prompt, its ids)
        from apibank.generate.decoders.linear_products import choose_linear_products

        self.linear_products = choose_linear_products(model)  # measured on this CPU: see linear_products
        self._body = _body_before_output_layer(model)
        self._packing = self._packing_kinds() if reuse_prefix else None

    @property
    def packs_prompts(self) -> bool:
        """Whether prompts sharing a prefix are prefilled together (the model took the masks on the probe)."""
        return self._packing is not None

    # ---------------------------------------------------------------------------- prefill
    def _prefill_one(self, ids: list[int], *, last: bool = True):
        """(cache after the prompt, what the output layer takes for its last position, reused prompt tokens)
        for one prompt: the last position's hidden state where the output layer is applied apart
        (``self._body``), else its logits. ``last=False``: the cache only (nothing run if it holds the prompt)."""
        import torch
        from transformers import DynamicCache

        from apibank.generate.decoders.kv_buffers import cut_back, prompt_cache

        reused = 0
        cache = None
        if self.reuse_prefix and self._kept is not None:
            kept_cache, kept_ids = self._kept
            limit = min(len(kept_ids), len(ids) - (1 if last else 0))
            while reused < limit and kept_ids[reused] == ids[reused]:
                reused += 1
            if reused:
                cache = kept_cache
                cut_back(cache, reused)
        if cache is None:
            reused = 0
            cache = DynamicCache()  # full layers, so that a prefix can be cut back (sliding masks still apply)
        elif reused == len(ids):  # the cache holds the whole prompt (``last=False`` only)
            self._kept = (cache, list(ids))
            return cache, None, reused
        device = self.model.device
        new = torch.tensor([ids[reused:]], device=device)
        positions = torch.arange(reused, len(ids), device=device).unsqueeze(0)
        last = self._forward_to_ends(new, positions, cache, torch.tensor([len(ids) - reused - 1], device=device))[0]
        if self.reuse_prefix:
            if not reused:
                cache = prompt_cache(model_cache(self.model), cache)
            self._kept = (cache, list(ids))
        return cache, last, reused

    def _prefill_rows(self, prompts, outputs, pick, room: int) -> tuple[Any, list[int]]:
        """The prompts' caches stacked, left-padded, into one batch cache with ``room`` positions free for the
        tokens to come, and each row's first token: (cache, first tokens). Prompts sharing a prefix run
        together over its cache (:mod:`~apibank.generate.decoders.packed_prefill`), others one by one reusing
        the previous prompt's cache; the output layer runs once over every row's last position."""
        from apibank.generate.decoders.kv_buffers import BatchCacheBuilder
        from apibank.generate.decoders.packed_prefill import common_prefix, pack

        batch = BatchCacheBuilder(model_cache(self.model), len(prompts), max(len(p) for p in prompts), room)
        lasts: list[Any] = [None] * len(prompts)
        prefix = common_prefix(prompts) if self._packing is not None and len(prompts) > 1 else 0
        groups = pack(prompts, prefix) if prefix else [([row], None) for row in range(len(prompts))]
        for rows, tree in groups:
            started = time.perf_counter()
            if tree is None or len(rows) == 1:
                row = rows[0]
                cache, lasts[row], outputs[row].reused_prompt_tokens = self._prefill_one(list(prompts[row]))
                batch.place(row, cache)
            else:
                for row, last in zip(rows, self._prefill_packed(prompts[rows[0]][:prefix], tree, batch, rows)):
                    lasts[row] = last
                    outputs[row].reused_prompt_tokens = prefix
            share = (time.perf_counter() - started) / len(rows)
            for row in rows:
                outputs[row].seconds += share
        started = time.perf_counter()
        logits = self._logits(lasts)
        first = [pick(logits[row], row) for row in range(len(prompts))]
        share = (time.perf_counter() - started) / len(prompts)
        for out in outputs:
            out.seconds += share
        return batch.build(), first

    def _forward_to_ends(self, ids, positions, cache, ends, **arguments):
        """One forward pass of one sequence on ``cache``; what the output layer takes at positions ``ends``:
        hidden states where the output layer is applied apart (``self._body``), else logits."""
        arguments.update(input_ids=ids, position_ids=positions, use_cache=True, **{self._cache_arg: cache})
        if self._body is not None:
            return self._body(**arguments).last_hidden_state[0].index_select(0, ends)
        return self.model(**arguments, logits_to_keep=ends).logits[0]

    def _logits(self, lasts: list[Any]):
        """The rows' next-token logits from what their prefills left (hidden states or logits)."""
        import torch

        stacked = torch.stack(lasts)
        return self.model.get_output_embeddings()(stacked) if self._body is not None else stacked

    def _prefill_packed(self, prefix_ids: list[int], tree, batch, rows: list[int]) -> list[Any]:
        """One forward pass over the tree's tokens (rows ``rows``) on the cache of ``prefix_ids``; each row
        placed in ``batch``; returns what the output layer takes for each row's last position."""
        import torch

        from apibank.generate.decoders.kv_buffers import cut_back
        from apibank.generate.decoders.packed_prefill import attention_masks, mask_argument

        cache, _, _ = self._prefill_one(prefix_ids, last=False)
        cut_back(cache, len(prefix_ids))
        device = self.model.device
        masks = attention_masks(tree, self._packing, self.model.config._attn_implementation, self.model.dtype, device)
        ids = torch.tensor([tree.tokens], device=device)
        positions = torch.tensor([tree.positions], device=device)
        ends = torch.tensor([path[-1] for path in tree.paths], device=device)
        lasts = self._forward_to_ends(ids, positions, cache, ends, attention_mask=mask_argument(masks))
        for row, path in zip(rows, tree.paths):
            batch.place_packed(row, cache, len(prefix_ids), torch.tensor(path, device=device))
        self._kept = (cache, list(prefix_ids))  # past the prefix, the buffers now hold the tree
        return list(lasts)

    def _packing_kinds(self) -> dict[str, int | None] | None:
        """The layer kinds for packed prefills (:func:`~apibank.generate.decoders.packed_prefill.layer_kinds`)
        where the model gives, on a probe, the logits it gives each prompt alone; None otherwise."""
        import torch

        from apibank.generate.decoders.kv_buffers import BatchCacheBuilder
        from apibank.generate.decoders.packed_prefill import common_prefix, layer_kinds, pack

        kinds = layer_kinds(self.model)
        if kinds is None:
            return None
        vocabulary = self.model.config.get_text_config().vocab_size
        prompts = [[(3 + i) % vocabulary for i in ids] for ids in ([0, 1, 2, 3, 4], [0, 1, 2, 5, 6, 7], [0, 1, 2, 5, 8])]
        self._packing = kinds
        try:
            with torch.inference_mode():
                alone = [self.model(input_ids=torch.tensor([p], device=self.model.device), use_cache=False)
                         .logits[0, -1] for p in prompts]
                prefix = common_prefix(prompts)
                (rows, tree), = pack(prompts, prefix)
                batch = BatchCacheBuilder(model_cache(self.model), len(prompts), max(map(len, prompts)), 1)
                together = self._logits(self._prefill_packed(prompts[0][:prefix], tree, batch, rows))
        except Exception:  # a model that does not take the masks
            return None
        finally:
            self._kept = None
        agree = all(torch.allclose(a, b, rtol=1e-3, atol=1e-3) for a, b in zip(alone, together))
        return kinds if agree else None

    # ----------------------------------------------------------------------------- decode
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
        """One :class:`RowOutput` per prompt. ``should_stop(row, ids)`` is asked after each new token;
        ``on_row(row, output)`` is told each row as it ends. With ``temperature`` > 0, tokens are sampled,
        each row's generator seeded with ``seed``."""
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
        with torch.inference_mode():
            batch_cache, first = self._prefill_rows(prompts, outputs, pick, steps)
            mask = torch.zeros((n, width + steps), dtype=torch.long)
            for row, ids in enumerate(prompts):
                mask[row, width - len(ids) : width] = 1
            mask = mask.to(device)
            positions = torch.tensor([len(p) for p in prompts], device=device)
            host = first  # this step's tokens on the host, one per batch position
            tokens = torch.tensor(first, device=device)
            members = list(range(n))  # batch position -> row
            live = [True] * n
            length = width
            while True:
                alive = take_tokens(host, members, live, outputs, self.eos_ids, should_stop, budgets, on_row)
                if alive == 0:
                    break
                if alive <= len(members) * self.compact_at:
                    kept = [p for p, flag in enumerate(live) if flag]
                    keep = torch.tensor(kept, device=device)
                    batch_cache.batch_select_indices(keep)
                    mask, positions, tokens = mask.index_select(0, keep), positions.index_select(0, keep), tokens[keep]
                    members = [members[p] for p in kept]
                    live = [True] * len(members)
                started = time.perf_counter()
                mask[:, length] = 1
                output = self.model(input_ids=tokens.unsqueeze(1), position_ids=positions.unsqueeze(1),
                                    attention_mask=mask[:, : length + 1], use_cache=True,
                                    **{self._cache_arg: batch_cache})
                if generators is None:
                    tokens = output.logits[:, -1].argmax(-1)
                    host = tokens.tolist()  # the step's one device-to-host transfer
                else:
                    host = [pick(output.logits[position, -1], row) for position, row in enumerate(members)]
                    tokens = torch.tensor(host, device=device)
                positions = positions + 1
                length += 1
                share = (time.perf_counter() - started) / alive
                for position, row in enumerate(members):
                    if live[position]:
                        outputs[row].seconds += share
        return outputs


def _body_before_output_layer(model):
    """The model's layers before its output layer, where its logits are exactly that layer applied to their
    last hidden state (checked on a probe: no scaling or capping after it); None otherwise. Prompts then run
    through the body one by one and the output layer once over all their last positions: it is the largest
    weight of a small model, and on a CPU reading it costs as much for one row as for a few."""
    import torch

    body = model.get_decoder() if hasattr(model, "get_decoder") else None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if body is None or head is None or body is model:
        return None
    probe = torch.arange(1, 9, device=model.device).unsqueeze(0) % model.config.get_text_config().vocab_size
    try:
        with torch.inference_mode():
            whole = model(input_ids=probe, use_cache=False, logits_to_keep=1).logits[0, -1]
            parts = head(body(input_ids=probe, use_cache=False).last_hidden_state[:, -1])[0]
    except Exception:  # a model whose parts do not run alone
        return None
    return body if whole.shape == parts.shape and torch.equal(whole, parts) else None


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

    ids, mask, positions = left_padded(prompts, pad_id, model.device)
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
