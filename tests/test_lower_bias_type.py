"""The int32 bias lower's qoperator form requires before it writes QLinearConv or QGemm (interop.md #lower-qoperator):
scale = the operands' scales multiplied in float32, zero point 0 (``qoperator.bias_type``). Any other bias type is
written as QDQ (QGemm with a note saying why): the integer kernels would otherwise read it at the wrong scale."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_qtypes.interop import lift_model, lower_model

from onnx_qtypes import QType, quantized_tensors, set_qtype
from onnx_qtypes.reference_ops import ReferenceEvaluator
from tests.corpus import run_onnxruntime
from tests.test_lower_contrib import _qgemm

W_SCALES = [0.125, 0.25]


def _conv(bias_factor: float, per_axis: bool) -> onnx.ModelProto:
    """A typed Conv, uint8 x, int8 w (per tensor or per output channel), an int32 bias whose scale is
    ``bias_factor`` times x.scale * w.scale."""
    w = numpy_helper.from_array(np.array([1, -3], np.int8).reshape(2, 1, 1, 1), "w")
    b = numpy_helper.from_array(np.array([40, -7], np.int32), "b")
    graph = helper.make_graph(
        [helper.make_node("Conv", ["x", "w", "b"], ["y"], name="conv")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "x", QType("uint8", 0.5, 3))
    set_qtype(model, "y", QType("uint8", 0.25, 1))
    scales = W_SCALES if per_axis else W_SCALES[:1]
    axis = 0 if per_axis else None
    set_qtype(model, "w", QType("int8", scales, [0] * len(scales), axis=axis))
    set_qtype(model, "b", QType("int32", [0.5 * s * bias_factor for s in scales], [0] * len(scales), axis=axis))
    return model


@pytest.mark.parametrize("per_axis", [False, True])
def test_qlinearconv_only_for_the_bias_of_scale_x_times_w(per_axis):
    feeds = {"x": np.array([0, 7, 200, 255], np.uint8).reshape(1, 1, 2, 2)}
    outputs = {}
    for factor, written in ((1.0, ["QLinearConv"]), (2.0, [])):
        typed = _conv(factor, per_axis)
        lowered = lower_model(typed, form="qoperator").model
        assert [n.op_type for n in lowered.graph.node if n.op_type.startswith("QLinear")] == written
        # either way the lowered model computes the typed model's definition: a QLinearConv given the doubled
        # bias would read it at x * w and be off by the bias
        (want,) = ReferenceEvaluator(typed).run(["y"], feeds)
        outputs[factor] = run_onnxruntime(lowered, feeds, optimize=False)["y"]
        np.testing.assert_array_equal(outputs[factor], want)
    assert not np.array_equal(outputs[1.0], outputs[2.0])


@pytest.mark.parametrize("per_column", [False, True])
def test_qgemm_only_for_the_bias_of_scale_a_times_b(per_column):
    typed = lift_model(_qgemm(float_output=False, per_column=per_column)).model
    assert lower_model(typed).contrib_nodes == 1
    bias = next(vi for vi in typed.graph.value_info if vi.name == "c")
    wrong = quantized_tensors(typed)["c"]  # the lifted bias type, its scales doubled
    wrong = wrong.replace(scale=[2 * s for s in wrong.scale])
    set_qtype(typed, bias.name, wrong)
    result = lower_model(typed)
    assert result.contrib_nodes == 0
    assert any("the bias is not int32 with scale = A scale * B scale" in note for note in result.notes), result.notes


def test_operand_scales_whose_product_underflows_leave_the_conv_in_qdq():
    """x_scale * w_scale = 2^-160 is 0 in float32: no QLinearConv bias can have that scale, so the Conv is lowered as
    QDQ (it used to end in an unlocated 'scale 0.0 must be finite and non-zero')."""
    typed = _conv(1.0, per_axis=False)
    for name, qtype in (("x", QType("uint8", 2.0 ** -80, 3)), ("w", QType("int8", 2.0 ** -80, 0)),
                        ("b", QType("int32", 2.0 ** -100, 0))):
        set_qtype(typed, name, qtype)
    lowered = lower_model(typed, form="qoperator").model
    assert "QLinearConv" not in [n.op_type for n in lowered.graph.node]
    assert "Conv" in [n.op_type for n in lowered.graph.node]
