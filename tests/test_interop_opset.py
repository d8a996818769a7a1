"""interop.opset.convert: onnx's version converter, every node's metadata_props kept (the converter drops them)."""

from __future__ import annotations

from onnx import TensorProto, helper

from onnx_qtypes.interop.opset import convert
from onnx_qtypes.proto import iter_graphs


def test_every_node_keeps_its_metadata_wherever_the_converter_moves_it():
    """Squeeze-11's axes become an input at 13: the converter inserts a Constant before it, which moves the If after
    it; the If's branch nodes (one body used for both branches) keep their marks, found by their outputs."""
    inner = helper.make_node("Identity", ["s"], ["b"], name="inner")
    inner.metadata_props.add(key="onnx_qtypes.mark", value="inner")
    branch = helper.make_graph([inner], "branch", [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])
    squeeze = helper.make_node("Squeeze", ["x"], ["s"], axes=[0])
    squeeze.metadata_props.add(key="onnx_qtypes.mark", value="squeeze")
    graph = helper.make_graph(
        [squeeze, helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=branch)], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2]),
         helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)], ir_version=7)
    converted = convert(model, 21)
    marks = {pointer: [(n.op_type, [p.value for p in n.metadata_props]) for n in g.node]
             for pointer, g in iter_graphs(converted)}
    assert marks["/graph"] == [("Constant", []), ("Squeeze", ["squeeze"]), ("If", [])]
    assert marks["/graph/node/2/attribute/0/g"] == marks["/graph/node/2/attribute/1/g"] == [("Identity", ["inner"])]
