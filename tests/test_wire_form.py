"""The fail-closed markers as written (proto/encoding.py), and files written in the version-1 form still read."""

from __future__ import annotations

import numpy as np
import onnx
import onnx.shape_inference
import pytest
from builders import ROOT

import onnx_qtypes as qt
from onnx_qtypes.checker import iter_diagnostics
from onnx_qtypes.proto.encoding import in_wire_form, marker, plain_copy, tensor_array, to_plain_form
from onnx_qtypes.reference_ops import ReferenceEvaluator

EXAMPLE = ROOT / "examples" / "typed_cnn.onnx"


def _version_1(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model`` as version 1 wrote it: declarations elem_type UNDEFINED, constants in their storage types."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    return to_plain_form(copy)


def test_every_quantized_tensor_is_marked_in_the_saved_example():
    model = qt.load(EXAMPLE)
    qtypes = qt.quantized_tensors(model)
    for vi in (*model.graph.input, *model.graph.output, *model.graph.value_info):
        if vi.name in qtypes:
            assert vi.type.tensor_type.elem_type == marker(qtypes[vi.name].storage_type.data_type)
    for init in model.graph.initializer:
        if init.name in qtypes:
            assert init.data_type == marker(qtypes[init.name].storage_type.data_type) and init.raw_data
    boundary_zero_points = {n.input[2] for n in model.graph.node
                            if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2}
    assert boundary_zero_points and all(
        init.data_type > 1000 for init in model.graph.initializer if init.name in boundary_zero_points)
    assert in_wire_form(model)


def test_shape_inference_no_longer_opens_the_marker():
    model = qt.load(EXAMPLE)
    inferred = onnx.shape_inference.infer_shapes(model)
    for vi in (*inferred.graph.value_info, *inferred.graph.output):
        assert vi.type.tensor_type.elem_type not in (onnx.TensorProto.INT8, onnx.TensorProto.UINT8), vi.name
    import onnxruntime

    with pytest.raises(Exception, match="valid data type|data type 10"):  # refused, not run on plain integers
        onnxruntime.InferenceSession(inferred.SerializeToString(), providers=["CPUExecutionProvider"])


def test_a_version_1_file_reads_checks_runs_and_saves_marked(tmp_path):
    marked = qt.load(EXAMPLE)
    old = _version_1(marked)
    path = tmp_path / "v1.onnx"
    onnx.save(old, path)  # written by stock onnx: what version 1 left on disk
    back = qt.load(path)
    assert not in_wire_form(back)
    assert qt.quantized_tensors(back) == qt.quantized_tensors(marked)
    x = np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)
    assert np.array_equal(ReferenceEvaluator(back).run(None, {"x": x})[0], ReferenceEvaluator(marked).run(None, {"x": x})[0])
    found = {d.rule for d in iter_diagnostics(back) if d.is_error}
    assert found == {"QT119", "QT311"}  # the version-1 marker and plain constants: fails open under stock tools
    assert qt.lower(back).SerializeToString() == qt.lower(marked).SerializeToString()
    qt.save(back, tmp_path / "resaved.onnx")
    resaved = qt.load(tmp_path / "resaved.onnx")
    assert in_wire_form(resaved) and [d for d in iter_diagnostics(resaved) if d.is_error] == []
    assert onnx.load(path).SerializeToString() == old.SerializeToString()  # save wrote a copy, not the input


def test_lowered_models_carry_no_marker():
    lowered = qt.lower(qt.load(EXAMPLE))
    onnx.checker.check_model(lowered, full_check=True)
    assert all(t.data_type < 1000 for t in lowered.graph.initializer)


def test_marked_constants_read_as_their_storage_integers():
    model = qt.load(EXAMPLE)
    w = next(t for t in model.graph.initializer if t.name == "w")
    plain = next(t for t in plain_copy(model).graph.initializer if t.name == "w")
    assert plain.data_type == onnx.TensorProto.INT8
    assert np.array_equal(tensor_array(w), onnx.numpy_helper.to_array(plain))
    assert w.data_type == marker(onnx.TensorProto.INT8)  # read in place, left as it was


def test_untyping_a_tensor_leaves_no_marker_behind():
    model = qt.load(EXAMPLE)
    for name in list(qt.quantized_tensors(model)):
        qt.set_qtype(model, name, None)
    assert all(t.data_type < 1000 for t in model.graph.initializer)
    assert all(vi.type.tensor_type.elem_type < 1000 for vi in (*model.graph.input, *model.graph.value_info))
    onnx.checker.check_model(model)  # plain integers and QDQ nodes: standard ONNX again


def test_a_zero_point_also_read_as_plain_integers_gets_a_marked_copy(tmp_path):
    model = qt.load(EXAMPLE)
    quantize = next(n for n in model.graph.node if n.op_type == "QuantizeLinear")
    shared = quantize.input[2]
    plain = onnx.ModelProto()
    plain.CopyFrom(model)
    to_plain_form(plain)
    plain.graph.node.append(onnx.helper.make_node("Cast", [shared], ["zp_as_float"], to=onnx.TensorProto.FLOAT))
    plain.graph.output.append(onnx.helper.make_tensor_value_info("zp_as_float", onnx.TensorProto.FLOAT, []))
    qt.save(plain, tmp_path / "shared.onnx")
    saved = qt.load(tmp_path / "shared.onnx")
    constants = {t.name: t for t in saved.graph.initializer}
    cast = next(n for n in saved.graph.node if n.op_type == "Cast")
    assert constants[cast.input[0]].data_type == onnx.TensorProto.INT8  # the Cast still reads plain integers
    saved_quantize = next(n for n in saved.graph.node if n.op_type == "QuantizeLinear")
    assert saved_quantize.input[2] != shared and constants[saved_quantize.input[2]].data_type == marker(3)
    assert [d for d in iter_diagnostics(saved) if d.is_error] == []


def test_a_marked_copy_never_takes_a_name_the_model_uses(tmp_path):
    model = qt.load(EXAMPLE)
    to_plain_form(model)
    quantize = next(n for n in model.graph.node if n.op_type == "QuantizeLinear")
    shared, quantized = quantize.input[2], quantize.output[0]
    model.graph.node.append(onnx.helper.make_node("Cast", [shared], [f"{shared}_{quantized}"], to=onnx.TensorProto.FLOAT))
    model.graph.output.append(onnx.helper.make_tensor_value_info(f"{shared}_{quantized}", onnx.TensorProto.FLOAT, []))
    qt.save(model, tmp_path / "clash.onnx")
    onnx.checker.check_model(to_plain_form(qt.load(tmp_path / "clash.onnx")))  # still single assignment


def test_a_quantized_constant_whose_data_does_not_fit_is_a_named_error(tmp_path):
    model = qt.load(EXAMPLE)
    to_plain_form(model)
    w = next(t for t in model.graph.initializer if t.name == "w")
    w.CopyFrom(onnx.TensorProto(name="w", data_type=onnx.TensorProto.INT8, dims=list(w.dims), int32_data=[1, 2, 3]))
    with pytest.raises(qt.QTypesError, match="tensor 'w': its data does not match its dims"):
        qt.save(model, tmp_path / "bad.onnx")
    assert not (tmp_path / "bad.onnx").exists()
