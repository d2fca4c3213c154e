"""The output layer's packed product gives the linear layer's logits (to the last bits of a float sum), and a
row the same logits whatever rows are beside it; which form a CPU gets is measured, so the model test
accepts either and checks the model after it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from apibank.generate.backends.output_layer import (  # noqa: E402
    PACKED_ROWS,
    _packed_module,
    choose_output_product,
    packed_product_supported,
)

needs_mkl = pytest.mark.skipif(not packed_product_supported(), reason="torch built without MKL")


@needs_mkl
@pytest.mark.parametrize("rows", [1, 2, 12, PACKED_ROWS, PACKED_ROWS + 1, 40])
def test_packed_product_equals_the_linear_layer(rows):
    torch.manual_seed(rows)
    linear = torch.nn.Linear(64, 1000, bias=rows % 2 == 0)
    hidden = torch.randn(rows, 1, 64)
    packed = _packed_module()(linear)
    with torch.inference_mode():
        got, expected = packed(hidden), linear(hidden)
        alone = packed(hidden[:1])
    assert got.shape == expected.shape == (rows, 1, 1000)
    assert torch.allclose(got, expected, atol=1e-5)
    if rows > PACKED_ROWS:  # more rows than it was packed for: F.linear itself
        assert torch.equal(got, expected)
    else:  # a row's logits do not depend on the rows beside it
        assert torch.equal(got[:1], alone)
    assert packed.weight is linear.weight  # the tied weights stay shared


@needs_mkl
def test_with_gradients_the_packed_layer_is_the_linear_layer():
    linear = torch.nn.Linear(8, 50)
    hidden = torch.randn(3, 8, requires_grad=True)
    out = _packed_module()(linear)(hidden)
    assert torch.equal(out, linear(hidden)) and out.requires_grad


def test_the_chosen_form_leaves_the_models_logits(sliding_gemma):
    model = sliding_gemma
    ids = torch.randint(3, 300, (12, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
        choice = choose_output_product(model)
        after = model(input_ids=ids).logits
    assert choice in ("linear", "mkl-packed")
    assert torch.allclose(before, after, atol=1e-5)
    assert choose_output_product(model) == choice  # asked again (another decoder of the model): the same answer
