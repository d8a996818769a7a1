"""The default domain's version as onnx reads a model's imports (proto.default_domain, used by lift, lower,
QT412 and the deferred inference alike)."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

from onnx_qtypes.interop.graph import default_opset as model_default_opset
from onnx_qtypes.proto.default_domain import default_opset


def _imports(*pairs: tuple[str, int]) -> list[onnx.OperatorSetIdProto]:
    return [helper.make_opsetid(domain, version) for domain, version in pairs]


def test_a_domain_imported_twice_counts_at_its_last_import_as_onnx_inference_reads_it():
    """onnx's shape inference types a Gelu (opset 20 on) only when the last import of the domain is recent."""
    for imports, last in ((_imports(("", 1), ("", 21)), 21), (_imports(("", 21), ("", 1)), 1)):
        graph = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"])], "g",
                                  [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
        model = helper.make_model(graph, opset_imports=imports, ir_version=10)
        inferred = onnx.shape_inference.infer_shapes(model)
        assert inferred.graph.output[0].type.tensor_type.HasField("shape") == (last == 21)  # onnx's reading
        assert default_opset(imports) == model_default_opset(model) == last


def test_both_spellings_and_none():
    assert default_opset(_imports(("ai.onnx", 17))) == 17
    assert default_opset(_imports(("ai.onnx", 17), ("", 21))) == 21  # "" before "ai.onnx"
    assert default_opset(_imports(("", 21), ("ai.onnx", 17))) == 21
    assert default_opset(_imports(("com.microsoft", 1))) is None
    assert default_opset({"": 19, "com.microsoft": 1}) == 19
