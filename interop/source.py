"""Accept a model as a ModelProto, a path or bytes, without changing the caller's object."""

from __future__ import annotations

import os

from onnx import ModelProto

from onnx_qtypes.proto import load
from onnx_qtypes.proto.errors import QTypesError
from onnx_qtypes.proto.names import first_non_utf8_string, not_utf8_error


def read_model(model: ModelProto | str | os.PathLike | bytes, who: str) -> tuple[ModelProto, str]:
    """A private copy of ``model`` and the path it came from ("" for objects and bytes).

    Refuses (QTypesError naming the field) a model with a string field that
    is not UTF-8: every name lift and lower read or write is a ``str``.
    """
    if isinstance(model, ModelProto):
        copy = ModelProto()
        copy.CopyFrom(model)
        source, where = copy, ""
    elif isinstance(model, (str, os.PathLike)):
        source, where = load(model), os.fspath(model)
    elif isinstance(model, (bytes, bytearray, memoryview)):
        source, where = load(bytes(model)), ""
    else:
        raise QTypesError(f"{who}: expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
    found = first_non_utf8_string(source)
    if found is not None:
        raise not_utf8_error(where or who, found)
    return source, where
