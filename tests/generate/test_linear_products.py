"""The packed products give the linear layer's outputs (to the last bits of a float sum); whether a row's
result depends on the rows beside it is a property of the processor's kernels, so it is measured, and the
tests assert what the code guarantees on any CPU: a form that keeps the rows apart is chosen over one that
does not, the choice says whether the rows are kept apart, and where it says so they are."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from apibank.generate.decoders import linear_products  # noqa: E402
from apibank.generate.decoders.linear_products import (  # noqa: E402
    FORMS,
    LINEAR,
    PACKED_ROWS,
    _packed_module,
    choose_linear_products,
    rows_independent,
)

AVAILABLE = [name for name, form in FORMS.items() if form.available()]
needs_a_packed_form = pytest.mark.skipif(not AVAILABLE, reason="torch built without MKL and oneDNN")


def _packed(linear, form):
    if not FORMS[form].available():
        pytest.skip(f"{form}: not in this torch build")
    return _packed_module()(linear, form)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("rows", [1, 2, 12, PACKED_ROWS, PACKED_ROWS + 1, 40])
def test_a_packed_product_equals_the_linear_layer(form, rows):
    torch.manual_seed(rows)
    linear = torch.nn.Linear(64, 1000, bias=rows % 2 == 0)
    hidden = torch.randn(rows, 1, 64)
    packed = _packed(linear, form)
    with torch.inference_mode():
        got, expected = packed(hidden), linear(hidden)
    assert got.shape == expected.shape == (rows, 1, 1000)
    assert torch.allclose(got, expected, atol=1e-5)
    if rows > PACKED_ROWS:  # more rows than it was packed for: F.linear itself
        assert torch.equal(got, expected)
    assert packed.weight is linear.weight  # the tied weights stay shared


@pytest.mark.parametrize("form", [name for name, form in FORMS.items() if form.fixed_rows])
def test_a_fixed_rows_form_gives_a_row_the_same_result_at_every_batch_size_it_runs(form):
    """Computed for PACKED_ROWS rows whatever the batch: a row alone and in a batch run the same product."""
    packed = _packed(torch.nn.Linear(48, 300), form)
    hidden = torch.randn(5, 48)
    with torch.inference_mode():
        topped_up = torch.cat([hidden, hidden.new_zeros(PACKED_ROWS - 5, 48)])
        assert torch.equal(packed(hidden), packed(topped_up)[:5])


def test_rows_independent_tells_a_kernel_that_looks_at_its_batch():
    class BatchSensitive(torch.nn.Linear):
        def forward(self, hidden):  # adds a trace of the batch's size: invisible to allclose, not to equal
            return super().forward(hidden) + 1e-7 * (hidden.shape[0] > 3)

    assert rows_independent(torch.nn.Linear(8, 4)) in (True, False)  # a measurement, CPU by CPU
    assert not rows_independent(BatchSensitive(8, 4))


@needs_a_packed_form
def test_a_weight_changed_in_place_is_packed_again():
    linear = torch.nn.Linear(8, 50)
    packed = _packed_module()(linear, AVAILABLE[0])
    hidden = torch.randn(3, 8)
    with torch.no_grad():
        linear.weight.mul_(2)  # a training step, say
    with torch.inference_mode():
        assert torch.allclose(packed(hidden), linear(hidden), atol=1e-5)


@needs_a_packed_form
def test_with_gradients_the_packed_layer_is_the_linear_layer():
    linear = torch.nn.Linear(8, 50)
    hidden = torch.randn(3, 8, requires_grad=True)
    out = _packed_module()(linear, AVAILABLE[0])(hidden)
    assert torch.equal(out, linear(hidden)) and out.requires_grad


def test_the_chosen_forms_leave_the_models_logits_and_keep_rows_apart_where_they_say_so(sliding_gemma):
    model = sliding_gemma
    ids = torch.randint(3, 300, (12, 9), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        before = model(input_ids=ids[:, :1]).logits, model(input_ids=ids).logits
        choice = choose_linear_products(model)
        after = model(input_ids=ids[:, :1]).logits, model(input_ids=ids).logits
    assert set(choice) == {"output", "layers", "batch_invariant"}
    assert {choice["output"], choice["layers"]} <= {LINEAR, *FORMS}
    assert torch.allclose(before[0], after[0], atol=1e-5)  # 12 rows: the packed form where chosen
    assert torch.equal(before[1], after[1])  # 108 rows: F.linear on the weights themselves
    assert choose_linear_products(model) == choice  # asked again (another decoder of the model): the same answer
    packed = [m for m in model.modules() if isinstance(m, _packed_module())]
    assert len(packed) == (choice["output"] != LINEAR) + 7 * 2 * (choice["layers"] != LINEAR)
    if choice["batch_invariant"]:  # what the choice says holds for every layer as it now computes
        wrapped = {id(m.linear) for m in packed}
        computing = [m for m in model.modules() if m in packed or (type(m) is torch.nn.Linear and id(m) not in wrapped)]
        assert len(computing) == 1 + 7 * 2 and all(rows_independent(layer) for layer in computing)


def _fresh(sliding_gemma):
    return type(sliding_gemma)(sliding_gemma.config).eval()


@needs_a_packed_form
def test_nothing_is_packed_where_memory_is_short(sliding_gemma, monkeypatch):
    monkeypatch.setattr(linear_products, "_speed", _faster_when_packed)
    monkeypatch.setattr(linear_products, "rows_independent", lambda layer: True)
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1000)
    assert choose_linear_products(_fresh(sliding_gemma)) == {"output": LINEAR, "layers": LINEAR, "batch_invariant": True}
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1 << 40)
    choice = choose_linear_products(_fresh(sliding_gemma))
    assert choice["output"] in FORMS and choice["layers"] in FORMS


def _faster_when_packed(layers, inputs):
    packed = all(isinstance(layer, _packed_module()) for layer in layers)
    return {rows: (0.1 if packed else 1.0) for rows in inputs}


@needs_a_packed_form
@pytest.mark.parametrize("linear_keeps_rows_apart", [True, False])
def test_a_form_that_mixes_rows_is_never_chosen_over_one_that_keeps_them_apart(
        sliding_gemma, monkeypatch, linear_keeps_rows_apart):
    """The AMD EPYC case: F.linear and MKL's packed product change kernel with the batch size, the fixed-rows
    forms do not. Here every packed form is faster and only the fixed-rows ones keep the rows apart."""
    fixed = {name for name, form in FORMS.items() if form.fixed_rows and form.available()}
    if not fixed:
        pytest.skip("no fixed-rows form in this torch build")

    def independent(layer):
        if isinstance(layer, _packed_module()):
            return layer.form.name in fixed
        return linear_keeps_rows_apart

    monkeypatch.setattr(linear_products, "_speed", _faster_when_packed)
    monkeypatch.setattr(linear_products, "rows_independent", independent)
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1 << 40)
    choice = choose_linear_products(_fresh(sliding_gemma))
    assert choice["output"] in fixed and choice["layers"] in fixed and choice["batch_invariant"] is True


@needs_a_packed_form
def test_where_no_form_keeps_rows_apart_the_fastest_is_taken_and_said_so(sliding_gemma, monkeypatch):
    monkeypatch.setattr(linear_products, "_speed", _faster_when_packed)
    monkeypatch.setattr(linear_products, "rows_independent", lambda layer: False)
    monkeypatch.setattr("apibank.generate.backends.loading.available_memory", lambda: 1 << 40)
    choice = choose_linear_products(_fresh(sliding_gemma))
    assert choice["output"] in FORMS and choice["batch_invariant"] is False


def test_where_no_packed_form_is_faster_the_linear_layers_stay(sliding_gemma, monkeypatch):
    monkeypatch.setattr(linear_products, "_speed", lambda layers, inputs: {rows: 1.0 for rows in inputs})
    model = _fresh(sliding_gemma)
    choice = choose_linear_products(model)
    assert choice["output"] == choice["layers"] == LINEAR
    assert not any(isinstance(m, _packed_module()) for m in model.modules())
