"""The output layer's few-rows product in either form gives the same logits (to the last bits of a float
sum); which form a CPU gets is measured, so the test accepts either and checks the model after it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from apibank.generate.backends.output_layer import FEW_ROWS, _rows_first_module, choose_output_product  # noqa: E402


@pytest.mark.parametrize("rows", [1, 2, 12, 16, 17, 40])
def test_rows_first_product_equals_the_linear_layer(rows):
    torch.manual_seed(rows)
    linear = torch.nn.Linear(64, 1000, bias=False)
    hidden = torch.randn(rows, 1, 64)
    wrapped = _rows_first_module()(linear)
    got, expected = wrapped(hidden), linear(hidden)
    assert got.shape == expected.shape == (rows, 1, 1000)
    if rows in FEW_ROWS:
        assert torch.allclose(got, expected, atol=1e-5)
    else:  # one row and larger batches are F.linear itself
        assert torch.equal(got, expected)
    assert wrapped.weight is linear.weight  # the tied weights stay shared


def test_the_chosen_form_leaves_the_models_logits(sliding_gemma):
    model = sliding_gemma
    ids = torch.randint(3, 300, (12, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        before = model(input_ids=ids).logits
        choice = choose_output_product(model)
        after = model(input_ids=ids).logits
    assert choice in ("linear", "rows-first")
    assert torch.allclose(before, after, atol=1e-5)
    assert choose_output_product(model) == choice  # asked again (another decoder of the model): the same answer

