"""Lift QDQ / QOperator models into typed form; lower typed models to plain ONNX.

- ``lift(model, statistics=None)``: onnxruntime's QDQ, QOperator or MatMulNBits model ->
  typed model (``lift_model`` also returns notes, warnings and counts).
- ``lower(model, form="qdq")``: typed model -> standard ONNX that runtimes
  without the extension run (``"qdq"``, or ``"qoperator"`` with QLinearConv /
  QLinearMatMul where they apply, or ``"matmulnbits"`` with onnxruntime's
  MatMulNBits for blocked MatMul weights); ``lower_model`` also returns notes and
  warnings (``LowerWarning``: bfloat16 scales, which onnxruntime 1.31 cannot run).
- ``load_calibration_cache`` / ``statistics_from_tensors_data``:
  onnxruntime's calibration results as TensorStatistics.
"""

from onnx_qtypes.interop.errors import LowerError, MalformedQDQError, StatisticsImportError
from onnx_qtypes.interop.lift import LiftResult, LiftWarning, lift, lift_model
from onnx_qtypes.interop.lower import LowerResult, LowerWarning, lower, lower_model
from onnx_qtypes.interop.ort_statistics import (
    load_calibration_cache,
    statistics_from_tensor_data,
    statistics_from_tensors_data,
)

__all__ = [
    "LiftResult",
    "LiftWarning",
    "LowerError",
    "LowerResult",
    "LowerWarning",
    "MalformedQDQError",
    "StatisticsImportError",
    "lift",
    "lift_model",
    "load_calibration_cache",
    "lower",
    "lower_model",
    "statistics_from_tensor_data",
    "statistics_from_tensors_data",
]
