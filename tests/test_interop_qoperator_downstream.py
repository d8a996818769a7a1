"""Every QOperator node onnxruntime 1.32's quantize_static writes downstream lifts, a bias shared by several Convs
included, at opsets 11, 13 and 21: nothing is left, check finds nothing, our reference gives onnxruntime's
unoptimized result, and lower + onnxruntime gives the original's result bit for bit."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import get_qtype
from onnx_qtypes.diagnosis import diagnose
from onnx_qtypes.interop import lift_model, lower
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime
from tests.corpus_producers import output_step, producer_feeds, producer_models

MODELS = producer_models()
NAMES = sorted(MODELS)


@pytest.fixture(scope="module")
def lifted() -> dict:
    return {name: lift_model(model) for name, model in MODELS.items()}


def test_the_corpus_has_every_downstream_qoperator_node():
    written = {n.op_type for m in MODELS.values() for n in m.graph.node}
    assert {"QLinearConv", "QLinearSigmoid", "QLinearMul", "QLinearAdd", "QLinearLeakyRelu", "QLinearAveragePool",
            "QLinearConcat", "QLinearGlobalAveragePool", "QGemm", "QLinearMatMul", "QLinearWhere",
            "QLinearSoftmax"} <= written
    softmax = [n for n in MODELS["ops-qop_u8-opset11"].graph.node if n.op_type == "QLinearSoftmax"]
    assert {(a.name, helper.get_attribute_value(a)) for a in softmax[0].attribute} >= {("opset", 11), ("axis", 1)}
    qgemm = next(n for n in MODELS["ops-qop_u8-opset21"].graph.node if n.op_type == "QGemm")
    assert ("alpha", 0.5) in {(a.name, helper.get_attribute_value(a)) for a in qgemm.attribute}


@pytest.mark.parametrize("name", NAMES)
def test_every_node_lifts_and_check_finds_nothing(name, lifted):
    result = lifted[name]
    assert not result.warnings, result.warnings
    assert not [n for n in result.model.graph.node if n.domain == "com.microsoft" or n.op_type.startswith("QLinear")]
    errors = [d for d in diagnose(MODELS[name]).diagnostics if d.severity.name == "ERROR"]
    assert not errors, errors  # no false QT307 on the shared bias, no QT405 on QGemm's alpha


@pytest.mark.parametrize("name", NAMES)
def test_reference_gives_onnxruntime_s_unoptimized_result_within_one_step(name, lifted):
    step = output_step(MODELS[name])
    for seed in range(3):
        feeds = producer_feeds(name, seed)
        (ours,) = ReferenceEvaluator(lifted[name].model).run(None, feeds)
        theirs = run_onnxruntime(MODELS[name], feeds, optimize=False)["y"]
        assert np.abs(np.asarray(ours) - theirs).max() <= step * 1.0001


@pytest.mark.parametrize("name", [n for n in NAMES if "-qdq_" in n])
def test_lower_and_onnxruntime_give_the_original_bit_for_bit(name, lifted):
    original = MODELS[name]
    lowered = lower(lifted[name].model)  # at the file's own opset: onnxruntime's AveragePool-11 and -19 differ in bits
    assert lowered.opset_import[0].version == original.opset_import[0].version
    for seed in range(3):
        feeds = producer_feeds(name, seed)
        assert np.array_equal(run_onnxruntime(lowered, feeds, optimize=False)["y"],
                              run_onnxruntime(original, feeds, optimize=False)["y"])


@pytest.mark.parametrize("setting", ["qop_u8", "qop_s8_perchannel"])
def test_a_shared_bias_is_copied_per_scale_and_each_conv_reads_its_own(setting, lifted):
    result = lifted[f"shared_bias-{setting}-opset21"]
    assert any("bias 'b_quantized' is read by 2 QOperator nodes at 2 different scales" in n for n in result.notes)
    convs = [n for n in result.model.graph.node if n.op_type == "Conv"]
    first, second = (get_qtype(result.model, c.input[2]) for c in convs)
    assert convs[0].input[2] != convs[1].input[2] and first.scale != second.scale
    integers = {t.name: tensor_array(t) for t in result.model.graph.initializer}
    assert np.array_equal(integers[convs[0].input[2]], integers[convs[1].input[2]])  # the same integers


def _qlinear_softmax(model_opset: int, attribute_opset: int, axis: int | None) -> onnx.ModelProto:
    given = {} if axis is None else {"axis": axis}  # None: omitted, -1 at every opset (onnxruntime's schema)
    nodes = [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="q"),
             helper.make_node("QLinearSoftmax", ["xq", "s", "z", "ys", "yz"], ["yq"], name="softmax_quant",
                              domain="com.microsoft", opset=attribute_opset, **given),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq")]
    inits = [numpy_helper.from_array(np.asarray(v, d), n) for n, v, d in
             (("s", 0.05, np.float32), ("z", 128, np.uint8), ("ys", 1 / 256, np.float32), ("yz", 0, np.uint8))]
    graph = helper.make_graph(nodes, "softmax", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 4])], inits)
    return helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", model_opset),
                                                                 helper.make_opsetid("com.microsoft", 1)])


@pytest.mark.parametrize("model_opset, attribute_opset, axis, lifts", [
    (13, 11, 1, False),  # Softmax-11 flattens at axis 1: not Softmax-13 along axis 1
    (11, 11, 1, True),  # Softmax-11 in a model of opset 11: the same flattening (reference_ops/corrected/softmax.py)
    (13, 11, 2, True),  # the last axis: both versions agree
    (11, 13, -1, True),
    (11, 13, 1, False),
    # axis omitted: onnxruntime takes -1 at every opset; Softmax-11's default is 1, so the lifted Softmax says -1
    # (it was lifted without an axis, and both run and lower + onnxruntime were up to 231 steps off, silently)
    (11, 11, None, True),
    (13, 11, None, True),
    (11, 13, None, True),
    # opset 10 and below: Softmax takes no negative axis, so the node stays as written (and runs at -1): the lift
    # wrote axis -1 on a Softmax-10, which the reference refused
    (10, 10, None, False),
    (10, 13, None, False),
])
def test_qlinear_softmax_lifts_when_its_opset_means_what_the_model_s_softmax_means(model_opset, attribute_opset, axis,
                                                                                     lifts):
    model = _qlinear_softmax(model_opset, attribute_opset, axis)
    result = lift_model(model)
    assert ("Softmax" in [n.op_type for n in result.model.graph.node]) == lifts
    if not lifts:
        reason = (f"it computes Softmax-{attribute_opset} at axis {axis}" if axis is not None else
                  f"axis -1: the model's opset {model_opset} Softmax takes no negative axis")
        assert result.warnings[0].startswith(f"com.microsoft.QLinearSoftmax 'softmax_quant' (/graph/node/1): {reason}")
    feeds = {"x": np.random.default_rng(3).normal(0, 2, (2, 3, 4)).astype(np.float32)}
    (ours,) = ReferenceEvaluator(result.model).run(None, feeds)  # a node left as written runs as its schema says
    theirs = run_onnxruntime(model, feeds, optimize=False)["y"]
    assert np.abs(np.asarray(ours) - theirs).max() <= 1 / 256 * 1.0001
    assert np.array_equal(run_onnxruntime(lower(result.model), feeds, optimize=False)["y"], theirs)


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("pad-qop")])
def test_a_pad_padding_with_the_zero_point_its_input_is_written_with_lifts(name, lifted):
    """onnxruntime's QOperator Pad pads the stored integers with the QLinearAdd's own y_zero_point initializer, which
    the typed Pad must read as a value of its data's type: the Pad gets a copy, and nothing is left (before, every
    node connected to that initializer was: 197 on torchvision's swin_t)."""
    source = MODELS[name]
    add = next(n for n in source.graph.node if n.op_type == "QLinearAdd")
    pad = next(n for n in source.graph.node if n.op_type == "Pad")
    assert pad.input[2] == add.input[7]  # the file as onnxruntime writes it
    result = lifted[name]
    assert not result.left and not result.warnings
    typed_pad = next(n for n in result.model.graph.node if n.op_type == "Pad")
    assert typed_pad.input[2] != add.input[7] and get_qtype(result.model, typed_pad.input[2]) == get_qtype(
        result.model, typed_pad.input[0])
    assert any("reads its own copy" in note for note in result.notes)


def _pad_graph(extra: list, outputs: tuple[str, ...] = ("p",)) -> onnx.ModelProto:
    """Pad(x, pads, z) on int8, and ``extra`` nodes after it."""
    inits = [numpy_helper.from_array(np.array(-3, np.int8), "z"), numpy_helper.from_array(np.zeros(2, np.int64), "pads")]
    graph = helper.make_graph([helper.make_node("Pad", ["x", "pads", "z"], ["p"], name="pad"), *extra], "g",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
                              [helper.make_tensor_value_info(o, TensorProto.INT8, None) for o in outputs], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def test_a_pad_constant_is_copied_when_and_only_when_something_else_reads_it():
    """Another node's read, a read inside a subgraph, a graph output: a copy; only the Pad's own reads (its value as
    input 0 too): none, nothing to untie."""
    from onnx_qtypes.interop.pad_constants import own_pad_constants

    def copied(model: onnx.ModelProto) -> bool:
        notes = own_pad_constants(model)
        pad = next(n for n in model.graph.node if n.op_type == "Pad")
        assert bool(notes) == (pad.input[2] != "z")
        return pad.input[2] != "z"

    alone = _pad_graph([])
    alone.graph.node[0].input[0] = "z"
    assert not copied(alone)
    assert copied(_pad_graph([helper.make_node("Identity", ["z"], ["w"])], ("p", "w")))
    assert copied(_pad_graph([], ("p", "z")))
    branch = helper.make_graph([helper.make_node("Identity", ["z"], ["b"])], "branch", [],
                               [helper.make_tensor_value_info("b", TensorProto.INT8, None)])
    cond = helper.make_node("If", ["c"], ["w"], then_branch=branch, else_branch=branch)
    inside = _pad_graph([cond], ("p", "w"))
    inside.graph.input.append(helper.make_tensor_value_info("c", TensorProto.BOOL, []))
    assert copied(inside)


def test_a_lifted_softmax_without_axis_is_written_back_with_the_axis_it_means():
    """A typed Softmax-11 from a QLinearSoftmax, with no axis (as lift wrote it before it stated -1, or by hand),
    normalizes over the flattened axes from 1. QLinearSoftmax omitting axis means -1 at every opset: lower wrote
    it back without one, 221 steps off the typed model's own result. It now states Softmax-11's default, axis 1."""
    result = lift_model(_qlinear_softmax(11, 11, 1))
    softmax = next(n for n in result.model.graph.node if n.op_type == "Softmax")
    del softmax.attribute[:]
    feeds = {"x": np.random.default_rng(3).normal(0, 2, (2, 3, 4)).astype(np.float32)}
    (typed,) = ReferenceEvaluator(result.model).run(None, feeds)
    lowered = lower(result.model)
    written = next(n for n in lowered.graph.node if n.op_type == "QLinearSoftmax")
    assert {a.name: helper.get_attribute_value(a) for a in written.attribute}.get("axis") == 1
    assert np.abs(run_onnxruntime(lowered, feeds, optimize=False)["y"] - np.asarray(typed)).max() <= 1 / 256 * 1.0001
