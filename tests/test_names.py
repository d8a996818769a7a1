"""Names that are not UTF-8: show, check and run refuse them in one located line (proto/names.py)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.checker import check_model
from onnx_qtypes.cli import main
from onnx_qtypes.proto import load
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.names import first_non_utf8_name
from onnx_qtypes.reference_ops import ReferenceEvaluator


def _typed_model(**names: str) -> onnx.ModelProto:
    """Relu on a typed int8 tensor inside an If branch; any name can be replaced by "@@"."""
    n = {"x": "x", "y": "y", "relu": "relu", "branch_out": "z", "cond": "c", "attr_node": "if", **names}
    branch = helper.make_graph([helper.make_node("Relu", [n["y"]], [n["branch_out"]], name="inner")], "then", [],
                               [helper.make_tensor_value_info(n["branch_out"], TensorProto.INT8, [2])])
    nodes = [helper.make_node("Relu", [n["x"]], [n["y"]], name=n["relu"]),
             helper.make_node("If", [n["cond"]], ["out"], name=n["attr_node"], then_branch=branch,
                              else_branch=branch)]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info(n["x"], TensorProto.INT8, [2]),
         helper.make_tensor_value_info(n["cond"], TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("out", TensorProto.INT8, [2])],
        value_info=[helper.make_tensor_value_info(n["y"], TensorProto.INT8, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    for name in (n["x"], n["y"], "out"):
        set_qtype(model, name, QType("int8", 0.5, 0))
    return model


def _not_utf8(model: onnx.ModelProto) -> bytes:
    """The model's bytes with "@@" turned into ff fe (same length, so the framing holds)."""
    return model.SerializeToString().replace(b"@@", b"\xff\xfe")


CASES = {  # which name is replaced -> the first field found, as a JSON pointer
    "relu": "/graph/node/0/name",
    "x": "/graph/node/0/input/0",
    "y": "/graph/node/0/output/0",
    "cond": "/graph/node/1/input/0",
    "branch_out": "/graph/node/1/attribute/0/g/node/0/output/0",
}


@pytest.mark.parametrize("replaced", sorted(CASES))
def test_the_first_name_that_is_not_utf8_is_located(replaced):
    model = load(_not_utf8(_typed_model(**{replaced: "@@"})))
    assert first_non_utf8_name(model) == (CASES[replaced], b"\xff\xfe")


def test_text_names_pass(example_model):
    assert first_non_utf8_name(example_model) is None
    assert first_non_utf8_name(_typed_model(x="名前")) is None  # UTF-8 that is not ASCII is text


def test_opset_domain_and_function_names_are_read():
    model = _typed_model()
    model.opset_import.add(domain="@@", version=1)
    assert first_non_utf8_name(load(_not_utf8(model))) == ("/opset_import/1/domain", b"\xff\xfe")
    model = _typed_model()
    model.graph.node[0].attribute.add(name="@@", type=onnx.AttributeProto.INT, i=1)
    assert first_non_utf8_name(load(_not_utf8(model))) == ("/graph/node/0/attribute/0/name", b"\xff\xfe")
    model = _typed_model()
    model.functions.append(helper.make_function("@@", "f", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                                                [helper.make_opsetid("", 21)]))
    assert first_non_utf8_name(load(_not_utf8(model))) == ("/functions/0/domain", b"\xff\xfe")


@pytest.mark.parametrize("command", ["show", "check", "run"])
def test_commands_refuse_in_one_line(tmp_path, capsys, command):
    path = tmp_path / "names.onnx"
    path.write_bytes(_not_utf8(_typed_model(x="@@")))
    inputs, outputs = tmp_path / "in.npz", tmp_path / "out.npz"
    np.savez(inputs, c=np.array(True))
    args = {"show": ["show", str(path)], "check": ["check", str(path)],
            "run": ["run", str(path), "--inputs", str(inputs), "--outputs", str(outputs)]}[command]
    assert main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines == [f"onnx-qtypes: error: {path}: /graph/node/0/input/0 holds b'\\xff\\xfe', which is not UTF-8; "
                     "ONNX names and strings must be UTF-8 text (rename it)"], captured.err
    assert captured.out == "" and not outputs.exists()


def test_api_refuses_with_model_load_error():
    data = _not_utf8(_typed_model(y="@@"))
    with pytest.raises(ModelLoadError, match="/graph/node/0/output/0 holds"):
        check_model(data)
    with pytest.raises(ModelLoadError, match="not UTF-8"):
        ReferenceEvaluator(data)


def test_graph_name_and_producer_are_read_too():
    model = _typed_model()
    model.graph.name = "@@"
    assert first_non_utf8_name(load(_not_utf8(model))) == ("/graph/name", b"\xff\xfe")
    model = _typed_model()
    model.producer_name = "@@"
    with pytest.raises(ModelLoadError, match="/producer_name holds"):
        check_model(_not_utf8(model))


@pytest.mark.parametrize("where", ["graph-doc-string", "function-name", "function-subgraph"])
def test_check_and_run_refuse_the_same_names(tmp_path, where):
    """The checker's fast test and the full walk run and show use must agree on every field."""
    model = _typed_model()
    if where == "graph-doc-string":
        model.graph.doc_string = "@@"
    else:
        inner = helper.make_graph([helper.make_node("Identity", ["a"], ["@@" if where == "function-subgraph" else "b"])],
                                  "body", [], [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
        node = helper.make_node("If", ["c"], ["o"], then_branch=inner, else_branch=inner)
        model.functions.append(helper.make_function("local", "@@" if where == "function-name" else "f", ["c", "a"],
                                                    ["o"], [node], [helper.make_opsetid("", 21)]))
    data = _not_utf8(model)
    assert first_non_utf8_name(load(data)) is not None
    with pytest.raises(ModelLoadError, match="not UTF-8"):
        check_model(data)
    with pytest.raises(ModelLoadError, match="not UTF-8"):
        ReferenceEvaluator(data)


def test_a_function_with_a_subgraph_and_text_names_is_checked_normally():
    """The fast test hands such a model to the full walk, which finds nothing: the findings are the model's own."""
    from onnx_qtypes.checker import iter_diagnostics

    plain = _typed_model()
    model = _typed_model()
    inner = helper.make_graph([helper.make_node("Identity", ["a"], ["b"])], "body", [],
                              [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2])])
    model.functions.append(helper.make_function("local", "f", ["c", "a"], ["o"],
                                                [helper.make_node("If", ["c"], ["o"], then_branch=inner,
                                                                  else_branch=inner)], [helper.make_opsetid("", 21)]))
    assert [d.rule for d in iter_diagnostics(model)] == [d.rule for d in iter_diagnostics(plain)]
