"""onnx-qtypes: quantized element types for ONNX.

The face of the package: it re-exports the public names of every wing.
"""

from onnx_qtypes import _source_tree

_source_tree.install(__path__)  # from a source checkout, onnx_qtypes.<wing> is its top-level folder

from onnx_qtypes.interop import lift, lower  # noqa: E402
from onnx_qtypes.diagnosis import Diagnosis, diagnose  # noqa: E402
from onnx_qtypes.proto import (  # noqa: E402
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
