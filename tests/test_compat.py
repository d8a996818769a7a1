"""Compatibility of the extension with stock onnx and onnxruntime."""

from __future__ import annotations

from onnx_qtypes.proto.encoding import tensor_array  # noqa: E402 (reads marked initializers)

import os
import pathlib

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from builders import add_model, weights_model
from onnx import TensorProto

from onnx_qtypes import ModelLoadError, QType, UnknownTensorError, get_qtype, load, quantized_tensors, save, set_qtype, set_qtypes
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.model import write_view


def _typed_add() -> onnx.ModelProto:
    model = add_model()
    q = QType("int8", 0.5, 0)
    for name in ("a", "b", "c"):
        set_qtype(model, name, q)
    return model


def _ort(model_bytes: bytes, feeds: dict) -> list:
    session = ort.InferenceSession(model_bytes, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def test_stock_onnx_load_save_keeps_extension_bytes(example_model, tmp_path):
    original = example_model.SerializeToString()
    path = tmp_path / "typed.onnx"
    path.write_bytes(original)
    stock = onnx.load(path)
    onnx.save(stock, tmp_path / "resaved.onnx")
    assert (tmp_path / "resaved.onnx").read_bytes() == original
    # and the fields still decode to the same types
    again = load(tmp_path / "resaved.onnx")
    for name in ("x_q", "w", "b", "conv_q"):
        assert get_qtype(again, name) == get_qtype(example_model, name)
        assert get_qtype(again, name).statistics == get_qtype(example_model, name).statistics


def test_stock_tools_that_only_move_models_keep_the_fields(example_model):
    original = get_qtype(example_model, "w")
    inferred = onnx.shape_inference.infer_shapes(example_model, strict_mode=False)
    assert get_qtype(inferred, "w") == original


def test_typed_add_fails_closed_in_onnxruntime():
    model = _typed_add()
    feeds = {"a": np.array([100, 100], np.int8), "b": np.array([100, 100], np.int8)}
    with pytest.raises(Exception) as info:
        _ort(model.SerializeToString(), feeds)
    assert "data type 1003" in str(info.value)  # the INT8 marker


def test_fail_open_alternative_is_silently_wrong():
    """Why the marker matters: the same fields with elem_type INT8 run as plain int8."""
    model = add_model()
    for vi in list(model.graph.input) + list(model.graph.output):
        view = pb.TensorTypeView.FromString(vi.type.tensor_type.SerializeToString())
        view.quantization.CopyFrom(QType("int8", 0.5, 0).to_proto())  # elem_type stays INT8
        write_view(vi.type.tensor_type, view)
    feeds = {"a": np.array([100, 100], np.int8), "b": np.array([100, 100], np.int8)}
    (c,) = _ort(model.SerializeToString(), feeds)
    assert c.tolist() == [-56, -56]  # int8 wrap-around, not 100 = clamp(50 + 50 / 0.5)


def test_typed_add_fails_closed_in_onnx_checker():
    with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError, ValueError)) as info:
        onnx.checker.check_model(_typed_add(), full_check=True)
    assert "unknown" in str(info.value) or "data type 1003" in str(info.value)


def test_fail_closed_marker_is_written():
    model = _typed_add()
    assert all(vi.type.tensor_type.elem_type == 1000 + TensorProto.INT8 for vi in model.graph.input)
    set_qtype(model, "a", None)  # back to plain storage integers
    assert model.graph.input[0].type.tensor_type.elem_type == TensorProto.INT8
    assert get_qtype(model, "a") is None


def test_untyped_models_pass_through_unchanged(tmp_path):
    for model in (add_model(), weights_model()):
        original = model.SerializeToString()
        src = tmp_path / "plain.onnx"
        src.write_bytes(original)
        save(load(src), tmp_path / "out.onnx")
        assert (tmp_path / "out.onnx").read_bytes() == original
        assert load(original).SerializeToString() == original


def test_typed_models_round_trip_through_our_load_save(example_model, tmp_path):
    save(example_model, tmp_path / "m.onnx")
    assert (tmp_path / "m.onnx").read_bytes() == example_model.SerializeToString()


def test_set_qtype_checks_shape_and_initializer_type():
    model = weights_model(16)
    with pytest.raises(QTypesError, match="needs 16 scales, found 2"):
        set_qtype(model, "w", QType("int8", [1.0, 2.0], axis=0))
    with pytest.raises(QTypesError, match="initializer holds INT8, but the type stores uint8"):
        set_qtype(model, "w", QType("uint8", 1.0))
    with pytest.raises(KeyError, match="no tensor named 'nope'"):
        set_qtype(model, "nope", QType("int8", 1.0))
    set_qtype(model, "w", QType("int8", [1.0] * 16, axis=0))
    assert model.graph.value_info[-1].name == "w"  # declared in value_info
    assert get_qtype(model, "w").axis == 0


# --- external data ------------------------------------------------------------------


def test_external_data_round_trip(tmp_path):
    model = weights_model(4096)
    set_qtype(model, "w", QType("int8", 0.5, 0))
    save(model, tmp_path / "m.onnx", external_data=True)
    assert (tmp_path / "m.onnx.data").stat().st_size >= 4096
    back = load(tmp_path / "m.onnx")
    w = next(t for t in back.graph.initializer if t.name == "w")
    np.testing.assert_array_equal(tensor_array(w), np.arange(4096) % 100)
    assert get_qtype(back, "w") == QType("int8", 0.5, 0)


def _external_model(tmp_path: pathlib.Path, location: str) -> pathlib.Path:
    model = weights_model(4096)
    save(model, tmp_path / "good.onnx", external_data=True)
    m = onnx.load(tmp_path / "good.onnx", load_external_data=False)
    w = next(t for t in m.graph.initializer if t.name == "w")
    for entry in w.external_data:
        if entry.key == "location":
            entry.value = location
    path = tmp_path / "model" / "bad.onnx"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(m.SerializeToString())
    return path


@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink"])
def test_external_data_outside_the_model_folder_is_refused(tmp_path, kind):
    secret = tmp_path / "secret.bin"
    secret.write_bytes(b"\x01" * 8192)
    if kind == "dotdot":
        location = "../secret.bin"
    elif kind == "absolute":
        location = str(secret)
    else:
        (tmp_path / "model").mkdir()
        os.symlink(secret, tmp_path / "model" / "link.bin")
        location = "link.bin"
    path = _external_model(tmp_path, location)
    with pytest.raises(ModelLoadError) as info:
        load(path)
    message = str(info.value)
    assert "'w'" in message and location in message
    assert {"dotdot": "'..'", "absolute": "absolute", "symlink": "outside the model's folder"}[kind] in message


def test_external_data_location_that_is_a_folder_is_a_load_error(tmp_path):
    path = _external_model(tmp_path, ".")
    with pytest.raises(ModelLoadError, match="is a directory"):
        load(path)


def test_external_data_missing_file_is_a_load_error(tmp_path):
    path = _external_model(tmp_path, "nothere.bin")
    with pytest.raises(ModelLoadError, match="no such file"):
        load(path)


def test_model_over_2gb_saves_and_loads(tmp_path):
    """A real model over 2 GiB (two 1.06 GiB initializers; protobuf caps each message
    at 2 GiB): save moves the data out on its own, load reads it back."""
    size = 2**30 + 2**26
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("Add", ["w0", "w1"], ["s"])],
        "big",
        [],
        [onnx.helper.make_tensor_value_info("s", TensorProto.INT8, [size])],
    )
    for i in range(2):
        data = np.zeros(size, dtype=np.int8)
        data[::1_000_003] = 7 + i
        graph.initializer.append(onnx.numpy_helper.from_array(data, f"w{i}"))
        del data
    model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 21)], ir_version=10)
    del graph
    set_qtype(model, "w0", QType("int8", 0.25, 0))
    save(model, tmp_path / "big.onnx")
    del model
    assert (tmp_path / "big.onnx").stat().st_size < 1 << 20
    assert (tmp_path / "big.onnx.data").stat().st_size >= 2 * size
    back = load(tmp_path / "big.onnx")
    raw = back.graph.initializer[1].raw_data
    assert len(raw) == size and raw[1_000_003] == 8 and raw[1] == 0
    assert get_qtype(back, "w0") == QType("int8", 0.25, 0)


def test_save_is_atomic_on_failure(tmp_path, monkeypatch):
    target = tmp_path / "m.onnx"
    target.write_bytes(b"old")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(QTypesError, match="disk full"):
        save(add_model(), target)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.onnx"]  # no temp file left


def test_set_qtypes_checks_everything_before_writing_anything():
    model = weights_model(16)
    before = model.SerializeToString()
    with pytest.raises(QTypesError, match="needs 16 scales"):
        set_qtypes(model, {"y": QType("int8", 0.5), "w": QType("int8", [1.0, 2.0], axis=0)})
    assert model.SerializeToString() == before


def test_set_qtypes_equals_one_set_qtype_per_tensor(example_model):
    names = ["x_q", "conv_q", "relu_q", "pool_q", "w", "b"]
    types = {n: get_qtype(example_model, n) for n in names}
    one_by_one, bulk = add_model(), add_model()
    for model in (one_by_one, bulk):
        model.CopyFrom(example_model)
        for n in names:
            set_qtype(model, n, None)
    for n in names:
        set_qtype(one_by_one, n, types[n])
    set_qtypes(bulk, types)
    assert bulk.SerializeToString() == one_by_one.SerializeToString()
    assert all(get_qtype(bulk, n) == types[n] for n in names)


def test_atomic_write_leaves_nothing_on_error(tmp_path):
    from onnx_qtypes.proto.files import atomic_write

    (tmp_path / "r.txt").write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(tmp_path / "r.txt", "w") as fh:
            fh.write("half")
            raise RuntimeError("writer failed")
    assert (tmp_path / "r.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_written_files_get_the_umask_mode_or_keep_their_own(tmp_path):
    from onnx_qtypes.proto.files import atomic_write

    old = os.umask(0o027)
    try:
        with atomic_write(tmp_path / "new.txt", "w") as fh:
            fh.write("x")
        assert (tmp_path / "new.txt").stat().st_mode & 0o777 == 0o640  # not mkstemp's 0600
        (tmp_path / "kept.txt").write_text("old")
        (tmp_path / "kept.txt").chmod(0o604)
        with atomic_write(tmp_path / "kept.txt", "w") as fh:
            fh.write("new")
        assert (tmp_path / "kept.txt").stat().st_mode & 0o777 == 0o604
    finally:
        os.umask(old)


def _model_with_function():
    """Main graph y = f(x) with x, y typed 0.5; function f's body has its own value_info named x at 0.125."""
    from onnx import helper

    body_x = helper.make_tensor_value_info("x", TensorProto.INT8, [2])
    func = helper.make_function("local", "f", ["a"], ["o"],
                                [helper.make_node("Identity", ["a"], ["x"]), helper.make_node("Identity", ["x"], ["o"])],
                                [helper.make_opsetid("", 21)])
    func.value_info.append(body_x)
    graph = helper.make_graph([helper.make_node("f", ["x"], ["y"], domain="local", name="call")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.INT8, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.INT8, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)],
                              ir_version=10, functions=[func])
    set_qtype(model, "x", QType("int8", 0.125), function="local:f")
    return model


def test_function_bodies_are_their_own_name_scope():
    model = _model_with_function()
    set_qtype(model, "x", QType("int8", 0.5))  # the graph's x only
    assert get_qtype(model, "x") == QType("int8", 0.5)
    assert get_qtype(model, "x", function="f") == QType("int8", 0.125)  # untouched
    assert quantized_tensors(model) == {"x": QType("int8", 0.5)}
    assert quantized_tensors(model, function="local:f") == {"x": QType("int8", 0.125)}
    set_qtype(model, "o", QType("int8", 0.125), function="f")  # a body tensor without a declaration gets one
    assert [vi.name for vi in model.functions[0].value_info] == ["x", "o"]
    with pytest.raises(UnknownTensorError, match="no function named 'g' .functions: local:f."):
        get_qtype(model, "x", function="g")
    with pytest.raises(UnknownTensorError, match="no tensor named 'o'"):
        get_qtype(model, "o")  # a body name is not a graph name


def test_get_qtype_refuses_a_schema_value_this_version_does_not_define():
    """proto2 keeps an unknown enum value aside and reads the default: schema 9 would read as asymmetric."""
    from onnx_qtypes import MalformedExtensionError

    model = add_model()
    view = pb.TensorTypeView()
    view.ParseFromString(model.graph.input[0].type.tensor_type.SerializeToString())
    view.quantization.MergeFromString(b"\x38\x09")  # field 7 (schema), varint 9
    model.graph.input[0].type.tensor_type.ParseFromString(view.SerializeToString())
    name = model.graph.input[0].name
    with pytest.raises(MalformedExtensionError, match=r"quantization.schema: value 9 is not defined"):
        get_qtype(model, name)


def test_get_statistics_knows_its_tensors_like_get_qtype():
    from onnx_qtypes import get_statistics

    model = add_model()
    with pytest.raises(UnknownTensorError, match="no tensor named 'nope'"):
        get_statistics(model, "nope")
    assert get_statistics(model, model.graph.input[0].name) is None  # exists, no statistics recorded
