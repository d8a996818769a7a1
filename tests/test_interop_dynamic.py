"""Dynamic quantization end to end: quantize_dynamic models lift, check clean, run like onnxruntime, and lower back.

onnxruntime runs with every graph optimization off (ORT_DISABLE_ALL); the tolerance is one quantization step of
each dynamically quantized operand (its scale times the largest column of the weight it multiplies), since
onnxruntime divides in float32 where the reference divides exactly.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.reference
import pytest
from onnx import TensorProto, helper

from onnx_qtypes import QType, get_qtype, set_qtype
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.conformance.tolerance import near_ties
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.interop.lift import lift_model
from onnx_qtypes.interop.lower import lower_model
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime
from tests.corpus_dynamic import dynamic_feeds, dynamic_models

NAMES = sorted(dynamic_models())
INTEGER_OPS = {"MatMulInteger", "ConvInteger", "Cast"}


@pytest.fixture(scope="module")
def lifted() -> dict[str, onnx.ModelProto]:
    return {name: lift_model(model).model for name, model in dynamic_models().items()}


def _reals(model: onnx.ModelProto, name: str, values: dict) -> tuple[np.ndarray, float]:
    """Dequantized values of a typed operand and one step of it (its largest scale)."""
    qtype = get_qtype(model, name)
    if qtype.is_dynamic:
        qtype, stored = values[name].qtype, np.asarray(values[name]).astype(np.float64)
    else:
        stored = tensor_array(next(t for t in model.graph.initializer if t.name == name)).astype(np.float64)
    shape = [1] * stored.ndim
    if qtype.axis is not None:
        shape[qtype.axis] = -1
    return (stored - np.reshape(qtype.zero_point, shape)) * np.reshape(qtype.scale, shape), max(qtype.scale)


def _one_step_bound(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> float:
    """Sum over the typed float ops of what one step in every element of each dynamic operand can change:
    its scale times the largest |column| (|row|) sum of the other operand's reals."""
    activations = [n.output[0] for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]
    values = dict(zip(activations, ReferenceEvaluator(model).run(activations, feeds)))
    bound = 0.0
    for node in model.graph.node:
        if node.op_type not in ("MatMul", "Conv") or node.input[0] not in values:
            continue
        (a, a_step), (b, b_step) = (_reals(model, n, values) for n in node.input[:2])
        if node.op_type == "Conv":
            bound += a_step * float(np.abs(b).reshape(b.shape[0], -1).sum(axis=1).max())
            if node.input[1] in values:  # a weight quantized at run time: one step of it over each input window
                window = onnx.reference.ReferenceEvaluator(helper.make_node(
                    "Conv", ["a", "w"], ["y"], **{x.name: helper.get_attribute_value(x) for x in node.attribute}))
                ones = np.ones((1, *b.shape[1:]))
                bound += b_step * float(window.run(None, {"a": np.abs(a), "w": ones})[0].max()) + (
                    a_step * b_step * ones.size)
            continue
        bound += a_step * float(np.abs(b).sum(axis=-2).max())
        if node.input[1] in values:  # both operands dynamic: one step of b too, and of both at once
            bound += b_step * float(np.abs(a).sum(axis=-1).max()) + a_step * b_step * a.shape[-1]
    return bound


@pytest.mark.parametrize("name", NAMES)
def test_quantize_dynamic_lifts_to_float_ops_on_typed_operands(name, lifted):
    model = dynamic_models()[name]
    result = lift_model(model)
    assert result.warnings == [] and result.qoperator_nodes > 0
    typed = result.model
    assert not {n.op_type for n in typed.graph.node} & INTEGER_OPS
    storage = "int8" if "_s8" in name else "uint8"
    typed_ops = [n for n in typed.graph.node if n.op_type in ("MatMul", "Conv") and get_qtype(typed, n.input[0])]
    assert len(typed_ops) == sum(n.op_type in ("MatMulInteger", "ConvInteger") for n in model.graph.node)
    for node in typed_ops:
        x, w = (get_qtype(typed, n) for n in node.input[:2])
        assert x == QType("uint8") and x.is_dynamic
        if w.is_dynamic:  # a MatMul of two activations
            assert w == QType("uint8") and ("activations" in name or name.startswith("conv_constant_weight"))
            continue
        assert w.storage == storage
        if "perchannel" in name and node.op_type == "MatMul":
            assert w.axis == 1 and len(w.scale) > 1


@pytest.mark.parametrize("name", NAMES)
def test_lifted_dynamic_model_checks_clean(name, lifted):
    errors = [d for d in iter_diagnostics(lifted[name]) if d.severity.value == "error"]
    assert errors == []


@pytest.mark.parametrize("name", NAMES)
def test_reference_agrees_with_onnxruntime_within_one_step(name, lifted):
    feeds = dynamic_feeds(name)
    expected = run_onnxruntime(dynamic_models()[name], feeds, optimize=False)
    got = ReferenceEvaluator(lifted[name]).run(list(expected), feeds)
    bound = _one_step_bound(lifted[name], feeds)
    for (key, want), have in zip(expected.items(), got):
        np.testing.assert_allclose(have, want, rtol=0, atol=bound, err_msg=key)


@pytest.mark.parametrize("name", NAMES)
def test_dynamic_activations_agree_with_onnxruntime_within_one_step(name, lifted):
    """Each DynamicQuantizeLinear: the same scale and zero point on a graph input, integers at most one step apart.
    Downstream its input is computed (in float32 by onnxruntime, exactly by the reference), so its range, and the
    scale with it, may be a float32 rounding apart."""
    model = dynamic_models()[name]
    dqls = [n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear"]
    model.graph.output.extend(helper.make_empty_tensor_value_info(o) for n in dqls for o in n.output)
    feeds = dynamic_feeds(name)
    expected = run_onnxruntime(model, feeds, optimize=False)
    got = ReferenceEvaluator(lifted[name]).run([n.output[0] for n in dqls], feeds)
    for node, have in zip(dqls, got):
        y, scale, zero_point = (expected[o] for o in node.output)
        if node.input[0] in {i.name for i in model.graph.input}:
            assert have.qtype.scale == (float(scale),) and have.qtype.zero_point == (int(zero_point),)
            # same parameters: onnxruntime's float32 division misses the exact quotient on near ties only
            differ = np.asarray(have).astype(np.int64) != y.astype(np.int64)
            assert not (differ & ~near_ties(feeds[node.input[0]], np.float64(scale), "float32")).any()
        else:
            assert abs(have.qtype.scale[0] - float(scale)) <= 4 * np.spacing(np.float32(scale))
            assert abs(have.qtype.zero_point[0] - int(zero_point)) <= 1
        assert np.abs(np.asarray(have).astype(np.int64) - y.astype(np.int64)).max() <= 1


@pytest.mark.parametrize("name", NAMES)
def test_lowered_dynamic_model_runs_in_onnxruntime_like_the_reference(name, lifted):
    feeds = dynamic_feeds(name, seed=1)
    lowered = lower_model(lifted[name]).model
    assert "DynamicQuantizeLinear" in {n.op_type for n in lowered.graph.node}
    expected = ReferenceEvaluator(lifted[name]).run(None, feeds)
    got = run_onnxruntime(lowered, feeds, optimize=False)
    bound = _one_step_bound(lifted[name], feeds)
    for want, have in zip(expected, got.values()):
        np.testing.assert_allclose(have, want, rtol=0, atol=bound)


@pytest.mark.parametrize("name", NAMES)
def test_qoperator_form_writes_the_integer_operators_back_bit_for_bit(name, lifted):
    """lower's qoperator form writes what quantize_dynamic wrote (ConvInteger / MatMulInteger on the stored values,
    Cast, Mul by the scale product), so onnxruntime's definition path computes the original's every output bit;
    lift reads it back to the same typed model."""
    model = dynamic_models()[name]
    lowered = lower_model(lifted[name], form="qoperator")
    integer = ("MatMulInteger", "ConvInteger")
    assert sum(n.op_type in integer for n in lowered.model.graph.node) == \
        sum(n.op_type in integer for n in model.graph.node) == lowered.integer_nodes > 0
    assert "DequantizeLinear" not in {n.op_type for n in lowered.model.graph.node}
    feeds = dynamic_feeds(name, seed=1)
    want = run_onnxruntime(model, feeds, optimize=False)
    got = run_onnxruntime(lowered.model, feeds, optimize=False)
    for key, values in want.items():
        assert np.array_equal(got[key], values), key
    again = lift_model(lowered.model).model
    assert [n.op_type for n in again.graph.node] == [n.op_type for n in lifted[name].graph.node]


def test_lower_writes_the_form_lift_read_by_default(lifted):
    """lift records the form of the file it read (model metadata_props); lower without a form writes that one back
    and drops the record; a form given wins; a record lower does not know is refused, naming it."""
    from onnx_qtypes.interop import metadata

    typed = lifted["mlp-dyn_s8"]
    assert {p.key: p.value for p in typed.metadata_props}[metadata.FORM_KEY] == "qoperator"
    default = lower_model(typed)
    assert default.form == "qoperator" and default.integer_nodes > 0
    assert metadata.FORM_KEY not in {p.key for p in default.model.metadata_props}
    assert lower_model(typed, "qdq").integer_nodes == 0
    bad = onnx.ModelProto()
    bad.CopyFrom(typed)
    next(p for p in bad.metadata_props if p.key == metadata.FORM_KEY).value = "qlinear"
    with pytest.raises(LowerError, match=r"onnx_qtypes.lifted_from is 'qlinear', not one of qdq, qoperator"):
        lower_model(bad)
    assert lower_model(bad, "qdq").form == "qdq"


def test_qoperator_form_keeps_qdq_where_the_integer_operators_do_not_apply(lifted):
    """A Conv with its bias inside (quantize_dynamic adds it after the scaling) stays a float Conv on
    DequantizeLinear outputs; its twin without the bias becomes ConvInteger."""
    typed = onnx.ModelProto()
    typed.CopyFrom(lifted["conv-dyn_s8"])
    conv = next(n for n in typed.graph.node if n.op_type == "Conv")
    assert lower_model(typed, form="qoperator").integer_nodes == 1
    typed.graph.initializer.append(onnx.numpy_helper.from_array(np.zeros(4, np.float32), "inner_bias"))
    conv.input.append("inner_bias")
    lowered = lower_model(typed, form="qoperator")
    ops = {n.op_type for n in lowered.model.graph.node}
    assert lowered.integer_nodes == 0 and "ConvInteger" not in ops and {"Conv", "DequantizeLinear"} <= ops


@pytest.mark.parametrize("name", ["mlp-dyn_s8", "cnn-dyn_u8_perchannel", "conv-dyn_s8"])
def test_lift_of_the_lowered_model_gives_the_typed_model_back(name, lifted):
    typed = lifted[name]
    again = lift_model(lower_model(typed).model)
    assert again.warnings == []
    assert [(n.op_type, list(n.input)) for n in again.model.graph.node] == [(n.op_type, list(n.input)) for n in typed.graph.node]
    for node in typed.graph.node:
        for tensor in node.input:
            assert get_qtype(again.model, tensor) == get_qtype(typed, tensor), tensor
    feeds = dynamic_feeds(name)
    for a, b in zip(ReferenceEvaluator(again.model).run(None, feeds), ReferenceEvaluator(typed).run(None, feeds)):
        assert np.array_equal(a, b)


def test_a_dynamic_activation_also_read_as_integers_is_left_as_it_was():
    model = dynamic_models()["matmul-dyn_s8"]
    dql = next(n for n in model.graph.node if n.op_type == "DynamicQuantizeLinear")
    model.graph.output.append(helper.make_tensor_value_info(dql.output[0], TensorProto.UINT8, None))
    result = lift_model(model)
    assert "MatMulInteger" in {n.op_type for n in result.model.graph.node}
    assert any("DynamicQuantizeLinear" in w for w in result.warnings)


# --- lower: a dynamic type on an operator's output -------------------------------------------------------------


def _dynamic_output_model(qtype: QType) -> onnx.ModelProto:
    """y = Sub(h, x) with h = Neg(x) quantized with parameters chosen from h (Neg is exact in every expressed type,
    so the parameters must agree exactly)."""
    ftype = TensorProto.FLOAT16 if qtype.expressed == "float16" else TensorProto.FLOAT
    nodes = [helper.make_node("Neg", ["x"], ["h"], name="negate"), helper.make_node("Sub", ["h", "x"], ["y"], name="sub")]
    graph = helper.make_graph(nodes, "dynamic_output", [helper.make_tensor_value_info("x", ftype, [3, 5])],
                              [helper.make_tensor_value_info("y", ftype, [3, 5])],
                              value_info=[helper.make_tensor_value_info("h", 0, [3, 5])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "h", qtype)
    return model


def _parameters_of(lowered: onnx.ModelProto) -> tuple[str, str, str]:
    """(integers, scale, zero point) of the quantization lower wrote for h."""
    for node in lowered.graph.node:
        if node.op_type == "DequantizeLinear":
            return node.input[0], node.input[1], node.input[2]
    raise AssertionError("no DequantizeLinear")


DYNAMIC_TYPES = [
    QType("uint8"),
    QType("int8"),
    QType("int8", schema="symmetric"),
    QType("uint8", schema="symmetric"),
    QType("int16"),
    QType("uint16", schema="symmetric"),
    QType("int8", storage_min=-127, storage_max=127),
    QType("uint8", storage_min=3, storage_max=250),
    QType("uint8", expressed="float16"),
    QType("int8", schema="symmetric", expressed="float16"),
    QType("uint8", schema="symmetric_with_unsigned"),
    QType("int8", schema="symmetric_with_unsigned"),
    QType("int8", schema="symmetric_with_unsigned", storage_min=-127),
    QType("uint8", schema="symmetric_with_unsigned", storage_min=130),
    QType("int8", schema="symmetric_pow2_scale"),
    QType("uint8", schema="asymmetric_pow2_scale"),
    QType("int8", schema="asymmetric_pow2_scale", expressed="float16"),
    # 16-bit storage in float16 (QT120): lowered in float32 inside, each operation rounded once to float16, the
    # integer constants exact (float16(65535) is inf): the parameters are the reference's exactly
    QType("int16", expressed="float16"),
    QType("uint16", expressed="float16"),
    QType("int16", schema="symmetric", expressed="float16"),
]


@pytest.mark.parametrize("qtype", DYNAMIC_TYPES, ids=str)
def test_dynamic_output_lowers_to_the_spec_parameters(qtype):
    model = _dynamic_output_model(qtype)
    lowered = lower_model(model).model
    integers, scale, zero_point = _parameters_of(lowered)
    uses_dql = any(n.op_type == "DynamicQuantizeLinear" for n in lowered.graph.node)
    assert uses_dql == (qtype == QType("uint8"))
    for name in (integers, scale, zero_point):
        lowered.graph.output.append(helper.make_empty_tensor_value_info(name))
    rng = np.random.default_rng(7)
    dtype = qtype.expressed_type.np_dtype
    for run in range(30):
        x = (rng.normal(size=(3, 5)) * rng.choice([1e-3, 1.0, 10.0])).astype(dtype)
        x = np.abs(x) if run == 1 else -np.abs(x) if run == 2 else x
        got = run_onnxruntime(lowered, {"x": x}, optimize=False)
        h = ReferenceEvaluator(model).run(["h"], {"x": x})[0]
        if qtype.expressed == "float32" or qtype.storage_type.bits == 16:
            assert float(got[scale]) == h.qtype.scale[0] and int(got[zero_point]) == h.qtype.zero_point[0]
            # onnxruntime divides by the scale in float32, the reference exactly: one step apart on near ties only
            # (semantics.md#quantize-precision), nowhere else
            diff = np.abs(got[integers].astype(np.int64) - np.asarray(h).astype(np.int64))
            near = near_ties(x, np.float64(h.qtype.scale[0]), qtype.expressed)
            assert diff.max() <= 1 and not (diff.astype(bool) & ~near).any()
        # float16: onnxruntime's float16 Div inside a graph is not always correctly rounded (the scale may be one
        # float16 ulp off, measured with 1.32), so the dequantized values are compared: each is within half a step
        real = (got[integers].astype(np.float64) - float(got[zero_point])) * float(got[scale])
        want = (np.asarray(h).astype(np.float64) - h.qtype.zero_point[0]) * h.qtype.scale[0]
        assert np.abs(real - want).max() <= max(float(got[scale]), h.qtype.scale[0]) * (1 + 1e-3)
        assert qtype.storage_min <= got[integers].min() and got[integers].max() <= qtype.storage_max


def test_dynamic_output_of_zeros_has_the_same_integers_as_dynamic_quantize_linear():
    """On an all-zero tensor onnxruntime's DynamicQuantizeLinear picks another scale; the values are all 0 anyway."""
    model = _dynamic_output_model(QType("uint8"))
    x = np.zeros((3, 5), np.float32)
    got = run_onnxruntime(lower_model(model).model, {"x": x}, optimize=False)["y"]
    assert np.array_equal(got, ReferenceEvaluator(model).run(None, {"x": x})[0])


@pytest.mark.parametrize("qtype, message", [
    (QType("int8", axis=0), "per-axis dynamic type"),
    (QType("int32"), "int32"),
])
def test_dynamic_types_without_a_standard_form_are_refused(qtype, message):
    with pytest.raises(LowerError, match=message):
        lower_model(_dynamic_output_model(qtype))


def test_a_per_axis_dynamic_graph_input_fed_as_reals_is_refused():
    """Fed as storage it takes x.scale / x.zero_point inputs (tests/test_lower_standard_form.py); fed as reals, its
    per-axis parameters would have to be computed in standard ONNX, which lower does not write."""
    model = _dynamic_output_model(QType("uint8"))
    set_qtype(model, "x", QType("uint8", axis=1))
    with pytest.raises(LowerError, match=r"'x'.*per-axis dynamic type"):
        lower_model(model, dynamic_inputs="reals")


def test_a_static_type_on_dynamic_quantize_linear_is_refused():
    model = dynamic_models()["matmul-dyn_u8"]
    typed = lift_model(model).model
    dql = next(n for n in typed.graph.node if n.op_type == "DynamicQuantizeLinear")
    set_qtype(typed, dql.output[0], QType("int8"))
    with pytest.raises(LowerError, match="DynamicQuantizeLinear computes dynamic uint8"):
        lower_model(typed)


@pytest.mark.parametrize("qtype, steps", [(QType("int8", schema="symmetric_pow2_scale"), 127),
                                          (QType("uint8", schema="asymmetric_pow2_scale"), 255)], ids=str)
@pytest.mark.parametrize("exponent", [-20, -3, 0, 5])
def test_pow2_scales_are_exact_at_powers_of_two(qtype, steps, exponent):
    """A range of exactly steps * 2^k must give scale 2^k, where a rounded log2 would give 2^(k+1)."""
    model = _dynamic_output_model(qtype)
    lowered = lower_model(model).model
    _, scale, _ = _parameters_of(lowered)
    lowered.graph.output.append(helper.make_empty_tensor_value_info(scale))
    for nudge in (1.0, 1.0 + 2.0**-20, 1.0 - 2.0**-20):
        x = np.zeros((3, 5), np.float32)
        x[0, 0] = -np.float32(steps * 2.0**exponent * nudge)  # h = Neg(x) has range [0, steps * 2^k * nudge]
        got = float(run_onnxruntime(lowered, {"x": x}, optimize=False)[scale])
        assert got == ReferenceEvaluator(model).run(["h"], {"x": x})[0].qtype.scale[0]
        assert got == 2.0 ** (exponent + (nudge > 1))


@pytest.mark.parametrize("opset", [13, 17])
def test_an_older_opset_stays_so_onnxruntime_runs_the_same_kernels_bit_for_bit(opset, tmp_path):
    """quantize_dynamic of a Conv -> AveragePool -> MatMul model at an opset before 19: lower keeps the file's opset
    (its types need 11), so onnxruntime's AveragePool is the file's own and every output bit of its unoptimized run
    is the original's (raised to 21, AveragePool-19's kernel rounded otherwise)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    rng = np.random.default_rng(7)
    inits = [onnx.numpy_helper.from_array(rng.normal(size=(8, 3, 3, 3)).astype(np.float32), "w"),
             onnx.numpy_helper.from_array(rng.normal(size=(8 * 6 * 6, 5)).astype(np.float32), "m"),
             onnx.numpy_helper.from_array(np.array([1, -1], np.int64), "flat")]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("AveragePool", ["c"], ["p"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=0),
             helper.make_node("Reshape", ["p", "flat"], ["f"]), helper.make_node("MatMul", ["f", "m"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8),
              tmp_path / "float.onnx")
    quantize_dynamic(tmp_path / "float.onnx", tmp_path / "dyn.onnx", weight_type=QuantType.QUInt8,
                     op_types_to_quantize=["Conv", "MatMul"])
    original = onnx.load(tmp_path / "dyn.onnx")
    lowered = lower_model(lift_model(original).model).model
    assert [o.version for o in lowered.opset_import if o.domain == ""] == [opset]
    for seed in range(3):  # (onnxruntime's definition path: what its fused kernels compute is its own to change)
        feeds = {"x": np.random.default_rng(seed).normal(size=(1, 3, 6, 6)).astype(np.float32)}
        want, got = run_onnxruntime(original, feeds, False), run_onnxruntime(lowered, feeds, False)
        assert got["y"].tobytes() == want["y"].tobytes()
