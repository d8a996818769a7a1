"""How stock tools treat each way of putting a quantized type into a model.

Run: python proposal/experiments/fail_closed_encodings.py

One model, c = Add(a, b), with a = b = int8 [100, 100] meaning scale 0.5,
zero point 0 (real 50). Under the extension's semantics c is quantize(100) =
clamp(200) = 127; plain int8 arithmetic wraps to -56. Each encoding is given
to onnx.checker (full_check), to a stock onnx.load/onnx.save round trip and
to onnxruntime. "fails closed" means onnxruntime refuses the model instead of
computing -56. Output: a Markdown table. The first, smaller experiment; proposal/0001 quotes the
wider one, encodings_vs_tools.py (20 tools, 10 models).
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from onnx_qtypes import QType, set_qtype
from onnx_qtypes.proto.model import read_view, write_view

QT = QType("int8", 0.5, 0)
FEEDS = {"a": np.array([100, 100], np.int8), "b": np.array([100, 100], np.int8)}


def base(elem_type: int = TensorProto.INT8) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "add",
        [helper.make_tensor_value_info(n, elem_type, [2]) for n in "ab"],
        [helper.make_tensor_value_info("c", elem_type, [2])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)


def values(model: onnx.ModelProto):
    return list(model.graph.input) + list(model.graph.output)


def extension_fields_only() -> onnx.ModelProto:
    model = base()
    for vi in values(model):
        view = read_view(vi.type.tensor_type)
        view.quantization.CopyFrom(QT.to_proto())
        write_view(vi.type.tensor_type, view)  # elem_type stays INT8
    return model


def onnx_qtypes_encoding() -> onnx.ModelProto:
    model = base()
    for name in "abc":
        set_qtype(model, name, QT)  # elem_type 1000 + INT8 (the marker) + extension fields
    return model


def new_elem_type_value() -> onnx.ModelProto:
    return base(elem_type=200)  # a data type number no tool knows, e.g. "INT8Q"


def unknown_typeproto_arm() -> onnx.ModelProto:
    model = base()
    for vi in values(model):
        # onnx/onnx PR #8214 shape: TypeProto gets a new oneof arm; stock parsers see an unknown field.
        vi.type.Clear()
        vi.type.MergeFromString(b"\xa2\x01\x04\x08\x03\x10\x01")  # field 20, length 4, two varints
    return model


def quantization_annotation() -> onnx.ModelProto:
    model = base()
    for name in "abc":
        ann = model.graph.quantization_annotation.add(tensor_name=name)
        ann.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="s")
        ann.quant_parameter_tensor_names.add(key="ZERO_POINT_TENSOR", value="z")
    return model


def value_info_metadata() -> onnx.ModelProto:
    model = base()
    for vi in values(model):
        vi.metadata_props.add(key="onnx_qtypes.scale", value="0.5")
        vi.metadata_props.add(key="onnx_qtypes.zero_point", value="0")
    return model


def ir_version_gate() -> onnx.ModelProto:
    model = extension_fields_only()
    model.ir_version = 15  # one above what onnx 1.23 knows
    return model


def opset_domain_marker() -> onnx.ModelProto:
    model = extension_fields_only()
    model.opset_import.add(domain="ai.onnx.qtypes", version=1)
    return model


ENCODINGS = {
    "quantization only in new TypeProto.Tensor fields, elem_type INT8": extension_fields_only,
    "**onnx-qtypes: new fields + elem_type marker 1000 + storage type**": onnx_qtypes_encoding,
    "new TensorProto.DataType values (e.g. INT8Q = 200)": new_elem_type_value,
    "new TypeProto oneof arm (onnx/onnx PR #8214)": unknown_typeproto_arm,
    "GraphProto.quantization_annotation": quantization_annotation,
    "ValueInfoProto.metadata_props": value_info_metadata,
    "new fields + model ir_version 15": ir_version_gate,
    "new fields + opset_import 'ai.onnx.qtypes'": opset_domain_marker,
}


def checker_verdict(model: onnx.ModelProto) -> str:
    try:
        onnx.checker.check_model(model, full_check=True)
        return "accepts"
    except Exception as exc:  # noqa: BLE001 - we report whatever the tool says
        return "rejects (" + str(exc).split("\n")[0][:60] + ")"


def round_trip(model: onnx.ModelProto) -> str:
    data = model.SerializeToString()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "m.onnx"
        path.write_bytes(data)
        onnx.save(onnx.load(path), path)
        return "byte-exact" if path.read_bytes() == data else "changed"


def ort_verdict(model: onnx.ModelProto) -> str:
    try:
        session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        (c,) = session.run(None, FEEDS)
        return f"**runs, returns {c.tolist()}** (fails open)"
    except Exception as exc:  # noqa: BLE001
        return "refuses (" + str(exc).split(":")[-1].strip()[:60] + ")"


def initializer_cast(as_input: bool) -> onnx.ModelProto:
    """y = Cast<float>(w): w an int8 initializer typed 0.5/0; real answer 50, plain answer 100."""
    w = onnx.numpy_helper.from_array(np.array([100, 100], np.int8), "w")
    inputs = [helper.make_tensor_value_info("w", TensorProto.INT8, [2])] if as_input else []
    graph = helper.make_graph(
        [helper.make_node("Cast", ["w"], ["y"], to=TensorProto.FLOAT)],
        "cast",
        inputs,
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)], ir_version=10)
    set_qtype(model, "w", QT)
    return model


DECLARATIONS = {
    "graph input (Add above)": onnx_qtypes_encoding,
    "initializer declared in graph.value_info, read by Cast to float": lambda: initializer_cast(False),
    "initializer also listed in graph.input, read by Cast to float": lambda: initializer_cast(True),
}


def main() -> int:
    warnings.simplefilter("ignore")
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}\n")
    print("| encoding | onnx.checker (full_check) | stock onnx.load + onnx.save | onnxruntime |")
    print("|---|---|---|---|")
    for label, build in ENCODINGS.items():
        model = build()
        print(f"| {label} | {checker_verdict(model)} | {round_trip(model)} | {ort_verdict(model)} |")
    print("\nWhere the quantized value is declared (onnx-qtypes encoding):\n")
    print("| declaration | onnxruntime |")
    print("|---|---|")
    for label, build in DECLARATIONS.items():
        model = build()
        feeds = FEEDS if "Add" in label else {}
        try:
            session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
            out = session.run(None, feeds)[0]
            print(f"| {label} | **runs, returns {out.tolist()}** (fails open) |")
        except Exception as exc:  # noqa: BLE001
            print(f"| {label} | refuses ({str(exc).split(':')[-1].strip()[:60]}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
