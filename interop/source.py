"""Accept a model as a ModelProto, a path or bytes, without changing the caller's object."""

from __future__ import annotations

import os

from onnx import ModelProto

from onnx_qtypes.proto import load
from onnx_qtypes.proto.errors import QTypesError


def read_model(model: ModelProto | str | os.PathLike | bytes, who: str) -> tuple[ModelProto, str]:
    """A private copy of ``model`` and the path it came from ("" for objects and bytes)."""
    if isinstance(model, ModelProto):
        copy = ModelProto()
        copy.CopyFrom(model)
        return copy, ""
    if isinstance(model, (str, os.PathLike)):
        return load(model), os.fspath(model)
    if isinstance(model, (bytes, bytearray, memoryview)):
        return load(bytes(model)), ""
    raise QTypesError(f"{who}: expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
