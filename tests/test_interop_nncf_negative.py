"""NNCF's symmetric weight compression (negative per-channel scales) through lift, check, the reference and
lower, against onnxruntime's unoptimized path (proposal/spec/types.md#negative-scales)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from corpus_nncf_negative import MODES, feeds, handmade_models, negative_slices, nncf_models
from onnx import numpy_helper

from onnx_qtypes import get_qtype, lift, lower
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.reference_ops import ReferenceEvaluator

NAMES = sorted(MODES)


@pytest.fixture(scope="module")
def handmade() -> dict[str, onnx.ModelProto]:
    return handmade_models()


def _sources(name: str, handmade: dict[str, onnx.ModelProto]) -> list[tuple[str, onnx.ModelProto]]:
    made = nncf_models()
    return [("handmade", handmade[name])] + ([("nncf", made[name])] if made else [])


def _close(actual: np.ndarray, expected: np.ndarray) -> None:
    """Float outputs of one MatMul chain: float32 accumulation order is all that may differ."""
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-5 * float(np.abs(expected).max()))


@pytest.mark.parametrize("name", NAMES)
def test_handmade_models_are_what_nncf_writes(name, handmade):
    made = nncf_models()
    if not made:
        pytest.skip("nncf is not installed (pip install nncf): the handmade models stand in for it")
    ours, theirs = handmade[name], made[name]
    assert [(n.op_type, list(n.input), list(n.attribute)) for n in ours.graph.node] == \
           [(n.op_type, list(n.input), list(n.attribute)) for n in theirs.graph.node]
    theirs_inits = {t.name: t for t in theirs.graph.initializer}
    for init in ours.graph.initializer:
        other = theirs_inits[init.name]
        assert init.data_type == other.data_type
        np.testing.assert_array_equal(numpy_helper.to_array(init), numpy_helper.to_array(other))


@pytest.mark.parametrize("name", NAMES)
def test_no_negative_slice_can_be_negated_exactly(name, handmade):
    """Why lift keeps the signs: every negative channel / group stores storage_min, whose negation does not fit."""
    for _, model in _sources(name, handmade):
        for tensor, slices, negative, holding_min in negative_slices(model):
            assert 0 < negative < slices, tensor
            assert holding_min == negative, tensor


@pytest.mark.parametrize("name", NAMES)
def test_lift_keeps_every_scale_and_the_model_checks_clean(name, handmade):
    for source, model in _sources(name, handmade):
        typed = lift(model)
        inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        for weight in ("W1", "W2"):
            qtype = get_qtype(typed, f"{weight}_quantized")
            assert qtype is not None and qtype.has_negative_scale, (source, weight)
            assert qtype.scale == tuple(inits[f"{weight}_scale"].astype(np.float64).reshape(-1).tolist())
        findings = [f"{d.rule} {d.message}" for d in iter_diagnostics(typed)]
        assert findings == [], (source, findings)
        assert [f"{d.rule}" for d in iter_diagnostics(model)] == [], source  # the QDQ file, checked as lifted


@pytest.mark.parametrize("name", NAMES)
def test_reference_agrees_with_onnxruntime_unoptimized(name, handmade):
    x = feeds()
    for source, model in _sources(name, handmade):
        expected = run_onnxruntime(model, x, optimize=False)["y"]
        ours = ReferenceEvaluator(lift(model)).run(["y"], x)[0]
        _close(ours, expected)
        assert np.abs(expected).max() > 1, source  # a real signal, not a vanishing one


@pytest.mark.parametrize("name", NAMES)
def test_lower_runs_in_onnxruntime_with_the_same_outputs(name, handmade):
    x = feeds(2)
    for source, model in _sources(name, handmade):
        lowered = lower(lift(model))
        assert (lowered.ir_version, lowered.opset_import[0].version) == (10, 21)
        onnx.checker.check_model(lowered, full_check=True)
        scales = [numpy_helper.to_array(t) for t in lowered.graph.initializer if t.name.endswith("scale")]
        assert any((s < 0).any() for s in scales), source  # written as they were
        _close(run_onnxruntime(lowered, x, optimize=False)["y"], run_onnxruntime(model, x, optimize=False)["y"])


def test_quantized_output_with_negative_weight_scales_runs_the_definition_and_matches_onnxruntime():
    """QT411's case (a warning, valid): integer kernels take multipliers >= 0, so the evaluator runs the definition;
    it agrees with onnxruntime's unoptimized QDQ form within one step of the output."""
    from checker_models import _negative_weight, int8

    model = _negative_weight("MatMul", y_q=int8(0.05, 0))
    assert {d.rule for d in iter_diagnostics(model)} == {"QT411"}
    x = {"x": np.random.default_rng(3).normal(size=(2, 3)).astype(np.float32)}
    evaluator = ReferenceEvaluator(model, kernels="integer")
    ours = evaluator.run(["y"], x)[0]
    assert any(v == "definitional: a negative scale" for v in evaluator.kernel_log.values())
    theirs = run_onnxruntime(lower(model), x, optimize=False)["y"]
    assert np.abs(theirs).max() > 0.5
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=0.05 + 1e-6)


@pytest.mark.parametrize("form", ["qdq", "qoperator"])
def test_conv_with_negative_weight_and_bias_scales_lowers_to_what_the_reference_computes(form):
    """Negative per-channel weight scales, the bias scales x_scale * w_scale negative with them (QT405 compares signs),
    a quantized output (QT411's warning only): QDQ and QLinearConv forms on onnxruntime's unoptimized path agree
    with the reference within one output step."""
    from checker_models import W_SCALES, X_SCALE, conv_model, int8

    from onnx_qtypes import QType
    from onnx_qtypes.proto import Schema

    scales = [s * (-1) ** i for i, s in enumerate(W_SCALES)]
    bias = QType("int32", [float(np.float32(X_SCALE) * np.float32(s)) for s in scales], [0] * 4, axis=0)
    model = conv_model(w_q=int8(scales, [0] * 4, axis=0, schema=Schema.SYMMETRIC), bias=bias)
    assert [d.rule for d in iter_diagnostics(model)] == ["QT411"]
    x = {"x": np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)}
    ours = ReferenceEvaluator(model).run(["y"], x)[0]
    lowered = lower(model, form=form)
    assert ("QLinearConv" in {n.op_type for n in lowered.graph.node}) == (form == "qoperator")
    np.testing.assert_allclose(run_onnxruntime(lowered, x, optimize=False)["y"], ours, rtol=0, atol=0.05 + 1e-6)
