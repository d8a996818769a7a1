"""External data left in its files (proto/external.py): read as if loaded, checked as if loaded, copied on save,
and the weights a lift computes spilled out of memory. What check and lift do with a model of billions of weights;
benchmarks/bench_large_model.py measures their memory on one."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from corpus_matmul_nbits import hand_built
from onnx import TensorProto, numpy_helper
from test_parameters_by_reference import _blocked_qdq

import onnx_qtypes as qt
from onnx_qtypes import diagnose
from onnx_qtypes.interop.lift import lift_model
from onnx_qtypes.proto import external
from onnx_qtypes.proto.encoding import tensor_array
from onnx_qtypes.proto.errors import ModelLoadError
from onnx_qtypes.proto.model import load


def _saved(model: onnx.ModelProto, folder, name: str = "model.onnx"):
    """``model`` written with every tensor in external data, by onnx itself (which changes ``model`` so)."""
    path = folder / name
    onnx.save_model(model, path, save_as_external_data=True, location=f"{name}.data", size_threshold=0)
    return path


def _tensors(model: onnx.ModelProto) -> dict[str, TensorProto]:
    return {t.name: t for t in model.graph.initializer}


def test_a_tensor_left_in_its_file_reads_as_the_loaded_one(tmp_path):
    path = _saved(_blocked_qdq(64, 32), tmp_path)
    lazy, loaded = _tensors(load(path, load_external_data="lazy")), _tensors(load(path))
    for name, tensor in lazy.items():
        assert external.is_lazy(tensor) and tensor.data_location == TensorProto.EXTERNAL and not tensor.raw_data
        assert not loaded[name].external_data
        got, want = tensor_array(tensor), tensor_array(loaded[name])
        assert got.dtype == want.dtype and np.array_equal(got, want)  # int4 unpacked, float16 mapped: alike


def test_a_tensor_shorter_in_its_file_than_its_dims_is_refused_in_the_same_words(tmp_path):
    model = _blocked_qdq(64, 32)
    path = _saved(model, tmp_path)
    data = tmp_path / "model.onnx.data"
    broken = load(path, load_external_data=False)
    w = _tensors(broken)["w"]
    for entry in w.external_data:  # the weight claims 16 bytes fewer than its dims need
        if entry.key == "length":
            entry.value = str(int(entry.value) - 16)
    path.write_bytes(broken.SerializeToString())
    messages = []
    for mode in (True, "lazy"):
        with pytest.raises(ModelLoadError) as caught:
            qt.proto.reader.read_model(path, external_data=mode)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "need 1024 bytes of INT4 raw_data, found 1008" in messages[0]
    data.write_bytes(data.read_bytes()[:100])  # and the file itself cut short: onnx's own words, both ways
    for mode in (True, "lazy"):
        with pytest.raises(ModelLoadError, match="cannot read external data .*exceeds"):
            qt.proto.reader.read_model(path, external_data=mode)


def test_save_copies_the_data_into_the_new_file_and_never_writes_basepath(tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    path = _saved(_blocked_qdq(64, 32), source)
    model = load(path, load_external_data="lazy")
    out = tmp_path / "out.onnx"
    qt.save(model, out)  # tensors still in their files: written as external data beside out.onnx
    assert (tmp_path / "out.onnx.data").exists()
    written = load(out, load_external_data=False)
    assert all(e.key != external.BASEPATH for t in written.graph.initializer for e in t.external_data)
    (source / "model.onnx.data").unlink()  # the copy does not need the original
    original = _tensors(_blocked_qdq(64, 32))
    for name, tensor in _tensors(load(out)).items():
        assert np.array_equal(tensor_array(tensor), tensor_array(original[name])), name
    one_file = tmp_path / "one.onnx"
    qt.save(load(out, load_external_data="lazy"), one_file, external_data=False)  # asked for one file: read in
    assert not (tmp_path / "one.onnx.data").exists() and len(load(one_file).graph.initializer) == 2


def test_a_spilled_tensor_leaves_memory_and_keeps_its_values():
    values = np.arange(1 << 19, dtype=np.float32)  # 2 MiB
    tensor = numpy_helper.from_array(values, "big")
    external.spill(tensor)  # no spill folder open: stays in memory
    assert tensor.HasField("raw_data")
    with external.spill_folder() as folder:
        external.spill(tensor)
        assert not tensor.HasField("raw_data") and external.is_lazy(tensor)
        assert np.array_equal(tensor_array(tensor), values)
        small = numpy_helper.from_array(np.ones(4, np.float32), "small")
        external.spill(small)
        assert small.HasField("raw_data")  # under 1 MiB: not worth a file
    assert not folder.exists()


def test_check_reads_weights_where_they_lie_and_finds_what_it_finds_on_the_loaded_model(tmp_path):
    model = _blocked_qdq(256, 64)
    scales = numpy_helper.to_array(_tensors(model)["w_scale"]).copy()
    scales[3, 5] = 0  # a bad scale, in external data
    model.graph.initializer[1].CopyFrom(numpy_helper.from_array(scales, "w_scale"))
    path = _saved(model, tmp_path)
    from_file = [(d.rule, d.message, d.location.pointer) for d in diagnose(path).diagnostics]
    in_memory = [(d.rule, d.message, d.location.pointer) for d in diagnose(load(path)).diagnostics]
    assert from_file == in_memory and any(rule == "QT101" for rule, _, _ in from_file)


def test_lift_of_a_file_with_matmul_nbits_spills_the_repacked_weight_and_writes_it_beside_out(tmp_path):
    model = hand_built(k=4096, n=512, block=32, zero_points="none")  # 1 MiB of packed codes: spilled
    want = lift_model(model).model
    path = _saved(model, tmp_path)  # (onnx.save_model moves the model's own data out)
    with external.spill_folder(tmp_path):  # as the lift command reads and lifts
        lifted = lift_model(qt.proto.reader.read_model(path, external_data="lazy")).model
        weight = next(t for t in lifted.graph.initializer if t.dims[:] == [4096, 512])
        assert external.is_lazy(weight)
        qt.save(lifted, tmp_path / "lifted.onnx")
    got = load(tmp_path / "lifted.onnx")
    for name, tensor in _tensors(want).items():
        assert np.array_equal(tensor_array(_tensors(got)[name]), tensor_array(tensor)), name
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".qtypes-spill")] == []
