"""Checker cases of the version-3 rules (the LLM weight formats, QT140-QT142), in checker_models' table form: a
GGUF-shaped weight initializer read by Identity into a float output, its type spoiled one way per case."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import onnx
from onnx import TensorProto

from checker_models import Case, Graph, _fire, _miss
from onnx_qtypes.interop.gguf_formats import IQ4_NL_LEVELS
from onnx_qtypes.proto import onnx_qtypes_pb2 as pb

W = "/graph/value_info/0/type/tensor_type/quantization"
X = "/graph/input/0/type/tensor_type/quantization"


def _v3(**fields: object) -> pb.QuantizedType:
    """uint4 codes of a [2, 64] weight in blocks of 32 (4 scales), version 3, with ``fields``."""
    msg = pb.QuantizedType(storage_type=TensorProto.UINT4, axis=1, block_size=32, version=3)
    msg.scale.extend([0.5, 0.25, 0.125, 1.0])
    for name, value in fields.items():
        target = getattr(msg, name)
        if isinstance(value, (list, tuple)):
            target.extend(value)
        else:
            setattr(msg, name, value)
    return msg


def _weight(msg: pb.QuantizedType) -> onnx.ModelProto:
    codes = (np.arange(128).reshape(2, 64) % 16).astype(ml_dtypes.uint4)
    return Graph().init("w", codes, msg).node("Identity", ["w"], ["y"], name="read").output("y", (2, 64)).build()


def _input(msg: pb.QuantizedType) -> onnx.ModelProto:
    return (Graph().input("x", (2, 64), msg).node("Identity", ["x"], ["y"], name="read").output("y", (2, 64))
            .build())


LEVELS = [float(v) for v in IQ4_NL_LEVELS]


def _listed_scales(scales: list[float]) -> pb.QuantizedType:
    msg = _v3(offset=[0.0, 1.0, 0.0, 0.0])
    msg.scale[:] = scales
    return msg


def _referenced_zero_scale() -> onnx.ModelProto:
    """GGUF's Q4_1 shape: float16 d per block in an initializer (one of them 0), offsets listed."""
    msg = pb.QuantizedType(storage_type=TensorProto.UINT4, axis=1, block_size=32, version=3, scale_tensor="w_d")
    msg.offset.extend([0.0, 1.0, 0.0, 0.0])
    codes = (np.arange(128).reshape(2, 64) % 16).astype(ml_dtypes.uint4)
    d = np.array([[0.5, 0.0], [0.125, 1.0]], np.float16)
    return (Graph().init("w", codes, msg).init("w_d", d).node("Identity", ["w"], ["y"], name="read")
            .output("y", (2, 64)).build())


def cases() -> list[Case]:
    return [
        # QT140
        _fire("QT140", "three-offsets-for-four-scales", lambda: _weight(_v3(offset=[1.0, 2.0, 3.0])), f"{W}/offset",
              "w", message="4 scales need 4 offsets"),
        _fire("QT140", "nan-offset", lambda: _weight(_v3(offset=[1.0, 2.0, float("nan"), 0.5])), f"{W}/offset/2",
              "w", message="must be finite"),
        _miss("QT140", "one-offset-per-block", lambda: _weight(_v3(offset=[1.0, -2.0, 0.5, 0.25]))),
        # zeros count too: a list of 0s means no offset only when it has one per scale
        _fire("QT140", "three-zero-offsets-for-four-scales", lambda: _weight(_v3(offset=[0.0, 0.0, 0.0])),
              f"{W}/offset", "w", message="4 scales need 4 offsets"),
        _miss("QT140", "four-zero-offsets", lambda: _weight(_v3(offset=[0.0, 0.0, 0.0, 0.0]))),
        # QT141
        _fire("QT141", "fifteen-entries", lambda: _weight(_v3(codebook=LEVELS[:15])), f"{W}/codebook", "w",
              message="16 entries"),
        _fire("QT141", "zero-point-8", lambda: _weight(_v3(codebook=LEVELS, zero_point=[8, 8, 8, 8])),
              f"{W}/zero_point", "w", message="zero point 8"),
        _miss("QT141", "iq4-nl-levels", lambda: _weight(_v3(codebook=LEVELS))),
        # QT142
        _fire("QT142", "codebook-graph-input", lambda: _input(_v3(codebook=LEVELS)), f"{X}/version", "x",
              message="declares constants only"),
        _fire("QT142", "offset-graph-input", lambda: _input(_v3(offset=[1.0, 2.0, 3.0, 4.0])), f"{X}/version", "x"),
        _miss("QT142", "codebook-weight", lambda: _weight(_v3(codebook=LEVELS))),
        # declaring version 3 is enough, with no field of that version used (validity.md#qt142)
        _fire("QT142", "version-3-alone-graph-input", lambda: _input(_v3()), f"{X}/version", "x"),
        # QT101 in version 3: a scale read from a referenced initializer may be 0 (a GGUF block of zeros), a listed
        # one may not
        _fire("QT101", "listed-zero-scale-version-3", lambda: _weight(_listed_scales([0.5, 0.0, 0.125, 1.0])),
              f"{W}/scale/1", "w", message="must be finite and non-zero"),
        _miss("QT101", "referenced-zero-scale-version-3", _referenced_zero_scale),
        _miss("QT142", "version-2-graph-input", lambda: _input(pb.QuantizedType(
            storage_type=TensorProto.UINT4, scale=[0.5], version=2)), quiet=False),
    ]
