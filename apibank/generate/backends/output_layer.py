"""The output layer's product for a few rows at once, in whichever of two equal forms this CPU runs faster.

A decode step of a batch ends with the output layer (vocabulary x hidden weights) applied to a few rows.
``F.linear(x, W)`` and ``(W @ x.T).T`` are the same product, but a BLAS picks its kernel by shape: on the
machine this was written on (MKL 2024.2, float32, Gemma 3's 262,144 x 640 output layer), ``F.linear`` took
90-120 ms for 8 to 12 rows, against 25 ms for one row and 59 ms for 16, while ``(W @ x.T).T`` took 55 ms
for 8 to 16 rows: nearly half of a 12-row decode step. Which form wins is measured once, when the decoder is
made, not assumed; the two differ only in the order of the float additions (the last bits of a logit).
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

FEW_ROWS = range(2, 17)  # where the other form may win; one row and larger batches keep F.linear


@cache  # one class, so that a model already given it is recognised
def _rows_first_module():
    import torch

    class RowsFirstProduct(torch.nn.Module):
        """The wrapped linear layer (same weights) computed as ``(W @ x.T).T`` for a few rows."""

        def __init__(self, linear) -> None:
            super().__init__()
            self.linear = linear

        @property
        def weight(self):
            return self.linear.weight

        def forward(self, hidden):
            flat = hidden.reshape(-1, hidden.shape[-1])
            if flat.shape[0] not in FEW_ROWS:
                return self.linear(hidden)
            out = (self.linear.weight @ flat.T).T
            if self.linear.bias is not None:
                out = out + self.linear.bias
            return out.reshape(*hidden.shape[:-1], out.shape[-1])

    return RowsFirstProduct


def _best_of(product, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - started)
    return best


def choose_output_product(model: Any) -> str:
    """Puts the faster form of the output layer's few-rows product in ``model`` (CPU, a plain linear
    output layer only) and says which: ``"linear"`` (unchanged) or ``"rows-first"``."""
    import torch

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(head, _rows_first_module()):  # chosen already, by an earlier decoder of this model
        return "rows-first"
    if type(head) is not torch.nn.Linear or head.weight.device.type != "cpu":
        return "linear"
    name = next((child for child, module in model.named_children() if module is head), None)
    if name is None:
        return "linear"
    weight = head.weight
    with torch.inference_mode():
        wins = 0
        for rows in (8, 12):
            hidden = torch.randn(rows, weight.shape[1], dtype=weight.dtype)
            linear = _best_of(lambda: torch.nn.functional.linear(hidden, weight))
            rows_first = _best_of(lambda: (weight @ hidden.T).T)
            wins += rows_first < 0.9 * linear
    if wins < 2:
        return "linear"
    setattr(model, name, _rows_first_module()(head))
    return "rows-first"
