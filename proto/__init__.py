"""The ground floor: the extension's wire format, QType and the typed-model view.

Imports nothing else of onnx_qtypes; every wing builds on it.
"""

from onnx_qtypes.proto.errors import (
    MalformedExtensionError,
    ModelLoadError,
    QTypeError,
    QTypesError,
    UnknownTensorError,
)
from onnx_qtypes.proto.model import (
    QUANTIZATION_FIELD,
    STATISTICS_FIELD,
    Declaration,
    get_qtype,
    get_statistics,
    iter_declarations,
    iter_graphs,
    load,
    quantized_tensors,
    read_qtype,
    save,
    set_qtype,
    set_qtypes,
    set_statistics,
    static_shape,
    write_qtype,
)
from onnx_qtypes.proto.qtype import QType
from onnx_qtypes.proto.schema import Schema
from onnx_qtypes.proto.statistics import Statistics, TensorStatistics
from onnx_qtypes.proto.storage_types import (
    EXPRESSED_TYPES,
    STORAGE_TYPES,
    ExpressedType,
    StorageType,
    expressed_type,
    storage_type,
)

__all__ = [
    "EXPRESSED_TYPES",
    "QUANTIZATION_FIELD",
    "STATISTICS_FIELD",
    "STORAGE_TYPES",
    "Declaration",
    "ExpressedType",
    "MalformedExtensionError",
    "ModelLoadError",
    "QType",
    "QTypeError",
    "QTypesError",
    "Schema",
    "Statistics",
    "StorageType",
    "TensorStatistics",
    "UnknownTensorError",
    "expressed_type",
    "get_qtype",
    "get_statistics",
    "iter_declarations",
    "iter_graphs",
    "load",
    "quantized_tensors",
    "read_qtype",
    "save",
    "set_qtype",
    "set_qtypes",
    "set_statistics",
    "static_shape",
    "storage_type",
    "write_qtype",
]
