"""`check` on QDQ / QOperator models as onnxruntime's quantizer wrote them: faults planted in real
quantize_static output are each one finding, located at the node and tensor of the file itself."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest
from checker_models import _float8_qdq
from corpus import corpus_models
from onnx import numpy_helper

from onnx_qtypes import diagnose
from onnx_qtypes.checker import Severity, select_rules
from onnx_qtypes.checker.float_view import resolve
from onnx_qtypes.cli import main
from onnx_qtypes.interop.graph import ORIGIN_KEY
from onnx_qtypes.proto import iter_graphs


def _model(name: str) -> onnx.ModelProto:
    copy = onnx.ModelProto()
    copy.CopyFrom(corpus_models()[name])
    return copy


def _set(model: onnx.ModelProto, name: str, value) -> None:
    tensor = next(t for t in model.graph.initializer if t.name == name)
    tensor.CopyFrom(numpy_helper.from_array(np.asarray(value, numpy_helper.to_array(tensor).dtype), name))


def _node(model: onnx.ModelProto, op: str, nth: int = 0) -> tuple[int, onnx.NodeProto]:
    return [(i, n) for i, n in enumerate(model.graph.node) if n.op_type == op][nth]


def _own_parameter(model: onnx.ModelProto, node: onnx.NodeProto, position: int, value) -> str:
    """Give ``node`` a parameter initializer of its own (not shared with its partner) holding ``value``."""
    old = next(t for t in model.graph.initializer if t.name == node.input[position])
    name = f"{node.name}_planted_{position}"
    model.graph.initializer.append(numpy_helper.from_array(np.asarray(value, numpy_helper.to_array(old).dtype), name))
    node.input[position] = name
    return name


def _located_in(model: onnx.ModelProto, d) -> None:
    """The finding's pointer names a real place of the file given, and its tensor is the one there."""
    target = resolve(model, d.location.pointer)
    assert target is not None
    if d.location.pointer.split("/")[-2] in ("input", "output"):
        assert target == d.location.tensor
    if d.location.node is not None:
        assert d.location.node in {n.name for _, graph in iter_graphs(model) for n in graph.node}


def _errors(model: onnx.ModelProto, **kwargs) -> list:
    found = diagnose(model, **kwargs)
    assert found.form == "qdq"
    for d in found.diagnostics:
        _located_in(model, d)
    return found.errors


@pytest.mark.parametrize("name", ["cnn-qdq_u8_pertensor", "mlp-qdq_s8_perchannel", "attention-qdq_u8_pertensor"])
def test_three_bad_activation_scales_are_three_findings(name):
    model = _model(name)
    quantizers = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    scales = list(dict.fromkeys(n.input[1] for n in quantizers[1:]))[:3]
    for scale, value in zip(scales, (0.0, np.nan, -np.inf)):
        _set(model, scale, value)
    errors = _errors(model)
    assert sorted(d.location.tensor for d in errors) == sorted(scales)
    assert {d.rule for d in errors} == {"QT101"}
    for d in errors:  # at the scale input of the QuantizeLinear that writes the tensor
        i = int(d.location.pointer.split("/")[3])
        assert model.graph.node[i].op_type == "QuantizeLinear" and d.location.pointer.endswith("/input/1")


@pytest.mark.parametrize("name", ["cnn-qdq_u8_pertensor", "mlp-qdq_s8_perchannel"])
def test_a_negative_activation_scale_is_qt410_at_its_quantizer(name):
    """Negative scales are for weights (types.md#negative-scales): an activation's is QT410, at the scale input of
    the QuantizeLinear that writes it; it is not a QT101 any more."""
    model = _model(name)
    quantizer = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][1]
    _set(model, quantizer.input[1], -0.5)
    errors = _errors(model)
    assert "QT101" not in {d.rule for d in errors}
    first = next(d for d in errors if d.rule == "QT410")
    i = int(first.location.pointer.split("/")[3])
    assert model.graph.node[i] is quantizer or model.graph.node[i] == quantizer
    assert first.location.pointer.endswith("/input/1") and first.location.tensor == quantizer.input[1]


def test_a_file_carrying_the_lifts_own_position_marks_is_located_by_its_real_positions():
    """check places findings on the lifted form by the marks the lift puts on each node (its position in the file);
    marks of that key already in the file (bogus, or out of range) are overwritten, never believed."""
    model = _model("cnn-qdq_u8_pertensor")
    for k, node in enumerate(model.graph.node):
        node.metadata_props.add(key=ORIGIN_KEY, value=("not a position", "0", "99999")[k % 3])
    quantizer = [n for n in model.graph.node if n.op_type == "QuantizeLinear"][1]
    _set(model, quantizer.input[1], -0.5)
    first = next(d for d in _errors(model) if d.rule == "QT410")
    i = int(first.location.pointer.split("/")[3])
    assert model.graph.node[i] == quantizer and first.location.pointer.endswith("/input/1")


def test_a_clean_quantizer_model_has_no_errors_and_says_what_it_checked():
    found = diagnose(_model("cnn-qdq_s8_perchannel"))
    assert found.form == "qdq" and found.errors == []
    assert "checked as its lifted form" in found.notes[0]


def test_dequantize_disagreeing_with_its_quantize_partner():
    model = _model("cnn-qdq_u8_pertensor")
    i, dq = next((i, n) for i, n in enumerate(model.graph.node)
                 if n.op_type == "DequantizeLinear" and n.input[0].endswith("QuantizeLinear_Output"))
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == dq.input[1]))
    planted = _own_parameter(model, dq, 1, scale * 4)
    (error,) = _errors(model)
    assert error.rule == "QT307" and error.location.pointer == f"/graph/node/{i}/input/1"
    assert error.location.tensor == planted and dq.input[0] in error.message


def test_one_weight_read_with_two_representations():
    model = _model("cnn-qdq_u8_pertensor")
    i, dq = _node(model, "DequantizeLinear", 1)  # a weight's DequantizeLinear
    assert dq.input[0] in {t.name for t in model.graph.initializer}
    twin = onnx.NodeProto()
    twin.CopyFrom(dq)
    twin.name, twin.output[0] = "second_reader", "second_reader_out"
    model.graph.node.insert(i + 1, twin)
    dims = list(next(t for t in model.graph.initializer if t.name == dq.input[0]).dims)  # (onnx.checker: QT310)
    model.graph.output.append(onnx.helper.make_tensor_value_info("second_reader_out", onnx.TensorProto.FLOAT, dims))
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == dq.input[1]))
    planted = _own_parameter(model, model.graph.node[i + 1], 1, scale * 2)  # the inserted copy, not `twin`
    (error,) = _errors(model)
    assert error.rule == "QT307" and error.location.pointer == f"/graph/node/{i + 1}/input/1"
    assert error.location.node == "second_reader" and error.location.tensor == planted


def test_per_channel_count_axis_and_zero_point_type():
    model = _model("cnn-qdq_s8_perchannel")
    weights = [(i, n) for i, n in enumerate(model.graph.node) if n.op_type == "DequantizeLinear"
               and numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == n.input[1])).size > 1]
    (i0, w0), (i1, w1), (i2, w2) = weights[:3]
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == w0.input[1]))
    _set(model, w0.input[1], scale[:-1])  # one scale too few
    _set(model, w0.input[2], numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == w0.input[2]))[:-1])
    next(a for a in w1.attribute if a.name == "axis").i = 7
    zp = next(t for t in model.graph.initializer if t.name == w2.input[2])
    zp.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(zp).astype(np.uint8), zp.name))
    errors = {d.rule: d for d in _errors(model)}
    assert set(errors) == {"QT107", "QT108", "QT305"}
    assert errors["QT107"].location.pointer == f"/graph/node/{i0}/input/1"
    assert errors["QT108"].location.pointer.startswith(f"/graph/node/{i1}/attribute/")
    assert errors["QT305"].location.pointer == f"/graph/node/{i2}/input/2"


def test_bias_scale_not_input_times_weight():
    """The finding is at the value to fix, the bias DequantizeLinear's scale, with the Conv reading it related."""
    model = _model("cnn-qdq_u8_pertensor")
    conv_index, conv = _node(model, "Conv")
    dq_index, bias_dq = next((i, n) for i, n in enumerate(model.graph.node) if n.output[0] == conv.input[2])
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == bias_dq.input[1]))
    _set(model, bias_dq.input[1], scale * 3)
    errors = _errors(model)
    assert [d.rule for d in errors] == ["QT405"]
    assert errors[0].location.pointer == f"/graph/node/{dq_index}/input/1"
    assert errors[0].location.node == bias_dq.name and errors[0].location.tensor == bias_dq.input[1]
    assert [r.pointer for r in errors[0].related] == [f"/graph/node/{conv_index}/input/2"]


def test_bias_zero_point_is_found_at_the_bias_dequantize():
    model = _model("cnn-qdq_s8_perchannel")
    conv_index, conv = _node(model, "Conv")
    dq_index, bias_dq = next((i, n) for i, n in enumerate(model.graph.node) if n.output[0] == conv.input[2])
    zero_point = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == bias_dq.input[2]))
    _set(model, bias_dq.input[2], zero_point + 5)
    (error,) = [d for d in _errors(model) if d.rule == "QT404"]
    assert error.location.pointer == f"/graph/node/{dq_index}/input/2" and error.location.tensor == bias_dq.input[2]
    assert f"/graph/node/{conv_index}/input/2" in [r.pointer for r in error.related]


def test_bias_granularity_is_found_at_the_bias_scale():
    model = _model("cnn-qdq_s8_perchannel")
    conv_index, conv = _node(model, "Conv")
    dq_index, bias_dq = next((i, n) for i, n in enumerate(model.graph.node) if n.output[0] == conv.input[2])
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == bias_dq.input[1]))
    _set(model, bias_dq.input[1], scale[:1].reshape(()))  # one scale for every channel: per-tensor
    _set(model, bias_dq.input[2], np.zeros((), np.int32))
    errors = [d for d in _errors(model) if d.rule == "QT406"]
    assert [d.location.pointer for d in errors] == [f"/graph/node/{dq_index}/input/1"]
    assert f"/graph/node/{conv_index}/input/2" in [r.pointer for r in errors[0].related]


def test_qoperator_scale_is_located_at_the_qlinear_input():
    model = _model("mlp-qop_u8")
    i, node = next((i, n) for i, n in enumerate(model.graph.node) if n.op_type == "QLinearMatMul")
    _set(model, node.input[1], 0.0)  # a_scale
    (error,) = [d for d in _errors(model) if d.rule == "QT101"]  # one fault: the scale the QuantizeLinear shares
    assert error.location.tensor == node.input[1] and resolve(model, error.location.pointer) == node.input[1]
    assert f"/graph/node/{i}/input/1" in [error.location.pointer, *(r.pointer for r in error.related)]


def test_typed_only_rules_stay_quiet_and_select_ignore_apply():
    model = _model("cnn-qdq_u8_pertensor")
    _set(model, next(n for n in model.graph.node if n.op_type == "QuantizeLinear").input[1], 0.0)
    everything = diagnose(model)
    typed_only = {r.id for r in select_rules() if r.typed_only}
    assert typed_only and not {d.rule for d in everything.diagnostics} & typed_only
    assert [d.rule for d in everything.errors] == ["QT101"]
    assert diagnose(model, rules=select_rules(ignore=["QT101"])).errors == []
    assert [d.rule for d in diagnose(model, rules=select_rules(["QT1"])).errors] == ["QT101"]


@pytest.mark.parametrize("name", ["cnn-qdq_u8_pertensor", "cnn-qop_u8"])
def test_what_onnx_checker_refuses_in_a_quantizer_file_is_qt310_at_its_node_as_in_its_lifted_file(name, tmp_path):
    """An attribute the operator does not have, on a node the lift keeps (MaxPool): onnx.checker and lower refuse
    the file, and check reported nothing (QT310 was for typed files only); it is QT310 at that node, as check says
    of the file lift writes."""
    model = _model(name)
    i, node = _node(model, "MaxPool")
    node.attribute.append(onnx.helper.make_attribute("padz", [1, 1, 1, 1]))
    with pytest.raises(onnx.checker.ValidationError, match="padz"):
        onnx.checker.check_model(model)
    (error,) = [d for d in diagnose(model).errors if d.rule == "QT310"]
    assert error.location.pointer == f"/graph/node/{i}" and "Unrecognized attribute: padz" in error.message
    path = tmp_path / "q.onnx"
    onnx.save(model, path)
    assert main(["lower", str(path), str(tmp_path / "w.onnx")]) == 2 and not (tmp_path / "w.onnx").exists()
    assert main(["lift", str(path), str(tmp_path / "t.onnx")]) == 0
    lifted = onnx.load(tmp_path / "t.onnx")
    (typed,) = [d for d in diagnose(lifted).errors if d.rule == "QT310"]
    at = next(k for k, n in enumerate(lifted.graph.node) if n.name == node.name)
    assert typed.location.pointer == f"/graph/node/{at}" and "padz" in typed.message
    clean = diagnose(_model(name))
    assert not [d for d in clean.diagnostics if d.rule == "QT310"]


def test_notes_name_what_was_not_lifted():
    model = _model("cnn-qdq_u8_pertensor")
    i, node = _node(model, "MaxPool")
    integers = next(n for n in model.graph.node if n.output[0] == node.input[0]).input[0]  # its DQ's input
    cast = onnx.helper.make_node("Cast", [integers], ["as_plain"], to=onnx.TensorProto.INT32, name="plain")
    model.graph.node.append(cast)
    model.graph.output.append(onnx.helper.make_tensor_value_info("as_plain", onnx.TensorProto.INT32, None))
    found = diagnose(model)
    assert any("left" in n and "no rule on types looks at them" in n for n in found.notes) and any("'plain'" in n for n in found.notes)


def test_cli_text_json_sarif_report_the_same_findings_without_touching_the_file(tmp_path, capsys):
    model = _model("cnn-qdq_u8_pertensor")
    quantizers = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    for n, value in zip(quantizers[1:4], (0.0, np.inf, np.nan)):
        _set(model, n.input[1], value)
    path = tmp_path / "q.onnx"
    onnx.save(model, path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    assert main(["check", str(path)]) == 1
    text = capsys.readouterr().out
    assert text.count(" error QT101 ") == 3 and "note: checked as its lifted form" in text
    assert main(["check", str(path), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"] == {"errors": 3, "warnings": 0} and doc["notes"]
    pointers = {d["location"]["pointer"] for d in doc["diagnostics"]}
    assert all(d["help"] == "onnx-qtypes rule QT101" for d in doc["diagnostics"])
    assert main(["check", str(path), "--format", "sarif"]) == 1
    sarif = json.loads(capsys.readouterr().out)
    results = sarif["runs"][0]["results"]
    assert {r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"] for r in results} == pointers
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.onnx"]


def test_several_models_in_one_call(tmp_path, capsys):
    clean, broken = tmp_path / "clean.onnx", tmp_path / "broken.onnx"
    onnx.save(_model("mlp-qdq_u8_pertensor"), clean)
    model = _model("mlp-qdq_u8_pertensor")
    _set(model, next(n for n in model.graph.node if n.op_type == "QuantizeLinear").input[1], 0.0)
    onnx.save(model, broken)
    assert main(["check", str(clean), str(broken), "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in doc["reports"]] == [str(clean), str(broken)]
    assert doc["summary"] == {"models": 2, "errors": 1, "warnings": 0}
    missing = tmp_path / "missing.onnx"
    assert main(["check", str(clean), str(missing)]) == 2
    out = capsys.readouterr()
    assert "no findings" in out.out and str(missing) in out.err and len(out.err.strip().splitlines()) == 1


def test_severity_of_lift_problems_follows_the_profile():
    model = _model("cnn-qdq_u8_pertensor")
    _set(model, next(n for n in model.graph.node if n.op_type == "QuantizeLinear").input[1], 0.0)
    (d,) = [d for d in diagnose(model, profile="tflite-int8").diagnostics if d.rule == "QT101"]
    assert d.severity is Severity.ERROR


def test_show_lists_a_quantizer_models_tensors_as_the_file_names_them(tmp_path, capsys):
    model = _model("cnn-qdq_s8_perchannel")
    path = tmp_path / "q.onnx"
    onnx.save(model, path)
    assert main(["show", str(path), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    rows = {r["tensor"]: r for r in doc["tensors"]}
    writers = {n.output[0]: i for i, n in enumerate(model.graph.node) if n.op_type == "QuantizeLinear"}
    assert set(writers) <= set(rows)  # every activation the quantizer wrote
    for name, i in writers.items():
        assert rows[name]["declared_at"] == [f"/graph/node/{i}"]
        scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == model.graph.node[i].input[1]))
        assert rows[name]["qtype"]["scale"] == [float(scale)]
    per_channel = [r for r in rows.values() if r["qtype"]["granularity"] == "per-axis"]
    assert per_channel and all(resolve(model, r["declared_at"][0]).op_type == "DequantizeLinear" for r in per_channel)
    assert main(["show", str(path)]) == 0
    assert f"{len(rows)} quantized tensor(s)" in capsys.readouterr().out


def _scale_initializers(model: onnx.ModelProto) -> list[str]:
    """Float initializers read by quantization nodes: their scales (weights and zero points are integers)."""
    floats = {t.name for t in model.graph.initializer if t.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)}
    quantizing = [n for n in model.graph.node if "Quantize" in n.op_type or n.op_type.startswith("QLinear")]
    return sorted({name for n in quantizing for name in n.input[1:] if name in floats} |
                  {n.input[0] for n in quantizing if n.op_type == "QLinearConcat"} & floats)


@pytest.mark.parametrize("name", sorted(corpus_models()))
def test_every_scale_of_every_quantizer_model_set_to_zero_is_one_located_finding(name):
    original = corpus_models()[name]
    scales = _scale_initializers(original)
    assert scales
    for scale in scales:
        model = _model(name)
        tensor = next(t for t in model.graph.initializer if t.name == scale)
        values = numpy_helper.to_array(tensor).copy()
        values.flat[values.size // 2] = 0  # one channel of a per-channel scale, or the scale
        tensor.CopyFrom(numpy_helper.from_array(values, scale))
        found = [d for d in _errors(model) if d.rule == "QT101"]
        assert [d.location.tensor for d in found] == [scale], (scale, [str(d) for d in found])
        assert resolve(model, found[0].location.pointer) == scale


def test_a_zero_point_stored_outside_its_type_is_found_where_runtimes_read_it_wrapped():
    model = _model("cnn-qdq_u8_pertensor")
    i, q = _node(model, "QuantizeLinear", 1)
    zp = next(t for t in model.graph.initializer if t.name == q.input[2])
    zp.CopyFrom(onnx.TensorProto(name=zp.name, data_type=onnx.TensorProto.UINT8, int32_data=[300]))
    (error,) = _errors(model)
    assert error.rule == "QT103" and error.location.pointer == f"/graph/node/{i}/input/2"
    assert error.location.tensor == zp.name and "300" in error.message and "44" in error.message


def test_a_float8_zero_point_that_is_not_zero_is_qt121_at_its_quantizer():
    """QT121's QDQ half (validity.md#qt121): the zero-point tensor of a float8 QuantizeLinear holds only zeros
    (-0.0 counts as zero)."""
    assert _errors(_float8_qdq(zero_point=-0.0)) == []
    model = _float8_qdq(zero_point=1.0)
    (error,) = _errors(model)
    assert error.rule == "QT121" and error.location.pointer == "/graph/node/1/input/2"
    assert error.location.tensor == "z" and error.location.node == "quantize" and "1.0" in error.message


def test_every_independent_fault_of_one_node_is_a_finding():
    """A zero point stored outside its type does not hide a zero scale of the same DequantizeLinear."""
    model = _model("cnn-qdq_s8_perchannel")
    initializers = {t.name: t for t in model.graph.initializer}
    i, dq = next((i, n) for i, n in enumerate(model.graph.node) if n.op_type == "DequantizeLinear"
                 and initializers[n.input[2]].data_type == onnx.TensorProto.INT8 and initializers[n.input[1]].dims)
    scale = numpy_helper.to_array(initializers[dq.input[1]]).copy()
    scale[0] = 0
    _set(model, dq.input[1], scale)
    zp = next(t for t in model.graph.initializer if t.name == dq.input[2])
    values = numpy_helper.to_array(zp).astype(np.int32)
    values[0] = 999
    zp.CopyFrom(onnx.TensorProto(name=zp.name, data_type=onnx.TensorProto.INT8, dims=zp.dims,
                                 int32_data=values.tolist()))
    errors = {d.rule: d for d in _errors(model)}
    assert set(errors) == {"QT101", "QT103"}
    assert errors["QT101"].location.pointer == f"/graph/node/{i}/input/1" and "scale 0.0" in errors["QT101"].message
    assert errors["QT103"].location.pointer == f"/graph/node/{i}/input/2" and "999" in errors["QT103"].message
    axis = next(a for a in dq.attribute if a.name == "axis")
    axis.i = 9  # a third, independent problem: the axis
    assert {d.rule for d in _errors(model)} == {"QT101", "QT103", "QT108"}


def _branch(name: str, scale, *, outer_scale: bool = False) -> onnx.GraphProto:
    """An If branch quantizing outer-scope tensor ``x``: QuantizeLinear -> DequantizeLinear, both reading the
    branch's own scale initializer (or, ``outer_scale``, the main graph's ``outer_scale``)."""
    h = onnx.helper
    s = "outer_scale" if outer_scale else f"{name}_scale"
    nodes = [h.make_node("QuantizeLinear", ["x", s, f"{name}_zp"], [f"{name}_q"], name=f"{name}_quantize"),
             h.make_node("DequantizeLinear", [f"{name}_q", s, f"{name}_zp"], [f"{name}_y"], name=f"{name}_dequantize")]
    initializers = [numpy_helper.from_array(np.array(128, np.uint8), f"{name}_zp")]
    if not outer_scale:
        initializers.append(numpy_helper.from_array(np.array(scale, np.float32), s))
    return h.make_graph(nodes, name, [], [h.make_tensor_value_info(f"{name}_y", onnx.TensorProto.FLOAT, [2])],
                        initializers)


def _if_model(then_branch: onnx.GraphProto, else_branch: onnx.GraphProto, outer: float = 0.0) -> onnx.ModelProto:
    h = onnx.helper
    inner = h.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch, name="choose")
    graph = h.make_graph(
        [h.make_node("Relu", ["x0"], ["x"], name="relu"), inner], "main",
        [h.make_tensor_value_info("x0", onnx.TensorProto.FLOAT, [2]),
         h.make_tensor_value_info("c", onnx.TensorProto.BOOL, [])],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array(outer, np.float32), "outer_scale")])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 21)])


def _branch_pointer(model: onnx.ModelProto, branch: str) -> str:
    """The JSON pointer of the If's ``branch`` (make_node sorts attributes by name)."""
    return f"/graph/node/1/attribute/{[a.name for a in model.graph.node[1].attribute].index(branch)}/g"


def test_faults_inside_subgraphs_are_findings_located_in_the_subgraph(tmp_path, capsys):
    model = _if_model(_branch("then", 0.0), _branch("else", float("-inf")))
    errors = _errors(model)
    assert [d.rule for d in errors] == ["QT101", "QT101"]
    then_, else_ = sorted(errors, key=lambda d: d.location.tensor != "then_scale")
    # one finding per scale: the DequantizeLinear reading it too is related
    then_pointer, else_pointer = _branch_pointer(model, "then_branch"), _branch_pointer(model, "else_branch")
    assert then_.location.pointer == f"{then_pointer}/node/0/input/1"
    assert then_.location.node == "then_quantize" and then_.location.tensor == "then_scale"
    assert [r.pointer for r in then_.related] == [f"{then_pointer}/node/1/input/1"]
    assert else_.location.pointer == f"{else_pointer}/node/0/input/1"
    assert else_.location.tensor == "else_scale" and "-inf" in else_.message and "/graph/node/0" not in else_.message
    for d in errors:
        assert resolve(model, d.location.pointer) == d.location.tensor
    path = tmp_path / "if.onnx"
    onnx.save(model, path)
    assert main(["check", str(path)]) == 1
    assert capsys.readouterr().out.count(" error QT101 ") == 2


def test_a_rule_finding_inside_a_subgraph_names_the_node_there_not_the_if():
    """A rule on the lifted form finds a com.microsoft QuantizeLinear in a branch without the import (QT313): the
    location names that node, as its pointer does, not the If holding it."""
    then_branch, else_branch = _branch("then", 0.5), _branch("else", 0.25)
    for branch in (then_branch, else_branch):
        branch.node[0].domain = "com.microsoft"
    model = _if_model(then_branch, else_branch, outer=0.5)
    (finding,) = [d for d in diagnose(model).diagnostics if d.rule == "QT313"]
    first = min((_branch_pointer(model, "then_branch"), "then"), (_branch_pointer(model, "else_branch"), "else"))
    assert finding.location.pointer == f"{first[0]}/node/0"
    assert (finding.location.node, finding.location.op_type) == (f"{first[1]}_quantize", "QuantizeLinear")
    assert finding.message.startswith("com.microsoft.QuantizeLinear uses domain 'com.microsoft' (1 more node uses it "
                                      "too), which is not in opset_import")
    (other,) = finding.related
    assert other.node == f"{'else' if first[1] == 'then' else 'then'}_quantize" and other.pointer.endswith("/node/0")


def test_subgraph_parameters_from_an_outer_scope_are_read_there():
    model = _if_model(_branch("then", 0.0, outer_scale=True), _branch("else", 1.0))  # outer_scale is 0
    (error,) = _errors(model)
    assert error.rule == "QT101" and error.location.tensor == "outer_scale"
    assert error.location.pointer == f"{_branch_pointer(model, 'then_branch')}/node/0/input/1"
    fine = diagnose(_if_model(_branch("then", 0.0, outer_scale=True), _branch("else", 1.0), outer=0.5))
    assert fine.form == "qdq" and fine.errors == []
    assert any("subgraph" in n for n in fine.notes)


def test_faults_in_nested_subgraphs_and_loop_bodies():
    h = onnx.helper
    body = _branch("body", np.nan)
    body.input.extend([h.make_tensor_value_info("i", onnx.TensorProto.INT64, []),
                       h.make_tensor_value_info("cond_in", onnx.TensorProto.BOOL, [])])
    body.node.append(h.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"))
    body.output.insert(0, h.make_tensor_value_info("cond_out", onnx.TensorProto.BOOL, []))
    loop = h.make_node("Loop", ["", "c"], ["ys"], body=body, name="repeat")
    then_branch = h.make_graph([loop], "then", [], [h.make_tensor_value_info("ys", onnx.TensorProto.FLOAT, None)])
    model = _if_model(then_branch, _branch("else", 1.0))
    (error,) = _errors(model)
    assert error.rule == "QT101" and error.location.tensor == "body_scale"
    assert error.location.pointer == f"{_branch_pointer(model, 'then_branch')}/node/0/attribute/0/g/node/0/input/1"


def test_an_axis_attribute_that_is_not_an_integer_is_a_located_finding():
    model = _model("cnn-qdq_s8_perchannel")
    i, dq = next((i, n) for i, n in enumerate(model.graph.node) if n.op_type == "DequantizeLinear"
                 and any(a.name == "axis" for a in n.attribute))
    k = next(k for k, a in enumerate(dq.attribute) if a.name == "axis")
    dq.attribute[k].CopyFrom(onnx.helper.make_attribute("axis", "zero"))
    (error,) = [d for d in _errors(model) if d.rule == "QT108"]
    assert error.location.pointer == f"/graph/node/{i}/attribute/{k}" and "not an integer" in error.message


def test_a_quantize_linear_without_inputs_is_named_not_a_crash():
    """A QuantizeLinear with no input names (invalid, but a user can write it) is left as it is and said so."""
    from onnx import TensorProto, helper

    node = helper.make_node("QuantizeLinear", [], ["q"], name="ql")
    graph = helper.make_graph([node], "g", [], [helper.make_tensor_value_info("q", TensorProto.INT8, [2])])
    found = diagnose(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10))
    assert any("QuantizeLinear 'ql' (/graph/node/0)" in note for note in found.notes), found.notes
