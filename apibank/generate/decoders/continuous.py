"""Decoding through transformers' continuous batching (``model.init_continuous_batching``): the transformers
backend's decoder off the CPU (a GPU, eager; ``--compile`` has its own).

The library runs the model in a background thread: paged KV cache, prompts packed without padding, rows
joining and leaving the batch step by step, each request with its own token budget and EOS ids. Every
request streams its tokens; the package's stop rule (``should_stop``) is asked after each one here, and a
request it stops is cancelled. A row's ids end at the token the rule stopped at, so a step the library
runs before it sees the cancel adds nothing.

Not on a CPU: there it took 1.5 to 2.6 times the time of the package's CPU decoder
(:class:`~apibank.generate.decoders.decoding.GreedyDecoder`) on the same rows, with the same tokens
(benchmarks/README.md): it cannot reuse a dialogue's shared prompt prefix for models with sliding-window
layers (Gemma 3), and its packed prefill and paged cache reads cost more per token there.

Sampling (a temperature) is the library's: one torch generator for the whole batch, seeded with ``seed``
when given, so a row's draws depend on the rows decoded beside it and on when stopped rows leave the
batch. Greedy tokens do not depend on either.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Sequence

from apibank.generate.decoders.decoding import OnRow, RowOutput, add_token


class ContinuousDecoder:
    """Token-id prompts decoded by transformers' continuous batching, one library session per call; the
    interface of :class:`~apibank.generate.decoders.decoding.GreedyDecoder`. ``config`` sets fields of the
    library's ``ContinuousBatchingConfig`` (its defaults otherwise; the cache is sized to the call's rows)."""

    def __init__(self, model, *, eos_ids: Sequence[int], config: dict[str, Any] | None = None) -> None:
        self.model = model
        self.eos_ids = set(eos_ids)
        self.config = dict(config or {})

    def _manager(self, prompts: Sequence[list[int]], budgets: Sequence[int], temperature: float, seed: int | None):
        from transformers import GenerationConfig
        from transformers.generation.configuration_utils import ContinuousBatchingConfig

        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
        generation = GenerationConfig(max_new_tokens=max(budgets), eos_token_id=sorted(self.eos_ids) or -1,
                                      **sampling)
        options = {"max_requests_per_batch": len(prompts), "seed": seed, "drop_unsupported_processors": False,
                   **self.config}
        config = ContinuousBatchingConfig(**options)
        # The cache holds every row at once: its prompt and its whole budget, in pages (+2 for rounding).
        config.num_blocks = sum(-(-(len(p) + b) // config.page_size) for p, b in zip(prompts, budgets)) + 2
        return self.model.init_continuous_batching(generation_config=generation, continuous_batching_config=config)

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
        """One :class:`RowOutput` per prompt, as ``GreedyDecoder.generate`` (``on_row`` told each row as it
        ends). A row's seconds are its share of the call's wall time: each interval between two streamed
        tokens split among the rows still going."""
        import torch

        if not prompts:
            return []
        outputs = [RowOutput([], "length", len(p), 0, 0.0) for p in prompts]
        eos = sorted(self.eos_ids) or -1
        live = set(range(len(prompts)))
        manager = self._manager(prompts, budgets, temperature, seed)
        with torch.inference_mode():  # the library's thread runs in the mode it is started in
            for row, (ids, budget) in enumerate(zip(prompts, budgets)):  # all queued before the first step
                if manager.add_request(list(ids), request_id=str(row), max_new_tokens=budget, streaming=True,
                                       eos_token_id=eos) is None:
                    raise RuntimeError("transformers' continuous batching refused a request")
            manager.start()
            try:
                last = time.perf_counter()
                while live:
                    result = manager.get_result(timeout=1.0)
                    if result is None:
                        if not manager.is_running():
                            raise RuntimeError("transformers' continuous batching stopped before every row ended")
                        continue
                    row = int(result.request_id)
                    if row not in live:
                        continue  # a step the library ran before it saw the row's cancel
                    if result.error is not None:
                        raise RuntimeError(f"transformers' continuous batching failed on a row: {result.error}")
                    now = time.perf_counter()
                    for other in live:
                        outputs[other].seconds += (now - last) / len(live)
                    last = now
                    ended = self._take(result.generated_tokens, outputs[row], should_stop, row)
                    if ended and not result.is_finished():
                        manager.cancel_request(result.request_id)
                    if ended or result.is_finished():  # a stop or EOS, or its budget
                        live.discard(row)
                        if on_row is not None:
                            on_row(row, outputs[row])
            finally:
                manager.stop(block=True, hard_stop=True)  # nothing left that a row needs
                manager.destroy()
        return outputs

    def _take(self, tokens: list[int], out: RowOutput, should_stop, row: int) -> bool:
        """The streamed ``tokens`` not seen yet, added to ``out`` one by one (:func:`add_token`, as
        ``GreedyDecoder`` does). True when the row ends here."""
        return any(add_token(token, out, row, self.eos_ids, should_stop) for token in tokens[len(out.ids):])
