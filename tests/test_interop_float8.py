"""Float8 / float4 QDQ models (tests/corpus_float8.py) through lift, check, our reference, lower and onnxruntime.

onnxruntime is compared on its unoptimized path only (ORT_DISABLE_ALL: DequantizeLinear -> float op ->
QuantizeLinear), where float8 Q/DQ run as ONNX defines them."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.reference
import pytest
from corpus import corpus_feeds, run_onnxruntime
from corpus_float8 import FLOAT4_OPSET, FLOAT8, MX_BLOCK, MX_OPSET, feeds, hand_built, quantizer_written

from onnx_qtypes import diagnose, get_qtype, lift, lower
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto.storage_types import STORAGE_TYPES
from onnx_qtypes.reference_ops import ReferenceEvaluator

HAND = hand_built()
FLOAT8_MODELS = {name: m for name, m in HAND.items() if "float4" not in name and "mx" not in name}
WRITTEN = quantizer_written()
RUNNABLE = {**FLOAT8_MODELS, **WRITTEN}  # onnxruntime 1.32 has float8 Q/DQ CPU kernels, none for float4e2m1


def _feeds(name: str, model: onnx.ModelProto) -> dict[str, np.ndarray]:
    return corpus_feeds(name) if name in WRITTEN else feeds(model)


def _float_typed(model: onnx.ModelProto) -> dict[str, str]:
    """Every typed tensor of a lifted model -> its storage type."""
    names = [vi.name for vi in (*model.graph.input, *model.graph.output, *model.graph.value_info)]
    names += [t.name for t in model.graph.initializer]
    return {n: q.storage for n in names if (q := get_qtype(model, n)) is not None}


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


@pytest.mark.parametrize("name", sorted(HAND) + sorted(WRITTEN))
def test_lifts_to_float_storage_and_checks_without_errors(name):
    model = {**HAND, **WRITTEN}[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing may be left as it was
        typed = lift(model)
    storages = set(_float_typed(typed).values())
    assert storages and storages <= {s for s, st in STORAGE_TYPES.items() if st.is_float}, storages
    found = list(iter_diagnostics(typed))
    assert not [d for d in found if d.is_error], found
    if name in HAND:
        assert not found, found
    assert not [d for d in diagnose(model).diagnostics if d.is_error]


@pytest.mark.parametrize("name", sorted(FLOAT8_MODELS))
def test_hand_built_types_carry_the_kind_of_float8(name):
    kind = name.split("-", 1)[1]
    assert set(_float_typed(lift(HAND[name])).values()) == {f"float8{kind}"}


@pytest.mark.parametrize("name", sorted(RUNNABLE))
def test_reference_agrees_with_onnxruntime_unoptimized(name):
    model = RUNNABLE[name]
    x = _feeds(name, model)
    expected = run_onnxruntime(model, x, optimize=False)
    actual = ReferenceEvaluator(lift(model)).run(None, x)
    for (out, want), got in zip(expected.items(), actual):
        assert _same(np.asarray(got), want), f"{name} {out}: ours {got!r}, onnxruntime {want!r}"


@pytest.mark.parametrize("name", sorted(RUNNABLE))
def test_lowered_runs_in_onnxruntime_with_the_same_outputs(name):
    model = RUNNABLE[name]
    x = _feeds(name, model)
    lowered = lower(lift(model))
    onnx.checker.check_model(lowered, full_check=True)
    before, after = run_onnxruntime(model, x, optimize=False), run_onnxruntime(lowered, x, optimize=False)
    assert before.keys() == after.keys()
    for out in before:
        assert _same(after[out], before[out]), out


def test_a_feed_beyond_the_range_saturates():
    model = FLOAT8_MODELS["matmul-e4m3fn"]
    x = feeds(model)
    assert abs(float(x["x"].reshape(-1)[0])) > 448 * 3.0 / 448  # the feed's first value lies beyond x's range
    typed = lift(model)
    (y,) = ReferenceEvaluator(typed).run(None, x)
    assert np.all(np.isfinite(y))  # saturated, not NaN (saturate=1)


def test_integer_kernels_fall_back_to_the_definition_for_float_storage():
    model = lift(FLOAT8_MODELS["matmul-e4m3fn"])
    x = feeds(model)
    evaluator = ReferenceEvaluator(model, kernels="integer")
    (fast,) = evaluator.run(None, x)
    (definition,) = ReferenceEvaluator(model).run(None, x)
    assert _same(fast, definition)
    assert evaluator.kernel_log, "no node logged"
    assert all(v.startswith("definitional: float8e4m3fn storage has no integer kernel") for v in evaluator.kernel_log.values()
               if v != "definitional: no integer kernel for MatMul"), evaluator.kernel_log


def test_float4_weights_lift_lower_at_opset_23_and_agree_with_onnx_reference():
    model = HAND["matmul-float4e2m1-weights"]
    x = feeds(model)
    typed = lift(model)
    assert get_qtype(typed, "w_q").storage == "float4e2m1"
    (ours,) = ReferenceEvaluator(typed).run(None, x)
    (theirs,) = onnx.reference.ReferenceEvaluator(model).run(None, x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)  # onnx.reference multiplies in float32, ours in float64
    lowered = lower(typed)
    assert (lowered.ir_version, lowered.opset_import[0].version) == FLOAT4_OPSET
    onnx.checker.check_model(lowered, full_check=True)
    (again,) = onnx.reference.ReferenceEvaluator(lowered).run(None, x)
    assert _same(again, theirs)


def test_every_float8_kind_is_in_the_corpus():
    assert {f"matmul-{k}" for k in FLOAT8} == set(FLOAT8_MODELS)


def test_mxfp4_block_scales_lift_to_a_blocked_float4_type_and_lower_keeps_them():
    """FLOAT8E8M0 block scales (opset 24) read as the expressed type's powers of two; the boundary
    DequantizeLinear stays, so lower keeps its E8M0 scales and the opset they need."""
    model = HAND["matmul-mxfp4-weights"]
    x = feeds(model)
    typed = lift(model)
    qtype = get_qtype(typed, "w_q")
    assert (qtype.storage, qtype.expressed, qtype.axis, qtype.block_size) == ("float4e2m1", "float32", 0, MX_BLOCK)
    assert all(s == 2.0 ** round(np.log2(s)) for s in qtype.scale)
    (ours,) = ReferenceEvaluator(typed).run(None, x)
    (theirs,) = onnx.reference.ReferenceEvaluator(model).run(None, x)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    lowered = lower(typed)
    assert (lowered.ir_version, lowered.opset_import[0].version) == MX_OPSET
    assert onnx.TensorProto.FLOAT8E8M0 in {t.data_type for t in lowered.graph.initializer}
    onnx.checker.check_model(lowered, full_check=True)
    (again,) = onnx.reference.ReferenceEvaluator(lowered).run(None, x)
    assert _same(again, theirs)


def test_run_cli_takes_and_writes_float8_storage_as_npz_bytes(tmp_path):
    """np.savez keeps an ml_dtypes array's bytes (dtype V1), not its type: `run` reads such an input as the
    float8 storage it is and writes float8 outputs the same way."""
    import ml_dtypes

    from onnx_qtypes.cli import main
    from onnx_qtypes.proto import save

    typed = lift(FLOAT8_MODELS["matmul-e4m3fn"])
    x = feeds(typed)
    (expected,) = ReferenceEvaluator(typed).run(None, x)
    save(typed, tmp_path / "m.onnx")
    np.savez(tmp_path / "in.npz", **x)
    assert main(["run", str(tmp_path / "m.onnx"), "--inputs", str(tmp_path / "in.npz"),
                 "--outputs", str(tmp_path / "out.npz")]) == 0
    assert _same(np.load(tmp_path / "out.npz")["y"], expected)
    # a graph whose input is float8 storage
    lone = lift(_dequantize_only())
    q = np.array([0.5, -104, 448], ml_dtypes.float8_e4m3fn)
    save(lone, tmp_path / "dq.onnx")
    np.savez(tmp_path / "q.npz", q=q)
    assert np.load(tmp_path / "q.npz")["q"].dtype == np.dtype("V1")
    assert main(["run", str(tmp_path / "dq.onnx"), "--inputs", str(tmp_path / "q.npz"),
                 "--outputs", str(tmp_path / "r.npz")]) == 0
    assert np.array_equal(np.load(tmp_path / "r.npz")["r"], q.astype(np.float32) * np.float32(0.25))


def _dequantize_only() -> onnx.ModelProto:
    import ml_dtypes
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["r"])], "dq",
        [helper.make_tensor_value_info("q", TensorProto.FLOAT8E4M3FN, [3])],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.float32(0.25), "s"), numpy_helper.from_array(np.zeros((), ml_dtypes.float8_e4m3fn), "z")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_a_profile_can_name_float8_storage():
    profile = {"name": "fp8-npu", "description": "float8e4m3fn activations and weights",
               "sources": [{"title": "a test", "url": "https://onnx.ai/onnx/technical/float8.html", "says": "e4m3fn"}],
               "roles": {role: {"storage": ["float8e4m3fn"]} for role in ("activation", "weight")}}
    fired = {name: {d.rule for d in iter_diagnostics(lift(FLOAT8_MODELS[name]), profile)}
             for name in ("matmul-e4m3fn", "matmul-e5m2")}
    assert "QT501" not in fired["matmul-e4m3fn"]
    assert "QT501" in fired["matmul-e5m2"]


def test_a_typed_microscaling_weight_lowers_to_e8m0_block_scales():
    """Where lower writes the parameters itself, a float-storage blocked type with power-of-two scales
    (SYMMETRIC_POW2_SCALE) gets FLOAT8E8M0 scales and a DequantizeLinear that names its output type."""
    import ml_dtypes
    from reference_models import T, typed_model

    from onnx_qtypes import QType

    rng = np.random.default_rng(5)
    scales = [2.0 ** int(k) for k in rng.integers(-6, 3, size=2 * 4)]  # [64, 4] in blocks of 32 along axis 0
    qtype = QType("float4e2m1", scales, [0] * 8, axis=0, block_size=32, schema="symmetric_pow2_scale")
    codes = rng.choice([-6.0, -2.0, -0.5, 0.0, 1.0, 1.5, 3.0, 4.0], size=(64, 4)).astype(ml_dtypes.float4_e2m1fn)
    typed = typed_model("MatMul", [T("x", (2, 64)), T("w", (64, 4), qtype, value=codes)], [T("y", (2, 4))], opset=23)
    x = {"x": rng.normal(size=(2, 64)).astype(np.float32)}
    (ours,) = ReferenceEvaluator(typed).run(None, x)
    lowered = lower(typed)
    scale_inits = [t for t in lowered.graph.initializer if t.data_type == onnx.TensorProto.FLOAT8E8M0]
    assert len(scale_inits) == 1 and list(scale_inits[0].dims) == [2, 4]
    dq = next(n for n in lowered.graph.node if n.op_type == "DequantizeLinear")
    assert onnx.helper.get_node_attr_value(dq, "output_dtype") == onnx.TensorProto.FLOAT
    assert (lowered.ir_version, lowered.opset_import[0].version) == MX_OPSET
    onnx.checker.check_model(lowered, full_check=True)
    (theirs,) = onnx.reference.ReferenceEvaluator(lowered).run(None, x)
    np.testing.assert_allclose(theirs, ours, rtol=1e-6)
    again = get_qtype(lift(lowered), "w")
    assert (again.schema.name, again.scale) == ("SYMMETRIC_POW2_SCALE", qtype.scale)


def test_lifted_e8m0_scales_say_they_are_powers_of_two():
    qtype = get_qtype(lift(HAND["matmul-mxfp4-weights"]), "w_q")
    assert qtype.schema.name == "SYMMETRIC_POW2_SCALE"
