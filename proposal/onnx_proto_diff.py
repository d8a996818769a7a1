"""Write proposal/onnx.proto.diff: the exact change this proposal makes to the installed onnx's onnx.proto.

Run: python proposal/onnx_proto_diff.py [OUT]   (tests/test_onnx_proto_diff.py checks it is current, applies it
alone with `patch` and compiles the result with protoc.)

The change: a new file onnx/onnx_qtypes.proto (proto/onnx_qtypes.proto, as a new-file hunk, so that the diff
alone is the whole change), onnx.proto imports it, TypeProto.Tensor gains the fields `quantization` (1000) and
`statistics` (1001), and the comments on TypeProto.Tensor.elem_type and TensorProto.data_type admit the
fail-closed markers 1000 + storage type that a quantized tensor declares and its stored values carry
(proposal/spec/types.md#marker).
"""

from __future__ import annotations

import difflib
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "proposal" / "onnx.proto.diff"
WIRE_FORMAT = ROOT / "proto" / "onnx_qtypes.proto"
NEW_FILE = "onnx/onnx_qtypes.proto"

PACKAGE = "package onnx;\n"
IMPORT = f'import "{NEW_FILE}";\n'  # as onnx-operators.proto imports "onnx/onnx-ml.proto"
ELEM_TYPE_COMMENT = (
    "    // This field MUST NOT have the value of UNDEFINED\n"
    "    // This field MUST have a valid TensorProto.DataType value\n"
)
ELEM_TYPE_COMMENT_NEW = (
    "    // This field MUST NOT have the value of UNDEFINED\n"
    "    // This field MUST have a valid TensorProto.DataType value, or, when `quantization` is\n"
    "    // present, 1000 + quantization.storage_type (a fail-closed marker: tools that do not\n"
    "    // know quantized types refuse the tensor instead of reading plain integers)\n"
)
DATA_TYPE_COMMENT = (
    "  // The data type of the tensor.\n"
    "  // This field MUST have a valid TensorProto.DataType value\n"
    "  optional int32 data_type = 2;\n"
)
DATA_TYPE_COMMENT_NEW = (
    "  // The data type of the tensor.\n"
    "  // This field MUST have a valid TensorProto.DataType value, or, for a tensor holding the\n"
    "  // stored values of a quantized value (an initializer, a Constant's value, a boundary zero\n"
    "  // point), that value's marker 1000 + storage type; the values are then in raw_data,\n"
    "  // laid out as the storage type lays them out\n"
    "  optional int32 data_type = 2;\n"
)
SHAPE_FIELD = "    optional TensorShapeProto shape = 2;\n  }\n"
NEW_FIELDS = (
    "    optional TensorShapeProto shape = 2;\n"
    "    // What the stored values mean: storage and expressed types, scale, zero point, axis,\n"
    "    // block size, schema, storage range (onnx_qtypes.proto). Absent: a plain tensor.\n"
    "    optional onnx_qtypes.QuantizedType quantization = 1000;\n"
    "    // Calibration statistics of the tensor's real values; metadata, never part of the type.\n"
    "    optional onnx_qtypes.TensorStatistics statistics = 1001;\n"
    "  }\n"
)


def installed_onnx_proto() -> tuple[pathlib.Path, str]:
    import onnx  # noqa: PLC0415

    path = pathlib.Path(onnx.__file__).resolve().parent / "onnx.proto"
    return path, onnx.__version__


def changed(text: str) -> str:
    """onnx.proto with the proposal's change applied (by text, so that the diff is exact and small)."""
    tensor = text.index("  message Tensor {\n")
    for old, new, start in ((PACKAGE, PACKAGE + "\n" + IMPORT, 0), (DATA_TYPE_COMMENT, DATA_TYPE_COMMENT_NEW, 0),
                            (ELEM_TYPE_COMMENT, ELEM_TYPE_COMMENT_NEW, tensor),
                            (SHAPE_FIELD, NEW_FIELDS, tensor)):
        at = text.find(old, start)
        if at < 0:
            raise ValueError(f"onnx.proto has changed: {old.strip()!r} not found where expected")
        text = text[:at] + new + text[at + len(old):]
    return text


def diff() -> str:
    path, version = installed_onnx_proto()
    before = path.read_text(encoding="utf-8")
    lines = difflib.unified_diff(before.splitlines(keepends=True), changed(before).splitlines(keepends=True),
                                 fromfile="a/onnx/onnx.proto", tofile="b/onnx/onnx.proto", n=3)
    wire_format = WIRE_FORMAT.read_text(encoding="utf-8")
    if not wire_format.endswith("\n"):
        raise ValueError(f"{WIRE_FORMAT} does not end with a newline; the new-file hunk would need a marker")
    # Against /dev/null, so that patch creates the file: the diff alone is the whole change.
    new_file = difflib.unified_diff([], wire_format.splitlines(keepends=True),
                                    fromfile="/dev/null", tofile=f"b/{NEW_FILE}", n=3)
    header = (f"# The change proposal/0001 makes to onnx {version} (the installed onnx's onnx/onnx.proto): the\n"
              f"# import and fields in onnx.proto, and the new file {NEW_FILE} (proto/onnx_qtypes.proto).\n"
              "# Written by python proposal/onnx_proto_diff.py; apply with: patch -p1 < proposal/onnx.proto.diff\n"
              "# (from the root of an onnx checkout).\n")
    return header + "".join(lines) + "".join(new_file)


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else OUT
    out.write_text(diff(), encoding="utf-8")
    print(f"{out} written")
