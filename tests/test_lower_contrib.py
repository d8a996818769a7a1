"""lower's qoperator form writes back the com.microsoft QLinear* nodes lift read (interop.md #lower-qoperator), so
that lower(lift(m)) runs m's own kernels: bit for bit on onnxruntime's unoptimized path, near ties included."""

from __future__ import annotations

import collections

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper, version_converter
from onnx_qtypes.interop import lift_model, lower_model
from onnx_qtypes.interop.metadata import CONTRIB_KEY, contrib_origin
from onnx_qtypes.proto import write_qtype
from onnx_qtypes.reference_ops import ReferenceEvaluator

from onnx_qtypes import QType, quantized_tensors
from tests.corpus import run_onnxruntime
from tests.corpus_producers import producer_feeds, producer_models

MODELS = {name: model for name, model in producer_models().items() if "-qop_" in name}
NAMES = sorted(MODELS)

# Scales and zero points (a, b, c) found by a seeded search over the full uint8 grid where onnxruntime's contrib
# kernel and float32 DequantizeLinear -> op -> QuantizeLinear round some element differently
# (proposal/experiments/qlinear_binary_ties.py measures how often): a lowering that writes QDQ in place of the
# contrib node fails the grid test below on these.
NEAR_TIES = {
    "Add": (0.0457250215113163, 208, 0.030725153163075447, 161, 0.036745332181453705, 139),
    "Mul": (0.04790329933166504, 251, 0.008289436809718609, 94, 0.048658810555934906, 227),
}


@pytest.fixture(scope="module")
def lifted() -> dict:
    return {name: lift_model(model) for name, model in MODELS.items()}


def _contrib(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(n.op_type for n in model.graph.node if n.domain == "com.microsoft")


def _binary(op: str, params: tuple) -> onnx.ModelProto:
    inits = [numpy_helper.from_array(np.array(v, np.float32 if k[0] == "s" else np.uint8), k)
             for k, v in zip(("sa", "za", "sb", "zb", "sc", "zc"), params)]
    graph = helper.make_graph(
        [helper.make_node(f"QLinear{op}", ["a", "sa", "za", "b", "sb", "zb", "sc", "zc"], ["c"], name="fused",
                          domain="com.microsoft")], "g",
        [helper.make_tensor_value_info(n, TensorProto.UINT8, [65536]) for n in ("a", "b")],
        [helper.make_tensor_value_info("c", TensorProto.UINT8, [65536])], inits)
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("com.microsoft", 1)])


def _grid() -> dict[str, np.ndarray]:
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    return {"a": a.ravel(), "b": b.ravel()}


@pytest.mark.parametrize("op", sorted(NEAR_TIES))
def test_near_ties_come_out_as_the_original_computed_them(op):
    original = _binary(op, NEAR_TIES[op])
    typed = lift_model(original).model
    assert [(n.op_type, contrib_origin(n)) for n in typed.graph.node] == [(op, f"QLinear{op}")]
    lowered = lower_model(typed)
    assert lowered.form == "qoperator" and lowered.contrib_nodes == 1
    assert _contrib(lowered.model) == {f"QLinear{op}": 1}
    grid = _grid()
    theirs = run_onnxruntime(original, grid, optimize=False)["c"]
    assert np.array_equal(run_onnxruntime(lowered.model, grid, optimize=False)["c"], theirs)
    # the grid still tells the forms apart (else pick new parameters: proposal/experiments/qlinear_binary_ties.py)
    qdq = lower_model(typed, form="qdq").model
    assert not np.array_equal(run_onnxruntime(qdq, grid, optimize=False)["c"], theirs)


@pytest.mark.parametrize("name", NAMES)
def test_every_contrib_node_is_written_back(name, lifted):
    result = lower_model(lifted[name].model)
    expected = _contrib(MODELS[name])
    assert _contrib(result.model) == expected
    assert result.contrib_nodes == sum(expected.values())
    assert not [n for n in result.notes if "is written as QDQ" in n]
    assert not [n for n in result.model.graph.node if any(p.key == CONTRIB_KEY for p in n.metadata_props)]
    original = {n.output[0]: n for n in MODELS[name].graph.node if n.op_type == "QLinearSoftmax"}
    for node in result.model.graph.node:
        if node.op_type == "QLinearSoftmax":  # computes the Softmax of the opset it names: the original's
            opset = helper.get_attribute_value(next(a for a in node.attribute if a.name == "opset"))
            assert opset == helper.get_attribute_value(
                next(a for a in original[node.output[0]].attribute if a.name == "opset"))


def test_a_softmax_below_opset_13_keeps_its_flattening_meaning():
    """QLinearSoftmax(opset=11, axis=1) on a 3-D input normalizes over the last two axes together; lower converts the
    model to opset 21 (below 12 it converts every model), but the written node must still name opset 11."""
    params = [numpy_helper.from_array(np.array(v, t), n) for n, v, t in
              (("xs", 0.05, np.float32), ("xz", 128, np.uint8), ("ys", 1 / 256, np.float32), ("yz", 0, np.uint8))]
    graph = helper.make_graph(
        [helper.make_node("QLinearSoftmax", ["x", "xs", "xz", "ys", "yz"], ["y"], name="softmax",
                          domain="com.microsoft", opset=11, axis=1)], "g",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, [2, 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [2, 3, 4])], params)
    original = helper.make_model(graph, ir_version=7, opset_imports=[helper.make_opsetid("", 11),
                                                                     helper.make_opsetid("com.microsoft", 1)])
    lowered = lower_model(lift_model(original).model)
    assert lowered.contrib_nodes == 1 and lowered.model.opset_import[0].version == 21
    (softmax,) = [n for n in lowered.model.graph.node if n.op_type == "QLinearSoftmax"]
    assert {(a.name, helper.get_attribute_value(a)) for a in softmax.attribute} >= {("opset", 11), ("axis", 1)}
    feeds = {"x": np.random.default_rng(0).integers(0, 256, (2, 3, 4), dtype=np.uint8)}
    assert np.array_equal(run_onnxruntime(lowered.model, feeds, optimize=False)["y"],
                          run_onnxruntime(original, feeds, optimize=False)["y"])


@pytest.mark.parametrize("name", NAMES)
def test_lower_and_onnxruntime_give_the_original_bit_for_bit(name, lifted):
    original = MODELS[name]
    lowered = lower_model(lifted[name].model).model
    if lowered.opset_import[0].version != original.opset_import[0].version:  # raised to 21 for a per-axis type at
        original = version_converter.convert_version(original, 21)  # 11: like for like (AveragePool's kernels
        original.ir_version = 10  # of the two versions round 1 ulp apart)
    for seed in range(3):
        feeds = producer_feeds(name, seed)
        assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"],
                              run_onnxruntime(original, feeds, optimize=False)["y"])


@pytest.mark.parametrize("name", NAMES[:2])
def test_lift_reads_the_written_form_back_to_the_same_types(name, lifted):
    typed = lifted[name].model
    again = lift_model(lower_model(typed).model).model
    assert quantized_tensors(again) == quantized_tensors(typed)
    assert _contrib(lower_model(again).model) == _contrib(lower_model(typed).model)


def test_qdq_form_writes_no_contrib_node_and_no_mark():
    lowered = lower_model(lift_model(_binary("Add", NEAR_TIES["Add"])).model, form="qdq")
    assert not _contrib(lowered.model) and lowered.contrib_nodes == 0
    assert [n.op_type for n in lowered.model.graph.node] == ["DequantizeLinear", "DequantizeLinear", "Add",
                                                             "QuantizeLinear"]
    assert not [n for n in lowered.model.graph.node if contrib_origin(n)]


@pytest.mark.parametrize("change, reason", [
    ({"storage": "int16", "zero_point": 0}, "takes int8 / uint8"),
    ({"storage_min": 1}, "a narrowed output range"),
])
def test_a_node_whose_types_no_longer_fit_is_written_as_qdq_and_named(change, reason):
    typed = lift_model(_binary("Add", NEAR_TIES["Add"])).model
    out = next(vi for vi in typed.graph.output if vi.name == "c")
    old = QType("uint8", NEAR_TIES["Add"][4], NEAR_TIES["Add"][5])
    write_qtype(out, old.replace(**change))
    lowered = lower_model(typed)
    assert not _contrib(lowered.model) and lowered.contrib_nodes == 0
    (note,) = [n for n in lowered.notes if "read from QLinearAdd" in n]
    assert "(/graph/node/0)" in note and reason in note
    assert "Add" in [n.op_type for n in lowered.model.graph.node]


def _qgemm(float_output: bool, per_column: bool, m: int = 64, k: int = 96, n: int = 48) -> onnx.ModelProto:
    """QGemm as onnxruntime's quantizer writes it: uint8 A, int8 B (transB) per tensor or per column, an int32 bias,
    alpha 0.5 (lift folds it into B's scales), a uint8 or float output."""
    rng = np.random.default_rng(7)
    b_scale = (rng.uniform(0.001, 0.01, size=n) if per_column else np.array(0.004)).astype(np.float32)
    params = {"a_scale": np.array(0.02, np.float32), "a_zero_point": np.array(128, np.uint8),
              "b": rng.integers(-127, 128, size=(n, k)).astype(np.int8), "b_scale": b_scale,
              "b_zero_point": np.zeros(b_scale.shape, np.int8), "c": rng.integers(-5000, 5000, size=n).astype(np.int32),
              "y_scale": np.array(0.05, np.float32), "y_zero_point": np.array(120, np.uint8)}
    inputs = ["a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "c"]
    inputs += [] if float_output else ["y_scale", "y_zero_point"]
    graph = helper.make_graph(
        [helper.make_node("QGemm", inputs, ["y"], name="gemm", domain="com.microsoft", alpha=0.5, transB=1)], "g",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [m, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT if float_output else TensorProto.UINT8, [m, n])],
        [numpy_helper.from_array(v, name) for name, v in params.items() if name in inputs])
    return helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21),
                                                                   helper.make_opsetid("com.microsoft", 1)])


def _same_on_onnxruntime(a: onnx.ModelProto, b: onnx.ModelProto, shape=(64, 96)) -> bool:
    rng = np.random.default_rng(3)
    for _ in range(3):
        feeds = {"a": rng.integers(0, 256, size=shape).astype(np.uint8)}
        if not np.array_equal(run_onnxruntime(a, feeds, optimize=False)["y"],
                              run_onnxruntime(b, feeds, optimize=False)["y"]):
            return False
    return True


@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm_is_written_back_with_alpha_in_the_weight_scales(per_column):
    original = _qgemm(float_output=False, per_column=per_column)
    lowered = lower_model(lift_model(original).model)
    (node,) = lowered.model.graph.node
    assert (node.op_type, node.domain, lowered.contrib_nodes) == ("QGemm", "com.microsoft", 1)
    assert helper.get_attribute_value(next(a for a in node.attribute if a.name == "transB")) == 1
    assert all(a.name != "alpha" or a.f == 1.0 for a in node.attribute)
    written = {t.name: numpy_helper.to_array(t) for t in lowered.model.graph.initializer}
    given = {t.name: numpy_helper.to_array(t) for t in original.graph.initializer}
    assert np.array_equal(written[node.input[4]], given["b_scale"] * np.float32(0.5))  # exact: alpha is 2^-1
    assert np.array_equal(written[node.input[6]], given["c"])
    assert _same_on_onnxruntime(lowered.model, original)


def test_qgemm_with_a_float_output_from_a_typed_gemm():
    """A typed Gemm on typed operands whose output is float: QGemm without output parameters computes that."""
    typed = lift_model(_qgemm(float_output=False, per_column=True)).model
    out = next(vi for vi in typed.graph.output if vi.name == "y")
    out.CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 48]))
    lowered = lower_model(typed)
    (node,) = lowered.model.graph.node
    assert node.op_type == "QGemm" and len(node.input) == 7 and list(node.output) == ["y"]
    assert _same_on_onnxruntime(lowered.model, _qgemm(float_output=True, per_column=True))


def test_a_float_output_qgemm_lifts_to_dequantized_operands_and_stays_so():
    result = lower_model(lift_model(_qgemm(float_output=True, per_column=False)).model)
    assert not _contrib(result.model)
    (note,) = [n for n in result.notes if "read from QGemm" in n]
    assert "its operands are dequantized before it" in note


def _marks(model: onnx.ModelProto) -> list[str]:
    """Every node's mark value, in subgraphs and model-local functions too."""
    found, pending = [], [model.graph.node, *(f.node for f in model.functions)]
    while pending:
        for node in pending.pop():
            found += [p.value for p in node.metadata_props if p.key == CONTRIB_KEY]
            pending += [a.g.node for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
    return found


def test_a_mark_in_a_subgraph_or_a_local_function_is_not_copied_into_the_lowered_model():
    """lower acts on main-graph marks only; one elsewhere must not reach the output as if it described a node."""
    typed = lift_model(_binary("Add", NEAR_TIES["Add"])).model
    marked = helper.make_node("Identity", ["f"], ["t"])
    marked.metadata_props.add(key=CONTRIB_KEY, value="QLinearAdd")
    inner = onnx.NodeProto()
    inner.CopyFrom(marked)
    inner.output[0] = "e"
    typed.graph.node.append(helper.make_node(
        "If", ["cond"], ["h"],
        then_branch=helper.make_graph([marked], "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])]),
        else_branch=helper.make_graph([inner], "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])))
    body = helper.make_node("Identity", ["x"], ["y"])
    body.metadata_props.add(key=CONTRIB_KEY, value="QLinearMul")
    typed.functions.append(helper.make_function("local", "Copy", ["x"], ["y"], [body],
                                                [helper.make_opsetid("", 21)]))
    typed.opset_import.append(helper.make_opsetid("local", 1))
    typed.graph.node.append(helper.make_node("Copy", ["f"], ["g"], domain="local"))
    typed.graph.input.extend([helper.make_tensor_value_info("f", TensorProto.FLOAT, [2]),
                              helper.make_tensor_value_info("cond", TensorProto.BOOL, [])])
    typed.graph.output.extend([helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("g", "h")])
    assert sorted(_marks(typed)) == ["QLinearAdd", "QLinearAdd", "QLinearAdd", "QLinearMul"]
    lowered = lower_model(typed, form="qoperator")
    assert lowered.contrib_nodes == 1 and _contrib(lowered.model) == {"QLinearAdd": 1}
    assert _marks(lowered.model) == []


def test_an_empty_mark_is_no_mark():
    typed = lift_model(_binary("Add", NEAR_TIES["Add"])).model
    [mark] = [p for p in typed.graph.node[0].metadata_props if p.key == CONTRIB_KEY]
    mark.value = ""
    assert contrib_origin(typed.graph.node[0]) is None
    lowered = lower_model(typed, form="qoperator")
    assert lowered.contrib_nodes == 0 and not _contrib(lowered.model)
    assert not [n for n in lowered.notes if "read from" in n]
    assert _marks(lowered.model) == []


def _pool(**attrs) -> onnx.ModelProto:
    """A typed AveragePool marked as lifted from QLinearAveragePool, with the given attributes."""
    graph = helper.make_graph(
        [helper.make_node("AveragePool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], **attrs)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, "h", "w"])])
    model = helper.make_model(graph, ir_version=10, opset_imports=[helper.make_opsetid("", 21)])
    write_qtype(model.graph.input[0], QType("uint8", 2.0 ** -4, 120))
    write_qtype(model.graph.output[0], QType("uint8", 2.0 ** -5, 110))
    model.graph.node[0].metadata_props.add(key=CONTRIB_KEY, value="QLinearAveragePool")
    return model


def test_an_attribute_the_contrib_op_does_not_take_keeps_the_node_in_qdq():
    """QLinearAveragePool has no dilations: written back, onnxruntime would refuse the model (INVALID_GRAPH)."""
    feeds = {"x": np.random.default_rng(5).integers(0, 256, size=(1, 2, 6, 6)).astype(np.uint8)}
    plain = lower_model(_pool(), form="qoperator")
    assert _contrib(plain.model) == {"QLinearAveragePool": 1}
    dilated_typed = _pool(dilations=[2, 2])
    dilated = lower_model(dilated_typed, form="qoperator")
    assert not _contrib(dilated.model) and dilated.contrib_nodes == 0
    (note,) = [n for n in dilated.notes if "read from QLinearAveragePool" in n]
    assert "attribute(s) dilations, which QLinearAveragePool does not take" in note
    for typed, lowered in ((_pool(), plain), (dilated_typed, dilated)):  # both run, and compute the typed model
        (want,) = ReferenceEvaluator(typed).run(["y"], feeds)
        np.testing.assert_array_equal(run_onnxruntime(lowered.model, feeds, optimize=False)["y"], want)


def test_a_typed_gemm_with_beta_1_is_written_as_qgemm_without_beta():
    """QGemm has no beta (it adds the bias once): beta=1 is what it implies, and writing it would make onnxruntime
    refuse the model."""
    typed = lift_model(_qgemm(float_output=False, per_column=True)).model
    gemm = next(n for n in typed.graph.node if n.op_type == "Gemm")
    gemm.attribute.append(helper.make_attribute("beta", 1.0))
    lowered = lower_model(typed)
    (node,) = lowered.model.graph.node
    assert node.op_type == "QGemm" and "beta" not in [a.name for a in node.attribute]
    assert _same_on_onnxruntime(lowered.model, _qgemm(float_output=False, per_column=True))


@pytest.mark.parametrize("mark, reason", [
    ("QLinearConv", "QLinearConv is not a com.microsoft operator lower writes back"),
    ("QLinearMul", "it is a Add, which QLinearMul does not compute"),
])
def test_a_hand_edited_mark_is_written_as_qdq_with_its_reason(mark, reason):
    typed = lift_model(_binary("Add", NEAR_TIES["Add"])).model
    [prop] = [p for p in typed.graph.node[0].metadata_props if p.key == CONTRIB_KEY]
    prop.value = mark
    lowered = lower_model(typed, form="qoperator")
    assert lowered.contrib_nodes == 0 and not _contrib(lowered.model)
    (note,) = [n for n in lowered.notes if f"read from {mark}" in n]
    assert reason in note


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("ops-") and "perchannel" in n])
def test_a_matmul_with_per_column_weights_is_written_back_as_qlinear_matmul(name, lifted):
    """onnxruntime's per-channel QOperator files quantize a MatMul's B per column, which QLinearMatMul takes (b_scale
    1-D, one value per column of B); lower once wrote it as DequantizeLinear -> float MatMul -> QuantizeLinear, whose
    float accumulation rounds near ties otherwise than the integer kernel (torchvision's swin_t: 1 step at one
    element, 0.057 at the output)."""
    original = MODELS[name]
    lowered = lower_model(lifted[name].model).model
    (qmm,) = [n for n in lowered.graph.node if n.op_type == "QLinearMatMul"]
    b = next(t for t in lowered.graph.initializer if t.name == qmm.input[3])
    b_scale = next(t for t in lowered.graph.initializer if t.name == qmm.input[4])
    assert list(b_scale.dims) == [b.dims[-1]] and b.dims[-1] > 1
    if lowered.opset_import[0].version != original.opset_import[0].version:
        original = version_converter.convert_version(original, 21)
        original.ir_version = 10
    for seed in range(3):
        feeds = producer_feeds(name, seed)
        assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"],
                              run_onnxruntime(original, feeds, optimize=False)["y"])
