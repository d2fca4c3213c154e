"""The output layer's product for a few rows at once, in whichever form this CPU runs faster.

A decode step ends with the output layer (vocabulary x hidden weights) applied to one row per sequence in
the batch. For a few rows against a tall weight, MKL's general product picks a slow kernel: on the machine
this was written on (MKL 2024.2, float32, Gemma 3's 262,144 x 640 output layer, 2 cores), ``F.linear`` took
25 ms for 1 row, 90 ms for 8 and 125 ms for 12, where reading the weight once costs about 25 ms. MKL's
product against a copy of the weight packed once for up to 16 rows (``torch.ops.mkl``, the packed form
torch's own compiler uses for frozen CPU linear layers) took 25, 38 and 41 ms, and gives a row the same
logits whatever the rows beside it (1 to 16), so that a stepped batch picks exactly the tokens its rows
pick alone. The packed copy costs memory (1.2 GB for that layer), so it is made only where a quarter of
the available memory holds it twice, and only where it is measured faster, when the decoder is made.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

PACKED_ROWS = 16  # the most rows one product takes in the packed form; more rows run F.linear
PACKED_SIZE_FACTOR = 2  # a packed copy's size against the weight's (measured 1.8 for Gemma 3's layer)


def packed_product_supported() -> bool:
    import torch

    return bool(getattr(torch._C, "has_mkl", False)) and hasattr(torch.ops.mkl, "_mkl_linear")


@cache  # one class, so that a model already given it is recognised
def _packed_module():
    import torch

    class PackedOutputLayer(torch.nn.Module):
        """The wrapped linear layer (same weights, still shared with a tied embedding) computed against a
        packed copy of its weight for up to ``PACKED_ROWS`` rows."""

        def __init__(self, linear) -> None:
            super().__init__()
            self.linear = linear
            self.packed = torch.ops.mkl._mkl_reorder_linear_weight(linear.weight.detach(), PACKED_ROWS)

        @property
        def weight(self):
            return self.linear.weight

        def forward(self, hidden):
            flat = hidden.reshape(-1, hidden.shape[-1])
            rows = flat.shape[0]
            if rows > PACKED_ROWS or torch.is_grad_enabled() or flat.dtype != torch.float32:
                return self.linear(hidden)
            out = torch.ops.mkl._mkl_linear(flat.contiguous(), self.packed, self.linear.weight,
                                            self.linear.bias, rows)
            return out.reshape(*hidden.shape[:-1], out.shape[-1])

    return PackedOutputLayer


def _best_of(product, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - started)
    return best


def choose_output_product(model: Any) -> str:
    """Puts the faster form of the output layer's few-rows product in ``model`` (a float32 plain linear
    output layer on a CPU with MKL only) and says which: ``"linear"`` (unchanged) or ``"mkl-packed"``."""
    import torch

    from apibank.generate.backends.loading import available_memory

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if isinstance(head, _packed_module()):  # chosen already, by an earlier decoder of this model
        return "mkl-packed"
    if type(head) is not torch.nn.Linear or head.weight.device.type != "cpu" or head.weight.dtype != torch.float32:
        return "linear"
    name = next((child for child, module in model.named_children() if module is head), None)
    weight_bytes = head.weight.numel() * head.weight.element_size()
    if name is None or not packed_product_supported() or \
            PACKED_SIZE_FACTOR * weight_bytes * 2 > available_memory() // 4:
        return "linear"
    packed = _packed_module()(head)
    with torch.inference_mode():
        wins = 0
        for rows in (8, 12):
            hidden = torch.randn(rows, head.weight.shape[1], dtype=head.weight.dtype)
            wins += _best_of(lambda: packed(hidden)) < 0.9 * _best_of(lambda: head(hidden))
    if wins < 2:
        return "linear"
    setattr(model, name, packed)
    return "mkl-packed"
