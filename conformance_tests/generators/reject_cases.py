"""Write the must-reject conformance cases: typed models a reader MUST refuse (run:
python conformance_tests/generators/reject_cases.py [OUT_DIR]).

Each case is one valid single-node model spoiled in one place, the way a reader meets it: an extension version
it does not know, a type that breaks a QT1xx rule, a marker that disagrees with its declaration, parameters by
reference it cannot read, a boundary node with other parameters than its type's (QT307). A runtime passes a
case only by refusing it: raising from ``prepare`` or ``run`` (conformance_tests/BACKENDS.md); returning
outputs fails it. Each folder conformance_tests/cases/reject/<id>/ holds case.json (kind "reject",
case.schema.json: the rule and the reason a reader must refuse), model.onnx and test_data_set_0/input_<i>.pb (the
feeds a runtime that loads the model anyway runs it on). tests/test_conformance_reject_cases.py regenerates them
and fails when the committed files drift.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import sys
from collections.abc import Callable

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
CASES = ROOT / "conformance_tests" / "cases" / "reject"
IR_VERSION, OPSET = 10, 21  # what onnxruntime accepts (the execution cases pin the same)
SHAPE = (2, 4)


@dataclasses.dataclass
class Reject:
    id: str
    rule: str  # the checker rule that names what is wrong (proposal/spec/validity.md)
    reason: str  # why a reader must refuse, one sentence
    build: Callable[[], tuple]  # -> (model, feeds)


def _imports():
    import onnx  # noqa: PLC0415
    from onnx import TensorProto, helper, numpy_helper  # noqa: PLC0415

    from onnx_qtypes.proto import onnx_qtypes_pb2 as pb  # noqa: PLC0415
    from onnx_qtypes.proto.encoding import marker  # noqa: PLC0415
    from onnx_qtypes.proto.model import read_view, write_view  # noqa: PLC0415

    return onnx, TensorProto, helper, numpy_helper, pb, marker, read_view, write_view


def _message(storage: int | None = None, scale=(0.5,), zero_point=(0,), **fields):
    """A raw QuantizedType: any values, valid or not (QType would refuse the invalid ones)."""
    _, TensorProto, _, _, pb, _, _, _ = _imports()
    msg = pb.QuantizedType(storage_type=TensorProto.INT8 if storage is None else storage)
    msg.scale.extend(float(np.float32(s)) for s in scale)
    msg.zero_point.extend(zero_point)
    extra = fields.pop("extra", b"")
    for name, value in fields.items():
        setattr(msg, name, value)
    if extra:
        msg.MergeFromString(extra)  # wire bytes of a field or value this version does not define
    return msg


def _declare(vi, msg, elem_type: int | None = None) -> None:
    _, _, _, _, _, marker, read_view, write_view = _imports()
    view = read_view(vi.type.tensor_type)
    view.quantization.CopyFrom(msg)
    view.elem_type = marker(msg.storage_type) if elem_type is None else elem_type
    write_view(vi.type.tensor_type, view)


def _feed(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, SHAPE).astype(np.int8)


def _relu(x_msg=None, y_msg=None, x_elem: int | None = None):
    """y = Relu(x), both int8 with scale 0.5 and zero point 0 unless given: the valid model each case spoils."""
    onnx, TensorProto, helper, _, _, _, _, _ = _imports()
    x = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, SHAPE)
    y = helper.make_tensor_value_info("y", TensorProto.UNDEFINED, SHAPE)
    _declare(x, x_msg if x_msg is not None else _message(), x_elem)
    _declare(y, y_msg if y_msg is not None else _message())
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "reject", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return model, {"x": _feed()}


def _referenced(change: str):
    """y = Add(x, w), w a constant int8 weight whose per-axis scales live in initializer ``w_scale``; ``change``
    makes the reference unreadable."""
    onnx, TensorProto, helper, numpy_helper, _, marker, _, _ = _imports()
    from onnx_qtypes.proto.encoding import mark_tensor  # noqa: PLC0415

    model, feeds = _relu()
    graph = model.graph
    graph.node[0].CopyFrom(helper.make_node("Add", ["x", "w"], ["y"], name="add"))
    w = numpy_helper.from_array(np.array([[1, -2, 3, -4], [5, -6, 7, -8]], np.int8), "w")
    mark_tensor(w, TensorProto.INT8)
    graph.initializer.append(w)
    scales = np.array([0.5, 0.25, 0.125, 0.5], np.float32)
    if change == "float64":
        scales = scales.astype(np.float64)
    if change != "missing":
        graph.initializer.append(numpy_helper.from_array(scales, "w_scale"))
    if change == "dims":
        graph.initializer[-1].dims[:] = [2, 2]
    vi = helper.make_tensor_value_info("w", TensorProto.UNDEFINED, SHAPE)
    msg = _message(scale=(), zero_point=(), axis=1, scale_tensor="w_scale", version=2)
    if change == "no-version":  # scale_tensor is a field of version 2; the type declares none (version 1)
        msg.ClearField("version")
    _declare(vi, msg)
    graph.value_info.append(vi)
    return model, feeds


def _llm_weight(change: str):
    """y = Add(x, w), w a constant uint4 weight in IQ4_NL's form (codebook, one float16 scale per block of 2:
    version 3, proposal/spec/llm_formats.md) spoiled by ``change``."""
    onnx, TensorProto, helper, numpy_helper, pb, marker, _, _ = _imports()
    from onnx_qtypes.interop.gguf_formats import IQ4_NL_LEVELS  # noqa: PLC0415
    from onnx_qtypes.proto.encoding import mark_tensor  # noqa: PLC0415

    model, feeds = _relu()
    graph = model.graph
    graph.node[0].CopyFrom(helper.make_node("Add", ["x", "w"], ["y"], name="add"))
    w = helper.make_tensor("w", TensorProto.UINT4, list(SHAPE), vals=[0, 3, 7, 15, 8, 1, 2, 9])
    mark_tensor(w, TensorProto.UINT4)
    graph.initializer.append(w)
    graph.initializer.append(numpy_helper.from_array(np.full((2, 2), 0.5, np.float16), "w_scale"))
    msg = pb.QuantizedType(storage_type=TensorProto.UINT4, axis=1, block_size=2, scale_tensor="w_scale", version=3)
    msg.codebook.extend(float(v) for v in IQ4_NL_LEVELS[: 15 if change == "codebook" else 16])
    if change == "version":  # an offset (a version-3 field) in a type that declares version 2
        msg.ClearField("codebook")
        msg.offset.extend([1.0, 2.0, 3.0, 4.0])
        msg.version = 2
        graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.full((2, 2), 0.5, np.float32), "w_scale"))
    if change == "offsets":
        msg.offset.extend([1.0, 2.0, 3.0])
    if change == "listed-zero-scale":  # the block scales listed, one of them 0: only a referenced scale may be 0
        msg.ClearField("scale_tensor")
        msg.scale.extend([0.5, 0.0, 0.5, 0.5])
        del graph.initializer[-1]
    if change == "nested":  # the scales a quantized parameter tensor whose own scales are quantized too
        graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.full((2, 2), 3, np.uint8), "w_scale"))
        mark_tensor(graph.initializer[-1], TensorProto.UINT8)
        graph.initializer.append(numpy_helper.from_array(np.full((2, 1), 7, np.uint8), "w_scale_scale"))
        mark_tensor(graph.initializer[-1], TensorProto.UINT8)
        graph.initializer.append(numpy_helper.from_array(np.full((2, 1), 0.5, np.float16), "w_scale_scale_scale"))
        for name, dims, scale_tensor, block in (("w_scale", [2, 2], "w_scale_scale", 2),
                                                ("w_scale_scale", [2, 1], "w_scale_scale_scale", 1)):
            inner = pb.QuantizedType(storage_type=TensorProto.UINT8, axis=1, block_size=block,
                                     scale_tensor=scale_tensor, version=3)
            vi = helper.make_tensor_value_info(name, TensorProto.UNDEFINED, dims)
            _declare(vi, inner)
            graph.value_info.append(vi)
    vi = helper.make_tensor_value_info("w", TensorProto.UNDEFINED, SHAPE)
    _declare(vi, msg)
    graph.value_info.append(vi)
    if change == "input":  # the same type on x, a graph input: a value nothing defines quantizing into
        listed = pb.QuantizedType()
        listed.CopyFrom(msg)
        listed.ClearField("scale_tensor")
        listed.storage_type = TensorProto.INT4  # int4 codes (fed as int8), the codebook indexed from -8
        listed.scale.extend([0.5] * 4)  # its own parameters: only QT142 is broken
        _declare(model.graph.input[0], listed)
        feeds = {"x": np.asarray((feeds["x"] & 15) - 8, np.int8)}
    return model, feeds


def _boundary():
    """y = DequantizeLinear(x, 0.25, 0) while x's type says scale 0.5 (QT307)."""
    onnx, TensorProto, helper, numpy_helper, _, marker, _, _ = _imports()
    x = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, SHAPE)
    _declare(x, _message())
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)
    zp = numpy_helper.from_array(np.array(0, np.int8), "x_zero_point")
    zp.data_type = marker(TensorProto.INT8)  # the boundary's zero point carries the marker too (types.md#marker)
    graph = helper.make_graph(
        [helper.make_node("DequantizeLinear", ["x", "x_scale", "x_zero_point"], ["y"], name="dequantize")],
        "reject", [x], [y], [numpy_helper.from_array(np.array(0.25, np.float32), "x_scale"), zp])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=IR_VERSION)
    return model, {"x": _feed()}


def _disagreeing_declarations():
    """x is declared twice: as a graph input with scale 0.5 and in value_info with scale 0.25 (QT301)."""
    model, feeds = _relu()
    onnx, TensorProto, helper, *_ = _imports()
    vi = helper.make_tensor_value_info("x", TensorProto.UNDEFINED, SHAPE)
    _declare(vi, _message(scale=(0.25,)))
    model.graph.value_info.append(vi)
    return model, feeds


def cases() -> list[Reject]:
    _, TensorProto, _, _, pb, marker, _, _ = _imports()
    version_4 = b"\x60\x04"  # field 12 (version), varint 4
    schema_9 = b"\x38\x09"  # field 7 (schema), varint 9
    field_30 = b"\xf0\x01\x01"  # field 30, varint 1
    return [
        Reject("reject-unknown-version", "QT115",
               "the type says extension version 4, which this version of the extension does not define: a reader "
               "cannot know what its fields mean", lambda: _relu(_message(extra=version_4))),
        Reject("reject-unknown-schema-value", "QT115",
               "schema holds 9, no defined value: protobuf reads it as the default (asymmetric), so a reader that "
               "does not check would silently choose a meaning", lambda: _relu(_message(extra=schema_9))),
        Reject("reject-unknown-field", "QT115",
               "the type carries field 30, which this version does not define: it may change what the type means",
               lambda: _relu(_message(extra=field_30))),
        Reject("reject-zero-scale", "QT101", "a scale of 0 maps every stored value to 0 and cannot be inverted",
               lambda: _relu(_message(scale=(0.0,)))),
        Reject("reject-nan-scale", "QT101", "a NaN scale gives every real as NaN",
               lambda: _relu(_message(scale=(float("nan"),)))),
        Reject("reject-zero-point-out-of-range", "QT103",
               "zero point 200 lies outside int8's storage range [-128, 127]: real 0 has no stored value",
               lambda: _relu(_message(zero_point=(200,)))),
        Reject("reject-storage-range-empty", "QT105", "storage_min 10 above storage_max -10: no value is storable",
               lambda: _relu(_message(storage_min=10, storage_max=-10))),
        Reject("reject-expressed-not-float", "QT106", "the expressed type is int32: reals need a float type",
               lambda: _relu(_message(expressed_type=TensorProto.INT32))),
        Reject("reject-parameter-count-mismatch", "QT107",
               "per-axis along axis 1 (4 channels) with 3 scales: channel 3 has no parameters",
               lambda: _relu(_message(scale=(0.5, 0.25, 0.125), zero_point=(0, 0, 0), axis=1))),
        Reject("reject-axis-out-of-range", "QT108", "axis 2 is not a dimension of a rank-2 tensor",
               lambda: _relu(_message(scale=(0.5, 0.25), zero_point=(0, 0), axis=2))),
        Reject("reject-block-size-invalid", "QT110", "block_size 0 splits nothing into blocks",
               lambda: _relu(_message(scale=(0.5,) * 2, zero_point=(0,) * 2, axis=1, block_size=0))),
        Reject("reject-symmetric-zero-point", "QT111",
               "schema symmetric with zero point 3: the schema requires 0, and a reader cannot tell which is meant",
               lambda: _relu(_message(zero_point=(3,), schema=pb.SYMMETRIC))),
        Reject("reject-marker-disagrees", "QT119",
               "elem_type is uint8's marker (1002) while the type stores int8: the declaration and the marker name "
               "two storage types", lambda: _relu(x_elem=marker(TensorProto.UINT8))),
        Reject("reject-reference-unreadable", "QT117",
               "the weight's scales are named by reference (scale_tensor 'w_scale') but no initializer holds them",
               lambda: _referenced("missing")),
        Reject("reject-reference-wrong-type", "QT117",
               "the referenced scales are float64 while the expressed type is float32",
               lambda: _referenced("float64")),
        Reject("reject-reference-wrong-shape", "QT117",
               "the referenced per-axis scales have dims [2, 2], not [4]", lambda: _referenced("dims")),
        Reject("reject-declarations-disagree", "QT301",
               "x is declared with scale 0.5 and with scale 0.25: the result would depend on which is read",
               _disagreeing_declarations),
        Reject("reject-v3-field-in-version-2", "QT115",
               "the type has offsets, a field of extension version 3, but declares version 2, which does not define "
               "them: a reader of version 2 would not know them, so one of version 3 must not guess either",
               lambda: _llm_weight("version")),
        Reject("reject-v2-field-without-version", "QT115",
               "the weight's scales are named by scale_tensor, a field of extension version 2, in a type that "
               "declares no version (version 1), which does not define it", lambda: _referenced("no-version")),
        Reject("reject-listed-zero-scale-version-3", "QT101",
               "a version-3 type lists a scale of 0: only a scale read from a referenced initializer may be 0 (a GGUF "
               "block of zeros), a listed one never", lambda: _llm_weight("listed-zero-scale")),
        Reject("reject-offset-count-mismatch", "QT140",
               "4 block scales and 3 real-domain offsets: the last block has no offset", lambda: _llm_weight("offsets")),
        Reject("reject-codebook-wrong-length", "QT141",
               "a uint4 codebook of 15 levels: code 15 stands for nothing", lambda: _llm_weight("codebook")),
        Reject("reject-nested-parameter-tensor", "QT117",
               "the weight's scales are a quantized tensor whose own scales are quantized too: version 3 allows one "
               "level", lambda: _llm_weight("nested")),
        Reject("reject-v3-type-on-graph-input", "QT142",
               "a graph input has a codebook type: version 3 declares constants only, and nothing defines "
               "quantizing into a codebook", lambda: _llm_weight("input")),
        Reject("reject-v3-version-alone-on-graph-input", "QT142",
               "a graph input's type declares version 3 but uses no field of it (a plain int8 scale and zero point): "
               "declaring version 3 is enough, since that version defines constants only",
               lambda: _relu(_message(version=3))),
        Reject("reject-operand-parameters-differ", "QT307",
               "DequantizeLinear reads x with scale 0.25 while x's type says 0.5: a reader cannot honour both",
               _boundary),
    ]


def case_files(reject: Reject) -> dict[str, bytes]:
    """File name (relative to the case folder) -> bytes."""
    from onnx import numpy_helper  # noqa: PLC0415

    from onnx_qtypes.checker import get_rule  # noqa: PLC0415

    model, feeds = reject.build()
    rule = get_rule(reject.rule)
    inputs = [vi.name for vi in model.graph.input]
    doc = {
        "id": reject.id, "kind": "reject", "rule": reject.rule, "reason": reject.reason,
        "description": f"a reader must refuse this model: {reject.rule} {rule.name} ({rule.summary.rstrip('.')})",
        "spec": rule.spec, "model": "model.onnx", "inputs": inputs,
        "tags": {"rule": reject.rule, "kind": "reject", "storage": "int8", "expressed": "float32"},
    }
    files = {"case.json": (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode(),
             "model.onnx": model.SerializeToString()}
    for k, name in enumerate(inputs):
        files[f"test_data_set_0/input_{k}.pb"] = numpy_helper.from_array(feeds[name], name).SerializeToString()
    return files


def write(folder: pathlib.Path = CASES) -> int:
    """Replace ``folder`` with every case; returns how many were written."""
    found = cases()
    ids = [c.id for c in found]
    if len(set(ids)) != len(ids) or not all(i.startswith("reject-") for i in ids):
        raise ValueError("reject case ids must be unique and start with 'reject-'")
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    try:
        from execution_gen.common import replacing  # noqa: PLC0415 (beside this file)
    finally:
        sys.path.pop(0)
    with replacing(folder) as new:
        for reject in found:
            for name, data in case_files(reject).items():
                path = new / reject.id / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    return len(found)


if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    from execution_gen.common import output_folder  # noqa: PLC0415 (beside this file)

    out = output_folder(__doc__, CASES, "reject")
    print(f"{write(out)} reject cases in {out}")
