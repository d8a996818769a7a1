"""Accept a model as a ModelProto, a path or bytes, without changing the caller's object, read the one shared
way (``onnx_qtypes.proto.reader``)."""

from __future__ import annotations

import os

from onnx import ModelProto

from onnx_qtypes.proto.graph_order import Order
from onnx_qtypes.proto.reader import ReadModel, read_model as read_model_once
from onnx_qtypes.proto.errors import QTypesError


def read_model(model: ReadModel | ModelProto | str | os.PathLike | bytes, who: str, *,
               external_data: bool | str = True) -> tuple[ModelProto, str]:
    """A private copy of ``model`` and the path it came from ("" for objects and bytes).

    The shared reader refuses (naming the field) a model with a string field that is not UTF-8: every name lift
    and lower read or write is a ``str``.
    ``external_data``: as ``proto.reader.read_model`` takes it ("lazy": the weights stay in their files).
    """
    source, where, _ = read_copy(model, who, external_data=external_data)
    return source, where


def read_copy(model: ReadModel | ModelProto | str | os.PathLike | bytes, who: str, *,
              external_data: bool | str = True) -> tuple[ModelProto, str, Order]:
    """``read_model``, and the orders the reader put the graphs in (``ReadModel.orders``: sorted -> file)."""
    if not isinstance(model, (ReadModel, ModelProto, str, os.PathLike, bytes, bytearray, memoryview)):
        raise QTypesError(f"{who}: expected an onnx.ModelProto, a path or bytes, got {type(model).__name__}")
    read = read_model_once(model, who, external_data=external_data)  # the one shared reader, as every command
    source, where = read.model, read.path
    if source is model or isinstance(model, ReadModel):  # the caller's object: lift and lower change a copy
        source = ModelProto()
        source.CopyFrom(read.model)
    return source, where, read.orders
