"""The packed product gives the linear layer's outputs (to the last bits of a float sum), and a row the same
outputs whatever rows are beside it; which form a CPU gets is measured, so the model test accepts either
and checks the model after it."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from apibank.generate.backends.linear_products import (  # noqa: E402
    PACKED_ROWS,
    _packed_module,
    choose_linear_products,
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
def test_a_weight_changed_in_place_is_packed_again():
    linear = torch.nn.Linear(8, 50)
    packed = _packed_module()(linear)
    hidden = torch.randn(3, 8)
    with torch.no_grad():
        linear.weight.mul_(2)  # a training step, say
    with torch.inference_mode():
        assert torch.allclose(packed(hidden), linear(hidden), atol=1e-5)


@needs_mkl
def test_with_gradients_the_packed_layer_is_the_linear_layer():
    linear = torch.nn.Linear(8, 50)
    hidden = torch.randn(3, 8, requires_grad=True)
    out = _packed_module()(linear)(hidden)
    assert torch.equal(out, linear(hidden)) and out.requires_grad


def test_the_chosen_forms_leave_the_models_logits(sliding_gemma):
    model = sliding_gemma
    ids = torch.randint(3, 300, (12, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        before = model(input_ids=ids[:, :1]).logits, model(input_ids=ids).logits
        choice = choose_linear_products(model)
        after = model(input_ids=ids[:, :1]).logits, model(input_ids=ids).logits
    assert set(choice) == {"output", "layers"} and set(choice.values()) <= {"linear", "mkl-packed"}
    assert torch.allclose(before[0], after[0], atol=1e-5)  # 12 rows: the packed form where chosen
    assert torch.equal(before[1], after[1])  # 108 rows: F.linear on the weights themselves
    assert choose_linear_products(model) == choice  # asked again (another decoder of the model): the same answer
    packed = [m for m in model.modules() if isinstance(m, _packed_module())]
    assert len(packed) == (choice["output"] == "mkl-packed") + 7 * 2 * (choice["layers"] == "mkl-packed")


@needs_mkl
def test_nothing_is_packed_where_memory_is_short(sliding_gemma, monkeypatch):
    from apibank.generate.backends import linear_products

    model = type(sliding_gemma)(sliding_gemma.config).eval()
    monkeypatch.setattr(linear_products, "_packed_is_faster", lambda *a: True)
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1000)
    assert choose_linear_products(model) == {"output": "linear", "layers": "linear"}
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1 << 40)
    assert choose_linear_products(model) == {"output": "mkl-packed", "layers": "mkl-packed"}
