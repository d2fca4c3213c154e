"""The model's linear layers for a few rows at once, in whichever form this CPU runs faster and keeps each
row's result independent of the rows beside it.

A decode step applies every linear layer, the output layer (vocabulary x hidden) last, to one row per
sequence in the batch. For a few rows against a weight read from memory, the general matrix product picks
slow kernels: on an Intel machine (MKL 2024.2, float32, Gemma 3 270M, 2 cores) the output layer (262,144 x
640) took 25 ms for 1 row and 90 ms for 8 with ``F.linear``, where reading its weight once costs about
25 ms. Products against a copy of each weight packed once for up to :data:`PACKED_ROWS` rows are faster:
MKL's (``torch.ops.mkl``, the packed form torch's compiler uses for frozen CPU linear layers) and oneDNN's
(``torch.ops.mkldnn``, the form it uses with oneDNN). Which is fastest depends on the processor: MKL's on
that Intel machine (38 ms for 8 rows of the output layer), oneDNN's on an AMD EPYC (about 4 times faster
than MKL's there, where MKL takes generic code paths).

Whether a row's result depends on the rows beside it depends on the processor too, and a stepped batch
must compute for each row what that row alone would (identical greedy tokens whether episodes are stepped
together or run one at a time). On the Intel machine MKL's packed product kept every row's result whatever
the batch (1 to 16 rows); on the AMD EPYC it changes kernel at 4 rows (a row differs by up to 5e-7), and
``F.linear`` at 2, while the same packed product always computed for exactly :data:`PACKED_ROWS` rows
(the batch topped up with zero rows: the ``-16`` forms) keeps every row's result. So both properties are
measured when a decoder is made, on the model's own weights (one layer of each shape): a form is chosen only
where a row's outputs are bit for bit those of the row alone at every batch size up to
:data:`PACKED_ROWS`, and only where it is faster than ``F.linear``; where no form keeps the rows apart,
the fastest is taken and ``batch_invariant`` says so (results.json: ``model.linear_products``).

A packed copy costs memory (MKL sizes its buffer at 1.8 times that output layer's weight and at 3 to 14
times the small weights; oneDNN's at the weight's size), so the output layer, then the other layers, are
packed only where a quarter of the available memory holds their copies. More rows (a prefill) run
``F.linear`` on the weights themselves.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import cache
from typing import Any, Callable

PACKED_ROWS = 16  # the most rows one product takes in a packed form; more rows run F.linear
HEAD_PACKED_SIZE_FACTOR = 2  # the output layer's largest packed buffer against its weight (MKL: 1.8 measured)
MEASURED_ROWS = (8, 12)  # a packed form must be faster at each of these (by 10%)
INVARIANCE_ROWS = (2, 3, 4, 5, 6, 8, 12, PACKED_ROWS)  # batch sizes at which a row must equal itself alone
CHECKED_POSITIONS = (0, 1, 3, 7, PACKED_ROWS - 1)  # the rows compared (each computed alone once)
LINEAR = "linear"


# ---------------------------------------------------------------------------- the forms
@dataclass(frozen=True)
class ProductForm:
    """A packed few-rows product: ``pack(weight)`` once, then ``product(rows, packed, weight, bias)``;
    ``fixed_rows``: every product is computed for exactly :data:`PACKED_ROWS` rows."""

    kernel: str  # "mkl" or "onednn"
    fixed_rows: bool

    @property
    def name(self) -> str:
        return f"{self.kernel}-packed" + (f"-{PACKED_ROWS}" if self.fixed_rows else "")

    def available(self) -> bool:
        import torch

        if self.kernel == "mkl":
            return bool(getattr(torch._C, "has_mkl", False)) and hasattr(torch.ops.mkl, "_mkl_linear")
        return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")

    def pack(self, weight):
        import torch

        if self.kernel == "mkl":
            return torch.ops.mkl._mkl_reorder_linear_weight(weight, PACKED_ROWS)
        return torch.ops.mkldnn._reorder_linear_weight(weight, PACKED_ROWS)

    def product(self, rows, packed, weight, bias):
        import torch

        if self.kernel == "mkl":
            return torch.ops.mkl._mkl_linear(rows, packed, weight, bias, rows.shape[0])
        return torch.ops.mkldnn._linear_pointwise(rows, packed, bias, "none", [], "")


FORMS: dict[str, ProductForm] = {
    form.name: form
    for form in (ProductForm("mkl", False), ProductForm("onednn", False),
                 ProductForm("mkl", True), ProductForm("onednn", True))
}


def packed_product_supported() -> bool:
    """Whether this torch has any packed form (MKL or oneDNN: x86 builds have both, some ARM builds neither)."""
    return any(form.available() for form in FORMS.values())


@cache  # one class, so that a layer already packed is recognised
def _packed_module():
    import torch

    class PackedLinear(torch.nn.Module):
        """The wrapped linear layer (same weights, still shared with a tied embedding) computed against a
        packed copy of its weight, in the form ``form``, for up to ``PACKED_ROWS`` rows."""

        def __init__(self, linear, form: str) -> None:
            super().__init__()
            self.linear = linear
            self.form = FORMS[form]
            self._pack()
            self.packed_bytes = self.packed.numel() * self.packed.element_size()

        def _pack(self) -> None:
            self.packed = self.form.pack(self.linear.weight.detach())
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
            flat = flat.contiguous()
            if self.form.fixed_rows and rows < PACKED_ROWS:
                flat = torch.cat([flat, flat.new_zeros(PACKED_ROWS - rows, flat.shape[1])])
            out = self.form.product(flat, self.packed, self.linear.weight, self.linear.bias)[:rows]
            return out.reshape(*hidden.shape[:-1], out.shape[-1])

    return PackedLinear


# ---------------------------------------------------------------------------- measurements
def _best_of(product: Callable[[], Any], reps: int = 3) -> float:
    best = float("inf")
    for _ in range(reps):
        started = time.perf_counter()
        product()
        best = min(best, time.perf_counter() - started)
    return best


def rows_independent(layer) -> bool:
    """Whether ``layer`` gives rows, bit for bit, their results alone, in batches of each of
    :data:`INVARIANCE_ROWS` rows (and in reverse order at the largest): rows at :data:`CHECKED_POSITIONS`."""
    import torch

    inputs = torch.randn(PACKED_ROWS, layer.weight.shape[1], generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        alone = {i: layer(inputs[i : i + 1])[0] for i in CHECKED_POSITIONS}
        for rows in INVARIANCE_ROWS:
            batch = layer(inputs[:rows])
            if not all(torch.equal(batch[i], alone[i]) for i in CHECKED_POSITIONS if i < rows):
                return False
        reversed_batch = layer(inputs.flip(0))
        return all(torch.equal(reversed_batch[PACKED_ROWS - 1 - i], alone[i]) for i in CHECKED_POSITIONS)


def _speed(layers: list, inputs: dict[int, list]) -> dict[int, float]:
    import torch

    with torch.inference_mode():
        return {rows: _best_of(lambda: [layer(x) for layer, x in zip(layers, inputs[rows])])
                for rows in MEASURED_ROWS}


def _one_per_shape(layers: list) -> list:
    shapes: dict[tuple, Any] = {}
    for layer in layers:
        shapes.setdefault((tuple(layer.weight.shape), layer.bias is not None), layer)
    return list(shapes.values())


def _choose_form(layers: list, sample: list) -> tuple[str, bool]:
    """(the form for ``layers``, whether it keeps rows apart): the fastest of the forms that keep every row's
    result independent of its batch on one layer of each shape and beat ``F.linear`` by 10% on ``sample`` at
    each of :data:`MEASURED_ROWS`; else ``F.linear`` where it keeps the rows apart; else the fastest."""
    import torch

    packed_class = _packed_module()
    representatives = _one_per_shape(layers)
    inputs = {rows: [torch.randn(rows, layer.weight.shape[1]) for layer in sample] for rows in MEASURED_ROWS}
    linear_time = _speed(sample, inputs)
    linear_invariant = all(rows_independent(layer) for layer in representatives)
    faster: list[tuple[float, str, bool]] = []
    kept_apart_unpadded: set[str] = set()  # kernels whose own form keeps rows apart: no need to top up rows
    for name, form in FORMS.items():  # the forms that top up rows come last
        if not form.available() or (form.fixed_rows and form.kernel in kept_apart_unpadded):
            continue
        timing = _speed([packed_class(layer, name) for layer in sample], inputs)
        if not all(timing[rows] < 0.9 * linear_time[rows] for rows in MEASURED_ROWS):
            continue
        invariant = all(rows_independent(packed_class(layer, name)) for layer in representatives)
        if invariant and not form.fixed_rows:
            kept_apart_unpadded.add(form.kernel)
        if invariant or not linear_invariant:  # never trade the rows' independence for speed
            faster.append((sum(timing.values()), name, invariant))
    kept_apart = [entry for entry in faster if entry[2]]
    if kept_apart:
        return min(kept_apart)[1], True
    if linear_invariant or not faster:
        return LINEAR, linear_invariant
    return min(faster)[1], False


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


def choose_linear_products(model: Any) -> dict[str, Any]:
    """Puts the chosen form of the few-rows product in ``model``'s linear layers (float32 plain linear layers
    on the CPU only) and says which, for the output layer and for the others: ``"linear"`` (unchanged) or the
    name of a packed form (:data:`FORMS`), and ``batch_invariant``: whether a row's result in a product of up
    to :data:`PACKED_ROWS` rows is, on this CPU, exactly its result alone. Asked again for the same model,
    the same answer (recorded on the model)."""
    import torch

    from apibank.generate.backends.loading import available_memory

    recorded = getattr(model, "_apibank_linear_products", None)
    if recorded is not None:  # chosen already, by an earlier decoder of this model
        return dict(recorded)
    packed_class = _packed_module()
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    others = _plain_linears(model, head)
    chosen: dict[str, Any] = {"output": LINEAR, "layers": LINEAR}
    invariant = []
    budget = available_memory() // 4
    name = next((child for child, module in model.named_children() if module is head), None)
    if type(head) is torch.nn.Linear and name is not None and head.weight.device.type == "cpu" \
            and head.weight.dtype == torch.float32:
        form, kept_apart = LINEAR, rows_independent(head)
        if HEAD_PACKED_SIZE_FACTOR * head.weight.numel() * head.weight.element_size() <= budget:
            form, kept_apart = _choose_form([head], [head])
        invariant.append(kept_apart)
        if form != LINEAR:
            packed = packed_class(head, form)
            if packed.packed_bytes <= budget:
                setattr(model, name, packed)
                chosen["output"] = form
                budget -= packed.packed_bytes
            else:
                invariant[-1] = rows_independent(head)
    if others:
        layers = [layer for _, _, layer in others]
        form, kept_apart = _choose_form(layers, layers[:8])  # the sample: about one transformer block
        if form != LINEAR:
            packed_layers, size = [], 0
            for layer in layers:  # packed one by one: stops one layer past the budget at most
                packed_layers.append(packed_class(layer, form))
                size += packed_layers[-1].packed_bytes
                if size > budget:
                    form, kept_apart = LINEAR, all(rows_independent(layer) for layer in _one_per_shape(layers))
                    break
            if form != LINEAR:
                for (parent, child, _), packed in zip(others, packed_layers):
                    setattr(parent, child, packed)
                chosen["layers"] = form
        invariant.append(kept_apart)
    chosen["batch_invariant"] = all(invariant)
    model._apibank_linear_products = dict(chosen)
    return chosen
