"""onnx-qtypes: quantized element types for ONNX.

The face of the package: it re-exports the public names of every wing.
"""

from onnx_qtypes.interop import lift, lower
from onnx_qtypes.diagnosis import Diagnosis, diagnose
from onnx_qtypes.proto import (
    MalformedExtensionError,
    ModelLoadError,
    QType,
    QTypeError,
    QTypesError,
    Schema,
    Statistics,
    TensorStatistics,
    UnknownTensorError,
    get_qtype,
    get_statistics,
    load,
    quantized_tensors,
    save,
    set_qtype,
    set_qtypes,
    set_statistics,
)

__version__ = "0.1.0"

__all__ = [
    "Diagnosis",
    "MalformedExtensionError",
    "ModelLoadError",
    "QType",
    "QTypeError",
    "QTypesError",
    "Schema",
    "Statistics",
    "TensorStatistics",
    "UnknownTensorError",
    "__version__",
    "diagnose",
    "get_qtype",
    "get_statistics",
    "lift",
    "load",
    "lower",
    "quantized_tensors",
    "save",
    "set_qtype",
    "set_qtypes",
    "set_statistics",
]
