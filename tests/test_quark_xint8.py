"""AMD Quark's XINT8 preset, as its 0.13 source writes a model for the Vitis AI DPU, checks clean under vitis-ai-dpu.

The model is built here the way XINT8QDQQuantizer lays one out (benchmarks/quark_xint8.py runs the real
quantizer): uint8 activations with zero point 128 and power-of-two scales, int8 weights with zero point 0,
int8 biases with their own power-of-two scale (Int32Bias off), Conv + Relu without a Q/DQ pair between them,
and GlobalAveragePool's DPU version, a Constant and a Mul appended at the end of the node list (out of
topological order).
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import diagnose


def _xint8(activation_scale: float = 2.0**-5, activation_zero_point: int = 128, bias_scale: float = 2.0**-9,
           weight_scale: float = 2.0**-7) -> onnx.ModelProto:
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def param(name, value, dtype):  # noqa: ANN001, ANN202
        inits.append(numpy_helper.from_array(np.asarray(value, dtype), name))

    def qdq(name: str) -> str:
        param(f"{name}_scale", activation_scale, np.float32)
        param(f"{name}_zero_point", activation_zero_point, np.uint8)
        nodes.append(helper.make_node("QuantizeLinear", [name, f"{name}_scale", f"{name}_zero_point"],
                                      [f"{name}_QuantizeLinear_Output"], name=f"{name}_QuantizeLinear"))
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_QuantizeLinear_Output", f"{name}_scale",
                                                           f"{name}_zero_point"], [f"{name}_DequantizeLinear_Output"],
                                      name=f"{name}_DequantizeLinear"))
        return f"{name}_DequantizeLinear_Output"

    def weight(name: str, shape: tuple, scale: float, dtype=np.int8) -> str:  # noqa: ANN001
        param(f"{name}_quantized", rng.integers(-100, 100, size=shape), dtype)
        param(f"{name}_scale", scale, np.float32)
        param(f"{name}_zero_point", 0, dtype)
        nodes.append(helper.make_node("DequantizeLinear", [f"{name}_quantized", f"{name}_scale", f"{name}_zero_point"],
                                      [f"{name}_DequantizeLinear_Output"], name=f"{name}_DequantizeLinear"))
        return f"{name}_DequantizeLinear_Output"

    w, b = weight("w", (4, 3, 3, 3), weight_scale), weight("b", (4,), bias_scale)
    wg, bg = weight("wg", (5, 4), weight_scale), weight("bg", (5,), bias_scale)
    x = qdq("x")
    nodes.append(helper.make_node("Conv", [x, w, b], ["c"], name="conv", pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node("Relu", ["c"], ["r"], name="relu"))  # fused: no Q/DQ between Conv and Relu
    r = qdq("r")
    nodes.append(helper.make_node("GlobalAveragePool", [r], ["gap_Mul"], name="gap"))
    g = qdq("gap")
    nodes.append(helper.make_node("Flatten", [g], ["flat"], name="flatten"))
    f = qdq("flat")
    nodes.append(helper.make_node("Gemm", [f, wg, bg], ["y_QuantizeLinear_Input"], name="fc", transB=1))
    param("y_scale", activation_scale, np.float32)
    param("y_zero_point", activation_zero_point, np.uint8)
    nodes.append(helper.make_node("QuantizeLinear", ["y_QuantizeLinear_Input", "y_scale", "y_zero_point"],
                                  ["y_QuantizeLinear_Output"], name="y_QuantizeLinear"))
    nodes.append(helper.make_node("DequantizeLinear", ["y_QuantizeLinear_Output", "y_scale", "y_zero_point"], ["y"],
                                  name="y_DequantizeLinear"))
    # the DPU version of GlobalAveragePool, appended last: 'gap' is read above, before it is computed here
    nodes.append(helper.make_node("Constant", [], ["gap_Scale"], value=numpy_helper.from_array(
        np.array(1.0, np.float32))))
    nodes.append(helper.make_node("Mul", ["gap_Mul", "gap_Scale"], ["gap"], name="gap_Mul"))
    graph = helper.make_graph(nodes, "xint8", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("com.amd.quark", 1)],
                              ir_version=10, producer_name="quark.onnx")
    return model


def _found(model: onnx.ModelProto, profile: str) -> list:
    return [d for d in diagnose(model, profile).diagnostics if d.is_error]


def test_quark_xint8_model_has_no_error_under_vitis_ai_dpu():
    model = _xint8()
    with pytest.raises(onnx.checker.ValidationError, match="topologically sorted"):
        onnx.checker.check_model(model)  # written out of order, as Quark writes such graphs
    assert _found(model, "vitis-ai-dpu") == []
    generic = {d.rule for d in _found(model, "generic")}
    assert generic == {"QT403", "QT405"}  # the extension's own int32 bias rule: the DPU's 8-bit bias breaks it


@pytest.mark.parametrize(("change", "rule"), [
    ({"activation_scale": 0.03}, "QT505"),  # not a power of two
    ({"activation_zero_point": 0}, "QT504"),  # uint8 without the symmetric zero point 128
    ({"bias_scale": 3 * 2.0**-10}, "QT405"),  # no shift takes it to the accumulator's units
])
def test_what_the_dpu_cannot_take_is_still_an_error(change, rule):
    assert rule in {d.rule for d in _found(_xint8(**change), "vitis-ai-dpu")}
