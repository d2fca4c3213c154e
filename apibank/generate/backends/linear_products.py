"""The model's linear layers for a few rows at once, in whichever form this CPU runs faster.

A decode step applies every linear layer, the output layer (vocabulary x hidden) last, to one row per
sequence in the batch. For a few rows against a weight read from memory, MKL's general product picks a
slow kernel: on the machine this was written on (MKL 2024.2, float32, Gemma 3 270M, 2 cores), the output
layer (262,144 x 640) took 25 ms for 1 row, 90 ms for 8 and 125 ms for 12 with ``F.linear``, where reading
its weight once costs about 25 ms, and the other 126 linear layers 16 ms for 1 row and 32 ms for 8. MKL's
product against a copy of each weight packed once for up to 16 rows (``torch.ops.mkl``, the packed form
torch's own compiler uses for frozen CPU linear layers) took 25, 38 and 41 ms for the output layer and 26 ms
for the others at 8 rows, and gives a row the same outputs whatever the rows beside it (1 to 16), so that a
stepped batch computes for each row exactly what that row alone would. A packed copy costs memory: MKL
sizes its buffer at 1.8 times that output layer's weight and at 3 to 14 times the small weights of the
other layers (1.2 GB and 1.8 GB allocated, of which 0.7 GB and 0.4 GB were resident, for a model of 1.07 GB),
so the output layer, then the other layers, are packed only where a quarter of the available memory holds
their copies' buffers, and only where measured faster when the decoder is made; more rows (a prefill) run
``F.linear`` on the weights themselves.
"""

from __future__ import annotations

import time
from functools import cache
from typing import Any

PACKED_ROWS = 16  # the most rows one product takes in the packed form; more rows run F.linear
HEAD_PACKED_SIZE_FACTOR = 2  # the output layer's packed buffer against its weight (1.8 measured)
MEASURED_ROWS = (8, 12)  # the packed form must be faster at each of these (by 10%)


def packed_product_supported() -> bool:
    import torch

    return bool(getattr(torch._C, "has_mkl", False)) and hasattr(torch.ops.mkl, "_mkl_linear")


@cache  # one class, so that a layer already packed is recognised
def _packed_module():
    import torch

    class PackedLinear(torch.nn.Module):
        """The wrapped linear layer (same weights, still shared with a tied embedding) computed against a
        packed copy of its weight for up to ``PACKED_ROWS`` rows."""

        def __init__(self, linear) -> None:
            super().__init__()
            self.linear = linear
            self._pack()
            self.packed_bytes = self.packed.numel() * self.packed.element_size()

        def _pack(self) -> None:
            self.packed = torch.ops.mkl._mkl_reorder_linear_weight(self.linear.weight.detach(), PACKED_ROWS)
            self.packed_version = self.linear.weight._version  # a weight changed in place is packed again

        @property
        def weight(self):
            return self.linear.weight

        @property
        def bias(self):
            return self.linear.bias

        def forward(self, hidden):
            flat = hidden.reshape(-1, hidden.shape[-1])
            rows = flat.shape[0]
            if rows > PACKED_ROWS or torch.is_grad_enabled() or flat.dtype != torch.float32:
                return self.linear(hidden)
            if self.linear.weight._version != self.packed_version:
                self._pack()
            out = torch.ops.mkl._mkl_linear(flat.contiguous(), self.packed, self.linear.weight,
                                            self.linear.bias, rows)
            return out.reshape(*hidden.shape[:-1], out.shape[-1])

    return PackedLinear


def _best_of(product, reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - started)
    return best


def _packed_is_faster(linears: list, packed: list) -> bool:
    import torch

    with torch.inference_mode():
        for rows in MEASURED_ROWS:
            inputs = [torch.randn(rows, layer.weight.shape[1]) for layer in linears]

            def run(layers):
                return lambda: [layer(x) for layer, x in zip(layers, inputs)]

            if _best_of(run(packed)) >= 0.9 * _best_of(run(linears)):
                return False
    return True


def _plain_linears(model, head) -> list[tuple[Any, str, Any]]:
    """(parent, name, layer) of every float32 plain linear layer on the CPU but the output layer."""
    import torch

    found = []
    for parent in model.modules():
        if isinstance(parent, _packed_module()):
            continue
        for name, child in parent.named_children():
            if type(child) is torch.nn.Linear and child is not head and child.weight.device.type == "cpu" \
                    and child.weight.dtype == torch.float32:
                found.append((parent, name, child))
    return found


def choose_linear_products(model: Any) -> dict[str, str]:
    """Puts the faster form of the few-rows product in ``model``'s linear layers (float32 plain linear layers
    on a CPU with MKL only) and says which, for the output layer and for the others: ``"linear"``
    (unchanged) or ``"mkl-packed"``. Asked again for the same model, the same answer."""
    import torch

    from apibank.generate.backends.loading import available_memory

    packed_class = _packed_module()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    others = _plain_linears(model, head)
    chosen = {"output": "linear", "layers": "linear"}
    if isinstance(head, packed_class):  # chosen already, by an earlier decoder of this model
        chosen["output"] = "mkl-packed"
    if any(isinstance(m, packed_class) for m in model.modules() if m is not head):
        chosen["layers"] = "mkl-packed"
    if not packed_product_supported():
        return chosen
    budget = available_memory() // 4
    name = next((child for child, module in model.named_children() if module is head), None)
    if chosen["output"] == "linear" and type(head) is torch.nn.Linear and name is not None \
            and head.weight.device.type == "cpu" and head.weight.dtype == torch.float32 \
            and HEAD_PACKED_SIZE_FACTOR * head.weight.numel() * head.weight.element_size() <= budget:
        packed = packed_class(head)
        if packed.packed_bytes <= budget and _packed_is_faster([head], [packed]):
            setattr(model, name, packed)
            chosen["output"] = "mkl-packed"
            budget -= packed.packed_bytes
    if chosen["layers"] == "linear" and others:
        sample = [layer for _, _, layer in others[:8]]  # about one transformer block
        if _packed_is_faster(sample, [packed_class(layer) for layer in sample]):
            packed_layers, size = [], 0
            for _, _, layer in others:  # packed one by one: stops one layer past the budget at most
                packed_layers.append(packed_class(layer))
                size += packed_layers[-1].packed_bytes
                if size > budget:
                    return chosen
            for (parent, child, _), packed in zip(others, packed_layers):
                setattr(parent, child, packed)
            chosen["layers"] = "mkl-packed"
    return chosen
