"""Parameters by reference held as their initializer holds them (proto/parameter_values.py), and the commands on a
model whose weights stay in their files giving what they give on the loaded model: the memory side of a 7B model
(benchmarks/bench_large_model.py measures it). Each test compares against the loaded, listed form."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import onnx
import pytest
from corpus_matmul_nbits import hand_built
from onnx import numpy_helper
from test_parameters_by_reference import _blocked_qdq

import onnx_qtypes as qt
from onnx_qtypes import diagnose
from onnx_qtypes.interop import matmul_nbits
from onnx_qtypes.interop.lift import lift_model
from onnx_qtypes.proto import external
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.model import get_qtype, load
from onnx_qtypes.proto.parameter_values import ParameterValues
from onnx_qtypes.proto.qtype import QType


def test_held_values_read_as_the_tuple_of_their_values():
    stored = np.array([0.5, -0.25, 0.125, np.float16(0.1)], np.float16)
    held, listed = ParameterValues.of_array(stored, float), tuple(stored.astype(np.float64).tolist())
    assert len(held) == 4 and held[1] == -0.25 and held[-1] == listed[-1] and held[1:3] == listed[1:3]
    assert list(held) == list(listed) and held == listed and listed == held and hash(held) == hash(listed)
    assert held != listed[:3] and held != (0.5, -0.25, 0.125, 0.1)  # 0.1 is not a float16
    assert np.asarray(held).dtype == np.float64 and type(held[0]) is float
    zeros = ParameterValues.zeros(3)
    assert zeros == (0, 0, 0) and type(zeros[2]) is int and not np.asarray(zeros).any()
    with pytest.raises(IndexError):
        held[4]


def test_a_type_holding_its_parameters_equals_the_listed_type():
    scales = np.linspace(0.01, 0.02, 2048).astype(np.float16)
    held = QType("int4", ParameterValues.of_array(scales, float), axis=0, block_size=32, scale_tensor="w_scale")
    listed = QType("int4", scales.astype(np.float64).tolist(), axis=0, block_size=32)
    assert held == listed and hash(held) == hash(listed) and str(held) == str(listed)
    assert held.to_proto().scale_tensor == "w_scale" and not held.has_negative_scale
    with pytest.raises(qt.QTypeError, match="finite and non-zero"):
        QType("int4", ParameterValues.of_array(np.array([0.5, np.nan]), float), axis=0)


def test_a_type_read_from_a_file_maps_its_scales_and_lists_what_the_loaded_one_lists(tmp_path):
    typed = qt.lift(_blocked_qdq(1024, 64))  # 2,048 scales: by reference
    path = tmp_path / "typed.onnx"
    qt.save(typed, path, external_data=True)
    lazy, loaded = get_qtype(load(path, load_external_data="lazy"), "w"), get_qtype(load(path), "w")
    assert isinstance(lazy.scale, ParameterValues) and lazy == loaded and lazy.to_dict() == loaded.to_dict()


def test_a_bad_scale_among_thousands_held_by_reference_is_found_where_it_is(tmp_path):
    model = _blocked_qdq(1024, 256)  # 8,192 scales: screened by their distinct values
    scales = numpy_helper.to_array(model.graph.initializer[1]).copy()
    scales[17, 3] = 0
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(scales, "w_scale"))
    typed = tmp_path / "typed.onnx"
    with external.spill_folder():
        lifted = lift_model(model, tolerant=True)
    assert lifted.problems and lifted.problems[0].rule == "QT101"  # the lift refuses it: check the typed form
    good = qt.lift(_blocked_qdq(1024, 256))
    good.graph.initializer[1].CopyFrom(numpy_helper.from_array(scales, good.graph.initializer[1].name))
    qt.save(good, typed, external_data=True)
    found = [(d.rule, d.message) for d in diagnose(typed).diagnostics if d.rule == "QT101"]
    assert found and "scale[4355]" in found[0][1]  # row 17, column 3 of [32, 256]: 17 * 256 + 3


def test_the_loaded_bytes_are_written_from_the_files_byte_for_byte(tmp_path):
    model = _blocked_qdq(256, 64)
    path = tmp_path / "m.onnx"
    onnx.save_model(model, path, save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    lazy, loaded = load(path, load_external_data="lazy"), load(path)
    out = io.BytesIO()
    external.write_loaded(lazy, out)
    assert out.getvalue() == loaded.SerializeToString() == onnx.load(path).SerializeToString()
    assert external.loaded_size(lazy) == len(out.getvalue())


def test_lower_of_a_file_writes_what_lowering_the_loaded_model_writes(tmp_path):
    typed = tmp_path / "typed.onnx"
    qt.save(qt.lift(_blocked_qdq(1024, 64)), typed, external_data=True)
    want = tmp_path / "want.onnx"
    qt.save(qt.lower(load(typed)), want)
    got = tmp_path / "out" / "lowered.onnx"
    got.parent.mkdir()
    run = subprocess.run([sys.executable, "-m", "onnx_qtypes", "lower", str(typed), str(got)], capture_output=True,
                         text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert got.read_bytes() == want.read_bytes() and sorted(p.name for p in got.parent.iterdir()) == ["lowered.onnx"]


def test_a_matmul_nbits_weight_repacked_in_pieces_is_the_weight_repacked_whole(monkeypatch, tmp_path):
    model = hand_built(k=4096, n=600, block=32, zero_points="none", seed=3)  # 1.2 MiB: spilled in pieces
    scales = next(t for t in model.graph.initializer if t.name.endswith("scales"))
    values = numpy_helper.to_array(scales).copy()
    values.reshape(-1)[::7] *= -1  # mirrored blocks too
    scales.CopyFrom(numpy_helper.from_array(values, scales.name))
    whole = lift_model(model).model  # no spill folder: one piece in memory
    monkeypatch.setattr(matmul_nbits, "_CODES_AT_ONCE", 1000)  # a block of K at a time
    with external.spill_folder(tmp_path):
        pieces = lift_model(model).model
        weights = {t.name: t for t in pieces.graph.initializer}
        assert any(external.is_lazy(t) for t in weights.values())
        for tensor in whole.graph.initializer:
            got = weights[tensor.name]
            got_bytes = external.tensor_bytes(got).tobytes() if external.is_lazy(got) else got.raw_data
            assert got_bytes == tensor.raw_data, tensor.name
            assert np.array_equal(tensor_array(got), tensor_array(tensor))


def test_lower_past_the_protobuf_limit_lays_out_the_data_file_as_for_the_loaded_model(monkeypatch, tmp_path):
    from onnx_qtypes.interop.lower import lower_model
    from onnx_qtypes.proto import model as proto_model

    typed = tmp_path / "typed.onnx"
    qt.save(qt.lift(_blocked_qdq(1024, 64)), typed, external_data=True)
    monkeypatch.setattr(proto_model, "PROTOBUF_LIMIT", 4096)  # every lowered model is "too big": external data
    for folder, result, kwargs in (("want", lower_model(load(typed)).model, {}),
                                   ("got", lower_model(str(typed), external_data="lazy").model, {"as_loaded": True})):
        (tmp_path / folder).mkdir()
        qt.save(result, tmp_path / folder / "lowered.onnx", **kwargs)
    for name in ("lowered.onnx", "lowered.onnx.data"):
        assert (tmp_path / "got" / name).read_bytes() == (tmp_path / "want" / name).read_bytes(), name


def test_a_lazy_parameter_tensor_numpy_cannot_map_is_decoded_once(tmp_path, monkeypatch):
    """float8 E8M0 scales left in their file are decoded on first use and kept (one byte a value, as stored):
    reading them value by value is not one whole-tensor decode per value."""
    import ml_dtypes

    from onnx_qtypes.proto import parameter_references

    values = np.array([0.5, 1.0, 2.0, 4.0] * 8, ml_dtypes.float8_e8m0fnu)
    (tmp_path / "scales.bin").write_bytes(values.tobytes())
    tensor = onnx.TensorProto(name="s", data_type=onnx.TensorProto.FLOAT8E8M0, dims=[values.size],
                              data_location=onnx.TensorProto.EXTERNAL)
    tensor.external_data.add(key="location", value="scales.bin")
    external.attach(tensor, tmp_path)
    decodes = []
    real = parameter_references.tensor_array
    monkeypatch.setattr(parameter_references, "tensor_array", lambda t: decodes.append(t.name) or real(t))
    held = parameter_references.lazy_values(tensor, float)
    assert [held[i] for i in range(len(held))] == values.astype(np.float64).tolist()
    assert list(held) == values.astype(np.float64).tolist() and decodes == ["s"]
