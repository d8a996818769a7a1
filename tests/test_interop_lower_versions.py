"""Which IR version / opset ``lower`` writes: a model with nothing typed keeps its own (a plain int2 / uint2
QDQ model at IR 13 / opset 25 stays there, and onnxruntime runs it as before), a model with a 2-bit tensor
(typed or plain) goes to IR 13 / opset 25, anything else to IR 10 / opset 21; when onnx's version converter
cannot get there, a LowerError names the node, never the converter's internal assertion."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus import run_onnxruntime
from onnx import TensorProto, helper, numpy_helper

from onnx_qtypes import QType, lift, lower, save, set_qtype
from onnx_qtypes.cli import main
from onnx_qtypes.interop.errors import LowerError
from onnx_qtypes.reference_ops import ReferenceEvaluator

STORED = {TensorProto.INT2: [-2, -1, 0, 1], TensorProto.UINT2: [0, 1, 2, 3]}
X = np.arange(8, dtype=np.float32).reshape(2, 4) / 4 - 1


def _versions(model: onnx.ModelProto) -> tuple[int, int]:
    return model.ir_version, next(o.version for o in model.opset_import if o.domain in ("", "ai.onnx"))


def _plain_2bit_qdq(storage: int) -> onnx.ModelProto:
    """A weight stored in 2 bits read through a DequantizeLinear, as onnxruntime runs it (IR 13 / opset 25)."""
    w = helper.make_tensor("w_q", storage, [4, 3], STORED[storage] * 3)
    zero = helper.make_tensor("w_zp", storage, [], [STORED[storage][2]])
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["w_q", "w_scale", "w_zp"], ["w"]), helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain_2bit", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [w, numpy_helper.from_array(np.array(0.5, np.float32), "w_scale"), zero])
    return helper.make_model(graph, ir_version=13, opset_imports=[helper.make_opsetid("", 25)])


@pytest.mark.parametrize("storage", [TensorProto.INT2, TensorProto.UINT2], ids=["int2", "uint2"])
def test_plain_2bit_model_keeps_its_versions_and_its_outputs(storage):
    model = _plain_2bit_qdq(storage)
    onnx.checker.check_model(model, full_check=True)
    expected = run_onnxruntime(model, {"x": X}, optimize=False)["y"]
    lowered = lower(model)
    assert _versions(lowered) == (13, 25)
    np.testing.assert_array_equal(run_onnxruntime(lowered, {"x": X}, optimize=False)["y"], expected)


@pytest.mark.parametrize("storage", [TensorProto.INT2, TensorProto.UINT2], ids=["int2", "uint2"])
def test_typed_2bit_model_lowers_to_ir13_opset25(storage):
    typed = lift(_plain_2bit_qdq(storage))
    assert typed.graph.initializer[0].data_type != storage  # lifted: the weight now carries its type
    lowered = lower(typed)
    assert _versions(lowered) == (13, 25)
    reference = ReferenceEvaluator(typed).run(["y"], {"x": X})[0]
    np.testing.assert_allclose(run_onnxruntime(lowered, {"x": X}, optimize=False)["y"], reference, rtol=1e-6)


def test_plain_2bit_tensor_beside_a_typed_int8_one_keeps_opset25():
    model = _plain_2bit_qdq(TensorProto.INT2)
    model.graph.initializer.append(numpy_helper.from_array(np.array([[1, -2, 3]], np.int8), "b_q"))
    model.graph.node.append(helper.make_node("Add", ["y", "b_q_f"], ["z"]))
    model.graph.node.insert(0, helper.make_node("Cast", ["b_q"], ["b_q_f"], to=TensorProto.FLOAT))
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]))
    set_qtype(model, "b_q", QType("int8", 0.25))
    lowered = lower(model)
    assert _versions(lowered) == (13, 25)
    onnx.checker.check_model(lowered, full_check=True)


def _unconvertible() -> onnx.ModelProto:
    """A typed int8 weight at opset 24 beside RMSNormalization, which opset 21 (lower's target) does not define."""
    w = numpy_helper.from_array(np.array([[1, -2], [3, 4]], np.int8), "w")
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("RMSNormalization", ["h", "g"], ["y"], name="norm")],
        "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])],
        [w, numpy_helper.from_array(np.ones(2, np.float32), "g")])
    model = helper.make_model(graph, ir_version=11, opset_imports=[helper.make_opsetid("", 24)])
    set_qtype(model, "w", QType("int8", 0.5))
    return model


def test_unconvertible_node_is_a_located_lower_error_without_converter_internals():
    with pytest.raises(LowerError) as caught:
        lower(_unconvertible())
    message = str(caught.value)
    assert "RMSNormalization 'norm' (/graph/node/" in message and "opset 21" in message
    assert "Assertion" not in message and ".h:" not in message and "Unknown tensor data type" not in message


def test_cli_lower_exit_codes(tmp_path, capsys):
    plain, bad = tmp_path / "plain_int2.onnx", tmp_path / "bad.onnx"
    onnx.save(_plain_2bit_qdq(TensorProto.INT2), plain)
    save(_unconvertible(), bad)
    assert main(["lower", str(plain), str(tmp_path / "out.onnx")]) == 0
    assert _versions(onnx.load(tmp_path / "out.onnx")) == (13, 25)
    capsys.readouterr()
    assert main(["lower", str(bad), str(tmp_path / "never.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "bad.onnx" in err and "RMSNormalization 'norm'" in err and "Traceback" not in err
    assert not (tmp_path / "never.onnx").exists()
