"""`check` on QDQ / QOperator models as onnxruntime's quantizer wrote them: faults planted in real
quantize_static output are each one finding, located at the node and tensor of the file itself."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import onnx
import pytest
from corpus import corpus_models
from onnx import numpy_helper

from onnx_qtypes import diagnose
from onnx_qtypes.checker import Severity, select_rules
from onnx_qtypes.checker.float_view import resolve
from onnx_qtypes.cli import main


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
        assert d.location.node in {n.name for n in model.graph.node}


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
    for scale, value in zip(scales, (0.0, np.nan, -0.5)):
        _set(model, scale, value)
    errors = _errors(model)
    assert sorted(d.location.tensor for d in errors) == sorted(scales)
    assert {d.rule for d in errors} == {"QT101"}
    for d in errors:  # at the scale input of the QuantizeLinear that writes the tensor
        i = int(d.location.pointer.split("/")[3])
        assert model.graph.node[i].op_type == "QuantizeLinear" and d.location.pointer.endswith("/input/1")


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
    model.graph.output.append(onnx.helper.make_tensor_value_info("second_reader_out", onnx.TensorProto.FLOAT, None))
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
    model = _model("cnn-qdq_u8_pertensor")
    conv_index, conv = _node(model, "Conv")
    bias_dq = next(n for n in model.graph.node if n.output[0] == conv.input[2])
    scale = numpy_helper.to_array(next(t for t in model.graph.initializer if t.name == bias_dq.input[1]))
    _set(model, bias_dq.input[1], scale * 3)
    errors = _errors(model)
    assert [d.rule for d in errors] == ["QT405"]
    assert errors[0].location.node in (conv.name, bias_dq.name)
    assert errors[0].location.pointer.startswith("/graph/node/")


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


def test_notes_name_what_was_not_lifted():
    model = _model("cnn-qdq_u8_pertensor")
    i, node = _node(model, "MaxPool")
    integers = next(n for n in model.graph.node if n.output[0] == node.input[0]).input[0]  # its DQ's input
    cast = onnx.helper.make_node("Cast", [integers], ["as_plain"], to=onnx.TensorProto.INT32, name="plain")
    model.graph.node.append(cast)
    model.graph.output.append(onnx.helper.make_tensor_value_info("as_plain", onnx.TensorProto.INT32, None))
    found = diagnose(model)
    assert any("left" in n and "not checked" in n for n in found.notes) and any("'plain'" in n for n in found.notes)


def test_cli_text_json_sarif_report_the_same_findings_without_touching_the_file(tmp_path, capsys):
    model = _model("cnn-qdq_u8_pertensor")
    quantizers = [n for n in model.graph.node if n.op_type == "QuantizeLinear"]
    for n, value in zip(quantizers[1:4], (0.0, np.inf, -1.0)):
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
